package main

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/spf13/cobra"
	"golang.org/x/mod/sumdb/note"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/transparency"
)

// The log's side of witnessing: the key a witness checks checkpoints with,
// storing the cosignatures a witness returns, and re-issuing a
// certificate's log entry against a cosigned checkpoint.

func newAuditLogKeyCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "log-key",
		Short: "Print the log's verifier key (signed-note form), what a witness is given (witness cosign --log-key)",
		Args:  usageArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			a, lg, err := openLog(cmd, g)
			if err != nil {
				return err
			}
			defer a.Close()
			k, err := transparency.VerifierKey(lg.Origin(), a.dir.Key.Public().(ed25519.PublicKey))
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), k)
			return err
		},
	}
}

func newAuditCosignCommand(g *globalOptions) *cobra.Command {
	var witnessKeys []string
	cmd := &cobra.Command{
		Use:   "cosign <cosigned checkpoint | ->",
		Short: "Store the cosignatures on a checkpoint a witness returned (amnesia witness cosign) with the log's checkpoint",
		Long: `Cosign stores the signature lines of a checkpoint that a witness cosigned
with the log's own checkpoint of that size. The checkpoint's text and the
log's signature must be those the log stored; lines the log already has are
kept, new ones added. Certificates carry the cosignatures once re-proved
against that checkpoint (amnesia audit prove).

With --witness-key (the witnesses' verifier keys, as 'amnesia witness init'
prints them), every signature line must verify under one of them or under
the log's own key, and at least one under a witness key, or nothing is
stored (exit 16): a line that does not would make
'amnesia verify --witness-key' fail on every certificate re-proved against
this checkpoint. Without it the lines are stored unchecked, and the command
says so.`,
		Args: usageArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := readCosignedCheckpoint(cmd, args[0])
			if err != nil {
				return err
			}
			a, lg, err := openLog(cmd, g)
			if err != nil {
				return err
			}
			defer a.Close()
			if len(witnessKeys) > 0 {
				if err := checkWitnessLines(data, witnessKeys, lg.Verifiers()); err != nil {
					return err
				}
			}
			s, err := lg.AddSignatures(cmd.Context(), data)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "stored: the checkpoint of %d leaves carries %d signature(s) by the log and %d other(s)\n",
				s.Size, len(s.Note.Sigs), len(s.Note.UnverifiedSigs))
			if len(witnessKeys) == 0 && len(s.Note.UnverifiedSigs) > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "note: the %d other signature line(s) were stored unchecked; give --witness-key to check them before they are stored\n", len(s.Note.UnverifiedSigs))
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&witnessKeys, "witness-key", nil, "a witness's verifier key (name+hash+base64, as `amnesia witness init` prints), or a file holding one; repeatable: every line not signed by the log's key must verify under one")
	return cmd
}

// checkWitnessLines checks that every signature line of the signed note
// data verifies under one of the witness keys or one of the log's own keys
// (logKeys: a line under the log's name but another key is a witness line
// like any other), and that at least one verifies under a witness key.
func checkWitnessLines(data []byte, keys []string, logKeys []note.Verifier) error {
	p, err := certificate.LoadPolicy(certificate.PolicyFiles{WitnessKeys: keys})
	if errors.Is(err, certificate.ErrPolicy) {
		return withCode(exitUsage, err)
	}
	if err != nil {
		return err
	}
	opts, err := p.Options()
	if err != nil {
		return withCode(exitUsage, err)
	}
	all := append([]note.Verifier(nil), opts.Witnesses...)
	for _, v := range logKeys {
		if !slices.ContainsFunc(all, sameKey(v.Name(), v.KeyHash())) {
			all = append(all, v) // a --witness-key that is the log's own key is not listed twice
		}
	}
	n, err := note.Open(data, note.VerifierList(all...))
	var none *note.UnverifiedNoteError
	switch {
	case errors.As(err, &none):
		n = none.Note
	case err != nil:
		return withCode(exitWitnesses, fmt.Errorf("the cosigned checkpoint: %w: nothing stored", err))
	}
	if len(n.UnverifiedSigs) > 0 {
		sig := n.UnverifiedSigs[0]
		return withCode(exitWitnesses, fmt.Errorf("the signature line by %s (key hash %08x) verifies under no --witness-key given, nor under the log's key: nothing stored", sig.Name, sig.Hash))
	}
	for _, sig := range n.Sigs {
		if slices.ContainsFunc(logKeys, sameKey(sig.Name, sig.Hash)) {
			continue // the log's own line, even when its key was also given as a witness key
		}
		if slices.ContainsFunc(opts.Witnesses, sameKey(sig.Name, sig.Hash)) {
			return nil
		}
	}
	return withCode(exitWitnesses, errors.New("no signature line verifies under a --witness-key given: nothing stored"))
}

// sameKey matches a verifier of the key named name with key hash hash (a
// note's signature line names its key so).
func sameKey(name string, hash uint32) func(note.Verifier) bool {
	return func(v note.Verifier) bool { return v.Name() == name && v.KeyHash() == hash }
}

func newAuditProveCommand(g *globalOptions) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "prove <certificate> [--out FILE]",
		Short: "Re-issue a certificate's log proof against the newest stored checkpoint (with its witness cosignatures)",
		Long: `Prove reads a published certificate (bundle), checks that the log's leaf at
its index is this certificate's, and writes the bundle again with a new
inclusion proof of that leaf in the tree of the log's newest stored
checkpoint, and that checkpoint as stored: with the cosignatures stored by
'amnesia audit cosign'. The signed DSSE envelope is unchanged, so the
certificate's signature still verifies. A timestamp over the old checkpoint
is kept only if the checkpoint is the same.

It writes to --out (atomically; it may be the certificate itself) or stdout.`,
		Args: usageArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := os.ReadFile(args[0])
			if err != nil {
				return fmt.Errorf("read certificate: %w", err)
			}
			b, err := certificate.DecodeBundle(data)
			if err != nil {
				return err
			}
			st, err := certificate.Parse(b.DSSEEnvelope)
			if err != nil {
				return err
			}
			payload, err := certificate.Payload(b.DSSEEnvelope)
			if err != nil {
				return err
			}
			leaf, err := transparency.CertificateLeaf(st.Predicate.CertificateID, payload)
			if err != nil {
				return err
			}
			a, lg, err := openLog(cmd, g)
			if err != nil {
				return err
			}
			defer a.Close()
			ctx := cmd.Context()
			cp, err := lg.Latest(ctx)
			if err != nil {
				return fmt.Errorf("the log has no stored checkpoint: %w", err)
			}
			idx := b.LogEntry.LogIndex
			if idx < 0 || idx >= cp.Size {
				return fmt.Errorf("certificate's log index %d is outside the log's %d leaves: %w", idx, cp.Size, certificate.ErrInclusion)
			}
			stored, err := lg.Leaves(ctx, idx, idx+1)
			if err != nil {
				return err
			}
			if len(stored) != 1 || !bytes.Equal(stored[0], leaf) {
				return fmt.Errorf("the log's leaf %d is not certificate %s's: %w", idx, st.Predicate.CertificateID, certificate.ErrInclusion)
			}
			proof, err := lg.InclusionProof(ctx, idx, cp.Size)
			if err != nil {
				return err
			}
			if err := transparency.VerifyInclusion(leaf, idx, proof, cp.Checkpoint); err != nil {
				return err
			}
			entry := &certificate.LogEntry{LogIndex: idx, InclusionProof: transparency.EncodeProof(proof), Checkpoint: string(cp.Raw)}
			if tok, err := lg.Timestamp(ctx, cp.Size); err != nil {
				return err
			} else if tok != nil {
				entry.Timestamp = base64.StdEncoding.EncodeToString(tok)
			} else if b.LogEntry.Timestamp != "" {
				if oldBody, _, _ := bytes.Cut([]byte(b.LogEntry.Checkpoint), []byte("\n\n")); string(oldBody)+"\n" == cp.Note.Text {
					entry.Timestamp = b.LogEntry.Timestamp
				} else {
					fmt.Fprintf(cmd.ErrOrStderr(), "note: the timestamp was over the checkpoint of the old tree and is dropped\n")
				}
			}
			nb, err := certificate.EncodeBundle(&certificate.Bundle{MediaType: b.MediaType, DSSEEnvelope: b.DSSEEnvelope, LogEntry: entry})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "proved leaf %d in the checkpoint of %d leaves, signed by the log and %d other signature line(s)\n",
				idx, cp.Size, len(cp.Note.UnverifiedSigs))
			if out == "" || out == "-" {
				_, err = cmd.OutOrStdout().Write(nb)
				return err
			}
			return state.WriteFileAtomicMode(out, nb, 0o644) // a certificate is public
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "write the re-proved certificate here (default stdout)")
	return cmd
}

// readCosignedCheckpoint reads path, or stdin when path is "-".
func readCosignedCheckpoint(cmd *cobra.Command, path string) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(io.LimitReader(cmd.InOrStdin(), 1<<20))
	}
	return os.ReadFile(path)
}
