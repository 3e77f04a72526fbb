package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/amnesia-dev/amnesia/internal/state"
)

func newConfigCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "The installation's configuration version (hosts sharing a PostgreSQL ledger)",
	}
	cmd.AddCommand(newConfigPublishCommand(g), newConfigStatusCommand(g))
	return cmd
}

func newConfigPublishCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "publish",
		Short: "Record this host's amnesia.yaml as the installation's next configuration version",
		Long: `With a PostgreSQL ledger, every host compares the installation-wide part of its
amnesia.yaml (version, scope, certificate_validity, log_origin, tsa,
reclaim_wait, reverify, erasure, models, stores) with the configuration version the ledger records, and refuses to
start when it differs (exit 24). After changing amnesia.yaml on purpose, run
publish on one host with the new file: the ledger then records it as the next
version. From then on, every command started on a host still holding the
earlier file is refused (exit 24) until it is given the new one. Processes
already running there are not all stopped: an 'amnesia worker' claims nothing
more and exits 24 at its next claim; an 'amnesia serve' stops only its worker
loop (it claims no more erasures, and logs 'worker loop stopped') and goes on
answering its API with the earlier amnesia.yaml until it is restarted with the
new one. Erasures claimed before the publication finish with the settings they
started with. The ledger holds digests only, never a value. See docs/scale.md.`,
		Args: usageArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := state.Open(g.stateDir)
			if err != nil {
				return err
			}
			a, err := openAppLedger(cmd.Context(), dir, state.LedgerConfigPublish)
			if err != nil {
				return err
			}
			defer a.Close()
			now, was, err := dir.PublishConfig(cmd.Context(), a.ledger)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if was != nil && was.Digest == now.Digest {
				fmt.Fprintf(out, "unchanged: configuration version %d (%s) is already this host's\n", now.Version, now.Digest)
				return nil
			}
			a.log.Info("config published", "version", now.Version, "digest", now.Digest)
			fmt.Fprintf(out, "published configuration version %d (%s)\n", now.Version, now.Digest)
			if was != nil {
				fmt.Fprintf(out, "  replaces version %d (%s, by %s at %s); sections changed: %s\n", was.Version, was.Digest, was.By,
					was.At.Format(time.RFC3339), strings.Join(state.DiffSections(was.Sections, now.Sections), ", "))
			}
			fmt.Fprintf(out, "  on every other host still holding the earlier amnesia.yaml: commands started from now on are refused (exit 24) until it is given this one;\n")
			fmt.Fprintf(out, "  a running 'amnesia worker' exits 24 at its next claim; a running 'amnesia serve' stops claiming erasures but keeps answering its API with the earlier amnesia.yaml: restart it with this one\n")
			return nil
		},
	}
}

func newConfigStatusCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Compare this host's amnesia.yaml with the configuration version in the ledger",
		Args:  usageArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := state.Open(g.stateDir)
			if err != nil {
				return err
			}
			a, err := openAppLedger(cmd.Context(), dir, state.LedgerConfigPublish)
			if err != nil {
				return err
			}
			defer a.Close()
			out := cmd.OutOrStdout()
			cv, ok, err := dir.LedgerConfigVersion(cmd.Context(), a.ledger)
			if err != nil {
				return err
			}
			mine := dir.Config.SharedSections()
			fmt.Fprintf(out, "this host: %s\n", dir.Config.ConfigDigest())
			if !ok {
				fmt.Fprintf(out, "ledger:    no configuration version (a SQLite ledger, or no host has started yet)\n")
				return nil
			}
			fmt.Fprintf(out, "ledger:    version %d %s (by %s at %s)\n", cv.Version, cv.Digest, cv.By, cv.At.Format(time.RFC3339))
			if d := state.DiffSections(cv.Sections, mine); len(d) > 0 {
				return fmt.Errorf("%w: sections that differ: %s", state.ErrConfigMismatch, strings.Join(d, ", "))
			}
			fmt.Fprintf(out, "same\n")
			return nil
		},
	}
}
