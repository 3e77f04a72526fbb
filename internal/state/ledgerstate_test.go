package state

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/lineage/ledgertest"
	"github.com/amnesia-dev/amnesia/lineage/pgledger"
	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/transparency"
)

// signSome appends n leaves to l's log, signs a checkpoint and records it
// as amnesia does after each certificate.
func signSome(t *testing.T, d *Dir, l lineage.Ledger, n int) *transparency.Signed {
	t.Helper()
	ctx := context.Background()
	lg, err := transparency.Open(ctx, l.(transparency.Store), d.Key, "")
	if err != nil {
		t.Fatal(err)
	}
	lg.OnCheckpoint(func(_ context.Context, cp *transparency.Signed) error { return d.RecordCheckpoint(cp) })
	size, _ := lg.Size(ctx)
	for i := 0; i < n; i++ {
		leaf, _ := transparency.EventLeaf("erasure-started", "er-test", strings.Repeat("0", 63)+string(rune('a'+int(size)+i)))
		if _, err := lg.Append(ctx, leaf); err != nil {
			t.Fatal(err)
		}
	}
	cp, err := lg.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

func TestOpenLedgerSQLite(t *testing.T) {
	ctx := context.Background()
	d, err := Init(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// No ledger, no sign of one: ErrNoLedger, nothing created.
	if _, err := d.OpenLedger(ctx, LedgerChecked); !errors.Is(err, lineage.ErrNoLedger) || errors.Is(err, ErrLedgerLost) {
		t.Fatalf("open without a ledger: %v", err)
	}
	if _, err := os.Stat(d.LedgerPath()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("OpenLedger(LedgerChecked) created the ledger: %v", err)
	}
	l, err := d.OpenLedger(ctx, LedgerCreate)
	if err != nil {
		t.Fatal(err)
	}
	cp := signSome(t, d, l, 3)
	l.Close()
	s, err := d.LedgerState()
	if err != nil || s == nil || s.Size != 3 || s.Ledger != "sqlite" || s.Origin != cp.Origin {
		t.Fatalf("ledger state after a checkpoint of 3: %+v, %v", s, err)
	}
	// The record never goes back: an older checkpoint does not replace it.
	if err := d.RecordCheckpoint(&transparency.Signed{Checkpoint: transparency.Checkpoint{Origin: cp.Origin, Size: 1}}); err != nil {
		t.Fatal(err)
	}
	if s, _ := d.LedgerState(); s.Size != 3 {
		t.Errorf("recorded size went back to %d", s.Size)
	}
	l, err = d.OpenLedger(ctx, LedgerChecked)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	l.Close()
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(d.LedgerPath() + suffix)
	}
	for _, mode := range []LedgerMode{LedgerChecked, LedgerUnchecked} {
		if _, err := d.OpenLedger(ctx, mode); !errors.Is(err, ErrLedgerLost) || !strings.Contains(err.Error(), "does not exist") {
			t.Errorf("mode %d, deleted ledger: %v", mode, err)
		}
	}
	if _, err := os.Stat(d.LedgerPath()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a lost ledger was recreated: %v", err)
	}
	// Another ledger of the same size (a different log) is refused too.
	other, err := sqliteledger.Open(ctx, d.LedgerPath())
	if err != nil {
		t.Fatal(err)
	}
	lg, _ := transparency.Open(ctx, other, d.Key, "")
	for i := 0; i < 4; i++ {
		leaf, _ := transparency.EventLeaf("erasure-started", "er-other", strings.Repeat("1", 63)+string(rune('a'+i)))
		lg.Append(ctx, leaf)
	}
	other.Close()
	if _, err := d.OpenLedger(ctx, LedgerChecked); !errors.Is(err, ErrLedgerLost) || !strings.Contains(err.Error(), "hash to another root") {
		t.Errorf("another log of more leaves: %v", err)
	}
	// Unchecked (audit verify) opens it, and CheckLedger then refuses it.
	l, err = d.OpenLedger(ctx, LedgerUnchecked)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := d.CheckLedger(ctx, l); !errors.Is(err, ErrLedgerLost) {
		t.Errorf("CheckLedger of another log: %v", err)
	}
}

func TestOpenLedgerPostgres(t *testing.T) {
	ctx := context.Background()
	dsn := ledgertest.PostgresDSN(t)
	cfg := DefaultConfig()
	cfg.Ledger = dsn
	d, err := Init(t.TempDir(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	tables := func() int {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		var n int
		c.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'`).Scan(&n)
		return n
	}
	if _, err := d.OpenLedger(ctx, LedgerChecked); !errors.Is(err, lineage.ErrNoLedger) || strings.Contains(err.Error(), "postgres://") {
		t.Fatalf("open without a ledger: %v", err)
	}
	if n := tables(); n != 0 {
		t.Fatalf("OpenLedger(LedgerChecked) created %d tables", n)
	}
	l, err := d.OpenLedger(ctx, LedgerCreate)
	if err != nil {
		t.Fatal(err)
	}
	signSome(t, d, l, 2)
	l.Close()
	if s, _ := d.LedgerState(); s == nil || s.Size != 2 || s.Ledger != "postgres" {
		t.Fatalf("ledger state: %+v", s)
	}
	// The database is emptied (dropped and recreated, a restore gone wrong).
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, `DROP SCHEMA public CASCADE; CREATE SCHEMA public`); err != nil {
		t.Fatal(err)
	}
	c.Close(ctx)
	_, err = d.OpenLedger(ctx, LedgerChecked)
	if !errors.Is(err, ErrLedgerLost) || !strings.Contains(err.Error(), "holds no amnesia ledger tables") || strings.Contains(err.Error(), dsn) {
		t.Fatalf("emptied PostgreSQL ledger: %v", err)
	}
	if n := tables(); n != 0 {
		t.Fatalf("a lost PostgreSQL ledger was recreated (%d tables)", n)
	}
	// A new, empty ledger in its place.
	fresh, err := pgledger.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	fresh.Close()
	if _, err := d.OpenLedger(ctx, LedgerChecked); !errors.Is(err, ErrLedgerLost) || !strings.Contains(err.Error(), "holds 0 leaves") || !strings.Contains(err.Error(), "PostgreSQL ledger") {
		t.Errorf("new empty PostgreSQL ledger: %v", err)
	}
}
