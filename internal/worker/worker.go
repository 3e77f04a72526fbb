// Package worker runs the erasures queued in the ledger (lineage.Queue):
// the claim loop, the lease and its renewal, the lock that serialises the
// erasures of file-based stores, and the end of each claim. Each erasure
// runs through internal/erasure exactly like `amnesia erase --trace <id>`.
// How a claim ends is decided on the erasure's result and typed errors,
// never on exit codes or messages:
//
//   - finished (complete, or with an incomplete certificate,
//     saga.ErrIncomplete): the job is complete, with the certificate's
//     digest;
//   - cannot ever succeed (a missing, damaged or mismatched trace,
//     saga.ErrStaleTrace, lineage.ErrNoLineage, lineage.ErrAlreadyErased,
//     subject.ErrPersonalData): the job failed;
//   - anything else (a paused erasure, saga.ErrPending; a store not ready,
//     erasure.ErrNotReady; a store or ledger error; a subject that got a
//     capture each time its erasure was about to start, freshTries times:
//     Worker.raced): released for a retry after RetryDelay, or at once when
//     the worker is stopped;
//   - the claim was lost (lineage.ErrLeaseLost: seen by the lease renewal,
//     or a write of the erasure the ledger refused): nothing is written; the
//     next claim resumes the erasure from its journal.
//
// It prints nothing: the caller's hooks (Worker.Claimed, Finished, Failed,
// Idle) do.
package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/amnesia-dev/amnesia/internal/erasure"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/subject"
)

// RetryDelay is how long a job that stopped on an error waits before
// another claim; the error is in the log and, value-free, in the job
// (amnesia status shows it).
const RetryDelay = time.Minute

// TestBarrier, when set, is called by a worker once it has claimed its
// first erasure, before the erasure runs: a test hook (cmd/amnesia sets it
// from AMNESIA_TEST_WORKER_BARRIER) to show several workers sharing the
// work without relying on timing.
var TestBarrier func(worker string)

// Worker claims and runs queued erasures.
type Worker struct {
	Env   *erasure.Env
	Queue lineage.Queue
	ID    string // the worker's name in the queue and the log
	// Host is the host this worker runs on (--host). When set, the worker
	// claims only erasures bound to this host or to none
	// (lineage.RoutedQueue.ClaimOn): the stores in files whose owner: is
	// another host are erased there. An installation whose stores have
	// owners requires it.
	Host  string
	Lease time.Duration // how long a claim lasts without renewal; renewed every third of it
	Poll  time.Duration // how often an idle worker looks for work
	Once  bool          // run at most one erasure; Run returns its error
	Drain bool          // return when no erasure is waiting
	// Progress receives the human progress lines of the preflight and the
	// erasures; nil discards them.
	Progress io.Writer

	// Hooks, each optional. Claimed is called when an erasure is claimed;
	// Finished when its erasure finished (complete or not), before the
	// queue is updated; Failed when an erasure did not finish and the
	// worker goes on (not Once); Idle when nothing is waiting and the
	// worker returns (Once or Drain).
	Claimed  func(j *lineage.Job)
	Finished func(j *lineage.Job, res *saga.Result)
	Failed   func(j *lineage.Job, err error)
	Idle     func()
	// Continued, optional, is called when a claimed erasure goes on with a
	// later trace of its subject: artifacts were captured for it after the
	// request (requeue.go); the erasure that runs is c.ErasureID().
	Continued func(j *lineage.Job, c *Continued)
	// Latency, optional, receives the delete persistence latency of each
	// finished erasure, per store (saga.PersistenceLatency).
	Latency func(j *lineage.Job, res *saga.Result, ls []saga.StoreLatency)

	// Window, when set, runs the queued erasures in erasure windows
	// (window.go) instead of one at a time; Once then runs one window, and
	// Drain runs windows at once until nothing is waiting.
	Window *Window
	// Now is the clock of the window schedule (default time.Now): a test
	// hook. Due dates, queue times and leases are the ledger's.
	Now func() time.Time

	recent []time.Duration // run times of the latest windows
}

// QueueOf returns the erasure queue of a ledger.
func QueueOf(l lineage.Ledger) (lineage.Queue, error) {
	q, ok := l.(lineage.Queue)
	if !ok {
		return nil, fmt.Errorf("the ledger %T has no erasure queue", l)
	}
	return q, nil
}

// Run claims and runs erasures until ctx ends (then it returns nil), or,
// with Once, after one erasure (returning its error: a
// *saga.IncompleteError for an incomplete certificate), or, with Once or
// Drain, when nothing is waiting (returning an error when an erasure of
// this run did not finish), or, before a claim, when this host's
// configuration is no longer the installation's (state.ErrConfigMismatch:
// another host ran `amnesia config publish`).
func (w *Worker) Run(ctx context.Context) error {
	claim := func(ctx context.Context) (*lineage.Job, error) { return w.Queue.Claim(ctx, w.ID, w.Lease) }
	switch {
	case w.Host != "":
		rq, ok := w.Queue.(lineage.RoutedQueue)
		if !ok {
			return fmt.Errorf("worker --host %s: the ledger's queue %T cannot route erasures to hosts", w.Host, w.Queue)
		}
		claim = func(ctx context.Context) (*lineage.Job, error) { return rq.ClaimOn(ctx, w.ID, w.Host, w.Lease) }
		if !w.Env.Dir.Config.OwnsAny(w.Host) && w.Env.Dir.Config.HasOwners() {
			w.log().Warn("worker: no store in files names this host as its owner; it erases only server stores", "worker", w.ID, "host", w.Host)
		}
	case w.Env.Dir.Config.HasOwners():
		return errors.New("this installation's stores in files have owners (owner: in amnesia.yaml): start the worker with --host NAME, the name of the host it runs on, so that it erases only the stores in files this host holds")
	}
	if w.Window != nil {
		if w.Window.Max < 1 || w.Window.Wait <= 0 {
			return errors.New("worker: an erasure window needs a positive wait and a maximum of at least 1")
		}
		return w.runWindows(ctx)
	}
	failed, first := 0, true
	for {
		if err := w.checkConfig(ctx); err != nil {
			if ctx.Err() != nil {
				return nil // stopped
			}
			if errors.Is(err, state.ErrConfigMismatch) || w.Once || w.Drain {
				return err
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(w.Poll):
			}
			continue
		}
		j, err := claim(ctx)
		switch {
		case err != nil && ctx.Err() != nil:
			return nil // stopped
		case errors.Is(err, lineage.ErrNoJob) && (w.Once || w.Drain):
			if w.Idle != nil {
				w.Idle()
			}
			if failed > 0 {
				return fmt.Errorf("%d erasures did not finish: see 'failed' and 'pending' jobs in the queue and %s", failed, w.Env.Dir.LogPath())
			}
			return nil
		case errors.Is(err, lineage.ErrNoJob) || (err != nil && !w.Once && !w.Drain):
			if err != nil && !errors.Is(err, lineage.ErrNoJob) {
				w.log().Error("worker claim", "worker", w.ID, "err", err)
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(w.Poll):
			}
			continue
		case err != nil:
			return err
		}
		claimed := func() {}
		if first && TestBarrier != nil {
			claimed = func() { TestBarrier(w.ID) }
		}
		first = false
		jerr := w.runJob(ctx, j, claimed)
		if w.Once || ctx.Err() != nil {
			return jerr
		}
		if jerr != nil && !errors.Is(jerr, saga.ErrIncomplete) {
			failed++
			if w.Failed != nil {
				w.Failed(j, jerr)
			}
		}
	}
}

func (w *Worker) log() *slog.Logger { return w.Env.Logger() }

// checkConfig runs before each claim (one job, or one window): with a
// PostgreSQL ledger, this host's configuration must still be the
// installation's configuration version (state.Dir.CheckConfig, one read of
// the ledger's value). After `amnesia config publish` of another
// configuration, a running worker claims nothing more: it returns
// state.ErrConfigMismatch, with the message a host gets at its start.
// Erasures already claimed were finished before.
func (w *Worker) checkConfig(ctx context.Context) error {
	err := w.Env.Dir.CheckConfig(ctx, w.Env.Ledger)
	switch {
	case err == nil || ctx.Err() != nil:
	case errors.Is(err, state.ErrConfigMismatch):
		w.log().Error("worker stopped claiming: this host's configuration is no longer the installation's", "worker", w.ID, "err", err)
	default:
		w.log().Error("worker: configuration version not read; no claim until it is", "worker", w.ID, "err", err)
	}
	return err
}

// TestBeforeRun, when set, is called with the trace an erasure runs with
// right before the worker runs it (one at a time, or a window): a test hook
// to capture for its subject in the gap between the worker's trace and the
// erasure's own freshness check.
var TestBeforeRun func(traceID string)

// freshTries is how many times a worker traces a claimed job's subject
// again when captures keep making the trace stale before its erasure
// starts; after that the job is released for a retry.
const freshTries = 3

// raced reports whether err, the error of running the erasure of trace t
// for job j, is a capture for the subject that landed after the worker's
// trace (traceToRun) and before the erasure started (its freshness check,
// after the preflight and the file-store lock): the erasure did not start,
// and tracing the subject again takes the capture in.
func (w *Worker) raced(ctx context.Context, j *lineage.Job, t *lineage.Trace, err error) bool {
	if !errors.Is(err, saga.ErrStaleTrace) || ctx.Err() != nil || w.Env.Started(ctx, t) {
		return false
	}
	w.log().Warn("worker: the subject got a capture while its erasure was about to start; traced again", "worker", j.Worker, "erasure", saga.ID(j.ID), "trace", t.ID)
	return true
}

// racedOut is the error of a job whose subject kept getting captures as
// its erasure was about to start: not stale for good (end releases it for
// a retry after RetryDelay).
func (w *Worker) racedOut(j *lineage.Job) error {
	return fmt.Errorf("erasure %s: the subject got captures each time its erasure was about to start (%d tries); released for a retry in %s", saga.ID(j.ID), freshTries, RetryDelay)
}

// checkHost checks that the erasure of trace t (of job j) is this host's
// to run (Host): a job queued before its stores had owners carries none,
// so the trace is checked against this host's configuration all the same.
func (w *Worker) checkHost(j *lineage.Job, t *lineage.Trace) error {
	if w.Host == "" {
		return nil
	}
	owner, oerr := OwnerOf(w.Env.Dir.Config, t)
	if oerr != nil {
		return &badTraceError{oerr}
	}
	if owner != "" && owner != w.Host {
		w.log().Warn("worker: erasure of another host's stores", "worker", j.Worker, "erasure", saga.ID(j.ID), "owner", owner, "host", w.Host)
		return fmt.Errorf("erasure %s erases stores in files held by host %s, not by this host (%s): released for that host's worker", saga.ID(j.ID), owner, w.Host)
	}
	return nil
}

// badTraceError is a queued erasure whose trace is missing, damaged or not
// the queued one: it never gets better, so the job fails.
type badTraceError struct{ err error }

func (e *badTraceError) Error() string { return e.err.Error() }
func (e *badTraceError) Unwrap() error { return e.err }

// runJob runs the claimed erasure like `erase --trace`, renewing the lease
// meanwhile, and ends the claim: done with the certificate's digest, failed
// when it can never succeed, released otherwise.
func (w *Worker) runJob(ctx context.Context, j *lineage.Job, claimed func()) error {
	id := saga.ID(j.ID)
	if w.Claimed != nil {
		w.Claimed(j)
	}
	w.log().Info("worker claimed", "worker", j.Worker, "erasure", id, "trace", j.ID, "attempt", j.Attempts)
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	beat := make(chan struct{})
	go func() {
		defer close(beat)
		w.heartbeat(runCtx, j, cancel)
	}()
	claimed()
	var res *saga.Result
	t, err := w.Env.LoadTrace(runCtx, j.ID)
	if err == nil && (t.Subject != j.Subject || t.Scope != j.Scope) {
		err = fmt.Errorf("trace %s does not match the queued erasure", j.ID)
	}
	if err != nil {
		err = &badTraceError{err}
	}
	if err == nil {
		err = w.checkHost(j, t)
	}
	for try := 1; err == nil; try++ {
		// Artifacts captured after the request: go on with the later trace
		// when it only adds to the queued one (requeue.go).
		var rt *lineage.Trace
		if rt, err = w.traceToRun(runCtx, j, t); err == nil && rt != t {
			err = w.checkHost(j, rt)
		}
		if err == nil {
			if _, err = w.Env.Preflight(runCtx, w.Progress, rt, false); err != nil {
				w.log().Warn("worker: erasure not started, a store of its trace is not ready; the job is released for a retry", "worker", j.Worker, "erasure", id, "retry_in", RetryDelay.String())
			}
		}
		if err != nil {
			break
		}
		var unlock func()
		if unlock, err = w.lockFileStores(runCtx); err != nil {
			break
		}
		if TestBeforeRun != nil {
			TestBeforeRun(rt.ID)
		}
		res, err = w.Env.Run(runCtx, rt, j.Reason, erasure.Options{Progress: w.Progress, Claim: j})
		unlock()
		if !w.raced(runCtx, j, rt, err) {
			break
		}
		if try == freshTries {
			err = w.racedOut(j)
			break
		}
		res, err = nil, nil // trace again
	}
	if res != nil {
		if w.Finished != nil {
			w.Finished(j, res)
		}
		err = res.Err()
		w.latency(ctx, j, res)
	}
	cancel(nil)
	<-beat
	lost := errors.Is(context.Cause(runCtx), lineage.ErrLeaseLost)
	err, qerr := w.end(ctx, j, res, err, lost, ctx.Err() != nil)
	if qerr != nil {
		return errors.Join(err, qerr)
	}
	return err
}

// end ends the claim j on the erasure's result res and error err, and
// returns the erasure's error and that of the queue's update: done with
// the certificate's digest when it finished, nothing written when the
// claim was lost (lost, or a write of the erasure the ledger refused),
// released at once when the worker stopped (stopped), failed when the
// erasure can never succeed, released for a retry after RetryDelay
// otherwise.
func (w *Worker) end(ctx context.Context, j *lineage.Job, res *saga.Result, err error, lost, stopped bool) (error, error) {
	id := saga.ID(j.ID)
	if res != nil {
		id = res.ID // a continuation of an incomplete erasure has its own id
	}
	end, cancelEnd := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancelEnd()
	var qerr error
	var bad *badTraceError
	switch {
	case lost || errors.Is(err, lineage.ErrLeaseLost):
		// Lost as the heartbeat saw it, or as the ledger refused a write of
		// the erasure (its lease ran out: lineage.ErasureRecords): the job
		// is claimable again as it is; this worker no longer touches it.
		return fmt.Errorf("erasure %s stopped: %w (another worker resumes it from the journal)", id, lineage.ErrLeaseLost), nil
	case res != nil: // finished: complete, or with an incomplete certificate
		var b []byte
		if b, qerr = w.Env.Durable().Certificate(end, id); qerr == nil {
			qerr = w.Queue.Complete(end, j, saga.Digest(b))
		}
	case stopped:
		qerr = w.Queue.Release(end, j, 0, "")
	case errors.As(err, &bad) || errors.Is(err, saga.ErrStaleTrace) || errors.Is(err, subject.ErrPersonalData) || errors.Is(err, lineage.ErrNoLineage) || errors.Is(err, lineage.ErrAlreadyErased):
		qerr = w.Queue.Fail(end, j, err.Error())
	default:
		qerr = w.Queue.Release(end, j, RetryDelay, err.Error())
	}
	w.log().Info("worker finished", "worker", j.Worker, "erasure", id, "err", errString(err), "queue_err", errString(qerr))
	if qerr != nil {
		qerr = fmt.Errorf("erasure %s: update the queue: %w", id, qerr)
	}
	return err, qerr
}

// heartbeat renews the claim every third of the lease until ctx ends. When
// the claim is lost, or cannot be renewed before the lease runs out, it
// cancels the erasure: its journal leaves it resumable by the next claim.
func (w *Worker) heartbeat(ctx context.Context, j *lineage.Job, cancel context.CancelCauseFunc) {
	until := time.Now().Add(w.Lease)
	tick := time.NewTicker(w.Lease / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		err := w.Queue.Renew(ctx, j, w.Lease)
		switch {
		case err == nil:
			until = time.Now().Add(w.Lease)
		case ctx.Err() != nil:
			return
		case errors.Is(err, lineage.ErrLeaseLost) || time.Now().Add(w.Lease/3).After(until):
			w.log().Error("worker lost its claim", "worker", j.Worker, "trace", j.ID, "err", err)
			cancel(lineage.ErrLeaseLost)
			return
		default:
			w.log().Warn("worker lease renewal", "worker", j.Worker, "trace", j.ID, "err", err)
		}
	}
}

// lockFileStores serialises, across the workers of one state directory, the
// erasures of an installation with file-based stores (a path: SQLite,
// sqlite-vec): two processes deleting from and reclaiming one SQLite file at
// once find its WAL busy, and were seen to damage its indexes. It holds an
// exclusive flock on <state>/worker.lock until unlock; stores on a server are
// not serialised.
func (w *Worker) lockFileStores(ctx context.Context) (unlock func(), err error) {
	files := false
	for _, s := range w.Env.Dir.Config.Stores {
		files = files || s.Path != ""
	}
	if !files {
		return func() {}, nil
	}
	f, err := os.OpenFile(filepath.Join(w.Env.Dir.Path, "worker.lock"), os.O_CREATE|os.O_RDWR, 0o600)
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

// Enqueue queues the erasure of trace t for a worker (`erase --queue`),
// due after the configured deadline (EnqueueDue).
func Enqueue(ctx context.Context, env *erasure.Env, t *lineage.Trace, reason string) error {
	return EnqueueDue(ctx, env, t, reason, time.Time{})
}

// EnqueueDue queues the erasure of trace t for a worker, due at due (zero:
// now + erasure.deadline of amnesia.yaml), and suppresses the trace's
// artifacts at once: every read through capture and the API hides them from
// now on, however long the erasure waits for its window. As for a new
// erasure, the reason must hold no personal data and the trace must still
// match the ledger (saga.CheckFresh), unless its erasure has begun; a due
// date in the past or more than lineage.MaxDue away is refused
// (lineage.ErrDue). A trace already queued keeps its due date.
//
// Suppression is idempotent per artifact (lineage.Ledger.Suppress), under
// the erasure's own id: the erasure's suppress step finds it done and adds
// nothing. It comes after the job is queued, so that an error leaves the
// erasure queued (the worker suppresses when it runs) rather than the
// subject hidden with no erasure to come; queueing again retries it.
func EnqueueDue(ctx context.Context, env *erasure.Env, t *lineage.Trace, reason string, due time.Time) error {
	if err := saga.CheckReason(env.Dir, t, reason); err != nil {
		return err
	}
	now := time.Now()
	if err := lineage.CheckDue(due, now); err != nil {
		return fmt.Errorf("enqueue erasure: %w", err)
	}
	if due.IsZero() {
		due = now.Add(env.Dir.Config.ErasureDeadline())
	}
	q, err := QueueOf(env.Ledger)
	if err != nil {
		return err
	}
	if !env.Started(ctx, t) {
		if err := saga.CheckFresh(ctx, env.Ledger, t); err != nil {
			return err
		}
	}
	owner, err := OwnerOf(env.Dir.Config, t)
	if err != nil {
		return err
	}
	if wq, ok := q.(lineage.WindowQueue); ok {
		err = wq.EnqueueDue(ctx, t.ID, t.Subject, t.Scope, reason, owner, due)
	} else if owner == "" {
		err = q.Enqueue(ctx, t.ID, t.Subject, t.Scope, reason)
	} else if rq, ok := q.(lineage.RoutedQueue); ok {
		err = rq.EnqueueFor(ctx, t.ID, t.Subject, t.Scope, reason, owner)
	} else {
		err = fmt.Errorf("enqueue erasure: the ledger's queue %T cannot route erasures to host %s", q, owner)
	}
	if err != nil {
		return err
	}
	ids := make([]string, 0, len(t.Artifacts))
	for _, a := range t.Artifacts {
		ids = append(ids, a.ID)
	}
	if err := env.Ledger.Suppress(ctx, saga.ID(t.ID), ids); err != nil {
		return fmt.Errorf("erasure %s is queued but its artifacts are not suppressed yet (its worker suppresses them when it runs; queue it again to retry now): %w", saga.ID(t.ID), err)
	}
	env.Logger().Info("erasure queued", "erasure", saga.ID(t.ID), "trace", t.ID, "subject", t.SubjectRef, "due", due.UTC().Format(time.RFC3339), "suppressed", len(ids))
	return nil
}

// OwnerOf returns the host that must run the erasure of t: the owner of
// the stores in files its artifacts are in (owner: in amnesia.yaml), "" when
// it has none there. A trace whose stores in files have two owners cannot be
// erased by one worker: an error that says so.
func OwnerOf(cfg *state.Config, t *lineage.Trace) (string, error) {
	owner, _, err := ownerOf(cfg, t)
	return owner, err
}

// ErrOtherHost is the refusal of an erasure run at once on a host that is
// not the one holding its stores in files (owner: in amnesia.yaml), or on a
// host not named while stores have owners (CheckHost).
var ErrOtherHost = errors.New("the erasure's stores in files are held by another host")

// HostError is CheckHost's refusal; it wraps ErrOtherHost. It names stores
// and hosts, never the subject.
type HostError struct {
	Store string // a store in files of the trace, held by Owner
	Owner string // the host that must run the erasure
	Host  string // the host named by the caller, "" when none was
}

func (e *HostError) Error() string {
	if e.Host == "" {
		return fmt.Sprintf("store %q is in files held by host %s (owner: in amnesia.yaml) and no host name says which host this is", e.Store, e.Owner)
	}
	return fmt.Sprintf("store %q is in files held by host %s (owner: in amnesia.yaml), not by %s", e.Store, e.Owner, e.Host)
}

func (e *HostError) Unwrap() error { return ErrOtherHost }

// CheckHost checks, before an erasure run at once, that host may run the
// erasure of t: nil when none of its stores in files has an owner, or host
// is their owner; a *HostError when another host holds them, or when host
// is "" and they have an owner (the configured path of such a store names a
// file on its owner's disk: here it may be missing, or another file);
// OwnerOf's error when they have two owners. It opens and erases nothing.
// `amnesia forget` and `amnesia erase` (--host) and capture.App.Erase
// (EraseOptions.Host) refuse with it; a worker checks its claims itself.
func CheckHost(cfg *state.Config, t *lineage.Trace, host string) error {
	owner, storeName, err := ownerOf(cfg, t)
	if err != nil {
		return err
	}
	if owner == "" || owner == host {
		return nil
	}
	return &HostError{Store: storeName, Owner: owner, Host: host}
}

// ownerOf is OwnerOf; it also returns the first store of t in files that
// the owner holds ("" with no owner).
func ownerOf(cfg *state.Config, t *lineage.Trace) (owner, from string, err error) {
	owners := cfg.Owners()
	if len(owners) == 0 {
		return "", "", nil
	}
	see := func(storeName string) error {
		o := owners[storeName]
		switch {
		case o == "" || o == owner:
		case owner == "":
			owner, from = o, storeName
		default:
			return fmt.Errorf("trace %s has artifacts in store %q (owner %s) and in store %q (owner %s): one erasure runs on one host: give these stores one owner", t.ID, from, owner, storeName, o)
		}
		return nil
	}
	for _, a := range t.Artifacts {
		if err := see(a.Store); err != nil {
			return "", "", err
		}
	}
	for _, p := range t.Plan {
		if err := see(p.Store); err != nil {
			return "", "", err
		}
	}
	return owner, from, nil
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
