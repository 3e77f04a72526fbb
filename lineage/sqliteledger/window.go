package sqliteledger

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"time"

	"github.com/amnesia-dev/amnesia/lineage"
)

var _ lineage.WindowQueue = (*Ledger)(nil)

// sqliteClaimable selects the jobs claimable at ? (twice) by a worker on
// host (? any host, ? host).
const sqliteClaimable = `((state = 'pending' AND available_at <= ?) OR (state = 'claimed' AND lease_until <= ?))
	AND (? OR owner = '' OR owner = ?)`

// Waiting implements lineage.WindowQueue.
func (l *Ledger) Waiting(ctx context.Context, host string) (lineage.Waiting, error) {
	now := nowMilli()
	var w lineage.Waiting
	var due, queued sql.NullInt64
	err := l.db.QueryRowContext(ctx, `SELECT count(*), min(coalesce(due_at, enqueued_at)), min(enqueued_at) FROM queue WHERE `+sqliteClaimable,
		now, now, host == "", host).Scan(&w.Count, &due, &queued)
	if err != nil {
		return w, fmt.Errorf("erasure queue: waiting jobs: %w", err)
	}
	if due.Valid {
		w.EarliestDue = time.UnixMilli(due.Int64)
	}
	if queued.Valid {
		w.OldestQueued = time.UnixMilli(queued.Int64)
	}
	return w, nil
}

// ClaimWindow implements lineage.WindowQueue: one UPDATE statement, atomic
// against every other process under SQLite's write lock.
func (l *Ledger) ClaimWindow(ctx context.Context, worker, host string, max int, lease time.Duration) ([]*lineage.Job, error) {
	if err := lineage.CheckClaimWindow(worker, max, lease); err != nil {
		return nil, err
	}
	now := nowMilli()
	rows, err := l.db.QueryContext(ctx, `
		UPDATE queue SET state = 'claimed', worker = ?, attempts = attempts + 1, lease_until = ?
		WHERE n IN (SELECT n FROM queue WHERE `+sqliteClaimable+`
			ORDER BY coalesce(due_at, enqueued_at), n LIMIT ?)
		RETURNING `+sqliteJobColumns, worker, now+lease.Milliseconds(), now, now, host == "", host, max)
	if err != nil {
		return nil, fmt.Errorf("claim erasure window: %w", err)
	}
	defer rows.Close()
	var out []*lineage.Job
	for rows.Next() {
		j, err := scanSQLiteJob(rows)
		if err != nil {
			return nil, fmt.Errorf("claim erasure window: %w", err)
		}
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim erasure window: %w", err)
	}
	if len(out) == 0 {
		return nil, lineage.ErrNoJob
	}
	sortWindow(out)
	return out, nil
}

// sortWindow orders a claimed window earliest due first (RETURNING has no
// order).
func sortWindow(js []*lineage.Job) {
	sort.SliceStable(js, func(a, b int) bool {
		da, db := lineage.DueOf(js[a]), lineage.DueOf(js[b])
		if !da.Equal(db) {
			return da.Before(db)
		}
		return js[a].EnqueuedAt.Before(js[b].EnqueuedAt)
	})
}
