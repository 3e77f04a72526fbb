// Package saga runs an erasure as a journaled, resumable sequence of
// idempotent steps:
//
//	plan → suppress → evidence:<store>… → delete:<store>… → reclaim:<store>…
//	     → probe:<store>… → decide → certificate → publish
//
// Every step is journaled before it starts and after it ends, with its
// result. Running the same erasure again (same trace) replays the journal,
// skips finished steps and reuses their results, so a run that crashed at any
// point ends with the same certificate as one that did not. A store that
// fails is journaled as failed and the others go on; its artifacts end
// UNVERIFIED. The certificate is published (certificates/, or the ledger:
// Durable) only after every step has finished. The journal, the sealed
// evidence and the certificate are kept where Durable says: files of the
// state directory, or, with a PostgreSQL ledger, the ledger's tables, so
// that an erasure started on one host resumes on another.
package saga

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/transparency"
)

// ErrStaleTrace: the ledger changed since the trace was taken.
var ErrStaleTrace = errors.New("trace no longer matches the ledger: trace again and review")

// Erasure is everything one run needs.
type Erasure struct {
	Dir      *state.Dir
	Ledger   lineage.Ledger
	Stores   map[string]store.Store // opened configured stores
	OpenErr  map[string]error       // configured stores that failed to open
	Trace    *lineage.Trace
	Reason   string
	Now      func() time.Time
	Log      *slog.Logger
	Progress io.Writer // human progress lines; may be nil
	// AllowPartial lets an erasure go on without a store that cannot be
	// reached after its records were deleted (reclaim or probe): its
	// artifacts then end UNVERIFIED instead of the erasure pausing.
	AllowPartial bool
	// ReclaimWait bounds how long a reclaim that another process holds up
	// (a busy SQLite WAL, a lock or a long transaction on PostgreSQL) is
	// retried before the erasure pauses (PendingError). Zero: DefaultReclaimWait.
	ReclaimWait time.Duration
	// Durable is where the erasure's journal, sealed evidence and
	// certificate are kept; nil: DurableFor(Dir, Ledger).
	Durable Durable
	// Claim is the queue's claim this erasure runs under (a worker), nil
	// for one run directly: with a ledger that keeps the erasure's durable
	// state, every write of it is refused once the claim is lost.
	Claim *lineage.Job
}

// DefaultReclaimWait is the default of Erasure.ReclaimWait.
const DefaultReclaimWait = 30 * time.Second

// Result is a finished erasure.
type Result struct {
	ID              string
	CertificatePath string
	Statement       *certificate.Statement
	Resumed         bool
	// Follows is the id of the earlier, incomplete erasure of the same
	// trace that this one continues (empty for a first erasure).
	Follows string
}

// ErrIncomplete matches, with errors.Is, the error of an erasure that
// finished and published a certificate that is not complete (Result.Err).
var ErrIncomplete = errors.New("erasure incomplete")

// IncompleteError is an erasure that finished with an incomplete
// certificate: an artifact is UNVERIFIED, RESIDUAL or OUT_OF_SCOPE, or a
// configured store could not be reached. The certificate is published;
// running the same erasure again after the cause is fixed is a new erasure
// whose certificate follows this one.
type IncompleteError struct {
	Erasure     string // the erasure id
	Certificate string // the published certificate's path
}

func (e *IncompleteError) Error() string {
	return fmt.Sprintf("erasure %s is incomplete: see the certificate's UNVERIFIED, RESIDUAL and OUT_OF_SCOPE entries and the declared scope; fix the cause and run the same command again", e.Erasure)
}

// Is makes errors.Is(err, ErrIncomplete) true for an IncompleteError.
func (e *IncompleteError) Is(target error) bool { return target == ErrIncomplete }

// Complete reports whether the certificate says every artifact was
// verified.
func (r *Result) Complete() bool { return r.Statement.Predicate.Complete }

// Err returns nil for a complete erasure and an *IncompleteError (matching
// ErrIncomplete) for one whose certificate is incomplete.
func (r *Result) Err() error {
	if r.Complete() {
		return nil
	}
	return &IncompleteError{Erasure: r.ID, Certificate: r.CertificatePath}
}

// ID returns the erasure id of a trace: erasing the same trace again is the
// same erasure (a resume), never a second one.
func ID(traceID string) string {
	sum := sha256.Sum256([]byte("amnesia.erasure/v1\x00" + traceID))
	return "er-" + hex.EncodeToString(sum[:12])
}

// AttemptID returns the id of the erasure that continues prev, an earlier
// erasure of the same trace that published an incomplete certificate: a
// store was down, a record was still found. Running the erasure again after
// the cause is fixed is a new erasure with a certificate of its own that
// links to prev (predicate.follows), never a replay of prev's certificate.
func AttemptID(traceID, prev string) string {
	sum := sha256.Sum256([]byte("amnesia.erasure/v1\x00" + traceID + "\x00follows\x00" + prev))
	return "er-" + hex.EncodeToString(sum[:12])
}

type runner struct {
	*Erasure
	id      string
	dir     string // the erasure's directory in this host's state directory (model legs)
	dur     Durable
	j       *journal
	stores  []string // stores in the plan that are configured, sorted
	keys    map[string][]string
	ev      map[string]map[string]*store.Evidence
	failed  map[string]string // store -> "step: error"
	paused  map[string]*PendingError
	follows *certificate.ReverifyLink // the earlier incomplete erasure this one continues
	resumed bool
	tlog    *transparency.Log
	sets    map[string]cachedSet // batchprobe.go
	marks   map[string]string    // store -> its delete step's mark (store.DeleteMarker)
	// suppressed: the erasure's journal had the suppress step done when
	// the run started (chooseID).
	suppressed bool
	// inBatch: the erasure runs beside others (RunBatch), whose progress
	// lines interleave with its own: its step lines name it.
	inBatch bool
}

// Run runs or resumes the erasure. A new erasure (no journal yet) is refused
// with ErrStaleTrace when the ledger no longer gives the same trace.
func Run(ctx context.Context, e *Erasure) (*Result, error) {
	r, err := start(ctx, e)
	if err != nil {
		return nil, err
	}
	defer r.j.close()
	st, err := r.run(ctx)
	return r.finish(ctx, st, err)
}

// start checks the trace, opens (or replays) the journal and resolves the
// stores of the plan.
func start(ctx context.Context, e *Erasure) (*runner, error) {
	if e.Now == nil {
		e.Now = time.Now
	}
	if e.Log == nil {
		e.Log = slog.New(slog.DiscardHandler)
	}
	if err := e.Trace.Check(); err != nil {
		return nil, err
	}
	if err := CheckReason(e.Dir, e.Trace, e.Reason); err != nil {
		return nil, err // before anything is written
	}
	if e.ReclaimWait <= 0 {
		e.ReclaimWait = DefaultReclaimWait
	}
	release, err := lockSubject(ctx, e) // lock.go; released with the journal
	if err != nil {
		return nil, err
	}
	defer func() {
		if release != nil {
			release()
		}
	}()
	r := &runner{Erasure: e, keys: map[string][]string{}, ev: map[string]map[string]*store.Evidence{}, failed: map[string]string{}, paused: map[string]*PendingError{}, marks: map[string]string{}}
	if e.Durable == nil {
		e.Durable = DurableFor(e.Dir, e.Ledger)
	}
	r.dur = e.Durable.fenced(e.Claim)
	if err := r.chooseID(ctx); err != nil {
		return nil, err
	}
	r.dir = e.Dir.ErasureDir(r.id)
	// The trace is checked against the ledger until the erasure has
	// changed something: its suppress step is its first effect. A journal
	// that stops before it (a crash right after it was created) changed
	// nothing, and the subject may have new records since. (chooseID read
	// the journal: r.resumed, r.suppressed.)
	if !r.suppressed {
		if err := CheckFresh(ctx, e.Ledger, e.Trace); err != nil {
			return nil, err
		}
	}
	j, err := r.dur.openJournal(ctx, r.id, mainJournal, e.Now)
	if err != nil {
		return nil, err
	}
	r.j = j
	j.release, release = release, nil
	for _, p := range e.Trace.Plan {
		if _, err := e.Dir.Config.Store(p.Store); err == nil {
			r.stores = append(r.stores, p.Store)
			r.keys[p.Store] = p.Delete
		}
	}
	sort.Strings(r.stores)
	r.log().Info("erasure start", "resumed", r.resumed, "artifacts", len(e.Trace.Artifacts), "stores", len(r.stores))
	return r, nil
}

func (r *runner) log() *slog.Logger {
	return r.Log.With("erasure", r.id, "subject", r.Trace.SubjectRef)
}

func (r *runner) finish(ctx context.Context, st *certificate.Statement, err error) (*Result, error) {
	var pe *PendingError
	if errors.As(err, &pe) {
		r.log().Warn("erasure paused", "store", pe.Store, "step", pe.Step, "state", pe.State, "waited", pe.Waited.String())
		return nil, err
	}
	if err != nil {
		r.log().Error("erasure stopped", "err", err)
		return nil, err
	}
	if InLedger(r.dur) {
		// A replayed erasure published on another host: this host's copy
		// of the certificate (CertificateRef) is written on reading it.
		if _, err := r.dur.Certificate(ctx, r.id); err != nil {
			return nil, fmt.Errorf("erasure %s: read its certificate: %w", r.id, err)
		}
	}
	r.log().Info("erasure done", "complete", st.Predicate.Complete, "certificate", r.dur.CertificateRef(r.id))
	res := &Result{ID: r.id, CertificatePath: r.dur.CertificateRef(r.id), Statement: st, Resumed: r.resumed}
	if r.follows != nil {
		res.Follows = r.follows.CertificateID
	}
	return res, nil
}

// CheckFresh returns ErrStaleTrace when the ledger no longer gives the
// trace t: something was recorded or erased for the subject since t was
// taken. It is the one check of a trace against the ledger; Run makes it
// before a new erasure (not a resumed one), and queueing an erasure makes
// it too.
func CheckFresh(ctx context.Context, l lineage.Ledger, t *lineage.Trace) error {
	k, err := subjectKey(t.Subject)
	if err != nil {
		return err
	}
	// A trace built from a view of this ledger carries the head it was
	// read at; every change to what a view holds appends an event, so an
	// unchanged head (seq and chain hash) gives the same trace.
	if t.HeadSeq > 0 && t.HeadHash != "" {
		if seq, hash, err := l.Head(ctx); err == nil && seq == t.HeadSeq && hash == t.HeadHash {
			return nil
		}
	}
	v, err := l.View(ctx, t.Scope, k)
	if err != nil {
		return err
	}
	now, err := lineage.BuildTrace(v)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrStaleTrace, err)
	}
	if now.ID != t.ID {
		return ErrStaleTrace
	}
	return nil
}

func (r *runner) progress(format string, a ...any) {
	if r.Progress != nil {
		if r.inBatch && strings.HasPrefix(format, "  ") {
			format = "  " + r.id + " " + format[2:]
		}
		// One line at a time: the erasures of a batch run concurrently,
		// and may share one writer.
		progressMu.Lock()
		defer progressMu.Unlock()
		fmt.Fprintf(r.Progress, format+"\n", a...)
	}
}

var progressMu sync.Mutex

// StepError is a step of an erasure that failed. Store is the store of a
// per-store step (evidence, delete, reclaim, probe), empty for a step of
// the whole erasure (plan, suppress, decide, certificate, publish).
//
// A per-store step that fails is journaled as failed and the erasure goes
// on without the store (its artifacts end UNVERIFIED); Run returns a
// StepError only for a step of the whole erasure, or a step cut short by
// the context, both left open in the journal so that running the erasure
// again retries them.
type StepError struct {
	Step  string // the step's kind: "plan", "delete", …
	Store string // "" for a step of the whole erasure
	Err   error
}

// Name is the step's name in the journal: "delete:<store>", or "plan".
func (e *StepError) Name() string { return stepName(e.Step, e.Store) }

func (e *StepError) Error() string { return fmt.Sprintf("%s: %v", e.Name(), e.Err) }

func (e *StepError) Unwrap() error { return e.Err }

// stepName is the journal name of a step: "kind:store" for a per-store
// step, "kind" for a step of the whole erasure.
func stepName(kind, st string) string {
	if st == "" {
		return kind
	}
	return kind + ":" + st
}

// step runs fn once: a finished step's journaled result is decoded into out
// and fn is skipped. st is the store of a per-store step, "" for a step of
// the whole erasure. A failed per-store step is journaled as failed and
// returned as stepErr (its journaled error when replayed); a step of the
// whole erasure that fails, or any step cut short by the context, is left
// open in the journal and returned as err (a *StepError).
func (r *runner) step(kind, st string, out any, fn func() (any, error)) (stepErr *StepError, err error) {
	name := stepName(kind, st)
	if e := r.j.final(name); e != nil {
		if e.Phase == phaseFailed {
			return &StepError{Step: kind, Store: st, Err: errors.New(e.Error)}, nil
		}
		if out != nil && len(e.Result) > 0 {
			if err := json.Unmarshal(e.Result, out); err != nil {
				return nil, fmt.Errorf("replay %s: %w", name, err)
			}
		}
		r.progress("  %-28s done (journal)", name)
		return nil, nil
	}
	if err := r.j.write(name, phaseBegin, nil, nil); err != nil {
		return nil, err
	}
	if durableBefore[kind] && !(kind == "delete" && r.j.dirtyWithin(redoneBeforeDelete)) {
		// Every entry so far reaches the disk before this step's effect.
		if err := r.j.sync(); err != nil {
			return nil, err
		}
	}
	start := r.Now()
	res, ferr := fn()
	var pe *PendingError
	if errors.As(ferr, &pe) {
		// Held up by another process or an unreachable store: leave the
		// step open, so that running the erasure again retries it.
		return nil, pe
	}
	if ferr != nil {
		if errors.Is(ferr, context.Canceled) || errors.Is(ferr, context.DeadlineExceeded) || st == "" {
			// Not a store failure: leave the step open, so that running
			// the erasure again retries it.
			return nil, &StepError{Step: kind, Store: st, Err: ferr}
		}
		r.Log.Warn("step failed", "erasure", r.id, "step", name, "err", ferr)
		r.progress("  %-28s FAILED: %v", name, ferr)
		return &StepError{Step: kind, Store: st, Err: ferr}, r.j.write(name, phaseFailed, nil, ferr)
	}
	// The result is encoded once: out is decoded from that encoding (as a
	// replay decodes it from the journal) and the done entry journals it
	// (json.Marshal of the encoding, already compact, gives it back as it is).
	var result any
	if res != nil {
		b, err := json.Marshal(res)
		if err != nil {
			return nil, fmt.Errorf("journal %s: %w", name, err)
		}
		if out != nil {
			if err := json.Unmarshal(b, out); err != nil {
				return nil, err
			}
		}
		result = json.RawMessage(b)
	}
	// To 10 µs: the benchmarks sum these (a step of a small erasure takes
	// well under a millisecond).
	r.progress("  %-28s done (%s)", name, r.Now().Sub(start).Round(10*time.Microsecond))
	return nil, r.j.write(name, phaseDone, result, nil)
}

// durableBefore are the kinds of step before whose effect the journal is
// fsynced (one fsync for every entry written since the last one), instead
// of an fsync per entry. An entry that a power loss takes away only makes
// its step run again on resume, as a crash between a step's effect and its
// done entry always could (every step is idempotent); what must not happen
// is an effect that makes an earlier step, run again, give another result
// while that step's result is not yet on disk:
//
//   - suppress: the first change to the ledger; from here the journal file
//     must exist, or a rerun would take the suppressed subject for a new
//     erasure with a stale trace.
//   - delete: the evidence read before deletion cannot be read again after
//     it. Its result is sealed with the evidence, fsynced before the step
//     ends (readEvidence): a rerun of a step whose entries were lost
//     returns the sealed result, so a delete needs no fsync of the journal
//     when the entries since the last one are only of suppress (which a
//     rerun repeats with the same result), evidence and delete steps
//     (redoneBeforeDelete), as they are in every erasure that runs its
//     steps in order.
//   - publish: the certificate file carries decide's issue time and the
//     digest the certificate step journaled.
//
// The other steps read (plan, evidence, probe, certificate), or have an
// effect that running them again repeats with the same result (reclaim,
// shred, decide: the ledger marks are idempotent). The entries written after
// publish's sync (publish done) are not fsynced: losing them makes a rerun
// publish the same certificate again (publish is idempotent).
var durableBefore = map[string]bool{"suppress": true, "delete": true, "publish": true}

// redoneBeforeDelete are the kinds of step whose unsynced entries a delete
// leaves unsynced (durableBefore).
var redoneBeforeDelete = map[string]bool{"suppress": true, "evidence": true, "delete": true}

// storeStep runs a per-store step unless the store already failed; a
// failure marks the store failed (r.failed) and the erasure goes on.
func (r *runner) storeStep(kind, st string, out any, fn func() (any, error)) error {
	if _, bad := r.failed[st]; bad {
		return nil
	}
	serr, err := r.step(kind, st, out, fn)
	if err != nil {
		return err
	}
	if serr != nil {
		r.failed[st] = fmt.Sprintf("%s: %v", kind, serr.Err)
	}
	return nil
}
