package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/amnesia-dev/amnesia/internal/erasure"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
)

// Window is a worker's erasure window schedule (erasure: in amnesia.yaml,
// docs/windows.md). A worker with a Window does not run each queued erasure
// as soon as it can claim it: it watches what is waiting and claims up to
// Max erasures at once, earliest due first, when the window must close:
//
//   - Max erasures are waiting; or
//   - the oldest has waited Wait; or
//   - the earliest due date is less than the margin away: Margin, or,
//     when Margin is 0, twice the longest of the worker's recent windows
//     (at least MinMargin).
//
// It runs them as one window (erasure.Env.RunWindow: each store reclaims
// once for all), each erasure journaled, completed or failed, and certified
// on its own.
type Window struct {
	Wait   time.Duration
	Max    int
	Margin time.Duration
}

// MinMargin is the least margin a learned window margin has.
const MinMargin = time.Minute

// recentWindows is how many recent window run times the margin learns from.
const recentWindows = 8

// margin is the window's safety margin before the earliest due date.
func (p *Window) margin(recent []time.Duration) time.Duration {
	if p.Margin > 0 {
		return p.Margin
	}
	m := MinMargin
	for _, d := range recent {
		m = max(m, 2*d)
	}
	return m
}

// CloseAt returns when the window over the waiting erasures w must run
// (the zero time: nothing is waiting), with margin before the earliest due
// date.
func (p *Window) CloseAt(w lineage.Waiting, margin time.Duration) time.Time {
	if w.Count == 0 {
		return time.Time{}
	}
	if w.Count >= p.Max {
		return w.OldestQueued // now: it is in the past
	}
	at := w.OldestQueued.Add(p.Wait)
	if due := w.EarliestDue.Add(-margin); due.Before(at) {
		at = due
	}
	return at
}

func (w *Worker) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}

// Tick makes one scheduling decision of a worker with a Window, at w.Now:
// when a window must close (or now is true: --drain, --once), it claims and
// runs one. It returns how many erasures the window held (0: none ran),
// how many of them did not finish, when the next window must close (zero:
// nothing is waiting), and an error that stopped the window or the claim.
func (w *Worker) Tick(ctx context.Context, now bool) (ran, failed int, next time.Time, err error) {
	wq, ok := w.Queue.(lineage.WindowQueue)
	if !ok {
		return 0, 0, time.Time{}, fmt.Errorf("erasure windows: the ledger's queue %T has no due dates or windows", w.Queue)
	}
	waiting, err := wq.Waiting(ctx, w.Host)
	if err != nil || waiting.Count == 0 {
		return 0, 0, time.Time{}, err
	}
	at := w.Window.CloseAt(waiting, w.Window.margin(w.recent))
	if !now && w.now().Before(at) {
		return 0, 0, at, nil
	}
	if err := w.checkConfig(ctx); err != nil {
		return 0, 0, time.Time{}, err
	}
	jobs, err := wq.ClaimWindow(ctx, w.ID, w.Host, w.Window.Max, w.Lease)
	if errors.Is(err, lineage.ErrNoJob) { // another worker took them
		return 0, 0, time.Time{}, nil
	}
	if err != nil {
		return 0, 0, time.Time{}, err
	}
	start := time.Now()
	failed, err = w.runWindow(ctx, jobs)
	w.recent = append(w.recent, time.Since(start))
	if len(w.recent) > recentWindows {
		w.recent = w.recent[1:]
	}
	return len(jobs), failed, time.Time{}, err
}

// runWindows is Run for a worker with a Window.
func (w *Worker) runWindows(ctx context.Context) error {
	failed := 0
	for {
		ran, f, next, err := w.Tick(ctx, w.Once || w.Drain)
		failed += f
		switch {
		case ctx.Err() != nil:
			if w.Once {
				return err
			}
			return nil
		case err != nil && (w.Once || w.Drain || errors.Is(err, state.ErrConfigMismatch)):
			return err
		case err != nil:
			w.log().Error("worker window", "worker", w.ID, "err", err)
		case ran > 0 && w.Once:
			if f > 0 {
				return fmt.Errorf("%d erasures of the window did not finish: see 'failed' and 'pending' jobs in the queue and %s", f, w.Env.Dir.LogPath())
			}
			return nil
		case ran > 0:
			continue
		case w.Once || w.Drain:
			if w.Idle != nil {
				w.Idle()
			}
			if failed > 0 {
				return fmt.Errorf("%d erasures did not finish: see 'failed' and 'pending' jobs in the queue and %s", failed, w.Env.Dir.LogPath())
			}
			return nil
		}
		wait := w.Poll
		if !next.IsZero() {
			wait = min(wait, max(next.Sub(w.now()), 0))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// runWindow runs the claimed window jobs and ends each claim on its own. It
// returns how many did not finish. Every claim is renewed while the window
// runs; a claim that is lost stops the whole window (the erasures share
// their reclaims and byte scans, so one cannot go on without the others
// being run again): nothing is written for the lost one, the others (their
// claims still renew) are handed back at once and resume from their
// journals at their next claim.
func (w *Worker) runWindow(ctx context.Context, jobs []*lineage.Job) (failed int, err error) {
	for _, j := range jobs {
		if w.Claimed != nil {
			w.Claimed(j)
		}
	}
	w.log().Info("worker window", "worker", w.ID, "erasures", len(jobs))
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var lost sync.Map // trace id -> true
	var beats sync.WaitGroup
	for _, j := range jobs {
		beats.Add(1)
		go func() {
			defer beats.Done()
			w.heartbeat(runCtx, j, func(cause error) {
				lost.Store(j.ID, true)
				cancel(cause)
			})
		}()
	}
	res := make([]*saga.Result, len(jobs))
	errs := make([]error, len(jobs))
	var ready, slotOf []int // jobs that run, and the erasure (index in qs) each runs
	var qs []erasure.Queued
	slot := map[string]int{} // trace id -> index in qs
	for i, j := range jobs {
		t, err := w.prepare(runCtx, j)
		if err != nil {
			errs[i] = err
			continue
		}
		// Two jobs of one subject (a trace queued, then a later one) may
		// both run the later trace (requeue.go): one erasure runs it, and
		// both jobs end with its result.
		k, ok := slot[t.ID]
		if !ok {
			k = len(qs)
			slot[t.ID] = k
			qs = append(qs, erasure.Queued{Trace: t, Reason: j.Reason, Claim: j})
		}
		ready = append(ready, i)
		slotOf = append(slotOf, k)
	}
	if len(qs) > 0 {
		unlock, lerr := w.lockFileStores(runCtx)
		if lerr != nil {
			for _, i := range ready {
				errs[i] = lerr
			}
		} else {
			if TestBeforeRun != nil {
				for _, q := range qs {
					TestBeforeRun(q.Trace.ID)
				}
			}
			out, berr := w.Env.RunWindow(runCtx, qs, erasure.Options{Progress: w.Progress})
			switch {
			case out != nil: // finished, or paused for some (nil result)
				for n, i := range ready {
					k := slotOf[n]
					res[i] = out[k]
					if out[k] == nil {
						errs[i] = pausedIn(berr, saga.ID(qs[k].Trace.ID))
					}
				}
			case runCtx.Err() != nil || errors.Is(berr, lineage.ErrLeaseLost):
				for _, i := range ready {
					errs[i] = berr
				}
			default:
				// The window stopped on one erasure's error (a capture for
				// its subject after prepare took its trace, for one, makes
				// it stale: it traces its subject again in runAlone). The
				// erasure the error names runs alone, from its journal; the
				// others run again as one window. When that one stops too,
				// or the error names none of them, each runs alone, so that
				// one erasure that cannot go on does not hold back the
				// others.
				again := w.rebatch(runCtx, qs, berr)
				for n, i := range ready {
					k := slotOf[n]
					if again[k] != nil {
						res[i], errs[i] = again[k].res, again[k].err
						continue
					}
					res[i], errs[i] = w.runAlone(runCtx, jobs[i], qs[k])
				}
			}
			unlock()
		}
	}
	stopped := runCtx.Err() != nil // the worker stopped, or a claim was lost
	cancel(nil)
	beats.Wait()
	var qerrs []error
	for i, j := range jobs {
		_, wasLost := lost.Load(j.ID)
		handBack := stopped
		if res[i] == nil && !wasLost && errors.Is(errs[i], lineage.ErrLeaseLost) {
			// The window stopped on a lost claim: a write the ledger
			// refused names no job, so each claim is renewed to learn
			// which were lost. One still held is handed back at once.
			if w.stillHeld(ctx, j) {
				errs[i] = fmt.Errorf("erasure %s: its window stopped on another erasure's lost claim; handed back, it resumes from its journal at its next claim", saga.ID(j.ID))
				handBack = true
			}
		}
		if res[i] != nil {
			if w.Finished != nil {
				w.Finished(j, res[i])
			}
			errs[i] = res[i].Err()
			w.latency(ctx, j, res[i])
		}
		jerr, qerr := w.end(ctx, j, res[i], errs[i], wasLost, handBack && res[i] == nil)
		if qerr != nil {
			qerrs = append(qerrs, qerr)
		}
		if jerr = errors.Join(jerr, qerr); jerr != nil && !errors.Is(jerr, saga.ErrIncomplete) {
			failed++
			if w.Failed != nil && ctx.Err() == nil {
				w.Failed(j, jerr)
			}
		}
	}
	return failed, errors.Join(qerrs...)
}

// slotOutcome is the outcome of one erasure of a window run again.
type slotOutcome struct {
	res *saga.Result
	err error
}

// rebatch runs again, as one window, the erasures of qs but the one whose
// error (berr, a *saga.BatchError) stopped their window. It returns the
// outcome of each erasure it ran, indexed as qs; nil for the one named, and
// for all when berr names none of them or the second window stopped on an
// error too: those run alone.
func (w *Worker) rebatch(ctx context.Context, qs []erasure.Queued, berr error) []*slotOutcome {
	out := make([]*slotOutcome, len(qs))
	var be *saga.BatchError
	bad := -1
	if errors.As(berr, &be) {
		for k, q := range qs {
			if saga.ID(q.Trace.ID) == be.Erasure {
				bad = k
			}
		}
	}
	if bad < 0 || len(qs) < 3 {
		w.log().Warn("worker window stopped; its erasures run one by one", "worker", w.ID, "err", berr)
		return out
	}
	w.log().Warn("worker window stopped on one erasure's error; it runs alone, the others again as one window", "worker", w.ID, "erasure", be.Erasure, "err", berr)
	rest := make([]erasure.Queued, 0, len(qs)-1)
	idx := make([]int, 0, len(qs)-1)
	for k, q := range qs {
		if k != bad {
			rest = append(rest, q)
			idx = append(idx, k)
		}
	}
	got, err := w.Env.RunWindow(ctx, rest, erasure.Options{Progress: w.Progress})
	switch {
	case got != nil:
		for n, k := range idx {
			o := &slotOutcome{res: got[n]}
			if got[n] == nil {
				o.err = pausedIn(err, saga.ID(rest[n].Trace.ID))
			}
			out[k] = o
		}
	case ctx.Err() != nil || errors.Is(err, lineage.ErrLeaseLost):
		for _, k := range idx {
			out[k] = &slotOutcome{err: err}
		}
	default:
		w.log().Warn("worker window stopped again; its erasures run one by one", "worker", w.ID, "err", err)
	}
	return out
}

// stillHeld reports whether the claim j is still this worker's: it renews
// it (lineage.Queue.Renew refuses a claim that is not current).
func (w *Worker) stillHeld(ctx context.Context, j *lineage.Job) bool {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	err := w.Queue.Renew(rctx, j, w.Lease)
	if err != nil && !errors.Is(err, lineage.ErrLeaseLost) {
		w.log().Warn("worker: claim not renewed after its window stopped", "worker", j.Worker, "trace", j.ID, "err", err)
	}
	return err == nil
}

// prepare loads and checks the trace of a claimed job as runJob does: it
// must match the job, belong to this host, be fresh (unless its erasure
// began) and have its stores ready.
func (w *Worker) prepare(ctx context.Context, j *lineage.Job) (*lineage.Trace, error) {
	t, err := w.Env.LoadTrace(ctx, j.ID)
	if err == nil && (t.Subject != j.Subject || t.Scope != j.Scope) {
		err = fmt.Errorf("trace %s does not match the queued erasure", j.ID)
	}
	if err != nil {
		return nil, &badTraceError{err}
	}
	if err := w.checkHost(j, t); err != nil {
		return nil, err
	}
	// A stale trace would stop the whole window at its start: it fails
	// here, alone, unless the subject only got more artifacts since the
	// request (requeue.go): then the erasure goes on with the later trace.
	q := t
	if t, err = w.traceToRun(ctx, j, q); err != nil {
		return nil, err
	}
	if t != q {
		if err := w.checkHost(j, t); err != nil {
			return nil, err
		}
	}
	if _, err := w.Env.Preflight(ctx, w.Progress, t, false); err != nil {
		w.log().Warn("worker: erasure not started, a store of its trace is not ready; the job is released for a retry", "worker", j.Worker, "erasure", saga.ID(j.ID), "retry_in", RetryDelay.String())
		return nil, err
	}
	return t, nil
}

// runAlone runs the erasure q of job j on its own, after its window
// stopped. When a capture made its trace stale before it started
// (Worker.raced), the job's subject is traced again (prepare) and the
// erasure runs with the new trace, at most freshTries times in all.
func (w *Worker) runAlone(ctx context.Context, j *lineage.Job, q erasure.Queued) (*saga.Result, error) {
	t := q.Trace
	for try := 1; ; try++ {
		if try > 1 && TestBeforeRun != nil {
			TestBeforeRun(t.ID)
		}
		res, err := w.Env.Run(ctx, t, q.Reason, erasure.Options{Progress: w.Progress, Claim: j})
		if !w.raced(ctx, j, t, err) {
			return res, err
		}
		if try == freshTries {
			return nil, w.racedOut(j)
		}
		if t, err = w.prepare(ctx, j); err != nil {
			return nil, err
		}
	}
}

// latency reports the delete persistence latency of a finished erasure
// (saga.PersistenceLatency) to the log and the Latency hook.
func (w *Worker) latency(ctx context.Context, j *lineage.Job, res *saga.Result) {
	if j.EnqueuedAt.IsZero() {
		return
	}
	ls, err := saga.PersistenceLatency(ctx, w.Env.Durable(), res.ID, j.EnqueuedAt)
	if err != nil {
		w.log().Warn("delete persistence latency", "erasure", res.ID, "err", err)
		return
	}
	for _, l := range ls {
		w.log().Info("delete persistence latency", "erasure", res.ID, "store", l.Store, "state", l.State, "latency_ms", l.Latency.Milliseconds())
	}
	if w.Latency != nil {
		w.Latency(j, res, ls)
	}
}

// pausedIn is the error of erasure id, paused in a window whose first pause
// was err (saga.RunBatch returns the first one only).
func pausedIn(err error, id string) error {
	var pe *saga.PendingError
	if errors.As(err, &pe) && pe.Erasure == id {
		return err
	}
	return fmt.Errorf("%w: erasure %s paused in its window (a store held up its reclaim or probe); released for a retry in %s", saga.ErrPending, id, RetryDelay)
}
