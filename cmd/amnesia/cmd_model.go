package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/model"
)

func newModelCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "model",
		Short: "Models trained on the dataset stores: shards, training runs, what a subject reached",
		Long: `The models: section of amnesia.yaml names the models trained on file-store
datasets (docs/models.md). Training runs are recorded in <state>/models/registry.jsonl
(by the Go capture API, App.RecordTrainingRun, or 'amnesia model record-run'); an
erasure taints the runs that read the subject's rows, retrains their shards with the
configured command, switches the served artifact and probes the model.`,
	}
	cmd.AddCommand(newModelListCommand(g), newModelShardCommand(g), newModelRecordRunCommand(g), newModelReachCommand(g))
	return cmd
}

func newModelListCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the configured models, their shards and what each serves",
		Args:  usageArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := state.Open(g.stateDir)
			if err != nil {
				return err
			}
			snap, err := model.OpenRegistry(dir.Path).Load()
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if len(dir.Config.Models) == 0 {
				fmt.Fprintln(w, "no models configured (models: in amnesia.yaml; see docs/models.md)")
				return nil
			}
			for _, m := range dir.Config.Models {
				mode := "not sharded: an erasure can only mark it TAINTED"
				if m.Sharded {
					mode = fmt.Sprintf("%d shards, retrain: %s", len(m.Dataset), strings.Join(m.Retrain.Command, " "))
				}
				fmt.Fprintf(w, "%s  (%s)\n", m.Name, mode)
				runs := 0
				for _, id := range snap.Order {
					if snap.Runs[id].Model == m.Name {
						runs++
					}
				}
				fmt.Fprintf(w, "  %d recorded training runs\n", runs)
				for i, st := range m.Dataset {
					sv, ok := snap.Served[m.Name][i]
					served := "served: not recorded"
					if ok {
						served = fmt.Sprintf("served: %s sha256:%s (%s)", sv.Path, sv.SHA256[:12], sv.Run)
						if len(snap.Tainted[sv.Run]) > 0 {
							served += "  TAINTED"
						}
					}
					fmt.Fprintf(w, "  shard %d  %-12s %s\n", i, st, served)
				}
			}
			return nil
		},
	}
}

func newModelShardCommand(g *globalOptions) *cobra.Command {
	var name string
	cmd := &cobra.Command{
		Use:   "shard <subject | ->",
		Short: "Print the dataset store that holds every training row of a subject (keyed hash)",
		Long: `For pipelines that write training rows themselves: the shard (dataset store) a
subject's rows belong in, by keyed hash of the subject under this installation's pepper.
Pass "-" to read the subject id from standard input.`,
		Args: usageArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			raw, err := readSubject(args[0], cmd.InOrStdin())
			if err != nil {
				return err
			}
			a, err := capture.Open(cmd.Context(), g.stateDir)
			if err != nil {
				return err
			}
			defer a.Close()
			st, i, err := a.TrainingShard(name, raw)
			if err != nil {
				return withCode(exitUsage, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s\t%d\n", st, i)
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "model", "", "configured model (required)")
	cmd.MarkFlagRequired("model")
	return cmd
}

func newModelRecordRunCommand(g *globalOptions) *cobra.Command {
	var tr capture.TrainingRun
	cmd := &cobra.Command{
		Use:   "record-run --model M [--shard N] --output FILE [--served PATH] [-- COMMAND...]",
		Short: "Record a finished training run: dataset digests and row ids, artifact digest, where it is served",
		Long: `Call it right after a training run, before the dataset changes: amnesia reads the
shard's data file (its SHA-256 and the keyed ids of its rows) and the artifact (its
SHA-256). The words after -- are recorded as the command that made the artifact.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			tr.Command = args
			a, err := capture.Open(cmd.Context(), g.stateDir)
			if err != nil {
				return err
			}
			defer a.Close()
			run, err := a.RecordTrainingRun(cmd.Context(), tr)
			if err != nil {
				return err
			}
			rows := 0
			for _, in := range run.Inputs {
				rows += in.Rows
			}
			fmt.Fprintf(cmd.OutOrStdout(), "recorded %s: model %s shard %d, %d rows, artifact sha256:%s\n", run.ID, run.Model, run.Shard, rows, run.Output.SHA256)
			return nil
		},
	}
	cmd.Flags().StringVar(&tr.Model, "model", "", "configured model (required)")
	cmd.Flags().IntVar(&tr.Shard, "shard", 0, "shard number (index of the dataset store); 0 for a model that is not sharded")
	cmd.Flags().StringVar(&tr.Output, "output", "", "the artifact the run wrote (required)")
	cmd.Flags().StringVar(&tr.Served, "served", "", "where the artifact is served from")
	cmd.MarkFlagRequired("model")
	cmd.MarkFlagRequired("output")
	return cmd
}

func newModelReachCommand(g *globalOptions) *cobra.Command {
	var scope string
	cmd := &cobra.Command{
		Use:   "reach <subject | ->",
		Short: "List, as JSON, the model artifacts a subject's training rows reached",
		Args:  usageArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := openApp(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer a.Close()
			t, err := a.trace(cmd.Context(), args[0], scope, cmd.InOrStdin())
			if err != nil {
				return err
			}
			reach, err := modelReach(a.dir, t)
			if err != nil {
				return err
			}
			if reach == nil {
				reach = []model.Reach{}
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			return enc.Encode(reach)
		},
	}
	cmd.Flags().StringVar(&scope, "scope", "", "scope (tenant); default: the configured scope")
	return cmd
}

func modelReach(dir *state.Dir, t *lineage.Trace) ([]model.Reach, error) {
	ids := make([]string, 0, len(t.Artifacts))
	for _, a := range t.Artifacts {
		ids = append(ids, a.ID)
	}
	return model.TraceModels(dir.Path, ids)
}

// printModelReach adds to a human trace the model artifacts the subject's
// rows reached (nothing when none did).
func printModelReach(w io.Writer, dir *state.Dir, t *lineage.Trace) {
	reach, err := modelReach(dir, t)
	if err != nil {
		fmt.Fprintf(w, "  models: cannot read the model registry: %v\n", err)
		return
	}
	if len(reach) == 0 {
		return
	}
	sort.SliceStable(reach, func(i, j int) bool { return reach[i].Model < reach[j].Model })
	fmt.Fprintf(w, "  models reached by the subject's training rows:\n")
	for _, r := range reach {
		note := "an erasure will retrain this shard"
		if !r.Sharded {
			note = "not sharded: an erasure marks it TAINTED, it cannot retrain it"
		}
		if r.Tainted {
			note = "already TAINTED by an erasure"
		}
		served := ""
		if r.Served != "" {
			served = ", served at " + r.Served
		}
		fmt.Fprintf(w, "    %-12s shard %d  %s  %d rows  artifact sha256:%s%s  (%s)\n", r.Model, r.Shard, r.Run, r.Rows, r.Output.SHA256[:12], served, note)
	}
}

// checkModels prints one line per configured model: whether its retrain
// command can be found and its served directory written. Problems are
// warnings: an erasure still runs, and a model it cannot retrain or switch
// ends UNVERIFIED or NEEDS_HUMAN in the certificate.
func checkModels(w io.Writer, cfg *state.Config) {
	for _, m := range cfg.Models {
		var warn []string
		if len(m.Retrain.Command) > 0 {
			if _, err := exec.LookPath(m.Retrain.Command[0]); err != nil {
				warn = append(warn, fmt.Sprintf("retrain command %q not found or not executable", m.Retrain.Command[0]))
			}
		}
		if m.Served != "" {
			dir := filepath.Dir(m.ServedPath(0))
			if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
				warn = append(warn, fmt.Sprintf("served directory %s does not exist", dir))
			} else if syscall.Access(dir, 2) != nil {
				warn = append(warn, fmt.Sprintf("served directory %s is not writable: amnesia switches the served artifact by rename there", dir))
			}
		}
		switch {
		case len(warn) > 0:
			fmt.Fprintf(w, "  model %-12s WARNING: %s\n", m.Name, strings.Join(warn, "; "))
		case !m.Sharded:
			fmt.Fprintf(w, "  model %-12s OK (not sharded: an erasure marks it TAINTED, it cannot retrain it)\n", m.Name)
		default:
			fmt.Fprintf(w, "  model %-12s OK (%d shards)\n", m.Name, len(m.Dataset))
		}
	}
}
