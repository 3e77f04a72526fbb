package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/internal/worker"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/subject"
)

type workerOptions struct {
	once  bool
	drain bool
	lease time.Duration
	poll  time.Duration
	id    string
	host  string
	// noWindow runs one erasure at a time even when erasure.window is set.
	noWindow bool
}

func newWorkerCommand(g *globalOptions) *cobra.Command {
	o := &workerOptions{}
	cmd := &cobra.Command{
		Use:   "worker [--once | --drain] [--lease 10m] [--no-window]",
		Short: "Run the erasures queued with 'erase --queue'",
		Long: `Worker claims queued erasures from the ledger and runs each exactly like
'amnesia erase --trace <id>'. Any number of workers may share one PostgreSQL
ledger: a claim is exclusive (SELECT … FOR UPDATE SKIP LOCKED) and held for the
whole erasure by renewing its lease. The erasure of a worker that crashed is
claimed again when its lease ends and resumes from its journal to the same
certificate. With a PostgreSQL ledger the journals, sealed evidence, traces and
certificates live in the ledger, so each host keeps its own state directory
(with the installation's pepper and signing key: docs/scale.md); with a SQLite
ledger they live in the state directory, which every worker of the
installation uses. With file-based
stores (SQLite, sqlite-vec) the workers of one state directory run their
erasures one at a time (flock on <state>/worker.lock). See docs/ledger.md.

Several hosts: give each store in files its owner: (the host whose disk holds
it) in amnesia.yaml and start each worker with --host NAME: it claims only the
erasures of its own stores in files, and those of server stores (docs/scale.md).

A queued erasure whose subject got artifacts captured after the request
(capture hides them as they are written) goes on with the subject's later
trace when it only adds artifacts, and the worker says so; any other change
since the request fails the job as stale (docs/windows.md).

--once runs at most one erasure; --drain exits when nothing is waiting;
otherwise the worker polls until it is stopped (SIGINT/SIGTERM hand the
current erasure back to the queue).

Erasure windows (erasure.window in amnesia.yaml, docs/windows.md): the worker
claims every waiting erasure (up to erasure.window_max) at once and runs them
together, each store reclaiming once for all, when the oldest has waited
erasure.window, when the earliest due date is less than the margin away, or
when window_max are waiting; --once runs one window, --drain runs windows at
once until nothing is waiting. Each erasure keeps its own claim and its own
certificate. After each erasure the worker prints its delete persistence
latency per store: from the request to the physical probe that found none of
the subject's bytes, for a store whose every artifact the erasure verified
physically (otherwise the state: not-physical, found, ...). --no-window runs one erasure at a time.`,
		Args: usageArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.lease < 3*time.Second {
				return withCode(exitUsage, errors.New("--lease must be at least 3s"))
			}
			if err := subject.CheckFreeText("--id", o.id); err != nil {
				return err // the worker name goes into the queue and the log
			}
			if o.host != "" && !state.ValidHostName(o.host) {
				return withCode(exitUsage, fmt.Errorf("--host %q: want a host name (letters, digits, '.', '-', '_'), as in the stores' owner: keys", o.host))
			}
			a, err := openApp(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer a.Close()
			q, err := worker.QueueOf(a.ledger)
			if err != nil {
				return err
			}
			if o.id == "" {
				host, _ := os.Hostname()
				o.id = fmt.Sprintf("%s:%d", host, os.Getpid())
			}
			out, progress := cmd.OutOrStdout(), cmd.ErrOrStderr()
			w := &worker.Worker{
				Env: a.env(), Queue: q, ID: o.id, Host: o.host, Lease: o.lease, Poll: o.poll,
				Once: o.once, Drain: o.drain, Progress: progress,
				Claimed: func(j *lineage.Job) {
					fmt.Fprintf(out, "worker %s: erasure %s (trace %s, attempt %d)\n", j.Worker, saga.ID(j.ID), j.ID, j.Attempts)
				},
				Continued: func(j *lineage.Job, c *worker.Continued) {
					how := "it erases the later trace"
					if c.Resumed {
						how = "it resumes the erasure of the later trace"
					}
					fmt.Fprintf(out, "worker %s: erasure %s: %d artifacts were captured for %s after the request (queued trace %s); %s %s as erasure %s, whose certificate lists them\n",
						j.Worker, saga.ID(j.ID), c.Added, c.Now.SubjectRef, c.Queued.ID, how, c.Now.ID, c.ErasureID())
				},
				Finished: func(_ *lineage.Job, res *saga.Result) { printResult(out, res, false) },
				Failed: func(j *lineage.Job, err error) {
					fmt.Fprintf(progress, "worker %s: erasure %s: %v\n", o.id, saga.ID(j.ID), err)
				},
				Idle: func() { fmt.Fprintf(out, "worker %s: no erasure waiting\n", o.id) },
				Latency: func(_ *lineage.Job, res *saga.Result, ls []saga.StoreLatency) {
					printLatency(out, res.ID, ls)
				},
			}
			if wait, max, margin := a.dir.Config.ErasureWindow(); wait > 0 && !o.noWindow {
				w.Window = &worker.Window{Wait: wait, Max: max, Margin: margin}
			}
			return w.Run(cmd.Context())
		},
	}
	cmd.Flags().BoolVar(&o.once, "once", false, "run at most one erasure, then exit with its exit code")
	cmd.Flags().BoolVar(&o.drain, "drain", false, "exit when no erasure is waiting")
	cmd.Flags().DurationVar(&o.lease, "lease", 10*time.Minute, "how long a claim lasts without renewal (renewed every third of it)")
	cmd.Flags().DurationVar(&o.poll, "poll", 5*time.Second, "how often an idle worker looks for work")
	cmd.Flags().StringVar(&o.id, "id", "", "worker name in the queue (default host:pid)")
	cmd.Flags().BoolVar(&o.noWindow, "no-window", false, "run one erasure at a time, at once, even when erasure.window is set in amnesia.yaml")
	cmd.Flags().StringVar(&o.host, "host", "", "this host's name: claim only erasures of the stores in files whose owner: it is, and of server stores (required when stores have owners)")
	return cmd
}

// enqueue is `erase --queue`: the trace must still match the ledger (or its
// erasure must have begun), as for `erase`; due is an RFC 3339 due date or
// "" (now + erasure.deadline).
func (a *app) enqueue(ctx context.Context, out io.Writer, t *lineage.Trace, reason, due string) error {
	if strings.TrimSpace(reason) == "" {
		return withCode(exitUsage, errors.New("--reason is required to queue an erasure"))
	}
	var at time.Time
	if due != "" {
		var err error
		if at, err = time.Parse(time.RFC3339, due); err != nil {
			return withCode(exitUsage, fmt.Errorf("--due %q: want an RFC 3339 date, e.g. 2026-12-24T12:00:00Z", due))
		}
		if err := lineage.CheckDue(at, time.Now()); err != nil {
			return withCode(exitUsage, fmt.Errorf("--due: %w", err))
		}
	}
	if err := worker.EnqueueDue(ctx, a.env(), t, reason, at); err != nil {
		return err
	}
	fmt.Fprintf(out, "queued erasure %s of %s (trace %s); its artifacts are suppressed, and so is what capture records for the subject while the job is pending or running: run 'amnesia worker'\n", saga.ID(t.ID), t.SubjectRef, t.ID)
	return nil
}

func init() { worker.TestBarrier = testBarrier }

// printLatency prints the delete persistence latency of an erasure, one
// line per store.
func printLatency(out io.Writer, id string, ls []saga.StoreLatency) {
	for _, l := range ls {
		if l.State == saga.LatencyClean {
			fmt.Fprintf(out, "  delete persistence latency %s %s: %s (request to the physical probe that found no bytes; every artifact verified physically)\n", id, l.Store, l.Latency.Round(time.Millisecond))
		} else {
			fmt.Fprintf(out, "  delete persistence latency %s %s: none (%s)\n", id, l.Store, l.State)
		}
	}
}
