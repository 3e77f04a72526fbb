package comeback_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/comeback"
	"github.com/amnesia-dev/amnesia/internal/pgtest"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store"
)

const alice, bob = "alice@example.org", "bob@example.org"

func pgExec(t *testing.T, dsn string, stmts ...string) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	for _, q := range stmts {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// restoredTable: a PostgreSQL table copied before an erasure and restored
// from that copy after it. Due catches it (RESIDUAL, an alert in the log);
// Replay deletes the records again and certifies it (linked to the erasure,
// measurement.deleted); Due is clean again. ledger is the installation's
// ledger ("" for SQLite).
func restoredTable(t *testing.T, ledger string) {
	ctx := context.Background()
	dsn := pgtest.DB(t)
	cfg := state.DefaultConfig()
	cfg.Stores = []store.Config{{Name: "tickets", Type: "postgres", DSN: dsn, Table: "tickets"}}
	cfg.Ledger = ledger
	dir := t.TempDir() + "/.amnesia"
	if _, err := state.Init(dir, cfg); err != nil {
		t.Fatal(err)
	}
	app, err := capture.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := app.Docs(ctx, "tickets")
	if err != nil {
		t.Fatal(err)
	}
	for i, who := range []string{alice, alice, bob} {
		id := []string{"t-1", "t-2", "t-3"}[i]
		if err := docs.Put(ctx, capture.Doc{ID: id, Kind: capture.KindDocument, Subject: who, Text: "ticket " + id + " about a broken heater"}); err != nil {
			t.Fatal(err)
		}
	}
	pgExec(t, dsn, `CREATE TABLE tickets_backup AS SELECT * FROM tickets`)
	backupAt := time.Now().Add(-time.Second)
	er, err := app.Erase(ctx, alice, "DSR-11")
	if err != nil || !er.Complete {
		t.Fatalf("erase: %+v, %v", er, err)
	}
	app.Close()

	sd, err := state.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	l, err := lineage.OpenExisting(ctx, sd.LedgerSpec())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var logs bytes.Buffer
	clock := time.Now()
	env := &comeback.Env{Dir: sd, Ledger: l, Log: slog.New(slog.NewJSONHandler(&logs, nil)), Now: func() time.Time { return clock }}

	// The table is restored from the copy.
	pgExec(t, dsn, `TRUNCATE tickets`, `INSERT INTO tickets SELECT * FROM tickets_backup`)
	clock = clock.Add(8 * 24 * time.Hour)
	rep, err := comeback.Due(ctx, env, 7*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Outcomes) != 1 || rep.Outcomes[0].Err != nil || len(rep.Reappeared()) != 1 {
		t.Fatalf("due after the restore: %+v", rep)
	}
	p := rep.Outcomes[0].Result.Statement.Predicate
	if p.Counts.Residual != 2 || p.Complete || p.Reverifies.CertificateID != er.ID {
		t.Fatalf("due after the restore: counts %+v complete %v reverifies %+v", p.Counts, p.Complete, p.Reverifies)
	}
	if !strings.Contains(logs.String(), `"msg":"erased data reappeared"`) || strings.Contains(logs.String(), alice) {
		t.Errorf("log: %s", logs.String())
	}
	// Just checked: not due.
	if rep, err := comeback.Due(ctx, env, 7*24*time.Hour); err != nil || len(rep.Outcomes) != 0 || rep.NotDue != 1 {
		t.Fatalf("due right after a check: %+v, %v", rep, err)
	}

	rep, err = comeback.Replay(ctx, env, backupAt)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Outcomes) != 1 || rep.Outcomes[0].Err != nil || rep.Incomplete() != 0 {
		t.Fatalf("replay: %+v", rep)
	}
	res := rep.Outcomes[0].Result
	p = res.Statement.Predicate
	if p.Counts.VerifiedLogical != 2 || !p.Complete || p.Reverifies.CertificateID != er.ID || !strings.HasPrefix(p.CertificateID, "rp-") {
		t.Fatalf("replay certificate: %+v", p)
	}
	for _, a := range p.Artifacts {
		if a.Method != "replay: delete by id, then lookup by id" || a.Measurement == nil || !a.Measurement.Deleted || a.Level != certificate.LevelLogical {
			t.Errorf("replayed artifact %s: %s %+v", a.ID, a.Method, a.Measurement)
		}
	}
	// The restored rows are gone, Bob's is not.
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	rows, _ := c.Query(ctx, `SELECT id FROM tickets ORDER BY id`)
	ids, err = pgx.CollectRows(rows, pgx.RowTo[string])
	c.Close(ctx)
	if err != nil || len(ids) != 1 || ids[0] != "t-3" {
		t.Fatalf("tickets after the replay: %v, %v", ids, err)
	}
	if _, err := certificate.DecodeBundle(mustRead(t, res.CertificatePath)); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(8 * 24 * time.Hour)
	rep, err = comeback.Due(ctx, env, 7*24*time.Hour)
	if err != nil || len(rep.Outcomes) != 1 || len(rep.Reappeared()) != 0 || rep.Incomplete() != 0 {
		t.Fatalf("due after the replay: %+v, %v", rep, err)
	}
	// An unreadable certificate is reported and does not stop the others
	// (a file in certificates/, or a row of the PostgreSQL ledger).
	if err := saga.DurableFor(sd, env.Ledger).PutCertificate(ctx, "er-broken", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(8 * 24 * time.Hour)
	rep, err = comeback.Due(ctx, env, 7*24*time.Hour)
	if err != nil || len(rep.Outcomes) != 2 || rep.Outcomes[0].Err == nil || !strings.Contains(rep.Outcomes[0].Err.Error(), "er-broken") || rep.Outcomes[1].Err != nil {
		t.Fatalf("due with an unreadable certificate file: %+v, %v", rep, err)
	}
}

func TestRestoredTableSQLiteLedger(t *testing.T) { restoredTable(t, "") }

func TestRestoredTablePostgresLedger(t *testing.T) { restoredTable(t, pgtest.DB(t)) }

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
