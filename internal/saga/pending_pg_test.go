package saga_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/pgdoc"
)

// Issue #8.5 on PostgreSQL: an application transaction that holds the xmin
// horizon from before the delete keeps VACUUM from removing the dead
// tuples. The erasure does not issue a certificate with a PENDING state: it
// pauses with the cause, keeps its evidence, and once the transaction ends
// the same erasure finishes with the byte scan.
func TestLongTransactionPausesThenFinishes(t *testing.T) {
	dsn := os.Getenv("AMNESIA_TEST_PG_DSN")
	if dsn == "" {
		t.Skip("AMNESIA_TEST_PG_DSN is not set: run scripts/test, which starts PostgreSQL 15")
	}
	ctx := context.Background()
	table := fmt.Sprintf("saga_pending_%d", time.Now().UnixNano()%1e9)
	cfg := state.DefaultConfig()
	cfg.Stores = []state.StoreConfig{{Name: "pgdocs", Type: pgdoc.Type, DSN: dsn, Table: table, LockTimeout: "1s"}}
	sd, err := state.Init(filepath.Join(t.TempDir(), "state"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := sqliteledger.Open(ctx, sd.LedgerPath())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s, err := sd.Config.OpenStore(ctx, cfg.Stores[0], true)
	if err != nil {
		t.Fatal(err)
	}
	docs := s.(*pgdoc.Store)
	defer func() {
		docs.Exec(ctx, "DROP TABLE IF EXISTS "+docs.Table())
		docs.Close()
	}()
	for p := 0; p < 3; p++ {
		owner, _ := sd.Keyer.Key(cfg.Scope, fmt.Sprintf("person-%d@example.org", p))
		for d := 0; d < 3; d++ {
			key := fmt.Sprintf("p%d-d%d", p, d)
			text := fmt.Sprintf("Person %d, note %d: asked to move the appointment to day %d, call back at %d after five.", p, d, 10+d, 5550100+p*10+d)
			must(t, l.Record(ctx, lineage.Artifact{ID: lineage.ArtifactID(sd.Keyer, cfg.Scope, "pgdocs", key), Scope: cfg.Scope, Subject: owner, Kind: lineage.KindSource, Store: "pgdocs", Key: key, Digest: lineage.ContentDigest(sd.Keyer, []byte(text))}))
			must(t, docs.Put(ctx, pgdoc.Record{ID: key, Subject: owner.String(), Content: text}))
		}
	}
	target, _ := sd.Keyer.Key(cfg.Scope, "person-1@example.org")
	v, err := l.View(ctx, cfg.Scope, target)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := lineage.BuildTrace(v)
	if err != nil {
		t.Fatal(err)
	}
	// The application: a REPEATABLE READ transaction whose snapshot is
	// older than the delete.
	app, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close(ctx)
	tx, err := app.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	must(t, tx.QueryRow(ctx, "SELECT count(*) FROM "+docs.Table()).Scan(&n))

	stores := map[string]store.Store{"pgdocs": docs}
	_, err = saga.Run(ctx, &saga.Erasure{Dir: sd, Ledger: l, Stores: stores, Trace: tr, Reason: "PG-2", ReclaimWait: 2 * time.Second})
	var pe *saga.PendingError
	if !errors.As(err, &pe) {
		tx.Rollback(ctx)
		t.Fatalf("reclaim under an open transaction: err %v, want a PendingError", err)
	}
	if pe.State != "PENDING-long-transaction" || pe.Store != "pgdocs" {
		t.Errorf("pending %+v, want pgdocs PENDING-long-transaction", pe)
	}
	id := saga.ID(tr.ID)
	if _, err := os.Stat(sd.CertificatePath(id)); err == nil {
		t.Fatal("a paused erasure published a certificate")
	}
	if steps := journalSteps(t, sd, id); steps["reclaim:pgdocs"] == "done" {
		t.Fatalf("reclaim journaled as done while the transaction held the tuples: %v", steps)
	}
	if r, _ := docs.Get(ctx, tr.Plan[0].Delete[0]); r != nil {
		t.Error("the paused erasure left the record readable: delete must come before the pause")
	}
	must(t, tx.Rollback(ctx))
	res, err := saga.Run(ctx, &saga.Erasure{Dir: sd, Ledger: l, Stores: stores, Trace: tr})
	if err != nil {
		t.Fatalf("resume after the transaction ended: %v", err)
	}
	p := res.Statement.Predicate
	if !p.Complete || p.Counts.VerifiedPhysical != len(tr.Artifacts) || p.Reason != "PG-2" {
		t.Fatalf("resumed erasure: complete=%v counts=%+v reason=%q; declared %+v", p.Complete, p.Counts, p.Reason, p.DeclaredScope)
	}
}
