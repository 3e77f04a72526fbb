package pgledger

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/lineage"
)

var _ lineage.QueueLister = (*Ledger)(nil)

// followsFailed: job l resolves the failed job q (lineage.QueuedJob.FollowedBy):
// a job of the same subject and scope queued after q, or one done after q
// was queued.
const followsFailed = `l.subject = q.subject AND l.scope = q.scope AND l.id <> q.id
	AND (l.n > q.n OR (l.state = 'done' AND l.finished_at >= q.enqueued_at))`

// pgListColumns are pgJobColumns, then available_at, finished_at and, for a
// failed job, the latest job that follows it (followsFailed).
const pgListColumns = `q.id, q.subject, q.scope, q.reason, q.state, q.worker, q.attempts, q.lease_until, q.certificate, q.error, q.owner, q.enqueued_at, q.due_at,
	q.available_at, q.finished_at,
	CASE WHEN q.state = 'failed' THEN (SELECT l.id FROM queue l WHERE ` + followsFailed + ` ORDER BY l.n DESC LIMIT 1) END`

// pgInScopes selects the jobs of every scope ($1) or of the scopes $2.
const pgInScopes = `($1 OR q.scope = ANY($2::text[]))`

func scanPgListed(r pgx.CollectableRow) (lineage.QueuedJob, error) {
	var q lineage.QueuedJob
	var lease, due, finished *time.Time
	var next *string
	j := &q.Job
	if err := r.Scan(&j.ID, &j.Subject, &j.Scope, &j.Reason, &j.State, &j.Worker, &j.Attempts, &lease, &j.Certificate, &j.Error, &j.Owner, &j.EnqueuedAt, &due,
		&q.AvailableAt, &finished, &next); err != nil {
		return q, err
	}
	if lease != nil {
		j.LeaseUntil = *lease
	}
	if due != nil {
		j.Due = *due
	}
	if finished != nil {
		q.FinishedAt = *finished
	}
	if next != nil {
		q.FollowedBy = *next
	}
	return q, nil
}

// ListQueue implements lineage.QueueLister: one READ ONLY, REPEATABLE READ
// transaction (one snapshot; it takes no row lock).
func (l *Ledger) ListQueue(ctx context.Context, o lineage.QueueListOptions) (*lineage.QueueListing, error) {
	if err := lineage.CheckListQueue(o); err != nil {
		return nil, err
	}
	out := &lineage.QueueListing{}
	err := l.pool.with(ctx, func(c *pgx.Conn) error {
		opts := pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
		return pgx.BeginTxFunc(ctx, c, opts, func(tx pgx.Tx) error {
			*out = lineage.QueueListing{}
			if err := tx.QueryRow(ctx, `SELECT now()`).Scan(&out.Now); err != nil {
				return err
			}
			// $1: every scope; $2: only these.
			all, scopes := o.Scopes == nil, o.Scopes
			if scopes == nil {
				scopes = []string{}
			}
			rows, _ := tx.Query(ctx, `SELECT q.state, count(*) FROM queue q WHERE `+pgInScopes+` GROUP BY q.state`, all, scopes)
			var st string
			var n int
			if _, err := pgx.ForEachRow(rows, []any{&st, &n}, func() error {
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
				return nil
			}); err != nil {
				return err
			}
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM queue q WHERE `+pgInScopes+` AND q.state = 'failed'
				AND NOT EXISTS (SELECT 1 FROM queue l WHERE `+followsFailed+`)`, all, scopes).Scan(&out.FailedUnresolved); err != nil {
				return err
			}
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM queue q WHERE `+pgInScopes+` AND q.state IN ('pending', 'claimed') AND q.due_at < $3`, all, scopes, out.Now).Scan(&out.Overdue); err != nil {
				return err
			}
			var err error
			rows, _ = tx.Query(ctx, `SELECT `+pgListColumns+` FROM queue q WHERE `+pgInScopes+` AND q.state IN ('pending', 'claimed')
				ORDER BY coalesce(q.due_at, q.enqueued_at), q.n LIMIT $3`, all, scopes, o.Limit)
			if out.Open, err = pgx.CollectRows(rows, scanPgListed); err != nil {
				return err
			}
			if o.History {
				rows, _ = tx.Query(ctx, `SELECT `+pgListColumns+` FROM queue q WHERE `+pgInScopes+` AND q.state IN ('done', 'failed')
					ORDER BY q.finished_at DESC NULLS LAST, q.n DESC LIMIT $3`, all, scopes, o.Limit)
				if out.History, err = pgx.CollectRows(rows, scanPgListed); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list erasure queue: %w", err)
	}
	return out, nil
}
