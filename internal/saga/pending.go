package saga

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/amnesia-dev/amnesia/lineage"
)

// PendingError means that the erasure paused before its certificate: a
// store whose records are already deleted could not reclaim or be probed
// yet, because another process holds it (a busy SQLite WAL, a lock or a
// long transaction on PostgreSQL) or because it cannot be reached. The
// sealed evidence and the journal are kept; running the same erasure again
// resumes it and finishes reclaim and the byte scan.
type PendingError struct {
	Erasure string
	Store   string
	Step    string        // "evidence", "reclaim" or "probe"
	State   string        // the residue state, e.g. PENDING-lock-timeout
	Cause   string        // what holds it up, in one line without personal data
	Waited  time.Duration // how long this run retried
}

func (e *PendingError) Error() string {
	if e.Step == "evidence" {
		return fmt.Sprintf("erasure %s is PENDING: the evidence of store %s cannot be read yet (%s: %s; waited %s); nothing was deleted from it yet, and reads through capture already hide the subject's records: run the same command again",
			e.Erasure, e.Store, e.State, e.Cause, e.Waited.Round(time.Second))
	}
	return fmt.Sprintf("erasure %s is PENDING: %s of store %s cannot finish yet (%s: %s; waited %s); the records are deleted and suppressed, and the evidence is kept sealed: run the same command again to finish reclaim and verification",
		e.Erasure, e.Step, e.Store, e.State, e.Cause, e.Waited.Round(time.Second))
}

// ErrPending matches every *PendingError with errors.Is.
var ErrPending = errors.New("erasure pending")

// Is makes errors.Is(err, ErrPending) true for a PendingError.
func (e *PendingError) Is(target error) bool { return target == ErrPending }

// Pending returns the trace of an unfinished erasure (journal started,
// publish step not done) of the subject in scope, or nil when there is
// none. `forget` resumes it instead of tracing anew: after the decide step
// the ledger already marks the artifacts erased, so a new trace would find
// nothing and the erasure would never finish. An erasure that crashed after
// writing its certificate but before destroying its sealed evidence is
// unfinished too: resuming it finishes publication.
func Pending(ctx context.Context, d Durable, subjectKey, scope string) (*lineage.Trace, error) {
	ids, err := d.journaled(ctx, "publish")
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		es, _, err := d.readJournal(ctx, id, mainJournal)
		if err != nil {
			return nil, err
		}
		if doneIn(es, "publish") {
			continue
		}
		traceID := plannedTrace(es)
		if traceID == "" || !doneIn(es, "suppress") {
			// A journal without a finished plan or suppress step has
			// changed nothing: a new trace, the same when nothing was
			// captured since, resumes it (Run checks it first).
			continue
		}
		b, err := d.Trace(ctx, traceID)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		t, err := lineage.DecodeTrace(b)
		if err != nil {
			return nil, err
		}
		if t.Subject == subjectKey && t.Scope == scope {
			return t, nil
		}
	}
	return nil, nil
}

// plannedTrace reads the trace id from a journal's finished plan step.
func plannedTrace(es []JournalEntry) string {
	e := finalOf(es, "plan")
	if e == nil || e.Phase != phaseDone {
		return ""
	}
	var p planResult
	if err := json.Unmarshal(e.Result, &p); err != nil {
		return ""
	}
	return p.Trace
}
