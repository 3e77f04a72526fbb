package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/amnesia-dev/amnesia/internal/mcpserver"
	"github.com/amnesia-dev/amnesia/internal/service"
	"github.com/amnesia-dev/amnesia/internal/state"
)

type mcpOptions struct {
	tokenFile  string
	web        string
	forgetWait time.Duration
	noWorker   bool
}

func newMCPCommand(g *globalOptions) *cobra.Command {
	o := &mcpOptions{}
	cmd := &cobra.Command{
		Use:   "mcp [--token-file F]",
		Short: "Serve amnesia's MCP tools over stdio (for AI assistants)",
		Long: `mcp serves amnesia's Model Context Protocol tools over stdin/stdout: status, trace,
preview, forget, request, verify and certificate (see docs/mcp.md). An MCP client
(an AI assistant, an IDE) starts it as a subprocess.

It authenticates once, with the token in --token-file (mode 0600, made with
'amnesia tokens create') or in the environment variable AMNESIA_TOKEN; every
tool then runs with that token's role and scopes.

Tool results hold counts, ids, refs and states, never a subject id or content.
forget erases only after the human confirms the exact counts: the client asks
the human (elicitation); a client that cannot ask is told to send the human to
the web page of 'amnesia serve' (/ui/requests/<id>), and nothing is erased.

Unless --no-worker is given, this process also runs the erasures that are
confirmed (the same worker as 'amnesia serve'; several may share a PostgreSQL
ledger), so that forget can return the certificate. Logs go to
<state>/amnesia.log, never to stdout (stdout carries the protocol).`,
		Args: usageArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			token, err := mcpToken(o.tokenFile)
			if err != nil {
				return withCode(exitUsage, err)
			}
			dir, err := state.Open(g.stateDir)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithCancel(cmd.Context())
			defer cancel()
			logf, err := os.OpenFile(dir.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
			if err != nil {
				return fmt.Errorf("open log: %w", err)
			}
			defer logf.Close()
			log := slog.New(slog.NewJSONHandler(logf, nil)).With("component", "mcp")
			svc, err := service.Open(ctx, g.stateDir, service.Options{Log: log, NoWorker: o.noWorker})
			if err != nil {
				return err
			}
			defer svc.Close()
			p, err := svc.Authenticate(token)
			if err != nil {
				return fmt.Errorf("the MCP token is unknown or revoked (%w): create one with 'amnesia tokens create --role operator'", err)
			}
			web := o.web
			if web == "" {
				web = defaultWebBase(dir.Config)
			}
			srv := mcpserver.New(svc, mcpserver.Options{StateDir: g.stateDir, WebBase: web,
				ForgetWait: o.forgetWait, Logger: log, Version: strings.TrimPrefix(strings.SplitN(versionText(), "\n", 2)[0], "amnesia ")})
			// The worker loop (or, with --no-worker, only the requests'
			// bookkeeping: their states follow the queue).
			workerDone := make(chan error, 1)
			go func() { workerDone <- svc.Run(ctx) }()
			err = srv.Run(ctx, &mcp.StdioTransport{}, p)
			cancel()
			if werr := <-workerDone; werr != nil && !errors.Is(werr, context.Canceled) {
				log.Error("worker stopped", "error", werr.Error())
			}
			if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, mcp.ErrConnectionClosed) {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&o.tokenFile, "token-file", "", "file holding the token (mode 0600); default: env AMNESIA_TOKEN")
	cmd.Flags().StringVar(&o.web, "web", "", "base URL of the web page of 'amnesia serve' (default from serve.listen)")
	cmd.Flags().DurationVar(&o.forgetWait, "forget-wait", 2*time.Minute, "how long forget waits for a confirmed erasure to finish")
	cmd.Flags().BoolVar(&o.noWorker, "no-worker", false, "do not run confirmed erasures here (an 'amnesia serve' or 'amnesia worker' runs them)")
	return cmd
}

// mcpToken reads the token from file (which must not be readable by others)
// or from AMNESIA_TOKEN. Errors never hold the token.
func mcpToken(file string) (string, error) {
	if file == "" {
		t := strings.TrimSpace(os.Getenv("AMNESIA_TOKEN"))
		if t == "" {
			return "", errors.New("amnesia mcp needs a token: --token-file F (mode 0600) or the environment variable AMNESIA_TOKEN; create one with 'amnesia tokens create --role operator'")
		}
		return t, nil
	}
	fi, err := os.Stat(file)
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("--token-file %s is readable by others (mode %04o): run 'chmod 600 %s'", file, fi.Mode().Perm(), file)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	t := strings.TrimSpace(string(b))
	if t == "" {
		return "", fmt.Errorf("--token-file %s is empty: write the token 'amnesia tokens create' printed into it", file)
	}
	return t, nil
}

// defaultWebBase is the URL of serve's web page from the serve: section.
func defaultWebBase(cfg *state.Config) string {
	scheme := "http"
	if c, k := cfg.TLSFiles(); c != "" && k != "" {
		scheme = "https"
	}
	return scheme + "://" + cfg.Serve.ListenAddr()
}
