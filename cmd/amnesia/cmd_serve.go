package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/amnesia-dev/amnesia/internal/mcpserver"
	"github.com/amnesia-dev/amnesia/internal/server"
	"github.com/amnesia-dev/amnesia/internal/service"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/internal/web"
)

type serveOptions struct {
	listen   string
	noWorker bool
	host     string
	lease    time.Duration
	poll     time.Duration
	grace    time.Duration
	id       string
}

func newServeCommand(g *globalOptions) *cobra.Command {
	o := &serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve [--listen 127.0.0.1:7468]",
		Short: "Run the HTTP API, the web page and MCP, and erase confirmed requests",
		Long: `Serve runs amnesia as a daemon next to an application: the HTTP API (record
lineage from any language, trace, erasure requests with preview and confirmation,
certificates, the transparency log; OpenAPI 3.1 at /openapi.json), the web page at
/, MCP at /mcp, Prometheus metrics at /metrics, and a worker loop that runs the
confirmed erasures (like 'amnesia worker': several serve processes on one PostgreSQL
ledger and one state directory erase each subject exactly once).

Every /v1 call needs a bearer token ('amnesia tokens create'). Settings come from
the serve: section of amnesia.yaml (listen, tls_cert/tls_key, max_body, rate, due,
webhook_secret, metrics); --listen overrides serve.listen. Logs are JSON lines on
standard error and in <state>/amnesia.log, never with personal data or tokens.

SIGTERM or SIGINT stop it gracefully: requests in flight finish (up to --grace), a
running erasure is handed back to the queue and resumes from its journal at the next
claim, here or in another serve process. See docs/serve.md.`,
		Args: usageArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return runServe(ctx, g, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&o.listen, "listen", "", "host:port to listen on (default: serve.listen, else 127.0.0.1:7468)")
	cmd.Flags().BoolVar(&o.noWorker, "no-worker", false, "serve the API only; run no erasure (another serve or 'amnesia worker' runs them)")
	cmd.Flags().DurationVar(&o.lease, "lease", 30*time.Second, "how long a claimed erasure is held without renewal (renewed every third of it): a killed serve's erasure resumes after it")
	cmd.Flags().DurationVar(&o.poll, "poll", time.Second, "how often the worker loop looks for work and updates the requests")
	cmd.Flags().DurationVar(&o.grace, "grace", 30*time.Second, "how long shutdown waits for requests in flight")
	cmd.Flags().StringVar(&o.id, "id", "", "worker name in the queue (default serve:host:pid)")
	cmd.Flags().StringVar(&o.host, "host", "", "this host's name: its worker erases only the stores in files whose owner: it is (and server stores); required when stores have owners")
	return cmd
}

func runServe(ctx context.Context, g *globalOptions, o *serveOptions, out, errw io.Writer) error {
	if o.lease < 3*time.Second {
		return withCode(exitUsage, errors.New("--lease must be at least 3s"))
	}
	if o.poll <= 0 || o.grace <= 0 {
		return withCode(exitUsage, errors.New("--poll and --grace must be positive"))
	}
	dir, err := state.Open(g.stateDir)
	if err != nil {
		return err
	}
	if o.host != "" && !state.ValidHostName(o.host) {
		return withCode(exitUsage, fmt.Errorf("--host %q: want a host name (letters, digits, '.', '-', '_'), as in the stores' owner: keys", o.host))
	}
	if o.host == "" && !o.noWorker && dir.Config.HasOwners() {
		return withCode(exitUsage, errors.New("this installation's stores in files have owners (owner: in amnesia.yaml): start serve with --host NAME, the name of this host, or with --no-worker"))
	}
	sc := dir.Config.Serve
	logFile, err := os.OpenFile(dir.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	defer logFile.Close()
	log := slog.New(slog.NewJSONHandler(io.MultiWriter(errw, logFile), nil))
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	svc, err := service.Open(ctx, g.stateDir, service.Options{
		Log: log, Registerer: reg, Lease: o.lease, PollInterval: o.poll, WorkerID: o.id, Host: o.host, NoWorker: o.noWorker,
	})
	if err != nil {
		return err
	}
	defer svc.Close()
	addr := sc.ListenAddr()
	if o.listen != "" {
		addr = o.listen
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("serve: listen on %s: %w", addr, err)
	}
	cert, key := dir.Config.TLSFiles()
	scheme := "http"
	if cert != "" {
		scheme = "https"
	}
	base := scheme + "://" + ln.Addr().String()
	mcp := mcpserver.New(svc, mcpserver.Options{StateDir: dir.Path, WebBase: base, Logger: log, Version: versionText()})
	page := web.New(svc, web.Options{Secure: cert != "", Logger: log})
	srv, err := server.New(server.Options{
		Service: svc, Log: log, Registry: reg, MaxBody: sc.MaxBodyBytes(), Rate: sc.RatePerSecond(),
		MetricsToken: sc.Metrics == "token",
		Mounts:       map[string]http.Handler{"/mcp": mcp.Handler(), "/": page},
	})
	if err != nil {
		ln.Close()
		return err
	}
	if host, _, _ := net.SplitHostPort(ln.Addr().String()); !net.ParseIP(host).IsLoopback() && cert == "" {
		log.Warn("serve listens beyond loopback without TLS: bearer tokens cross the network in clear; set serve.tls_cert and serve.tls_key")
	}
	if len(svc.WebhookSecret()) == 0 {
		log.Info("webhook intake off: serve.webhook_secret is not set")
	}
	log.Info("serve started", "addr", ln.Addr().String(), "tls", cert != "", "worker", !o.noWorker)
	fmt.Fprintf(out, "amnesia serve: listening on %s\n", base)
	runCtx, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	runDone := make(chan error, 1)
	go func() { runDone <- svc.Run(runCtx) }()
	serr := srv.Serve(ctx, ln, cert, key, o.grace)
	// The HTTP server has stopped; stop the worker loop: a running erasure
	// is handed back to the queue and resumes from its journal.
	stopRun()
	rerr := <-runDone
	log.Info("serve stopped")
	if serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", serr)
	}
	return rerr
}
