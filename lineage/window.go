package lineage

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Erasure windows. A worker that runs erasures in windows (internal/worker,
// docs/windows.md) does not claim one job at a time: it watches what is
// waiting (WindowQueue.Waiting) and, when the window must close, claims up
// to a maximum number of jobs at once (WindowQueue.ClaimWindow) and runs
// them together, so that each store reclaims once for all of them. Each job
// keeps its own claim, lease, fencing and end (Renew, Complete, Fail,
// Release as for one job).

// MaxDue is the longest a due date may lie after the request: GDPR
// Art. 12(3) gives the controller one month to act on a request. A due date
// further away is refused (CheckDue); 31 days covers the longest month.
const MaxDue = 31 * 24 * time.Hour

// ErrDue: a due date is in the past or further than MaxDue.
var ErrDue = errors.New("due date out of range")

// CheckDue checks a due date given at now: not before now, not after
// now + MaxDue. A zero due means none given (the caller's default applies).
func CheckDue(due, now time.Time) error {
	switch {
	case due.IsZero():
		return nil
	case due.Before(now):
		return fmt.Errorf("%w: %s is in the past (now %s): give a due date after now (RFC 3339)", ErrDue, due.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	case due.After(now.Add(MaxDue)):
		return fmt.Errorf("%w: %s is more than one month (%s, GDPR Art. 12(3)) after now (%s)", ErrDue, due.UTC().Format(time.RFC3339), MaxDue, now.UTC().Format(time.RFC3339))
	}
	return nil
}

// Waiting summarises the jobs a worker could claim now.
type Waiting struct {
	Count int // claimable jobs
	// EarliestDue is the earliest due date among them; a job queued without
	// one (before due dates existed) counts as due when it was queued.
	EarliestDue time.Time
	// OldestQueued is when the longest-waiting of them was queued.
	OldestQueued time.Time
}

// WindowQueue is a Queue whose jobs carry due dates and that hands out
// windows of jobs. Both ledgers implement it.
type WindowQueue interface {
	RoutedQueue
	// EnqueueDue is EnqueueFor with a due date (zero: none). Idempotent per
	// trace id like Enqueue: a trace already queued keeps its due date.
	EnqueueDue(ctx context.Context, traceID, subjectKeyHex, scope, reason, owner string, due time.Time) error
	// Waiting summarises the jobs claimable now by a worker on host ("":
	// any host, as Claim; otherwise those bound to host or to none, as
	// ClaimOn).
	Waiting(ctx context.Context, host string) (Waiting, error)
	// ClaimWindow claims up to max of the jobs claimable now by a worker on
	// host ("" as in Waiting), earliest due first, each for lease, and
	// returns them earliest due first. ErrNoJob when there is none.
	ClaimWindow(ctx context.Context, worker, host string, max int, lease time.Duration) ([]*Job, error)
}

// CheckClaimWindow checks ClaimWindow's arguments; every backend calls it first.
func CheckClaimWindow(worker string, max int, lease time.Duration) error {
	if err := CheckClaim(worker, lease); err != nil {
		return err
	}
	if max < 1 {
		return errors.New("claim erasure window: the window's maximum must be at least 1")
	}
	return nil
}

// DueOf is the due date the window schedule uses for j: its own, or the
// time it was queued when it has none.
func DueOf(j *Job) time.Time {
	if j.Due.IsZero() {
		return j.EnqueuedAt
	}
	return j.Due
}
