package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
)

func newKeysCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "The signing keys: list, rotate, retire, export a trust file for verifiers",
		Long: `The installation signs certificates and transparency-log checkpoints with its
current key. Rotation makes a new key current; certificates and checkpoints
signed by earlier keys still verify. Retiring an earlier key from a time on
makes verifiers reject the certificates it signed that say they were issued
from then on. 'keys export' writes the trust file verifiers give to
'amnesia verify --trust'. See docs/keys.md, and its limits: retirement is
judged against the certificate's own issued_at.`,
	}
	cmd.AddCommand(newKeysListCommand(g), newKeysRotateCommand(g), newKeysRetireCommand(g), newKeysExportCommand(g))
	return cmd
}

// keyJSON is one key as `keys list --json` prints it.
type keyJSON struct {
	KeyID   string `json:"key_id"`
	Created string `json:"created,omitempty"`
	Retired string `json:"retired,omitempty"`
	Current bool   `json:"current"`
}

func fmtKeyTime(t time.Time, none string) string {
	if t.IsZero() {
		return none
	}
	return t.UTC().Format(time.RFC3339)
}

func newKeysListCommand(g *globalOptions) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the keyring: key id, created, retired from, current",
		Args:  usageArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := state.Open(g.stateDir)
			if err != nil {
				return err
			}
			if l, err := sharedKeyring(cmd.Context(), dir); err != nil {
				return err
			} else if l != nil {
				l.Close()
			}
			ks, err := dir.Keyring()
			if err != nil {
				return err
			}
			if asJSON {
				out := make([]keyJSON, 0, len(ks))
				for _, k := range ks {
					out = append(out, keyJSON{KeyID: k.ID, Created: fmtKeyTime(k.Created, ""), Retired: fmtKeyTime(k.Retired, ""), Current: k.Current})
				}
				return json.NewEncoder(cmd.OutOrStdout()).Encode(out)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "KEY ID\tCREATED\tRETIRED FROM\tCURRENT")
			for _, k := range ks {
				cur := ""
				if k.Current {
					cur = "current"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", k.ID, fmtKeyTime(k.Created, "unknown"), fmtKeyTime(k.Retired, "-"), cur)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the keys as a JSON array")
	return cmd
}

func newKeysRotateCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "rotate",
		Short: "Make a new signing key current; the earlier key stays trusted, its private key is destroyed",
		Long: `Rotate generates a new Ed25519 key and makes it the current signing key
(signing-key.pem, signing-key.pub.pem). The earlier key stays in the keyring
(keyring.json), trusted and not retired: certificates and log checkpoints it
signed still verify. Its private key is overwritten and deleted.

Rotate refuses while an erasure has signed its certificate but not published
it (resuming it must sign with the same key): finish those first. Restart
running workers after a rotation: a process keeps the key it started with.
The ledger records the new key's id: a host that starts with another key is
refused (exit code 23). With secrets.signing_key: dir:PATH the new key is
written there as the next version, for every host to read; a file: or env:
source is not written: rotation is refused.
Then export the trust file again (amnesia keys export) for verifiers.`,
		Args: usageArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := state.Open(g.stateDir)
			if err != nil {
				return err
			}
			// The ledger records the current key's id, which every host
			// compares at start (state.Dir.CheckSecrets): opened first, so
			// that only a host holding the current key rotates.
			l, err := dir.OpenLedger(cmd.Context(), state.LedgerChecked)
			switch {
			case errors.Is(err, lineage.ErrNoLedger):
				l = nil // no ledger yet: its first open records the key
			case err != nil:
				return err
			default:
				defer l.Close()
			}
			// Erasures keep their journals in the ledger when it keeps
			// them (PostgreSQL), in the state directory otherwise.
			dur := saga.FileDurable(dir)
			if l != nil {
				dur = saga.DurableFor(dir, l)
			}
			pending, err := saga.SignedUnpublished(cmd.Context(), dur)
			if err != nil {
				return err
			}
			if len(pending) > 0 {
				return fmt.Errorf("rotate: %d erasure(s) signed a certificate that is not published yet (%s); resuming must sign with the same key: finish them first (amnesia forget or amnesia worker resumes them)", len(pending), strings.Join(pending, ", "))
			}
			// Two phases: the new key is written beside the current one
			// (pending), the ledger records its id, and only then does it
			// replace the current key (state.Dir.CommitRotation).
			var nk, ok certificate.KeyInfo
			rotate := func() (err error) {
				nk, ok, err = dir.PrepareRotation(time.Now())
				return err
			}
			if l == nil {
				if err := rotate(); err != nil {
					return err
				}
			} else if err := dir.ChangeKeyring(cmd.Context(), l, true, rotate); err != nil {
				// With a PostgreSQL ledger the keyring and the key's id
				// are recorded in one transaction with a compare-and-swap
				// (a rotation that raced another host's is refused before
				// writing anything).
				if nk.ID == "" {
					return err
				}
				if err := rotationFailed(cmd, dir, l, nk.ID, err); err != nil {
					return err
				}
			}
			if err := dir.CommitRotation(); err != nil {
				return fmt.Errorf("the ledger records the new key %s, but this host's key files are not replaced yet: %w; the next command that opens the ledger finishes it", nk.ID, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "rotated\n  current key:  %s (%s)\n  earlier key:  %s, still trusted; its private key is destroyed\n  retire it:    amnesia keys retire %s --from <time>\n  verifiers:    amnesia keys export --out trust.json\n",
				nk.ID, dir.PublicKeyPath(), ok.ID, ok.ID)
			return nil
		},
	}
}

// rotationFailed reports a rotation whose ledger write failed (err) after
// its new key id was prepared: it asks the ledger which key it records and
// finishes or undoes the rotation by that (state.Dir.ResolveRotation).
func rotationFailed(cmd *cobra.Command, dir *state.Dir, l lineage.Ledger, id string, err error) error {
	did, rerr := dir.ResolveRotation(cmd.Context(), l)
	switch {
	case rerr != nil:
		return fmt.Errorf("not rotated yet: recording the new key %s in the ledger failed (%w), and the ledger could not be asked whether it was recorded (%v); the new key is pending beside the earlier one, which is kept: the next command that opens the ledger finishes or undoes the rotation by what the ledger records", id, err, rerr)
	case did == "committed":
		fmt.Fprintf(cmd.ErrOrStderr(), "amnesia: recording the new key reported an error (%v), but the ledger records it: the rotation is finished\n", err)
		return nil
	}
	return fmt.Errorf("not rotated: the ledger does not record the new key %s (%w); the new key is discarded and the earlier key is still current; nothing else changed: run the same command again", id, err)
}

// parseRetireTime reads --from: RFC 3339 or "now" (to the second).
func parseRetireTime(s string, now time.Time) (time.Time, error) {
	if strings.EqualFold(s, "now") {
		return now.UTC().Truncate(time.Second), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("--from %q: want an RFC 3339 time (2026-01-02T15:04:05Z) or now", s)
	}
	return t, nil
}

func newKeysRetireCommand(g *globalOptions) *cobra.Command {
	var from string
	cmd := &cobra.Command{
		Use:   "retire <key-id> --from <RFC3339|now>",
		Short: "Retire an earlier key from a time on: verifiers reject what it signed as issued from then",
		Long: `Retire records in the keyring that the key is retired from the given time
on. A verifier with the exported trust file rejects (exit 17) a certificate
signed by that key whose issued_at is at or after that time; certificates
issued before still verify. The key id is the full id (sha256:…) or a unique
prefix of at least 8 hex digits. The current key cannot be retired: rotate
first. Retiring a retired key again moves its retirement time.

The certificate's issued_at is written by whoever holds the key: against a
stolen key, retirement helps only with an independent time (an RFC 3161
timestamp or a witness-cosigned checkpoint). See docs/keys.md.`,
		Args: usageArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if from == "" {
				return withCode(exitUsage, fmt.Errorf("--from is required: the time the key is retired from (RFC 3339, or now)"))
			}
			at, err := parseRetireTime(from, time.Now())
			if err != nil {
				return withCode(exitUsage, err)
			}
			dir, err := state.Open(g.stateDir)
			if err != nil {
				return err
			}
			l, err := sharedKeyring(cmd.Context(), dir)
			if err != nil {
				return err
			}
			if l != nil {
				defer l.Close()
			}
			var k, was certificate.KeyInfo
			retire := func() (err error) {
				k, was, err = dir.RetireKey(args[0], at)
				return err
			}
			if l == nil {
				err = retire()
			} else {
				err = dir.ChangeKeyring(cmd.Context(), l, false, retire)
			}
			if err != nil {
				if k.ID != "" {
					return fmt.Errorf("retired %s here, but the ledger's keyring is not updated: %w (run the same command again)", k.ID, err)
				}
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "retired %s from %s\n", k.ID, fmtKeyTime(k.Retired, ""))
			if !was.Retired.IsZero() {
				fmt.Fprintf(w, "  (it was retired from %s)\n", fmtKeyTime(was.Retired, ""))
			}
			fmt.Fprintf(w, "  verifiers: amnesia keys export --out trust.json\n")
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "time the key is retired from: RFC 3339, or now")
	return cmd
}

func newKeysExportCommand(g *globalOptions) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "export [--out FILE]",
		Short: "Write the trust file (every public key, key id and retirement time) for amnesia verify --trust",
		Long: `Export writes the keyring's public half as a trust file (JSON, format
amnesia.trust/v1; docs/keys.md): every key's id, PEM public key, creation
time and, for a retired key, its retirement time. Verifiers pass it to
'amnesia verify --trust FILE'. It holds no secret.`,
		Args: usageArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := state.Open(g.stateDir)
			if err != nil {
				return err
			}
			if l, err := sharedKeyring(cmd.Context(), dir); err != nil {
				return err
			} else if l != nil {
				l.Close()
			}
			tf, err := dir.TrustFile()
			if err != nil {
				return err
			}
			b, err := certificate.EncodeTrustFile(tf)
			if err != nil {
				return err
			}
			if out == "" || out == "-" {
				_, err = cmd.OutOrStdout().Write(b)
				return err
			}
			if err := os.WriteFile(out, b, 0o644); err != nil {
				return fmt.Errorf("export: %w", err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s: %d key(s)\n", out, len(tf.Keys))
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "write the trust file here instead of standard output")
	return cmd
}

// sharedKeyring opens the installation's ledger when it is PostgreSQL, so
// that this host's keyring.json is the ledger's keyring
// (state.Dir.SyncKeyring, run by OpenLedger), and returns it (nil with
// another ledger, which keyring.json alone describes). The caller closes it.
func sharedKeyring(ctx context.Context, dir *state.Dir) (lineage.Ledger, error) {
	if !lineage.IsPostgresDSN(dir.LedgerSpec()) {
		return nil, nil
	}
	l, err := dir.OpenLedger(ctx, state.LedgerChecked)
	if errors.Is(err, lineage.ErrNoLedger) {
		return nil, nil
	}
	return l, err
}
