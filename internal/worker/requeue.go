package worker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"strings"

	"github.com/amnesia-dev/amnesia/internal/erasure"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/subject"
)

// A queued erasure waits (for its window, or for a worker) while the
// application goes on capturing. What is captured for the subject after the
// request makes the queued trace stale: the ledger's trace of the subject
// now has more artifacts. At the claim (or the start of its window) the
// worker traces the subject again; when the new trace only adds artifacts to
// the queued one (every artifact and mention of the queued trace is still
// there, unchanged, none erased since), the erasure goes on with the new
// trace, as its own erasure (saga.ID of the new trace): its suppress step
// suppresses the later artifacts and its certificate lists every artifact
// it erased, the later ones included. Any other change (an artifact of the
// queued trace erased by another erasure, removed or changed) fails the
// job with saga.ErrStaleTrace, as before.
//
// The new trace is saved under its own id and under continuedRef(queued
// id), so that the next claim of the job (after a crash, or a lost claim)
// finds the erasure that began with it and resumes it from its journal.

// continuedRef is the name under which the trace that continues the queued
// trace queued is saved (erasure.Env.Durable().SaveTrace).
func continuedRef(queued string) string { return queued + ".continued" }

// Continued is a queued erasure that goes on with a later trace of its
// subject (Worker.Continued).
type Continued struct {
	Queued *lineage.Trace // the trace the job was queued with
	Now    *lineage.Trace // the trace the erasure runs with
	// Added is how many artifacts (and mentions) the later trace has that
	// the queued one has not: captured after the request.
	Added int
	// Resumed: the erasure of the later trace had begun at an earlier
	// claim; it resumes from its journal.
	Resumed bool
}

// ErasureID is the id of the erasure that runs: that of the later trace.
func (c *Continued) ErasureID() string { return saga.ID(c.Now.ID) }

// ContinuedTrace returns the trace that continues the queued trace
// queuedID (saved by a worker that found artifacts captured after the
// request), or nil when there is none.
func ContinuedTrace(ctx context.Context, env *erasure.Env, queuedID string) (*lineage.Trace, error) {
	return ContinuedTraceIn(ctx, env.Durable(), queuedID)
}

// ContinuedTraceIn is ContinuedTrace read from d, where the erasures keep
// their durable state (erasure.Env.Durable).
func ContinuedTraceIn(ctx context.Context, d saga.Durable, queuedID string) (*lineage.Trace, error) {
	b, err := d.Trace(ctx, continuedRef(queuedID))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, lineage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load the trace that continues trace %s: %w", queuedID, err)
	}
	t, err := lineage.DecodeTrace(b)
	if err != nil {
		return nil, fmt.Errorf("load the trace that continues trace %s: %w", queuedID, err)
	}
	return t, nil
}

// traceToRun returns the trace the claimed erasure of queued trace t runs
// with: t when its erasure began or it still matches the ledger; the later
// trace whose erasure an earlier claim began; or a new trace of the subject
// that only adds artifacts to t (saved, then reported to Continued). A
// trace that changed otherwise is an error wrapping saga.ErrStaleTrace that
// says what changed, in counts (no key, no id of the subject).
func (w *Worker) traceToRun(ctx context.Context, j *lineage.Job, t *lineage.Trace) (*lineage.Trace, error) {
	if w.Env.Started(ctx, t) {
		return t, nil
	}
	err := saga.CheckFresh(ctx, w.Env.Ledger, t)
	if err == nil || !errors.Is(err, saga.ErrStaleTrace) {
		return t, err
	}
	id := saga.ID(t.ID)
	if prev, err := w.begunLater(ctx, j, t); err != nil || prev != nil {
		return prev, err
	}
	key, err := subject.ParseKey(t.Subject)
	if err != nil {
		return nil, err
	}
	v, err := w.Env.Ledger.View(ctx, t.Scope, key)
	if err != nil {
		return nil, err
	}
	now, err := lineage.BuildTrace(v)
	if errors.Is(err, lineage.ErrAlreadyErased) {
		// Another erasure of the subject (a direct one, or an earlier
		// job's that went on with a later trace) erased what the request
		// was for: nothing is left to erase. The job fails; status counts
		// it resolved once a job of the subject is done after it was
		// queued (docs/status.md).
		return nil, fmt.Errorf("%w: erasure %s: since the request, %w by another erasure: nothing is left for this one to erase (see the certificate of the subject's latest erasure)", saga.ErrStaleTrace, id, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: erasure %s: the subject's trace changed since the request (%v); trace the subject again and queue the new trace", saga.ErrStaleTrace, id, err)
	}
	n, why := traceAdds(t, now)
	if why != "" {
		return nil, fmt.Errorf("%w: erasure %s: since the request, %s; only artifacts captured after the request are taken into a queued erasure: trace the subject again and queue the new trace", saga.ErrStaleTrace, id, why)
	}
	if owner, oerr := OwnerOf(w.Env.Dir.Config, now); oerr != nil {
		return nil, fmt.Errorf("%w: erasure %s: the subject's later trace cannot be erased by one worker: %v; trace the subject again and queue the new trace", saga.ErrStaleTrace, id, oerr)
	} else if owner != j.Owner && j.Owner != "" {
		// The job is routed to its queued trace's host; the later
		// artifacts would need another one.
		return nil, fmt.Errorf("%w: erasure %s: artifacts captured after the request are in stores in files of another host than the queued erasure's (%s); trace the subject again and queue the new trace", saga.ErrStaleTrace, id, ownerName(j.Owner))
	}
	b, err := now.Encode()
	if err != nil {
		return nil, err
	}
	// Written under the claim: a worker whose claim was lost meanwhile
	// cannot replace the ref (lineage.ErrLeaseLost). Looked up again
	// first: a ref whose erasure began (another claim's, since) is never
	// replaced.
	dur := saga.Fenced(w.Env.Durable(), j)
	if err := dur.SaveTrace(ctx, now.ID, b); err != nil {
		return nil, fmt.Errorf("erasure %s: save the subject's later trace: %w", id, err)
	}
	if prev, err := w.begunLater(ctx, j, t); err != nil || prev != nil {
		return prev, err
	}
	if err := dur.SaveTrace(ctx, continuedRef(t.ID), b); err != nil {
		return nil, fmt.Errorf("erasure %s: save the subject's later trace: %w", id, err)
	}
	w.continued(j, &Continued{Queued: t, Now: now, Added: n})
	return now, nil
}

// begunLater returns the later trace of queued trace t whose erasure an
// earlier claim of job j began (continuedRef), nil when there is none or
// its erasure has not begun. One that began but does not only add to t
// (a damaged record) is an error that fails the job: it is never replaced.
func (w *Worker) begunLater(ctx context.Context, j *lineage.Job, t *lineage.Trace) (*lineage.Trace, error) {
	prev, err := ContinuedTrace(ctx, w.Env, t.ID)
	if err != nil || prev == nil || !w.Env.Started(ctx, prev) {
		return nil, err
	}
	if _, why := traceAdds(t, prev); why != "" {
		return nil, &badTraceError{fmt.Errorf("erasure %s: the later trace it went on with (erasure %s, begun) does not only add to the queued trace: %s; see its journal", saga.ID(t.ID), saga.ID(prev.ID), why)}
	}
	w.continued(j, &Continued{Queued: t, Now: prev, Added: added(t, prev), Resumed: true})
	return prev, nil
}

func (w *Worker) continued(j *lineage.Job, c *Continued) {
	w.log().Info("queued erasure continues with a later trace: artifacts were captured for its subject after the request",
		"worker", j.Worker, "erasure", saga.ID(c.Queued.ID), "trace", c.Queued.ID, "continued_as", c.ErasureID(), "later_trace", c.Now.ID,
		"subject", c.Now.SubjectRef, "added", c.Added, "resumed", c.Resumed)
	if w.Continued != nil {
		w.Continued(j, c)
	}
}

// traceAdds compares the queued trace q with the ledger's trace now of the
// same subject. It returns how many artifacts and mentions now adds, and
// "" when now only adds to q: every artifact and mention of q is in now,
// unchanged, and nothing more of the subject was erased. Otherwise it says
// what changed, in counts.
func traceAdds(q, now *lineage.Trace) (added int, why string) {
	if q.Subject != now.Subject || q.Scope != now.Scope {
		return 0, "the trace is of another subject or scope"
	}
	var whys []string
	for _, set := range []struct {
		name     string
		old, new []lineage.TraceArtifact
	}{{"artifacts", q.Artifacts, now.Artifacts}, {"mentions", q.Mentions, now.Mentions}} {
		byID := make(map[string]*lineage.TraceArtifact, len(set.new))
		for i := range set.new {
			byID[set.new[i].ID] = &set.new[i]
		}
		gone, changed := 0, 0
		for i := range set.old {
			a := &set.old[i]
			switch b := byID[a.ID]; {
			case b == nil:
				gone++
			case !reflect.DeepEqual(*a, *b):
				changed++
			}
		}
		if gone > 0 {
			whys = append(whys, fmt.Sprintf("%d %s of the queued trace are no longer in the subject's trace (erased by another erasure, or removed)", gone, set.name))
		}
		if changed > 0 {
			whys = append(whys, fmt.Sprintf("%d %s of the queued trace changed (recorded again with other content or lineage)", changed, set.name))
		}
		added += len(set.new) - (len(set.old) - gone)
	}
	if now.Erased != q.Erased {
		whys = append(whys, fmt.Sprintf("the subject's erased artifacts went from %d to %d (another erasure)", q.Erased, now.Erased))
	}
	if len(whys) > 0 {
		return 0, strings.Join(whys, "; ")
	}
	return added, ""
}

// added is how many artifacts and mentions now has that q has not.
func added(q, now *lineage.Trace) int {
	n, _ := traceAdds(q, now)
	return n
}

func ownerName(o string) string {
	if o == "" {
		return "any host"
	}
	return o
}
