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

// Processes that open a ledger whose queue predates the owner and due_at
// columns at the same moment each add the columns once: none fails with a
// duplicate column, and every queued job is kept. Each opener is its own
// database handle (its own connections, as another process has).
func TestSQLiteQueueColumnsConcurrentOpeners(t *testing.T) {
	ctx := context.Background()
	const rounds, openers = 10, 4
	for r := 0; r < rounds; r++ {
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
		for _, c := range []string{"owner", "due_at"} {
			if _, err := db.Exec(`ALTER TABLE queue DROP COLUMN ` + c); err != nil {
				t.Fatal(err)
			}
		}
		db.Close()
		start := make(chan struct{})
		errs := make(chan error, openers)
		ls := make(chan *sqliteledger.Ledger, openers)
		for i := 0; i < openers; i++ {
			go func() {
				<-start
				l, err := sqliteledger.Open(ctx, path)
				errs <- err
				ls <- l
			}()
		}
		close(start)
		for i := 0; i < openers; i++ {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: concurrent open of an old ledger: %v", r, err)
			}
			if l := <-ls; l != nil {
				defer l.Close()
			}
		}
		l2 := openSQLite(t, path)
		jobs, err := l2.Jobs(ctx)
		if err != nil || len(jobs) != 1 || jobs[0].ID != "old-job" || jobs[0].Owner != "" || !jobs[0].Due.IsZero() {
			t.Fatalf("round %d: jobs after the migration = %+v, %v; want old-job with no owner and no due date", r, jobs, err)
		}
	}
}
