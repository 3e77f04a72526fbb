package pgledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/lineage/ledgertest"
	"github.com/amnesia-dev/amnesia/lineage/pgledger"
)

// A ledger whose queue predates due dates (no owner, no due_at) gets both
// columns on open; its old jobs have no due date and come first in a
// window (due when queued).
func TestPostgresQueueGetsDueColumn(t *testing.T) {
	ctx := context.Background()
	dsn := ledgertest.PostgresDSN(t)
	l := openPostgres(t, dsn)
	if err := l.Enqueue(ctx, "old-job", ledgertest.Subject(t, "old"), "default", "T-1"); err != nil {
		t.Fatal(err)
	}
	l.Close()
	exec(t, dsn, `ALTER TABLE queue DROP COLUMN due_at`)
	exec(t, dsn, `ALTER TABLE queue DROP COLUMN owner`)
	l2 := openPostgres(t, dsn)
	due := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	if err := l2.EnqueueDue(ctx, "new-job", ledgertest.Subject(t, "new"), "default", "T-2", "host-a", due); err != nil {
		t.Fatal(err)
	}
	win, err := l2.ClaimWindow(ctx, "w", "host-a", 10, time.Minute)
	if err != nil || len(win) != 2 || win[0].ID != "old-job" || !win[0].Due.IsZero() || win[1].ID != "new-job" || !win[1].Due.Equal(due) {
		t.Fatalf("window after migration = %+v, %v", win, err)
	}
}

// Opening a ledger whose queue has index queue_subject_open does not lock
// the queue: an enqueue not yet committed on another connection (ROW
// EXCLUSIVE on queue, which a CREATE INDEX, even IF NOT EXISTS, waits on)
// does not hold up the open. A queue made before the index gets it on open.
func TestPostgresOpenDoesNotLockQueue(t *testing.T) {
	ctx := context.Background()
	dsn := ledgertest.PostgresDSN(t)
	openPostgres(t, dsn).Close()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO queue (id, subject, scope, reason) VALUES ('held', 'x', 'default', 'T-1')`); err != nil {
		t.Fatal(err)
	}
	octx, cancel := context.WithTimeout(ctx, 5*time.Second)
	l, err := pgledger.Open(octx, dsn)
	cancel()
	if err != nil {
		t.Fatalf("open while another transaction writes the queue: %v", err)
	}
	l.Close()
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	exec(t, dsn, `DROP INDEX queue_subject_open`)
	openPostgres(t, dsn).Close()
	var has bool
	if err := c.QueryRow(ctx, `SELECT to_regclass('queue_subject_open') IS NOT NULL`).Scan(&has); err != nil || !has {
		t.Fatalf("index queue_subject_open after open of a queue without it: %v, %v", has, err)
	}
}
