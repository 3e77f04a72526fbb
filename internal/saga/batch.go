package saga

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/amnesia-dev/amnesia/store"
)

// RunBatch runs several erasures as one erasure window: each is journaled
// and certified on its own, but the stores reclaim once for all of them
// (one VACUUM or rewrite for many requests) after every erasure of the
// batch has deleted, and each store's evidence read, delete, byte scan
// before deletion and byte scan after reclaim are done once for all of them
// too (batchprobe.go): every erasure reads its evidence before any deletes.
// The erasures must share their Stores and Ledger.
//
// The erasures run each phase concurrently (batchParallel at once: plan,
// suppress and evidence; then, once all have deleted and the stores have
// reclaimed, probe to publish), one erasure's steps in their order; a store
// of a batch is used by several goroutines at once. With models configured
// the probe-to-publish phase runs one erasure at a time.
//
// A batch that stops part-way leaves each erasure resumable on its own:
// running any of them again (alone or in a new batch) resumes from its
// journal; a reclaim that one erasure journaled and another did not is
// simply run again (reclaim is idempotent).
func RunBatch(ctx context.Context, es []*Erasure) ([]*Result, error) {
	runners := make([]*runner, 0, len(es))
	defer func() {
		for _, r := range runners {
			r.j.close()
		}
	}()
	seen := map[string]bool{}
	for _, e := range es {
		if id := ID(e.Trace.ID); seen[id] { // before start: its subject lock is held
			return nil, fmt.Errorf("batch: erasure %s appears twice", id)
		}
		r, err := start(ctx, e)
		if err != nil {
			return nil, &BatchError{Erasure: ID(e.Trace.ID), Err: err}
		}
		seen[r.id] = true
		r.inBatch = len(es) > 1
		runners = append(runners, r)
	}
	b := &batchShare{runners: runners, ev: map[string]*sharedEvidence{}, scans: map[string]*sharedScan{}, dels: map[string]*sharedDelete{}}
	ctx = withBatch(ctx, b)
	res := make([]*results, len(runners))
	b.snapshot(ctx, "evidence")
	if err := eachRunner(runners, batchParallel, func(i int, r *runner) (err error) {
		res[i], err = r.before(ctx)
		return err
	}); err != nil {
		return nil, err
	}
	// Every erasure's evidence is read and sealed before any of them
	// deletes: a delete shared by the batch (deleteKeys) removes the
	// records of them all.
	for _, r := range runners {
		if err := r.deleteAll(ctx); err != nil {
			return nil, &BatchError{Erasure: r.id, Err: err}
		}
	}
	// One reclaim per store, shared by every erasure that reaches it. A
	// reclaim held up by another process is not shared: each retry runs it.
	type once struct {
		mu   sync.Mutex
		done bool
		out  any
		err  error
	}
	shared := map[string]*once{}
	for i, r := range runners {
		err := r.reclaimAll(ctx, res[i], func(ctx context.Context, st string) (any, error) {
			o := shared[st]
			if o == nil {
				o = &once{}
				shared[st] = o
			}
			o.mu.Lock()
			defer o.mu.Unlock()
			if o.done {
				return o.out, o.err
			}
			if w, ok := r.Stores[st].(store.ReclaimWatcher); ok {
				// The other erasures' deleted records too (r.reclaim hands
				// over r's): a window resumed in a new process read none.
				for _, other := range runners {
					if other == r || other.failed[st] != "" || !slices.Contains(other.stores, st) {
						continue
					}
					if ev, err := other.evidence(ctx, st); err == nil {
						w.WatchDeleted(ev)
					}
				}
			}
			out, err := r.reclaim(ctx, st)
			if state, _ := holdUp(out, err); state == "" {
				o.done, o.out, o.err = true, out, err
			}
			return out, err
		})
		if err != nil {
			return nil, &BatchError{Erasure: r.id, Err: err}
		}
	}
	// An erasure that pauses (PendingError) does not stop the others: each
	// finished one gets its result, and the first pause is returned with
	// them, its erasure's result nil.
	out := make([]*Result, len(runners))
	pausedAt := make([]error, len(runners))
	b.snapshot(ctx, "probe")
	par := batchParallel
	for _, r := range runners {
		if len(r.Dir.Config.Models) > 0 {
			par = 1 // model legs (retraining, unlearning) run one at a time
		}
	}
	if err := eachRunner(runners, par, func(i int, r *runner) error {
		st, err := r.after(ctx, res[i])
		out[i], err = r.finish(ctx, st, err)
		if errors.Is(err, ErrPending) {
			pausedAt[i] = err
			return nil
		}
		return err
	}); err != nil {
		return nil, err
	}
	for _, err := range pausedAt {
		if err != nil {
			return out, err // the first pause, in the batch's order
		}
	}
	return out, nil
}

// batchParallel is how many erasures of a batch run a phase (before,
// after) at once. Each erasure's steps stay in order, and each phase ends
// for all of them before the next begins (every evidence is read before
// any delete); what runs concurrently is one erasure's journal, seal,
// ledger and certificate writes with another's, so that their fsyncs and
// commits overlap instead of queueing one behind the other.
const batchParallel = 8

// eachRunner runs fn for every runner, par at once, and returns
// once all that started have returned. After a failure no further runner
// starts; the error returned is the failed runner's first in the batch's
// order, as a BatchError. The runners that did not run fn, or stopped,
// resume from their journals when run again.
func eachRunner(runners []*runner, par int, fn func(int, *runner) error) error {
	errs := make([]error, len(runners))
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed bool
	)
	sem := make(chan struct{}, par)
	for i, r := range runners {
		sem <- struct{}{}
		mu.Lock()
		stop := failed
		mu.Unlock()
		if stop {
			<-sem
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := fn(i, r); err != nil {
				errs[i] = err
				mu.Lock()
				failed = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return &BatchError{Erasure: runners[i].id, Err: err}
		}
	}
	return nil
}

// BatchError is the error that stopped a batch, with the erasure whose step
// returned it. The other erasures of the batch did not fail: each resumes
// from its journal when run again, alone or in another batch. The step may
// have been one the batch shares (a reclaim, a byte scan): the erasure named
// is the one that was running it.
type BatchError struct {
	Erasure string // the erasure's id (ID of its trace)
	Err     error
}

func (e *BatchError) Error() string { return "batch: erasure " + e.Erasure + ": " + e.Err.Error() }

func (e *BatchError) Unwrap() error { return e.Err }
