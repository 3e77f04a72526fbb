package lineage

import (
	"context"
	"errors"
	"time"
)

// The queue at a glance (`amnesia status`, docs/status.md): what is waiting,
// running, done and failed, read in one read-only transaction. Listing never
// claims, renews or changes a job.

// QueueListing is a snapshot of the erasure queue.
type QueueListing struct {
	// Now is the ledger's clock at the read (PostgreSQL's now(), the host's
	// for SQLite): the clock of due dates, enqueue times and leases.
	Now time.Time
	// Counts of every job by state (not bounded by the listing's limit).
	Pending, Claimed, Done, Failed int
	// Open lists the jobs not finished (pending or claimed), in the order a
	// worker claims them (due first; among equal due dates the oldest), at
	// most QueueListOptions.Limit of them.
	Open []QueuedJob
	// History lists the finished jobs (done or failed), the latest finished
	// first, at most QueueListOptions.Limit of them; empty unless
	// QueueListOptions.History.
	History []QueuedJob
	// Overdue counts the open jobs (all of them) whose due date is before
	// Now (QueuedJob.Overdue).
	Overdue int
	// FailedUnresolved counts the failed jobs (all of them, not only those
	// listed) that no job of the same subject and scope follows
	// (QueuedJob.FollowedBy).
	FailedUnresolved int
}

// QueuedJob is a job as listed, with the queue's bookkeeping times.
type QueuedJob struct {
	Job
	// AvailableAt is when a pending job becomes claimable (after a
	// release with a retry delay).
	AvailableAt time.Time
	// FinishedAt is when a done or failed job finished (zero otherwise).
	FinishedAt time.Time
	// FollowedBy is, for a failed job, the trace id of the latest job of
	// the same subject and scope queued after it, or done after it was
	// queued (an earlier job whose erasure went on with a later trace and
	// erased what this one was for); "" when none: the failure is
	// unresolved.
	FollowedBy string
}

// QueueListOptions bounds a listing.
type QueueListOptions struct {
	// Limit bounds Open and History each (at least 1).
	Limit int
	// History lists finished jobs too.
	History bool
	// Scopes, when not nil, restricts the listing, counts included, to the
	// jobs of these scopes (an empty list: none).
	Scopes []string
}

// QueueLister lists the queue; both ledgers implement it. ListQueue reads
// in one read-only transaction and changes nothing.
type QueueLister interface {
	ListQueue(ctx context.Context, o QueueListOptions) (*QueueListing, error)
}

// CheckListQueue checks ListQueue's options; every backend calls it first.
func CheckListQueue(o QueueListOptions) error {
	if o.Limit < 1 {
		return errors.New("list erasure queue: the limit must be at least 1")
	}
	return nil
}

// Overdue reports whether j is not finished and has a due date before now.
// A job queued before due dates existed has none and is never overdue (the
// window schedule runs it at the next window).
func (j *QueuedJob) Overdue(now time.Time) bool {
	return (j.State == JobPending || j.State == JobClaimed) && !j.Due.IsZero() && j.Due.Before(now)
}
