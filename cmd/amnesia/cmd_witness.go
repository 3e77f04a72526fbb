package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/mod/sumdb/note"

	"github.com/amnesia-dev/amnesia/transparency"
)

// amnesia witness: a separate mode of the same binary, run by someone other
// than the log's operator, with its own directory (never amnesia's state).

func newWitnessCommand() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "witness",
		Short: "Run a witness: keep the last checkpoint seen of a log, check each new one's consistency proof, cosign it",
		Long: `A witness keeps, for each log it watches, the last checkpoint it cosigned, and
cosigns a new checkpoint only if a consistency proof shows that the new tree
extends that one. Its cosignature is a C2SP cosignature/v1 line added to the
checkpoint. A verifier who requires the witness's cosignature
(amnesia verify --witness-key K --witnesses 1) knows that the log showed the
witness the same append-only history; a log that was rewritten, truncated or
shown differently to different people gets no cosignature from it.

The witness's directory (--dir, or AMNESIA_WITNESS_DIR) holds its private key
and one state file per log; it is the witness's own, never amnesia's state.

  amnesia witness init --dir D --name witness.example/w1   # prints the verifier key to publish
  amnesia audit consistency --from N | \
    amnesia witness cosign --dir D --log-key KEY > cosigned.cp
  amnesia audit cosign cosigned.cp                        # back on the log's side

The first checkpoint of a log is accepted on trust (nothing to check it
against), and the log key it was checked with is pinned; every later one
needs a proof from the size last cosigned, and the same log key unless
--accept-log-key-change is given (after the log's operator rotated its key).
A refused checkpoint exits 18 (the log is not consistent with what the
witness cosigned), a proof from another size than the witness's exits 1.

See docs/witness.md.`,
	}
	def := os.Getenv("AMNESIA_WITNESS_DIR")
	cmd.PersistentFlags().StringVar(&dir, "dir", def, "the witness's directory (env AMNESIA_WITNESS_DIR); not amnesia's state directory")
	cmd.AddCommand(newWitnessInitCommand(&dir), newWitnessKeyCommand(&dir), newWitnessCosignCommand(&dir))
	return cmd
}

func witnessDir(dir *string) (string, error) {
	if *dir == "" {
		return "", withCode(exitUsage, errors.New("--dir is required: the witness's own directory"))
	}
	return *dir, nil
}

func newWitnessInitCommand(dir *string) *cobra.Command {
	var name string
	cmd := &cobra.Command{
		Use:   "init --dir <dir> --name <witness name>",
		Short: "Create a witness: a new Ed25519 key in --dir; prints its verifier key",
		Args:  usageArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := witnessDir(dir)
			if err != nil {
				return err
			}
			if name == "" {
				return withCode(exitUsage, errors.New("--name is required: the witness's key name, e.g. witness.example.org/w1"))
			}
			w, err := transparency.InitWitness(d, name)
			if err != nil {
				if errors.Is(err, transparency.ErrMalformed) {
					return withCode(exitUsage, err)
				}
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), w.VerifierKey())
			return err
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "the witness's key name (no spaces or '+'), e.g. witness.example.org/w1")
	return cmd
}

func newWitnessKeyCommand(dir *string) *cobra.Command {
	return &cobra.Command{
		Use:   "key --dir <dir>",
		Short: "Print the witness's verifier key (what verifiers pass to verify --witness-key)",
		Args:  usageArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := witnessDir(dir)
			if err != nil {
				return err
			}
			w, err := transparency.OpenWitness(d)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), w.VerifierKey())
			return err
		},
	}
}

func newWitnessCosignCommand(dir *string) *cobra.Command {
	var logKey, in string
	var acceptKeyChange bool
	cmd := &cobra.Command{
		Use:   "cosign --dir <dir> --log-key <key or file> [--in consistency.json]",
		Short: "Check a log's new checkpoint against the last one cosigned and cosign it; prints the cosigned checkpoint",
		Long: `Cosign reads what 'amnesia audit consistency --from N' prints (JSON: the log's
signed checkpoint and a consistency proof from N leaves) from --in or stdin.
It checks the checkpoint's signature with the log's key (--log-key: the text
'amnesia audit log-key' prints, or a file holding it); then, if it cosigned
this log before, that N is the size it cosigned last and that the proof shows
the new tree extends that one. It prints the checkpoint with its
cosignature line added and records it as the log's new state.

Refusals: a smaller tree than the one cosigned, another tree of the same
size, or a proof that does not verify exit 18; a proof from another size
than the witness's exits 1 and names the size to ask for; a log key other
than the one pinned for the log exits 1 unless --accept-log-key-change.`,
		Args: usageArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := witnessDir(dir)
			if err != nil {
				return err
			}
			if logKey == "" {
				return withCode(exitUsage, errors.New("--log-key is required: the log's verifier key (amnesia audit log-key)"))
			}
			lk, err := readLogKey(logKey)
			if err != nil {
				return withCode(exitUsage, err)
			}
			w, err := transparency.OpenWitness(d)
			if err != nil {
				return err
			}
			var r io.Reader = cmd.InOrStdin()
			if in != "" && in != "-" {
				f, err := os.Open(in)
				if err != nil {
					return err
				}
				defer f.Close()
				r = f
			}
			msg, err := readConsistencyMessage(r)
			if err != nil {
				return err
			}
			res, err := w.CosignReport(lk, []byte(msg.Checkpoint), msg.From, msg.Proof, transparency.CosignOptions{AcceptLogKeyChange: acceptKeyChange})
			if errors.Is(err, transparency.ErrWitnessLogKey) {
				return fmt.Errorf("%w (--accept-log-key-change)", err)
			}
			if err != nil {
				return err
			}
			if res.KeyChanged {
				fmt.Fprintf(cmd.ErrOrStderr(), "witness %s: log %s: the log key changed; the new key is accepted (--accept-log-key-change) and pinned\n",
					w.Name(), res.Checkpoint.Origin)
			}
			if res.FirstSeen() {
				fmt.Fprintf(cmd.ErrOrStderr(), "witness %s: first checkpoint seen of log %s (%d leaves): accepted on trust, nothing to check it against\n",
					w.Name(), res.Checkpoint.Origin, res.Checkpoint.Size)
			} else {
				fmt.Fprintf(cmd.ErrOrStderr(), "witness %s: log %s at %d leaves extends the %d cosigned before: cosigned\n",
					w.Name(), res.Checkpoint.Origin, res.Checkpoint.Size, res.Previous.Size)
			}
			_, err = cmd.OutOrStdout().Write(res.Note)
			return err
		},
	}
	cmd.Flags().StringVar(&logKey, "log-key", "", "the log's verifier key (origin+hash+base64, as `amnesia audit log-key` prints), or a file holding it")
	cmd.Flags().StringVar(&in, "in", "", "the consistency message (JSON from amnesia audit consistency); default stdin")
	cmd.Flags().BoolVar(&acceptKeyChange, "accept-log-key-change", false, "cosign although the log key differs from the one pinned for this log (after the log's operator rotated its key; confirm the new key out of band first)")
	return cmd
}

// readConsistencyMessage parses a ConsistencyMessage strictly.
func readConsistencyMessage(r io.Reader) (*ConsistencyMessage, error) {
	data, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("read consistency message: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m ConsistencyMessage
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("consistency message: not the JSON of amnesia audit consistency: %v: %w", err, transparency.ErrMalformed)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("consistency message: data after the JSON object: %w", transparency.ErrMalformed)
	}
	if m.Checkpoint == "" {
		return nil, fmt.Errorf("consistency message: no checkpoint: %w", transparency.ErrMalformed)
	}
	return &m, nil
}

// readLogKey reads the log's verifier key (a plain Ed25519 signed-note key
// named by the log's origin) given inline or as a file, and returns its
// text once checked.
func readLogKey(s string) (string, error) {
	key := s
	if !strings.Contains(s, "+") {
		b, err := os.ReadFile(s)
		if err != nil {
			return "", fmt.Errorf("log key %s: %w", s, err)
		}
		key = strings.TrimSpace(string(b))
	}
	if _, err := note.NewVerifier(key); err != nil {
		return "", fmt.Errorf("log key: %v (want the text amnesia audit log-key prints)", err)
	}
	return key, nil
}
