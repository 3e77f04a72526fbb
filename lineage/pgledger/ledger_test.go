package pgledger_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/lineage/ledgertest"
	"github.com/amnesia-dev/amnesia/lineage/pgledger"
	"github.com/amnesia-dev/amnesia/transparency"
	"github.com/amnesia-dev/amnesia/transparency/storagetest"
)

func openPostgres(t *testing.T, dsn string) *pgledger.Ledger {
	t.Helper()
	l, err := pgledger.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// postgresPair opens two ledgers on one fresh database: two connection
// pools, as two processes would hold.
func postgresPair(t *testing.T) (lineage.Ledger, lineage.Ledger) {
	dsn := ledgertest.PostgresDSN(t)
	return openPostgres(t, dsn), openPostgres(t, dsn)
}

// TestPostgres runs the ledger conformance suite on PostgreSQL, each test on
// a database of its own.
func TestPostgres(t *testing.T) {
	ledgertest.PostgresDSN(t) // skip early when there is no server
	ledgertest.Run(t, func(t *testing.T) lineage.Ledger { return openPostgres(t, ledgertest.PostgresDSN(t)) })
	t.Run("Shared", func(t *testing.T) { ledgertest.RunShared(t, postgresPair) })
	t.Run("Queue", func(t *testing.T) { ledgertest.RunQueue(t, postgresPair) })
	t.Run("Requests", func(t *testing.T) { ledgertest.RunRequests(t, postgresPair) })
}

func exec(t *testing.T, dsn, stmt string) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, stmt); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

// TestPostgresClaimSkipsLockedRows holds a row lock on the oldest job from
// another connection: Claim must skip it at once and take the next job,
// never wait for the lock and never return the locked job.
func TestPostgresClaimSkipsLockedRows(t *testing.T) {
	dsn := ledgertest.PostgresDSN(t)
	l := openPostgres(t, dsn)
	ctx := context.Background()
	for _, id := range []string{"trace-a", "trace-b"} {
		if err := l.Enqueue(ctx, id, ledgertest.Subject(t, id), "default", "T-1"); err != nil {
			t.Fatal(err)
		}
	}
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var locked string
	if err := tx.QueryRow(ctx, `SELECT id FROM queue ORDER BY n LIMIT 1 FOR UPDATE`).Scan(&locked); err != nil || locked != "trace-a" {
		t.Fatalf("lock the oldest job: %q, %v", locked, err)
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	j, err := l.Claim(cctx, "w1", time.Minute)
	if err != nil || j.ID != "trace-b" {
		t.Fatalf("claim while trace-a is locked = %+v, %v; want trace-b without waiting", j, err)
	}
	if _, err := l.Claim(cctx, "w1", time.Minute); !errors.Is(err, lineage.ErrNoJob) {
		t.Fatalf("claim with only a locked job left = %v, want ErrNoJob", err)
	}
	tx.Rollback(ctx)
	if j, err := l.Claim(ctx, "w2", time.Minute); err != nil || j.ID != "trace-a" {
		t.Fatalf("claim after the lock is gone = %+v, %v; want trace-a", j, err)
	}
}

func TestPostgresSchemaChecks(t *testing.T) {
	ctx := context.Background()
	t.Run("OtherVersionRefused", func(t *testing.T) {
		dsn := ledgertest.PostgresDSN(t)
		openPostgres(t, dsn).Close()
		exec(t, dsn, `UPDATE meta SET v = 'amnesia.ledger/v0' WHERE k = 'schema'`)
		if _, err := pgledger.Open(ctx, dsn); err == nil || !strings.Contains(err.Error(), "amnesia.ledger/v0") {
			t.Errorf("open of a v0 ledger = %v, want a schema version error", err)
		}
	})
	t.Run("QueueGetsOwnerColumn", func(t *testing.T) {
		dsn := ledgertest.PostgresDSN(t)
		l := openPostgres(t, dsn)
		if err := l.Enqueue(ctx, "old-job", ledgertest.Subject(t, "old"), "default", "T-1"); err != nil {
			t.Fatal(err)
		}
		l.Close()
		exec(t, dsn, `ALTER TABLE queue DROP COLUMN owner`)
		l2 := openPostgres(t, dsn)
		if err := l2.EnqueueFor(ctx, "new-job", ledgertest.Subject(t, "new"), "default", "T-2", "host-a"); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"old-job", "new-job"} {
			if j, err := l2.ClaimOn(ctx, "w", "host-a", time.Minute); err != nil || j.ID != want {
				t.Fatalf("claim on host-a = %+v, %v; want %s", j, err, want)
			}
		}
	})
	t.Run("ForeignTablesRefused", func(t *testing.T) {
		dsn := ledgertest.PostgresDSN(t)
		exec(t, dsn, `CREATE TABLE events (id serial PRIMARY KEY, payload jsonb)`)
		if _, err := pgledger.Open(ctx, dsn); err == nil || !strings.Contains(err.Error(), "not an amnesia ledger") {
			t.Errorf("open over an application's events table = %v, want a refusal", err)
		}
	})
	t.Run("EventsAreAppendOnly", func(t *testing.T) {
		dsn := ledgertest.PostgresDSN(t)
		l := openPostgres(t, dsn)
		k := ledgertest.Keyer(t)
		owner, _ := k.Key("default", "alice@example.org")
		if err := l.Record(ctx, ledgertest.Art(k, owner, lineage.KindSource, "docs", "d1")); err != nil {
			t.Fatal(err)
		}
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		for _, stmt := range []string{`UPDATE events SET kind = 'x'`, `DELETE FROM events`, `TRUNCATE events`} {
			if _, err := c.Exec(ctx, stmt); err == nil || !strings.Contains(err.Error(), "append-only") {
				t.Errorf("%s = %v, want refused", stmt, err)
			}
		}
	})
	t.Run("ConcurrentFirstOpens", func(t *testing.T) {
		dsn := ledgertest.PostgresDSN(t)
		errs := make(chan error, 4)
		for i := 0; i < 4; i++ {
			go func() {
				l, err := pgledger.Open(ctx, dsn)
				if err == nil {
					l.Close()
				}
				errs <- err
			}()
		}
		for i := 0; i < 4; i++ {
			if err := <-errs; err != nil {
				t.Errorf("concurrent first open: %v", err)
			}
		}
	})
	t.Run("OpenSelectsPostgres", func(t *testing.T) {
		l, err := lineage.Open(ctx, ledgertest.PostgresDSN(t))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if _, ok := l.(*pgledger.Ledger); !ok {
			t.Errorf("Open(postgres URL) = %T, want *pgledger.Ledger", l)
		}
	})
}

// TestStorage runs the transparency log's storage suite on PostgreSQL, each
// test on a database of its own; skipped without AMNESIA_TEST_PG_DSN.
func TestStorage(t *testing.T) {
	ledgertest.PostgresDSN(t) // skip early when there is no server
	storagetest.Run(t, func(t *testing.T) transparency.Store { return openPostgres(t, ledgertest.PostgresDSN(t)) })
	t.Run("Shared", func(t *testing.T) {
		storagetest.RunShared(t, func(t *testing.T) (transparency.Store, transparency.Store) {
			dsn := ledgertest.PostgresDSN(t)
			return openPostgres(t, dsn), openPostgres(t, dsn)
		})
	})
}

// TestPostgresFailedWriteRollsBack makes the write round trip of a batch
// fail in the server (two artifact ids at one store location: the unique
// index refuses the second): nothing of the batch stays, the lock is
// released and every connection of the ledger writes again at once.
func TestPostgresFailedWriteRollsBack(t *testing.T) {
	ctx := context.Background()
	l := openPostgres(t, ledgertest.PostgresDSN(t))
	k := ledgertest.Keyer(t)
	alice, _ := k.Key("default", "alice@example.org")
	doc := ledgertest.Art(k, alice, lineage.KindSource, "docs", "d1")
	if err := l.Record(ctx, doc); err != nil {
		t.Fatal(err)
	}
	seq0, h0, _ := l.Head(ctx)
	twin := ledgertest.Art(k, alice, lineage.KindChunk, "docs", "d1#0", doc.ID)
	clash := twin
	clash.ID = "art:00000000000000000000"
	for i := 0; i < 10; i++ { // more than the pool's connections
		err := l.RecordBatch(ctx, []lineage.Artifact{twin, clash}, nil)
		if err == nil || !strings.Contains(err.Error(), "artifacts_location") {
			t.Fatalf("RecordBatch of two ids at one location = %v, want the unique index's refusal", err)
		}
		if seq, h, _ := l.Head(ctx); seq != seq0 || h != h0 {
			t.Fatalf("the failed batch appended events (%d -> %d)", seq0, seq)
		}
		if _, err := l.Lookup(ctx, "default", "docs", "d1#0"); !errors.Is(err, lineage.ErrNotFound) {
			t.Fatalf("the failed batch recorded an artifact: %v", err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- l.RecordBatch(ctx, []lineage.Artifact{twin}, nil) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a write after failed batches waits: the ledger's lock was not released")
	}
	if seq, _, _ := l.Head(ctx); seq != seq0+1 {
		t.Fatalf("head after the good batch = %d, want %d", seq, seq0+1)
	}
}
