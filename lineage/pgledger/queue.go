package pgledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/lineage"
)

const pgQueueSchema = `
CREATE TABLE queue (
	n            BIGINT GENERATED ALWAYS AS IDENTITY,
	id           TEXT PRIMARY KEY,
	subject      TEXT NOT NULL,
	scope        TEXT NOT NULL,
	reason       TEXT NOT NULL,
	state        TEXT NOT NULL DEFAULT 'pending',
	worker       TEXT NOT NULL DEFAULT '',
	attempts     INTEGER NOT NULL DEFAULT 0,
	enqueued_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
	available_at TIMESTAMPTZ NOT NULL DEFAULT now(),
	lease_until  TIMESTAMPTZ,
	finished_at  TIMESTAMPTZ,
	certificate  TEXT NOT NULL DEFAULT '',
	error        TEXT NOT NULL DEFAULT '',
	owner        TEXT NOT NULL DEFAULT '',
	due_at       TIMESTAMPTZ
);
CREATE INDEX queue_open ON queue (n) WHERE state IN ('pending', 'claimed');
CREATE INDEX queue_subject_open ON queue (subject) WHERE state IN ('pending', 'claimed');
CREATE INDEX queue_subject ON queue (subject, scope);
`

const pgJobColumns = `id, subject, scope, reason, state, worker, attempts, lease_until, certificate, error, owner, enqueued_at, due_at`

func scanPgJob(r pgx.Row) (*lineage.Job, error) {
	var j lineage.Job
	var lease, due *time.Time
	if err := r.Scan(&j.ID, &j.Subject, &j.Scope, &j.Reason, &j.State, &j.Worker, &j.Attempts, &lease, &j.Certificate, &j.Error, &j.Owner, &j.EnqueuedAt, &due); err != nil {
		return nil, err
	}
	if lease != nil {
		j.LeaseUntil = *lease
	}
	if due != nil {
		j.Due = *due
	}
	return &j, nil
}

// pgQueueOwner adds the columns added to the queue since it was first made
// (owner, then due_at: NULL for the jobs queued before due dates), and the
// indexes queue_subject_open and queue_subject, to a queue made before them.
func pgQueueOwner(ctx context.Context, tx pgx.Tx) error {
	for _, c := range []struct{ name, ddl string }{
		{"owner", `ALTER TABLE queue ADD COLUMN owner TEXT NOT NULL DEFAULT ''`},
		{"due_at", `ALTER TABLE queue ADD COLUMN due_at TIMESTAMPTZ`},
	} {
		var has bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM information_schema.columns
			WHERE table_schema = current_schema() AND table_name = 'queue' AND column_name = $1)`, c.name).Scan(&has); err != nil {
			return err
		}
		if !has {
			if _, err := tx.Exec(ctx, c.ddl); err != nil {
				return err
			}
		}
	}
	// capture's read of a subject's queued erasure (SubjectState). Looked
	// up first, as initConsent does: CREATE INDEX (even IF NOT EXISTS)
	// takes a SHARE lock on queue, which would hold up every claim and
	// enqueue at each open, and needs the table's owner; an open of a
	// ledger that has it only reads the catalog.
	// status's look-up of the jobs of a failed job's subject, whatever
	// their state (lineage.QueuedJob.FollowedBy): queue_subject.
	for _, ix := range []struct{ name, ddl string }{
		{"queue_subject_open", `CREATE INDEX queue_subject_open ON queue (subject) WHERE state IN ('pending', 'claimed')`},
		{"queue_subject", `CREATE INDEX queue_subject ON queue (subject, scope)`},
	} {
		var has bool
		if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, ix.name).Scan(&has); err != nil {
			return err
		}
		if has {
			continue
		}
		if _, err := tx.Exec(ctx, ix.ddl); err != nil {
			return err
		}
	}
	return nil
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
	var dueAt *time.Time
	if !due.IsZero() {
		dueAt = &due
	}
	err := l.pool.with(ctx, func(c *pgx.Conn) error {
		_, err := c.Exec(ctx, `INSERT INTO queue (id, subject, scope, reason, owner, due_at) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING`,
			traceID, subjectKeyHex, scope, reason, owner, dueAt)
		return err
	})
	if err != nil {
		return fmt.Errorf("enqueue erasure: %w", err)
	}
	return nil
}

// Claim implements lineage.Queue. The oldest claimable row is locked with FOR UPDATE
// SKIP LOCKED: a concurrent Claim skips it instead of waiting for it, and
// claims the next one.
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
	var j *lineage.Job
	err := l.pool.with(ctx, func(c *pgx.Conn) error {
		var err error
		j, err = scanPgJob(c.QueryRow(ctx, `
			UPDATE queue q SET state = 'claimed', worker = $1, attempts = q.attempts + 1,
				lease_until = now() + $2::float8 * interval '1 second'
			FROM (SELECT id FROM queue
				WHERE ((state = 'pending' AND available_at <= now()) OR (state = 'claimed' AND lease_until <= now()))
					AND ($3 OR owner = '' OR owner = $4)
				ORDER BY coalesce(due_at, enqueued_at), n LIMIT 1 FOR UPDATE SKIP LOCKED) c
			WHERE q.id = c.id
			RETURNING q.id, q.subject, q.scope, q.reason, q.state, q.worker, q.attempts, q.lease_until, q.certificate, q.error, q.owner, q.enqueued_at, q.due_at`,
			worker, lease.Seconds(), anyHost, host))
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, lineage.ErrNoJob
	}
	if err != nil {
		return nil, fmt.Errorf("claim erasure: %w", err)
	}
	return j, nil
}

// pgFenced runs an update of the claim j; none updated is lineage.ErrLeaseLost,
// unless already reports that the update was done before (idempotence).
func (l *Ledger) pgFenced(ctx context.Context, op string, j *lineage.Job, set string, args ...any) (int64, error) {
	var n int64
	err := l.pool.with(ctx, func(c *pgx.Conn) error {
		tag, err := c.Exec(ctx, `UPDATE queue SET `+set+` WHERE id = $1 AND worker = $2 AND attempts = $3 AND state = 'claimed'`,
			append([]any{j.ID, j.Worker, j.Attempts}, args...)...)
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("%s: %w", op, err)
	}
	return n, nil
}

// Renew implements lineage.Queue.
func (l *Ledger) Renew(ctx context.Context, j *lineage.Job, lease time.Duration) error {
	n, err := l.pgFenced(ctx, "renew lease", j, `lease_until = now() + $4::float8 * interval '1 second'`, lease.Seconds())
	if err == nil && n == 0 {
		err = lineage.ErrLeaseLost
	}
	return err
}

// Complete implements lineage.Queue.
func (l *Ledger) Complete(ctx context.Context, j *lineage.Job, certificate string) error {
	n, err := l.pgFenced(ctx, "complete erasure", j, `state = 'done', certificate = $4, lease_until = NULL, finished_at = now()`, certificate)
	if err != nil || n > 0 {
		return err
	}
	now, err := l.job(ctx, j.ID)
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
	n, err := l.pgFenced(ctx, "fail erasure", j, `state = 'failed', error = $4, lease_until = NULL, finished_at = now()`, reason)
	if err == nil && n == 0 {
		err = lineage.ErrLeaseLost
	}
	return err
}

// Release implements lineage.Queue.
func (l *Ledger) Release(ctx context.Context, j *lineage.Job, delay time.Duration, reason string) error {
	n, err := l.pgFenced(ctx, "release erasure", j, `state = 'pending', lease_until = NULL, available_at = now() + $4::float8 * interval '1 second', error = CASE WHEN $5::text = '' THEN error ELSE $5::text END`, delay.Seconds(), reason)
	if err == nil && n == 0 {
		err = lineage.ErrLeaseLost
	}
	return err
}

func (l *Ledger) job(ctx context.Context, id string) (*lineage.Job, error) {
	var j *lineage.Job
	err := l.pool.with(ctx, func(c *pgx.Conn) error {
		var err error
		j, err = scanPgJob(c.QueryRow(ctx, `SELECT `+pgJobColumns+` FROM queue WHERE id = $1`, id))
		return err
	})
	return j, err
}

// Jobs implements lineage.Queue.
func (l *Ledger) Jobs(ctx context.Context) ([]lineage.Job, error) {
	var out []lineage.Job
	err := l.pool.with(ctx, func(c *pgx.Conn) error {
		rows, _ := c.Query(ctx, `SELECT `+pgJobColumns+` FROM queue ORDER BY n`)
		var err error
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (lineage.Job, error) {
			j, err := scanPgJob(r)
			if err != nil {
				return lineage.Job{}, err
			}
			return *j, nil
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list erasure jobs: %w", err)
	}
	return out, nil
}
