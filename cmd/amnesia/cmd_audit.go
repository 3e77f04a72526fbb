package main

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"

	"github.com/spf13/cobra"

	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/transparency"
)

func newAuditCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Inspect and check the transparency log: checkpoints, full recomputation, consistency",
		Long: `Every erasure's start and every certificate is a leaf of an append-only Merkle
log (RFC 6962) kept in the ledger. Its state is published as checkpoints
(C2SP signed notes) signed by the installation's key.

Save a checkpoint now (amnesia audit checkpoint > saved.cp) and check later
that the log still extends it (amnesia audit verify --since saved.cp): a log
whose tail was dropped or whose past was rewritten fails, whatever the
operator stored since.`,
	}
	cmd.AddCommand(newAuditCheckpointCommand(g), newAuditVerifyCommand(g), newAuditConsistencyCommand(g), newAuditLogKeyCommand(g), newAuditCosignCommand(g), newAuditProveCommand(g))
	return cmd
}

// openLog opens the installation's log.
func openLog(cmd *cobra.Command, g *globalOptions) (*app, *transparency.Log, error) {
	return openLogMode(cmd, g, state.LedgerChecked)
}

func openLogMode(cmd *cobra.Command, g *globalOptions, mode state.LedgerMode) (*app, *transparency.Log, error) {
	dir, err := state.Open(g.stateDir)
	if err != nil {
		return nil, nil, err
	}
	a, err := openAppLedger(cmd.Context(), dir, mode)
	if err != nil {
		return nil, nil, err
	}
	lg, err := saga.OpenLog(cmd.Context(), &saga.Erasure{Dir: a.dir, Ledger: a.ledger})
	if err != nil {
		a.Close()
		return nil, nil, err
	}
	return a, lg, nil
}

func newAuditCheckpointCommand(g *globalOptions) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "checkpoint",
		Short: "Print the log's current signed checkpoint (signing one if the log grew)",
		Args:  usageArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			a, lg, err := openLog(cmd, g)
			if err != nil {
				return err
			}
			defer a.Close()
			cp, err := lg.Checkpoint(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(map[string]any{
					"origin": cp.Origin, "size": cp.Size, "root_hash": base64.StdEncoding.EncodeToString(cp.Hash[:]), "checkpoint": string(cp.Raw),
				})
			}
			_, err = cmd.OutOrStdout().Write(cp.Raw)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print origin, size and root hash as JSON with the signed note")
	return cmd
}

func newAuditVerifyCommand(g *globalOptions) *cobra.Command {
	var since string
	cmd := &cobra.Command{
		Use:   "verify [--since <saved checkpoint>]",
		Short: "Recompute the whole log from its leaves; with --since, prove it extends a checkpoint saved earlier",
		Long: `Verify reads every leaf of the log, recomputes every stored Merkle hash and
the root of every stored checkpoint, and checks each checkpoint's signature.
With --since FILE (a signed checkpoint saved earlier, e.g. by
'amnesia audit checkpoint > FILE' or by a witness) it also checks that the
log's first N leaves still hash to that checkpoint's root and proves the
current tree consistent with it: a truncated or rewritten log fails (exit 18).

` + exitCodesHelp,
		Args: usageArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var saved []byte
			if since != "" {
				b, err := os.ReadFile(since)
				if err != nil {
					return fmt.Errorf("read saved checkpoint: %w", err)
				}
				saved = b
			}
			// Unchecked: the log's own checks below run (and report) first;
			// then the ledger is compared with the state directory's record
			// of the last checkpoint signed (ledger-state.json).
			a, lg, err := openLogMode(cmd, g, state.LedgerUnchecked)
			if err != nil {
				return err
			}
			defer a.Close()
			rep, err := lg.Audit(cmd.Context(), saved)
			if errors.Is(err, transparency.ErrLogCorrupt) {
				// A leaf or stored hash missing: rows were deleted.
				return withCode(exitLogTampered, err)
			}
			if err != nil {
				return err
			}
			if err := a.dir.CheckLedger(cmd.Context(), a.ledger); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "OK log %s: %d leaves recompute to root %s; %d stored checkpoint(s) signed and matching; %d timestamp token(s) matching their anchor leaves\n",
				lg.Origin(), rep.Size, base64.StdEncoding.EncodeToString(rep.Root[:]), rep.Checkpoints, rep.Timestamps)
			kinds := make([]string, 0, len(rep.Kinds))
			for k := range rep.Kinds {
				kinds = append(kinds, k)
			}
			sort.Strings(kinds)
			for _, k := range kinds {
				fmt.Fprintf(w, "  %6d %s\n", rep.Kinds[k], k)
			}
			if rep.Since != nil {
				fmt.Fprintf(w, "  consistent with the saved checkpoint of %d leaves\n", rep.Since.Size)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&since, "since", "", "a signed checkpoint saved earlier; the log must extend it")
	return cmd
}

func newAuditConsistencyCommand(g *globalOptions) *cobra.Command {
	var from int64
	cmd := &cobra.Command{
		Use:   "consistency --from <size>",
		Short: "Print the current checkpoint and a proof that it extends the tree of <size> leaves (JSON, for witnesses)",
		Args:  usageArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			a, lg, err := openLog(cmd, g)
			if err != nil {
				return err
			}
			defer a.Close()
			cp, err := lg.Checkpoint(cmd.Context())
			if err != nil {
				return err
			}
			if from < 0 || from > cp.Size {
				return withCode(exitUsage, fmt.Errorf("--from %d: the log has %d leaves", from, cp.Size))
			}
			p, err := lg.ConsistencyProof(cmd.Context(), from, cp.Size)
			if err != nil {
				return err
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(ConsistencyMessage{Checkpoint: string(cp.Raw), From: from, Proof: transparency.EncodeProof(p)})
		},
	}
	cmd.Flags().Int64Var(&from, "from", 0, "tree size the proof starts from (the size of the checkpoint the reader saw last)")
	return cmd
}

// ConsistencyMessage is what `audit consistency` prints and a witness reads.
type ConsistencyMessage struct {
	Checkpoint string   `json:"checkpoint"`
	From       int64    `json:"from"`
	Proof      []string `json:"proof"`
}
