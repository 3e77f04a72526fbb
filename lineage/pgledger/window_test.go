package pgledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/lineage/ledgertest"
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
