package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/amnesia-dev/amnesia/internal/erasure"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/store"
)

const allowPartialHelp = "when a store of the trace is not ready, erase from the others; the certificate lists the rest as not erased (default: refuse, exit 8)"

type checkOptions struct {
	config string
}

func newCheckCommand(g *globalOptions) *cobra.Command {
	o := &checkOptions{}
	cmd := &cobra.Command{
		Use:   "check [--config amnesia.yaml]",
		Short: "Check that every configured store is ready for an erasure (read-only)",
		Long: `Check runs, for every configured store, the read-only readiness check that
forget, erase and worker run before an erasure: a SQLite store's file exists (it
is never created), is writable, opens, and has the adapter's table and columns,
with the configured dimensions for sqlite-vec; a PostgreSQL store's server
answers, its table and columns exist, the vector column has the configured
dimensions, and the role may SELECT and DELETE. Missing grants for reclaim or
the physical probe are warnings: the erasure runs, and verifies less.

It prints one line per store: name, type, resolved path or host:port/database
(never a password), OK or NOT READY with the reason. It writes nothing and reads
no record. With --config it checks that file instead of the state directory's.

Exit codes: 0 every store ready (warnings allowed); 1 the configuration cannot
be read; 8 a store is not ready.`,
		Args: usageArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var cfg *state.Config
			if o.config != "" {
				c, err := state.LoadConfig(o.config)
				if err != nil {
					return err
				}
				cfg = c
			} else {
				dir, err := state.Open(g.stateDir)
				if err != nil {
					return err
				}
				cfg = dir.Config
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "configuration: %s (relative paths resolve against %s)\n", configFile(o.config, g.stateDir), cfg.Dir())
			n := checkStores(cmd.Context(), out, cfg)
			checkModels(out, cfg) // cmd_model.go: warnings only
			if n > 0 {
				return withCode(exitNotReady, fmt.Errorf("%d of %d stores not ready: an erasure that touches them is refused (exit 8) unless --allow-partial", n, len(cfg.Stores)))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&o.config, "config", "", "check this amnesia.yaml instead of the state directory's")
	return cmd
}

func configFile(flag, stateDir string) string {
	p := flag
	if p == "" {
		p = filepath.Join(stateDir, "amnesia.yaml")
	}
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// checkStores checks every configured store, prints one line per store
// (and its warnings), and returns how many are not ready.
func checkStores(ctx context.Context, w io.Writer, cfg *state.Config) (notReady int) {
	if len(cfg.Stores) == 0 {
		fmt.Fprintln(w, "no stores configured")
		return 0
	}
	for _, sc := range cfg.Stores {
		cctx, cancel := context.WithTimeout(ctx, erasure.CheckTimeout)
		probs := cfg.CheckStore(cctx, sc)
		cancel()
		verdict := "OK"
		if errs := store.Errors(probs); len(errs) > 0 {
			verdict = "NOT READY: " + erasure.JoinProblems(errs)
			notReady++
		}
		fmt.Fprintf(w, "%-12s %-10s %s  %s\n", sc.Name, sc.Type, cfg.StoreTarget(sc), verdict)
		for _, p := range probs {
			if p.Severity == store.SeverityWarning {
				fmt.Fprintf(w, "  warning: %s\n", p)
			}
		}
	}
	return notReady
}
