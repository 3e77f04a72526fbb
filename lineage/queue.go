package lineage

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/amnesia-dev/amnesia/subject"
)

// Job states.
const (
	JobPending = "pending" // waiting for a worker (or released by one)
	JobClaimed = "claimed" // a worker holds it until its lease ends
	JobDone    = "done"    // finished: a certificate was published
	JobFailed  = "failed"  // finished without a certificate; will not run again
)

// Queue errors.
var (
	// ErrNoJob: nothing is claimable now.
	ErrNoJob = errors.New("no erasure is waiting")
	// ErrLeaseLost: the claim is no longer this worker's (its lease ran out
	// and another worker claimed the job, or the job was finished).
	ErrLeaseLost = errors.New("the claim on this erasure was lost")
)

// Job is one queued erasure. A job is identified by the trace it erases:
// erasing the same trace is the same erasure (see saga.ID), so enqueueing a
// trace twice queues it once.
type Job struct {
	ID          string // the trace id
	Subject     string // keyed subject digest, hex; never the raw id
	Scope       string
	Reason      string // the ticket reference the erasure answers
	State       string
	Worker      string    // the worker of the latest claim
	Attempts    int       // number of claims so far; the current claim's token
	LeaseUntil  time.Time // end of the current claim's lease
	Certificate string    // done: what the worker reported (amnesia: sha256 of the envelope)
	Error       string    // failed: why
	// Owner is the host that must run the erasure (its trace has artifacts
	// in a store that lives in files on that host: owner: in amnesia.yaml),
	// "" for any host. Set at enqueue (RoutedQueue.EnqueueFor).
	Owner string
	// EnqueuedAt is when the erasure was queued (the request time from which
	// its delete persistence latency is measured); Due is its due date, zero
	// for a job queued without one (WindowQueue.EnqueueDue).
	EnqueuedAt time.Time
	Due        time.Time
}

// Queue is the erasure work queue kept in the ledger, implemented by
// pgledger (claims use SELECT … FOR UPDATE SKIP LOCKED, so any number of
// workers in any number of processes claim disjoint jobs without blocking
// each other) and by sqliteledger (claims serialised by the database's write
// lock: several processes on one host).
//
// Leases: [Queue.Claim] hands a job to one worker for a lease. The worker
// renews the lease ([Queue.Renew]) while it runs the erasure and ends the
// claim with [Queue.Complete], [Queue.Fail] or [Queue.Release]. A job whose
// lease ran out (a crashed or stalled worker) is claimable again; the new
// claim increments Attempts, which fences the old one: Renew, Complete, Fail
// and Release of a claim that is no longer current return ErrLeaseLost. A
// worker that loses its lease MUST stop the erasure. Lease times are the
// database's clock (PostgreSQL) or the host's (SQLite).
//
// The queue is operational state, updated in place; it is not part of the
// hash-chained events. An erasure's outcome is proven by its certificate and
// by the erasure marks the erasure appends to the chain.
type Queue interface {
	// Enqueue queues the erasure of a trace. Idempotent per trace id: a
	// trace already queued (in any state) is left as it is. A reason that
	// looks like personal data (subject.CheckFreeText) is refused with a
	// *subject.PersonalDataError; the queue cannot check it against the
	// subject, which the caller must (saga.CheckReason).
	Enqueue(ctx context.Context, traceID, subjectKeyHex, scope, reason string) error
	// Claim claims the pending or lease-expired job due first (a job
	// without a due date is due when it was queued; among equal due dates
	// the oldest) for worker, for lease. It returns ErrNoJob when there is
	// none.
	Claim(ctx context.Context, worker string, lease time.Duration) (*Job, error)
	// Renew extends the lease of the claim j to lease from now.
	Renew(ctx context.Context, j *Job, lease time.Duration) error
	// Complete marks the claimed job done with the certificate reference.
	// Completing again with the same certificate is a no-op.
	Complete(ctx context.Context, j *Job, certificate string) error
	// Fail marks the claimed job failed: it is not claimed again.
	Fail(ctx context.Context, j *Job, reason string) error
	// Release hands the claimed job back: claimable again after delay.
	// reason, when not empty, is why the claim ended without finishing
	// (the erasure's error: kinds and fields, never values, as Fail's),
	// recorded as the job's error so that status can say why it waits;
	// an empty reason (the worker stopped) keeps the error it had.
	Release(ctx context.Context, j *Job, delay time.Duration, reason string) error
	// Jobs lists every job in the order they were queued.
	Jobs(ctx context.Context) ([]Job, error)
}

// CheckEnqueue checks Enqueue's arguments; every backend calls it first.
func CheckEnqueue(traceID, subjectKeyHex, reason string) error {
	if traceID == "" || reason == "" {
		return errors.New("enqueue erasure: a trace id and a reason are required")
	}
	if _, err := subject.ParseKey(subjectKeyHex); err != nil {
		return fmt.Errorf("enqueue erasure: subject must be a keyed digest: %w", err)
	}
	// The queue keeps the reason in clear: no personal data in it.
	if err := subject.CheckFreeText("the reason", reason); err != nil {
		return fmt.Errorf("enqueue erasure: %w", err)
	}
	return nil
}

// CheckClaim checks Claim's arguments; every backend calls it first.
func CheckClaim(worker string, lease time.Duration) error {
	if worker == "" || lease <= 0 {
		return errors.New("claim erasure: a worker name and a positive lease are required")
	}
	return nil
}
