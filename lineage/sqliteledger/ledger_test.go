package sqliteledger_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/lineage/ledgertest"
	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/transparency"
	"github.com/amnesia-dev/amnesia/transparency/storagetest"
)

func openSQLite(t *testing.T, path string) *sqliteledger.Ledger {
	t.Helper()
	l, err := sqliteledger.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func sqlitePair(t *testing.T) (lineage.Ledger, lineage.Ledger) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	return openSQLite(t, path), openSQLite(t, path)
}

// TestSQLite runs the ledger conformance suite on the embedded ledger; the
// shared and queue checks use two opens of one file.
func TestSQLite(t *testing.T) {
	ledgertest.Run(t, func(t *testing.T) lineage.Ledger {
		return openSQLite(t, filepath.Join(t.TempDir(), "ledger.db"))
	})
	t.Run("Shared", func(t *testing.T) { ledgertest.RunShared(t, sqlitePair) })
	t.Run("Queue", func(t *testing.T) { ledgertest.RunQueue(t, sqlitePair) })
	t.Run("Requests", func(t *testing.T) { ledgertest.RunRequests(t, sqlitePair) })
}

func TestSQLiteRefusesOtherSchemaVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	openSQLite(t, path).Close()
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE meta SET v = 'amnesia.ledger/v0' WHERE k = 'schema'`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := sqliteledger.Open(context.Background(), path); err == nil || !strings.Contains(err.Error(), "amnesia.ledger/v0") {
		t.Errorf("open of a v0 ledger = %v, want a schema version error", err)
	}
}

// TestOpenSelectsBySpec: importing sqliteledger registers it, and
// lineage.Open gives it every spec that is not a PostgreSQL URL.
func TestOpenSelectsBySpec(t *testing.T) {
	l, err := lineage.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, ok := l.(*sqliteledger.Ledger); !ok {
		t.Errorf("Open(path) = %T, want *sqliteledger.Ledger", l)
	}
}

// TestSQLiteLedgerIsPrivate: the ledger and its -wal and -shm files are
// 0600 whatever the umask, and a ledger an earlier version left 0644 is
// tightened at open.
func TestSQLiteLedgerIsPrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	ctx := context.Background()
	k := ledgertest.Keyer(t)
	path := filepath.Join(t.TempDir(), "ledger.db")
	check := func(when string) {
		t.Helper()
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatalf("%s: %v", when, err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("%s: %s has mode %v, want 0600", when, filepath.Base(p), fi.Mode().Perm())
			}
		}
	}
	l := openSQLite(t, path)
	alice, err := k.Key("default", "alice@example.org")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Record(ctx, ledgertest.Art(k, alice, lineage.KindSource, "docs", "d1")); err != nil {
		t.Fatal(err)
	}
	check("new ledger")
	l.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Chmod(p, 0o644); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	l = openSQLite(t, path)
	if err := l.Record(ctx, ledgertest.Art(k, alice, lineage.KindSource, "docs", "d2")); err != nil {
		t.Fatal(err)
	}
	check("reopened 0644 ledger")
}

// TestStorage runs the transparency log's storage suite on the embedded
// ledger; the shared checks use two opens of one file.
func TestStorage(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) transparency.Store {
		return openSQLite(t, filepath.Join(t.TempDir(), "ledger.db"))
	})
	t.Run("Shared", func(t *testing.T) {
		storagetest.RunShared(t, func(t *testing.T) (transparency.Store, transparency.Store) {
			path := filepath.Join(t.TempDir(), "ledger.db")
			return openSQLite(t, path), openSQLite(t, path)
		})
	})
}

// LookupKeys gives, in one read, what Lookup gives for each key: the
// artifact at the location, a key with none left out, other stores and
// scopes not mixed in.
func TestLookupKeysIsLookup(t *testing.T) {
	ctx := context.Background()
	k := ledgertest.Keyer(t)
	l := openSQLite(t, filepath.Join(t.TempDir(), "ledger.db"))
	alice, err := k.Key("default", "alice@example.org")
	if err != nil {
		t.Fatal(err)
	}
	bob, err := k.Key("default", "bob@example.org")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []lineage.Artifact{
		ledgertest.Art(k, alice, lineage.KindSource, "docs", "d1"),
		ledgertest.Art(k, bob, lineage.KindSource, "docs", `d"2<&>`),
		ledgertest.Art(k, bob, lineage.KindSource, "vectors", "d1"),
	} {
		if err := l.Record(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	keys := []string{"d1", `d"2<&>`, "missing", "d1"}
	got, err := l.LookupKeys(ctx, "default", "docs", keys)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Errorf("LookupKeys found %d artifacts, want 2: %v", len(got), got)
	}
	for _, key := range keys {
		want, err := l.Lookup(ctx, "default", "docs", key)
		a, ok := got[key]
		switch {
		case err != nil && ok:
			t.Errorf("key %q: LookupKeys found %+v, Lookup %v", key, a, err)
		case err == nil && (!ok || a.ID != want.ID || a.Subject != want.Subject || a.Digest != want.Digest || a.Key != key):
			t.Errorf("key %q: LookupKeys found %+v (%v), Lookup %+v", key, a, ok, want)
		}
	}
	if none, err := l.LookupKeys(ctx, "other", "docs", keys); err != nil || len(none) != 0 {
		t.Errorf("LookupKeys in another scope = %v, %v; want none", none, err)
	}
	if none, err := l.LookupKeys(ctx, "default", "docs", nil); err != nil || len(none) != 0 {
		t.Errorf("LookupKeys of no keys = %v, %v", none, err)
	}
}
