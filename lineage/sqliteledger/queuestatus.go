package sqliteledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/amnesia-dev/amnesia/lineage"
)

var _ lineage.QueueLister = (*Ledger)(nil)

// followsFailed: job l resolves the failed job q (lineage.QueuedJob.FollowedBy):
// a job of the same subject and scope queued after q, or one done after q
// was queued.
const followsFailed = `l.subject = q.subject AND l.scope = q.scope AND l.id <> q.id
	AND (l.n > q.n OR (l.state = 'done' AND l.finished_at >= q.enqueued_at))`

// sqliteListColumns are sqliteJobColumns, then available_at, finished_at
// and, for a failed job, the latest job that follows it (followsFailed).
const sqliteListColumns = `q.id, q.subject, q.scope, q.reason, q.state, q.worker, q.attempts, q.lease_until, q.certificate, q.error, q.owner, q.enqueued_at, q.due_at,
	q.available_at, q.finished_at,
	CASE WHEN q.state = 'failed' THEN (SELECT l.id FROM queue l WHERE ` + followsFailed + ` ORDER BY l.n DESC LIMIT 1) END`

func scanSQLiteListed(r scanner) (lineage.QueuedJob, error) {
	var q lineage.QueuedJob
	var lease, due, finished sql.NullInt64
	var queued, avail int64
	var next sql.NullString
	j := &q.Job
	if err := r.Scan(&j.ID, &j.Subject, &j.Scope, &j.Reason, &j.State, &j.Worker, &j.Attempts, &lease, &j.Certificate, &j.Error, &j.Owner, &queued, &due,
		&avail, &finished, &next); err != nil {
		return q, err
	}
	if lease.Valid {
		j.LeaseUntil = time.UnixMilli(lease.Int64)
	}
	j.EnqueuedAt = time.UnixMilli(queued)
	if due.Valid {
		j.Due = time.UnixMilli(due.Int64)
	}
	q.AvailableAt = time.UnixMilli(avail)
	if finished.Valid {
		q.FinishedAt = time.UnixMilli(finished.Int64)
	}
	q.FollowedBy = next.String
	return q, nil
}

// ListQueue implements lineage.QueueLister: one read-only transaction on
// the ledger's query_only reader handle (a WAL snapshot; no write lock).
func (l *Ledger) ListQueue(ctx context.Context, o lineage.QueueListOptions) (*lineage.QueueListing, error) {
	if err := lineage.CheckListQueue(o); err != nil {
		return nil, err
	}
	tx, err := l.rd.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("list erasure queue: %w", err)
	}
	defer tx.Rollback()
	out := &lineage.QueueListing{Now: time.UnixMilli(nowMilli())}
	// in: only the jobs of o.Scopes (none: every job); its argument first.
	in, inArgs := `1`, []any{}
	if o.Scopes != nil {
		b, err := json.Marshal(o.Scopes)
		if err != nil {
			return nil, fmt.Errorf("list erasure queue: %w", err)
		}
		in, inArgs = `q.scope IN (SELECT value FROM json_each(?))`, []any{string(b)}
	}
	args := func(more ...any) []any { return append(append([]any{}, inArgs...), more...) }
	rows, err := tx.QueryContext(ctx, `SELECT q.state, count(*) FROM queue q WHERE `+in+` GROUP BY q.state`, args()...)
	if err != nil {
		return nil, fmt.Errorf("list erasure queue: %w", err)
	}
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			rows.Close()
			return nil, fmt.Errorf("list erasure queue: %w", err)
		}
		countState(out, st, n)
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("list erasure queue: %w", err)
	}
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM queue q WHERE `+in+` AND q.state = 'failed'
		AND NOT EXISTS (SELECT 1 FROM queue l WHERE `+followsFailed+`)`, args()...).Scan(&out.FailedUnresolved); err != nil {
		return nil, fmt.Errorf("list erasure queue: %w", err)
	}
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM queue q WHERE `+in+` AND q.state IN ('pending', 'claimed') AND q.due_at < ?`, args(out.Now.UnixMilli())...).Scan(&out.Overdue); err != nil {
		return nil, fmt.Errorf("list erasure queue: %w", err)
	}
	if out.Open, err = sqliteListed(ctx, tx, `SELECT `+sqliteListColumns+` FROM queue q WHERE `+in+` AND q.state IN ('pending', 'claimed')
		ORDER BY coalesce(q.due_at, q.enqueued_at), q.n LIMIT ?`, args(o.Limit)...); err != nil {
		return nil, err
	}
	if o.History {
		if out.History, err = sqliteListed(ctx, tx, `SELECT `+sqliteListColumns+` FROM queue q WHERE `+in+` AND q.state IN ('done', 'failed')
			ORDER BY q.finished_at DESC, q.n DESC LIMIT ?`, args(o.Limit)...); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func sqliteListed(ctx context.Context, tx *sql.Tx, query string, args ...any) ([]lineage.QueuedJob, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list erasure queue: %w", err)
	}
	defer rows.Close()
	var out []lineage.QueuedJob
	for rows.Next() {
		j, err := scanSQLiteListed(rows)
		if err != nil {
			return nil, fmt.Errorf("list erasure queue: %w", err)
		}
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list erasure queue: %w", err)
	}
	return out, nil
}

// countState adds n jobs in state st to the listing's counts.
func countState(out *lineage.QueueListing, st string, n int) {
	switch st {
	case lineage.JobPending:
		out.Pending += n
	case lineage.JobClaimed:
		out.Claimed += n
	case lineage.JobDone:
		out.Done += n
	case lineage.JobFailed:
		out.Failed += n
	}
}
