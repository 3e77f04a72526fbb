// Package erasure is the flow of one erasure that every entry point shares:
// `amnesia forget` and `amnesia erase`, capture.App.Erase, the queue worker
// (internal/worker) and, later, the daemon. It finds the trace to erase (an
// unfinished erasure of the subject is resumed with the trace it started
// from; otherwise the subject is traced anew and the trace saved), checks
// that the stores of the trace are ready (Preflight), opens the configured
// stores except those the preflight left alone, and runs the journaled saga
// (internal/saga). It prints nothing: human progress goes to an io.Writer
// the caller gives, and the outcome is the *saga.Result and typed errors
// (saga.ErrStaleTrace, saga.ErrPending, saga.ErrBusy, lineage.ErrNoLineage,
// lineage.ErrAlreadyErased, ErrNotReady; Result.Err for an incomplete
// certificate) that callers tell apart with errors.Is and errors.As.
package erasure

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/subject"
)

// Env is an opened installation: its state directory, its ledger and the
// log of its erasures.
type Env struct {
	Dir    *state.Dir
	Ledger lineage.Ledger
	Log    *slog.Logger // nil: discarded
	// Via names the entry point in the log line of a new trace ("capture");
	// empty for the CLI.
	Via string
}

// Logger is the installation's log (discarding when Log is nil).
func (e *Env) Logger() *slog.Logger {
	if e.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return e.Log
}

// Durable is where the installation's erasures keep their journals,
// sealed evidence, traces and certificates: the ledger when it keeps them
// (PostgreSQL), the state directory otherwise (saga.DurableFor).
func (e *Env) Durable() saga.Durable {
	return saga.DurableFor(e.Dir, e.Ledger) // cheap, and safe from many goroutines
}

// Pending returns the trace of an unfinished erasure of the subject in
// scope, or nil when there is none (saga.Pending). Such an erasure is
// finished first, with the trace it started from: after its decide step
// the ledger marks the artifacts erased, so a new trace would find nothing.
func (e *Env) Pending(ctx context.Context, key subject.Key, scope string) (*lineage.Trace, error) {
	return saga.Pending(ctx, e.Durable(), key.String(), scope)
}

// Trace computes the trace of the subject in scope from the ledger alone
// and saves it (Durable: traces/<id>.json, or the ledger). A subject with nothing recorded is
// an error wrapping lineage.ErrNoLineage, one whose every artifact is
// erased wraps lineage.ErrAlreadyErased; the ledger's view is returned
// with them (to name the erasures that erased it).
func (e *Env) Trace(ctx context.Context, key subject.Key, scope string) (*lineage.Trace, *lineage.View, error) {
	v, err := e.Ledger.View(ctx, scope, key)
	if err != nil {
		return nil, nil, err
	}
	t, err := lineage.BuildTrace(v)
	if err != nil {
		return nil, v, fmt.Errorf("trace %s in scope %q: %w", key.Ref(), scope, err)
	}
	b, err := t.Encode()
	if err != nil {
		return nil, v, err
	}
	if err := e.Durable().SaveTrace(ctx, t.ID, b); err != nil {
		return nil, v, fmt.Errorf("save trace: %w", err)
	}
	attrs := []any{"subject", t.SubjectRef, "trace", t.ID, "artifacts", len(t.Artifacts), "mentions", len(t.Mentions)}
	if e.Via != "" {
		attrs = append(attrs, "via", e.Via)
	}
	e.Logger().Info("traced", attrs...)
	return t, v, nil
}

// Begin returns the trace to erase for the subject in scope: the trace of
// its unfinished erasure (resumed), or a new trace, saved.
func (e *Env) Begin(ctx context.Context, key subject.Key, scope string) (t *lineage.Trace, resumed bool, err error) {
	if t, err = e.Pending(ctx, key, scope); err != nil || t != nil {
		return t, t != nil, err
	}
	t, _, err = e.Trace(ctx, key, scope)
	return t, false, err
}

// LoadTrace reads a saved trace: ref is a trace id (saved by Trace) or
// the path of a trace file.
func (e *Env) LoadTrace(ctx context.Context, ref string) (*lineage.Trace, error) {
	var b []byte
	var err error
	if _, serr := os.Stat(ref); serr == nil {
		b, err = os.ReadFile(ref)
	} else {
		b, err = e.Durable().Trace(ctx, ref)
	}
	if err != nil {
		return nil, fmt.Errorf("load trace %s: %w", ref, err)
	}
	t, err := lineage.DecodeTrace(b)
	if err != nil {
		return nil, fmt.Errorf("load trace %s: %w", ref, err)
	}
	return t, nil
}

// Started reports whether the erasure of trace t has begun (its journal
// exists): it then resumes, and the ledger is not asked again. A journal
// that cannot be read counts as begun.
func (e *Env) Started(ctx context.Context, t *lineage.Trace) bool {
	ok, err := saga.Started(ctx, e.Durable(), t.ID)
	return ok || err != nil
}

// Options tune Run.
type Options struct {
	// AllowPartial: a store that cannot reclaim or be probed after its
	// records were deleted ends UNVERIFIED instead of pausing the erasure
	// (saga.Erasure.AllowPartial).
	AllowPartial bool
	// Skip are the stores the preflight left alone (Preflight with
	// allowPartial): they are not opened, and the certificate reports
	// their artifacts as not erased.
	Skip map[string]error
	// Progress receives the human progress lines; nil discards them.
	Progress io.Writer
	// Stores, when not nil, are the configured stores the caller has
	// opened (and keeps open), OpenErr those that failed to open. When
	// nil, Run opens every configured store but Skip, without creating
	// anything, and closes them before it returns.
	Stores  map[string]store.Store
	OpenErr map[string]error
	// Claim is the queue's claim the erasure runs under (a worker), nil
	// otherwise (saga.Erasure.Claim).
	Claim *lineage.Job
}

// Run runs, or resumes, the journaled erasure of trace t (saga.Run) and
// returns its result. An erasure that finished with an incomplete
// certificate is a result, not an error: its Err method says so
// (saga.ErrIncomplete). A new erasure whose trace no longer matches the
// ledger is refused with saga.ErrStaleTrace; a paused one returns a
// *saga.PendingError (saga.ErrPending).
func (e *Env) Run(ctx context.Context, t *lineage.Trace, reason string, o Options) (*saga.Result, error) {
	stores, failed := o.Stores, o.OpenErr
	if stores == nil {
		stores, failed = e.Dir.Config.OpenStoresExcept(ctx, o.Skip)
		defer func() {
			for _, s := range stores {
				s.Close()
			}
		}()
	}
	return saga.Run(ctx, e.erasure(t, reason, o, stores, failed))
}

func (e *Env) erasure(t *lineage.Trace, reason string, o Options, stores map[string]store.Store, failed map[string]error) *saga.Erasure {
	return &saga.Erasure{
		Dir: e.Dir, Ledger: e.Ledger, Stores: stores, OpenErr: failed,
		Trace: t, Reason: reason, Log: e.Log, Progress: o.Progress,
		AllowPartial: o.AllowPartial, ReclaimWait: e.Dir.Config.ReclaimWaitDuration(),
		Durable: e.Durable(), Claim: o.Claim,
	}
}

// Queued is one erasure of a window (RunWindow): its trace, reason and the
// queue's claim it runs under (nil: none).
type Queued struct {
	Trace  *lineage.Trace
	Reason string
	Claim  *lineage.Job
}

// RunWindow runs, or resumes, the journaled erasures ws as one erasure
// window (saga.RunBatch: per store one evidence read, one byte scan before
// deletion, one reclaim and one byte scan after it for all of them; each
// erasure journaled and certified on its own) on stores opened once. Its
// results and error are saga.RunBatch's: a nil result is an erasure that
// paused (the error is then a *saga.PendingError); a nil result slice with
// an error stopped the window, every erasure resumable from its journal.
// o.Claim is ignored (each erasure has its own); o.Stores, o.Skip and
// o.AllowPartial apply to all.
func (e *Env) RunWindow(ctx context.Context, ws []Queued, o Options) ([]*saga.Result, error) {
	stores, failed := o.Stores, o.OpenErr
	if stores == nil {
		stores, failed = e.Dir.Config.OpenStoresExcept(ctx, o.Skip)
		defer func() {
			for _, s := range stores {
				s.Close()
			}
		}()
	}
	es := make([]*saga.Erasure, len(ws))
	for i, w := range ws {
		o.Claim = w.Claim
		es[i] = e.erasure(w.Trace, w.Reason, o, stores, failed)
	}
	return saga.RunBatch(ctx, es)
}
