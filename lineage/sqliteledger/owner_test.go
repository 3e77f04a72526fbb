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

// A ledger whose queue predates the owner column gets it on open; its
// queued jobs belong to no host.
func TestSQLiteQueueGetsOwnerColumn(t *testing.T) {
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
	if _, err := db.Exec(`ALTER TABLE queue DROP COLUMN owner`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	l2, err := sqliteledger.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if err := l2.EnqueueFor(ctx, "new-job", ledgertest.Subject(t, "new"), "default", "T-2", "host-a"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"old-job", "new-job"} {
		j, err := l2.ClaimOn(ctx, "w", "host-a", time.Minute)
		if err != nil || j.ID != want {
			t.Fatalf("claim on host-a = %+v, %v; want %s", j, err, want)
		}
	}
}
