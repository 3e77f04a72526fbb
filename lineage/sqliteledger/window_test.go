package sqliteledger_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/lineage/ledgertest"
	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
)

// A ledger whose queue predates due dates gets the due_at column on open;
// its old jobs have no due date and come first in a window (due when
// queued).
func TestSQLiteQueueGetsDueColumn(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l := openSQLite(t, path)
	if err := l.Enqueue(ctx, "old-job", ledgertest.Subject(t, "old"), "default", "T-1"); err != nil {
		t.Fatal(err)
	}
	l.Close()
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`ALTER TABLE queue DROP COLUMN due_at`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	l2, err := sqliteledger.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	due := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	if err := l2.EnqueueDue(ctx, "new-job", ledgertest.Subject(t, "new"), "default", "T-2", "", due); err != nil {
		t.Fatal(err)
	}
	win, err := l2.ClaimWindow(ctx, "w", "", 10, time.Minute)
	if err != nil || len(win) != 2 || win[0].ID != "old-job" || !win[0].Due.IsZero() || win[1].ID != "new-job" || !win[1].Due.Equal(due) {
		t.Fatalf("window after migration = %+v, %v", win, err)
	}
}
