package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/state"
)

type initOptions struct {
	config string
}

func newInitCommand(g *globalOptions) *cobra.Command {
	o := &initOptions{}
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Create a state directory: pepper, signing key, configuration, ledger",
		Long: `Create a state directory (default ./.amnesia, see --state) holding a random
per-installation pepper (0600), an Ed25519 signing key (0600), its public key as
a PEM SubjectPublicKeyInfo file, the configuration amnesia.yaml and the ledger.
Refuses to overwrite an existing installation.

With --config, relative paths in that file (a store's path and data_dir, a
SQLite ledger) are resolved against the file's directory and written as
absolute paths into the state directory's copy. Init then runs 'amnesia
check': a store that is not ready is a warning, the state directory is still
created.`,
		Args: usageArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var cfg *state.Config
			var moved []state.PathChange
			if o.config != "" {
				c, err := state.LoadConfig(o.config)
				if err != nil {
					return err
				}
				cfg = c
				moved = cfg.ResolvePaths()
			}
			dir, err := state.Init(g.stateDir, cfg)
			if err != nil {
				return err
			}
			a, err := openAppLedger(cmd.Context(), dir, state.LedgerCreate)
			if err != nil {
				return err
			}
			defer a.Close()
			a.log.Info("initialised", "stores", len(dir.Config.Stores))
			pub := dir.Key.Public()
			fmt.Fprintf(cmd.OutOrStdout(), "initialised %s\n  public key: %s\n  key id:     %s\n  stores:     %d configured (edit %s/amnesia.yaml)\n",
				dir.Path, dir.PublicKeyPath(), certificate.KeyID(pubKey(pub)), len(dir.Config.Stores), dir.Path)
			out := cmd.OutOrStdout()
			if len(moved) > 0 {
				fmt.Fprintf(out, "relative paths of %s resolved against %s, written absolute into %s/amnesia.yaml:\n", o.config, cfg.Dir(), dir.Path)
				for _, m := range moved {
					fmt.Fprintf(out, "  %-22s %s -> %s\n", m.Key, m.From, m.To)
				}
			}
			fmt.Fprintln(out, "checking the stores (read-only):")
			if n := checkStores(cmd.Context(), out, dir.Config); n > 0 {
				fmt.Fprintf(out, "warning: %d of %d stores not ready: an erasure that touches them is refused until they are (run 'amnesia check' after fixing them)\n", n, len(dir.Config.Stores))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&o.config, "config", "", "start from this amnesia.yaml instead of the default")
	return cmd
}
