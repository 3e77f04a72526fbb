package sqliteledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/amnesia-dev/amnesia/lineage"
)

// The SQLite queue keeps times as Unix milliseconds of the host's clock.
const sqliteQueueSchema = `
CREATE TABLE IF NOT EXISTS queue (
	n            INTEGER PRIMARY KEY AUTOINCREMENT,
	id           TEXT NOT NULL UNIQUE,
	subject      TEXT NOT NULL,
	scope        TEXT NOT NULL,
	reason       TEXT NOT NULL,
	state        TEXT NOT NULL DEFAULT 'pending',
	worker       TEXT NOT NULL DEFAULT '',
	attempts     INTEGER NOT NULL DEFAULT 0,
	enqueued_at  INTEGER NOT NULL,
	available_at INTEGER NOT NULL,
	lease_until  INTEGER,
	finished_at  INTEGER,
	certificate  TEXT NOT NULL DEFAULT '',
	error        TEXT NOT NULL DEFAULT '',
	owner        TEXT NOT NULL DEFAULT '',
	due_at       INTEGER
);
CREATE INDEX IF NOT EXISTS queue_open ON queue (state, n);
CREATE INDEX IF NOT EXISTS queue_subject_open ON queue (subject) WHERE state IN ('pending', 'claimed');
-- status: the jobs of a failed job's subject, whatever their state
-- (lineage.QueuedJob.FollowedBy), without a scan of the queue per failed
-- job. Made at the first open of a ledger from before it.
CREATE INDEX IF NOT EXISTS queue_subject ON queue (subject, scope);
`

var (
	_ lineage.Queue    = (*Ledger)(nil)
	_ lineage.EventLog = (*Ledger)(nil)
)

const sqliteJobColumns = `id, subject, scope, reason, state, worker, attempts, lease_until, certificate, error, owner, enqueued_at, due_at`

func scanSQLiteJob(r scanner) (*lineage.Job, error) {
	var j lineage.Job
	var lease, due sql.NullInt64
	var queued int64
	if err := r.Scan(&j.ID, &j.Subject, &j.Scope, &j.Reason, &j.State, &j.Worker, &j.Attempts, &lease, &j.Certificate, &j.Error, &j.Owner, &queued, &due); err != nil {
		return nil, err
	}
	if lease.Valid {
		j.LeaseUntil = time.UnixMilli(lease.Int64)
	}
	j.EnqueuedAt = time.UnixMilli(queued)
	if due.Valid {
		j.Due = time.UnixMilli(due.Int64)
	}
	return &j, nil
}

func nowMilli() int64 { return time.Now().UnixMilli() }

// sqliteQueueOwner adds the columns added to the queue since it was first
// made (owner, then due_at: NULL for the jobs queued before due dates) to a
// queue made before them. It checks and alters in one write transaction
// (BEGIN IMMEDIATE: the DSN's _txlock), so that two processes opening an old
// ledger at once add each column once: the second waits for the first's
// write lock (busy_timeout), then finds the columns there.
func sqliteQueueOwner(ctx context.Context, db *sql.DB) error {
	cols := []struct{ name, ddl string }{
		{"owner", `ALTER TABLE queue ADD COLUMN owner TEXT NOT NULL DEFAULT ''`},
		{"due_at", `ALTER TABLE queue ADD COLUMN due_at INTEGER`},
	}
	missing := func(q interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}) ([]string, error) {
		var out []string
		for _, c := range cols {
			var n int
			if err := q.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('queue') WHERE name = ?`, c.name).Scan(&n); err != nil {
				return nil, err
			}
			if n == 0 {
				out = append(out, c.ddl)
			}
		}
		return out, nil
	}
	// The common case, a current queue, takes no write lock.
	if todo, err := missing(db); err != nil || len(todo) == 0 {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	todo, err := missing(tx) // again, under the write lock
	if err != nil {
		return err
	}
	for _, ddl := range todo {
		if _, err := tx.ExecContext(ctx, ddl); err != nil {
			return err
		}
	}
	return tx.Commit()
}

var _ lineage.RoutedQueue = (*Ledger)(nil)

// Enqueue implements lineage.Queue.
func (l *Ledger) Enqueue(ctx context.Context, traceID, subjectKeyHex, scope, reason string) error {
	return l.EnqueueFor(ctx, traceID, subjectKeyHex, scope, reason, "")
}

// EnqueueFor implements lineage.RoutedQueue.
func (l *Ledger) EnqueueFor(ctx context.Context, traceID, subjectKeyHex, scope, reason, owner string) error {
	return l.EnqueueDue(ctx, traceID, subjectKeyHex, scope, reason, owner, time.Time{})
}

// EnqueueDue implements lineage.WindowQueue.
func (l *Ledger) EnqueueDue(ctx context.Context, traceID, subjectKeyHex, scope, reason, owner string, due time.Time) error {
	if err := lineage.CheckEnqueue(traceID, subjectKeyHex, reason); err != nil {
		return err
	}
	now := nowMilli()
	var dueAt sql.NullInt64
	if !due.IsZero() {
		dueAt = sql.NullInt64{Int64: due.UnixMilli(), Valid: true}
	}
	if _, err := l.db.ExecContext(ctx, `INSERT INTO queue (id, subject, scope, reason, enqueued_at, available_at, owner, due_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO NOTHING`, traceID, subjectKeyHex, scope, reason, now, now, owner, dueAt); err != nil {
		return fmt.Errorf("enqueue erasure: %w", err)
	}
	return nil
}

// Claim implements lineage.Queue. One UPDATE statement: SQLite's write lock makes it
// atomic against every other process that opened the file.
func (l *Ledger) Claim(ctx context.Context, worker string, lease time.Duration) (*lineage.Job, error) {
	return l.claim(ctx, worker, "", true, lease)
}

// ClaimOn implements lineage.RoutedQueue: Claim restricted to the jobs
// bound to host or to no host.
func (l *Ledger) ClaimOn(ctx context.Context, worker, host string, lease time.Duration) (*lineage.Job, error) {
	if host == "" {
		return nil, errors.New("claim erasure: a host name is required")
	}
	return l.claim(ctx, worker, host, false, lease)
}

func (l *Ledger) claim(ctx context.Context, worker, host string, anyHost bool, lease time.Duration) (*lineage.Job, error) {
	if err := lineage.CheckClaim(worker, lease); err != nil {
		return nil, err
	}
	now := nowMilli()
	j, err := scanSQLiteJob(l.db.QueryRowContext(ctx, `
		UPDATE queue SET state = 'claimed', worker = ?, attempts = attempts + 1, lease_until = ?
		WHERE n = (SELECT n FROM queue
			WHERE ((state = 'pending' AND available_at <= ?) OR (state = 'claimed' AND lease_until <= ?))
				AND (? OR owner = '' OR owner = ?)
			ORDER BY coalesce(due_at, enqueued_at), n LIMIT 1)
		RETURNING `+sqliteJobColumns, worker, now+lease.Milliseconds(), now, now, anyHost, host))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, lineage.ErrNoJob
	}
	if err != nil {
		return nil, fmt.Errorf("claim erasure: %w", err)
	}
	return j, nil
}

// fenced runs an update of the claim j and returns how many rows it changed.
func (l *Ledger) fenced(ctx context.Context, op string, j *lineage.Job, set string, args ...any) (int64, error) {
	res, err := l.db.ExecContext(ctx, `UPDATE queue SET `+set+` WHERE id = ? AND worker = ? AND attempts = ? AND state = 'claimed'`,
		append(args, j.ID, j.Worker, j.Attempts)...)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", op, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", op, err)
	}
	return n, nil
}

func lostIfNone(n int64, err error) error {
	if err == nil && n == 0 {
		return lineage.ErrLeaseLost
	}
	return err
}

// Renew implements lineage.Queue.
func (l *Ledger) Renew(ctx context.Context, j *lineage.Job, lease time.Duration) error {
	return lostIfNone(l.fenced(ctx, "renew lease", j, `lease_until = ?`, nowMilli()+lease.Milliseconds()))
}

// Complete implements lineage.Queue.
func (l *Ledger) Complete(ctx context.Context, j *lineage.Job, certificate string) error {
	n, err := l.fenced(ctx, "complete erasure", j, `state = 'done', certificate = ?, lease_until = NULL, finished_at = ?`, certificate, nowMilli())
	if err != nil || n > 0 {
		return err
	}
	now, err := scanSQLiteJob(l.db.QueryRowContext(ctx, `SELECT `+sqliteJobColumns+` FROM queue WHERE id = ?`, j.ID))
	if err != nil {
		return fmt.Errorf("complete erasure: %w", err)
	}
	if now.State == lineage.JobDone && now.Worker == j.Worker && now.Attempts == j.Attempts && now.Certificate == certificate {
		return nil
	}
	return lineage.ErrLeaseLost
}

// Fail implements lineage.Queue.
func (l *Ledger) Fail(ctx context.Context, j *lineage.Job, reason string) error {
	return lostIfNone(l.fenced(ctx, "fail erasure", j, `state = 'failed', error = ?, lease_until = NULL, finished_at = ?`, reason, nowMilli()))
}

// Release implements lineage.Queue.
func (l *Ledger) Release(ctx context.Context, j *lineage.Job, delay time.Duration, reason string) error {
	return lostIfNone(l.fenced(ctx, "release erasure", j, `state = 'pending', lease_until = NULL, available_at = ?, error = CASE WHEN ? = '' THEN error ELSE ? END`, nowMilli()+delay.Milliseconds(), reason, reason))
}

// Jobs implements lineage.Queue.
func (l *Ledger) Jobs(ctx context.Context) ([]lineage.Job, error) {
	rows, err := l.db.QueryContext(ctx, `SELECT `+sqliteJobColumns+` FROM queue ORDER BY n`)
	if err != nil {
		return nil, fmt.Errorf("list erasure jobs: %w", err)
	}
	defer rows.Close()
	var out []lineage.Job
	for rows.Next() {
		j, err := scanSQLiteJob(rows)
		if err != nil {
			return nil, fmt.Errorf("list erasure jobs: %w", err)
		}
		out = append(out, *j)
	}
	return out, rows.Err()
}
