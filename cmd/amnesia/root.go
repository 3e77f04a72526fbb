package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/amnesia-dev/amnesia/internal/erasure"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
)

type globalOptions struct {
	stateDir string
}

func newRootCommand() *cobra.Command {
	g := &globalOptions{}
	cmd := &cobra.Command{
		Use:   "amnesia",
		Short: "Erase a person's data from AI memory, and prove it",
		Long: `amnesia records where each person's data goes at ingest; on an erasure request it
erases every copy, forces each store to reclaim the bytes, verifies at the strongest
level each store permits, and issues a signed certificate anyone can verify offline.

` + exitCodesHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
		// cobra's default distance for "Did you mean this?"
		SuggestionsMinimumDistance: 2,
		Version:                    "set below", // adds --version
		// An unknown command is a usage error (exit 2), with cobra's
		// suggestion; no command prints the help.
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
			if s := c.SuggestionsFor(args[0]); len(s) > 0 {
				msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
			}
			return withCode(exitUsage, fmt.Errorf("%s\n\nRun '%s --help' for the commands.", msg, c.CommandPath()))
		},
		RunE: func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	cmd.SetVersionTemplate("{{.Version}}")
	cmd.Version = versionText()
	def := os.Getenv("AMNESIA_STATE")
	if def == "" {
		def = state.DefaultDir
	}
	cmd.PersistentFlags().StringVar(&g.stateDir, "state", def, "state directory (env AMNESIA_STATE)")
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return withCode(exitUsage, fmt.Errorf("%w\n\n%s", err, c.UsageString()))
	})
	cmd.AddCommand(
		newInitCommand(g),
		newCheckCommand(g),
		newScanCommand(g),
		newReconcileCommand(g),
		newTraceCommand(g),
		newModelCommand(g),
		newForgetCommand(g),
		newEraseCommand(g),
		newWorkerCommand(g),
		newMCPCommand(g),
		newServeCommand(g),
		newTokensCommand(g),
		newRequestsCommand(g),
		newStatusCommand(g),
		newVerifyCommand(g),
		newReverifyCommand(g),
		newConsentCommand(g),
		newReplayCommand(g),
		newKeysCommand(g),
		newConfigCommand(g),
		newAuditCommand(g),
		newAnchorCommand(g),
		newWitnessCommand(),
		newDemoCommand(),
		newVersionCommand(),
	)
	return cmd
}

func usageArgs(n int) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) != n {
			return withCode(exitUsage, fmt.Errorf("%s takes %d argument(s), got %d\n\n%s", c.Name(), n, len(args), c.UsageString()))
		}
		return nil
	}
}

// app is an opened installation.
type app struct {
	dir     *state.Dir
	ledger  lineage.Ledger
	log     *slog.Logger
	logFile *os.File
}

// env is the installation as the erasure flow (internal/erasure) sees it.
func (a *app) env() *erasure.Env {
	return &erasure.Env{Dir: a.dir, Ledger: a.ledger, Log: a.log}
}

func openApp(ctx context.Context, g *globalOptions) (*app, error) {
	dir, err := state.Open(g.stateDir)
	if err != nil {
		return nil, err
	}
	return openAppDir(ctx, dir)
}

// openAppDir opens an installation's existing ledger: it never creates one
// (see state.Dir.OpenLedger). A state directory that never had a ledger
// gives ErrNoLineage (nothing was recorded); one whose ledger was lost or
// replaced gives state.ErrLedgerLost.
func openAppDir(ctx context.Context, dir *state.Dir) (*app, error) {
	return openAppLedger(ctx, dir, state.LedgerChecked)
}

// openAppLedger is openAppDir with the ledger opened in mode: LedgerCreate
// for `amnesia init` only, LedgerUnchecked for `amnesia audit verify`.
func openAppLedger(ctx context.Context, dir *state.Dir, mode state.LedgerMode) (*app, error) {
	l, err := dir.OpenLedger(ctx, mode)
	if errors.Is(err, lineage.ErrNoLedger) {
		return nil, fmt.Errorf("%w: there is no ledger yet (%v); the application's first capture creates it", lineage.ErrNoLineage, err)
	}
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(dir.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("open log: %w", err)
	}
	return &app{dir: dir, ledger: l, log: slog.New(slog.NewJSONHandler(f, nil)), logFile: f}, nil
}

func (a *app) Close() {
	a.ledger.Close()
	a.logFile.Close()
}
