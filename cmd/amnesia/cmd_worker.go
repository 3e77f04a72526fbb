package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/subject"
)

// retryDelay is how long a job that stopped on an error waits before another
// claim; the error is in the log.
const retryDelay = time.Minute

type workerOptions struct {
	once  bool
	drain bool
	lease time.Duration
	poll  time.Duration
	id    string
}

func newWorkerCommand(g *globalOptions) *cobra.Command {
	o := &workerOptions{}
	cmd := &cobra.Command{
		Use:   "worker [--once | --drain] [--lease 10m]",
		Short: "Run the erasures queued with 'erase --queue'",
		Long: `Worker claims queued erasures from the ledger and runs each exactly like
'amnesia erase --trace <id>'. Any number of workers may share one PostgreSQL
ledger: a claim is exclusive (SELECT … FOR UPDATE SKIP LOCKED) and held for the
whole erasure by renewing its lease. The erasure of a worker that crashed is
claimed again when its lease ends and resumes from its journal to the same
certificate, so every worker MUST use the same state directory (traces,
journals, certificates, pepper and signing key live there). With file-based
stores (SQLite, sqlite-vec) the workers of one state directory run their
erasures one at a time (flock on <state>/worker.lock). See docs/ledger.md.

--once runs at most one erasure; --drain exits when nothing is waiting;
otherwise the worker polls until it is stopped (SIGINT/SIGTERM hand the
current erasure back to the queue).`,
		Args: usageArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.lease < 3*time.Second {
				return withCode(exitUsage, errors.New("--lease must be at least 3s"))
			}
			if err := subject.CheckFreeText("--id", o.id); err != nil {
				return err // the worker name goes into the queue and the log
			}
			a, err := openApp(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer a.Close()
			q, ok := a.ledger.(lineage.Queue)
			if !ok {
				return fmt.Errorf("the ledger %T has no erasure queue", a.ledger)
			}
			if o.id == "" {
				host, _ := os.Hostname()
				o.id = fmt.Sprintf("%s:%d", host, os.Getpid())
			}
			return a.work(cmd.Context(), q, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().BoolVar(&o.once, "once", false, "run at most one erasure, then exit with its exit code")
	cmd.Flags().BoolVar(&o.drain, "drain", false, "exit when no erasure is waiting")
	cmd.Flags().DurationVar(&o.lease, "lease", 10*time.Minute, "how long a claim lasts without renewal (renewed every third of it)")
	cmd.Flags().DurationVar(&o.poll, "poll", 5*time.Second, "how often an idle worker looks for work")
	cmd.Flags().StringVar(&o.id, "id", "", "worker name in the queue (default host:pid)")
	return cmd
}

func (a *app) work(ctx context.Context, q lineage.Queue, o *workerOptions, out, progress io.Writer) error {
	failed, first := 0, true
	for {
		j, err := q.Claim(ctx, o.id, o.lease)
		switch {
		case err != nil && ctx.Err() != nil:
			return nil // stopped
		case errors.Is(err, lineage.ErrNoJob) && (o.once || o.drain):
			fmt.Fprintf(out, "worker %s: no erasure waiting\n", o.id)
			if failed > 0 {
				return fmt.Errorf("%d erasures did not finish: see 'failed' and 'pending' jobs in the queue and %s", failed, a.dir.LogPath())
			}
			return nil
		case errors.Is(err, lineage.ErrNoJob) || (err != nil && !o.once && !o.drain):
			if err != nil {
				a.log.Error("worker claim", "worker", o.id, "err", err)
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(o.poll):
			}
			continue
		case err != nil:
			return err
		}
		claimed := func() {}
		if first {
			first, claimed = false, func() { testBarrier(o.id) }
		}
		jerr := a.runJob(ctx, q, j, o.lease, out, progress, claimed)
		if o.once || ctx.Err() != nil {
			return jerr
		}
		if jerr != nil && exitCode(jerr) != exitIncomplete {
			failed++
			fmt.Fprintf(progress, "worker %s: erasure %s: %v\n", o.id, saga.ID(j.ID), jerr)
		}
	}
}

// runJob runs the claimed erasure like `erase --trace`, renewing the lease
// meanwhile, and ends the claim: done with the certificate's digest, failed
// when it can never succeed, released otherwise.
func (a *app) runJob(ctx context.Context, q lineage.Queue, j *lineage.Job, lease time.Duration, out, progress io.Writer, claimed func()) error {
	id := saga.ID(j.ID)
	fmt.Fprintf(out, "worker %s: erasure %s (trace %s, attempt %d)\n", j.Worker, id, j.ID, j.Attempts)
	a.log.Info("worker claimed", "worker", j.Worker, "erasure", id, "trace", j.ID, "attempt", j.Attempts)
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	beat := make(chan struct{})
	go func() {
		defer close(beat)
		a.heartbeat(runCtx, q, j, lease, cancel)
	}()
	claimed()
	t, err := loadTrace(a, j.ID)
	if err == nil && (t.Subject != j.Subject || t.Scope != j.Scope) {
		err = fmt.Errorf("trace %s does not match the queued erasure", j.ID)
	}
	permanent := err != nil // a missing or damaged trace never gets better
	if err == nil {
		if err = a.preflight(runCtx, progress, t, false); err != nil {
			a.log.Warn("worker: erasure not started, a store of its trace is not ready; the job is released for a retry", "worker", j.Worker, "erasure", id, "retry_in", retryDelay.String())
		}
	}
	if err == nil {
		var unlock func()
		if unlock, err = a.lockFileStores(runCtx); err == nil {
			var res *saga.Result
			res, err = a.eraseResult(runCtx, out, progress, t, j.Reason, false, false)
			if res != nil {
				id = res.ID // a continuation of an incomplete erasure has its own id
			}
			unlock()
		}
	}
	cancel(nil)
	<-beat
	end, cancelEnd := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancelEnd()
	var qerr error
	switch {
	case errors.Is(context.Cause(runCtx), lineage.ErrLeaseLost):
		return fmt.Errorf("erasure %s stopped: %w (another worker resumes it from the journal)", id, lineage.ErrLeaseLost)
	case err == nil || exitCode(err) == exitIncomplete:
		var sum string
		if sum, qerr = fileDigest(a.dir.CertificatePath(id)); qerr == nil {
			qerr = q.Complete(end, j, sum)
		}
	case ctx.Err() != nil:
		qerr = q.Release(end, j, 0)
	case permanent || errors.Is(err, saga.ErrStaleTrace) || errors.Is(err, subject.ErrPersonalData) || errors.Is(err, lineage.ErrNoLineage) || errors.Is(err, lineage.ErrAlreadyErased):
		qerr = q.Fail(end, j, err.Error())
	default:
		qerr = q.Release(end, j, retryDelay)
	}
	a.log.Info("worker finished", "worker", j.Worker, "erasure", id, "err", errString(err), "queue_err", errString(qerr))
	if qerr != nil {
		return errors.Join(err, fmt.Errorf("erasure %s: update the queue: %w", id, qerr))
	}
	return err
}

// heartbeat renews the claim every third of the lease until ctx ends. When
// the claim is lost, or cannot be renewed before the lease runs out, it
// cancels the erasure: its journal leaves it resumable by the next claim.
func (a *app) heartbeat(ctx context.Context, q lineage.Queue, j *lineage.Job, lease time.Duration, cancel context.CancelCauseFunc) {
	until := time.Now().Add(lease)
	tick := time.NewTicker(lease / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		err := q.Renew(ctx, j, lease)
		switch {
		case err == nil:
			until = time.Now().Add(lease)
		case ctx.Err() != nil:
			return
		case errors.Is(err, lineage.ErrLeaseLost) || time.Now().Add(lease/3).After(until):
			a.log.Error("worker lost its claim", "worker", j.Worker, "trace", j.ID, "err", err)
			cancel(lineage.ErrLeaseLost)
			return
		default:
			a.log.Warn("worker lease renewal", "worker", j.Worker, "trace", j.ID, "err", err)
		}
	}
}

// lockFileStores serialises, across the workers of one state directory, the
// erasures of an installation with file-based stores (a path: SQLite,
// sqlite-vec): two processes deleting from and reclaiming one SQLite file at
// once find its WAL busy, and were seen to damage its indexes. It holds an
// exclusive flock on <state>/worker.lock until unlock; stores on a server are
// not serialised.
func (a *app) lockFileStores(ctx context.Context) (unlock func(), err error) {
	files := false
	for _, s := range a.dir.Config.Stores {
		files = files || s.Path != ""
	}
	if !files {
		return func() {}, nil
	}
	f, err := os.OpenFile(filepath.Join(a.dir.Path, "worker.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("worker lock: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil // closing releases the lock
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("worker lock: %w", err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// enqueue is `erase --queue`: the trace must still match the ledger (or its
// erasure must have begun), as for `erase`.
func (a *app) enqueue(ctx context.Context, out io.Writer, t *lineage.Trace, reason string) error {
	if strings.TrimSpace(reason) == "" {
		return withCode(exitUsage, errors.New("--reason is required to queue an erasure"))
	}
	if err := saga.CheckReason(a.dir, t, reason); err != nil {
		return err
	}
	q, ok := a.ledger.(lineage.Queue)
	if !ok {
		return fmt.Errorf("the ledger %T has no erasure queue", a.ledger)
	}
	id := saga.ID(t.ID)
	if _, err := os.Stat(a.dir.ErasureDir(id)); err != nil {
		k, err := subject.ParseKey(t.Subject)
		if err != nil {
			return err
		}
		v, err := a.ledger.View(ctx, t.Scope, k)
		if err != nil {
			return err
		}
		if now, err := lineage.BuildTrace(v); err != nil {
			return fmt.Errorf("%w: %w", saga.ErrStaleTrace, err)
		} else if now.ID != t.ID {
			return saga.ErrStaleTrace
		}
	}
	if err := q.Enqueue(ctx, t.ID, t.Subject, t.Scope, reason); err != nil {
		return err
	}
	a.log.Info("erasure queued", "erasure", id, "trace", t.ID, "subject", t.SubjectRef)
	fmt.Fprintf(out, "queued erasure %s of %s (trace %s): run 'amnesia worker'\n", id, t.SubjectRef, t.ID)
	return nil
}

// fileDigest returns "sha256:<hex>" of a file.
func fileDigest(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
