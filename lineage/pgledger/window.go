package pgledger

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/lineage"
)

var _ lineage.WindowQueue = (*Ledger)(nil)

// pgClaimable selects the jobs claimable now by a worker on host ($1 any
// host, $2 host).
const pgClaimable = `((state = 'pending' AND available_at <= now()) OR (state = 'claimed' AND lease_until <= now()))
	AND ($1 OR owner = '' OR owner = $2)`

// Waiting implements lineage.WindowQueue.
func (l *Ledger) Waiting(ctx context.Context, host string) (lineage.Waiting, error) {
	var w lineage.Waiting
	var due, queued *time.Time
	err := l.pool.with(ctx, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, `SELECT count(*), min(coalesce(due_at, enqueued_at)), min(enqueued_at) FROM queue WHERE `+pgClaimable,
			host == "", host).Scan(&w.Count, &due, &queued)
	})
	if err != nil {
		return w, fmt.Errorf("erasure queue: waiting jobs: %w", err)
	}
	if due != nil {
		w.EarliestDue = *due
	}
	if queued != nil {
		w.OldestQueued = *queued
	}
	return w, nil
}

// ClaimWindow implements lineage.WindowQueue. The rows are locked with FOR
// UPDATE SKIP LOCKED: concurrent workers claim disjoint windows.
func (l *Ledger) ClaimWindow(ctx context.Context, worker, host string, max int, lease time.Duration) ([]*lineage.Job, error) {
	if err := lineage.CheckClaimWindow(worker, max, lease); err != nil {
		return nil, err
	}
	var out []*lineage.Job
	err := l.pool.with(ctx, func(c *pgx.Conn) error {
		rows, _ := c.Query(ctx, `
			UPDATE queue q SET state = 'claimed', worker = $3, attempts = q.attempts + 1,
				lease_until = now() + $4::float8 * interval '1 second'
			FROM (SELECT id FROM queue WHERE `+pgClaimable+`
				ORDER BY coalesce(due_at, enqueued_at), n LIMIT $5 FOR UPDATE SKIP LOCKED) c
			WHERE q.id = c.id
			RETURNING q.id, q.subject, q.scope, q.reason, q.state, q.worker, q.attempts, q.lease_until, q.certificate, q.error, q.owner, q.enqueued_at, q.due_at`,
			host == "", host, worker, lease.Seconds(), max)
		var err error
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (*lineage.Job, error) { return scanPgJob(r) })
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("claim erasure window: %w", err)
	}
	if len(out) == 0 {
		return nil, lineage.ErrNoJob
	}
	sort.SliceStable(out, func(a, b int) bool {
		da, db := lineage.DueOf(out[a]), lineage.DueOf(out[b])
		if !da.Equal(db) {
			return da.Before(db)
		}
		return out[a].EnqueuedAt.Before(out[b].EnqueuedAt)
	})
	return out, nil
}
