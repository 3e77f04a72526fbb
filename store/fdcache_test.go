package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3"
)

// openFDs counts the process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count descriptors: %v", err)
	}
	return len(ents)
}

// Scanning thousands of files that are not SQLite's (a chromem collection has
// one per document) leaves no descriptor open: before, each stayed open for
// the life of the process and a large collection failed the probe with "too
// many open files". Needles are still found in every file.
func TestScanClosesFilesThatAreNotSQLite(t *testing.T) {
	dir := t.TempDir()
	const n = 2000
	paths := make([]string, n)
	ev := map[string]*Evidence{}
	for i := range paths {
		paths[i] = filepath.Join(dir, fmt.Sprintf("doc-%04d.gob", i))
		body := fmt.Sprintf("header bytes %04d; the planted needle of document %04d; trailer", i, i)
		if err := os.WriteFile(paths[i], []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		ev[fmt.Sprintf("k%04d", i)] = &Evidence{Needles: [][]byte{[]byte(fmt.Sprintf("the planted needle of document %04d", i))}}
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	before := openFDs(t)
	rep, err := ScanFiles(context.Background(), NewNeedleSet(ev), "t", append(paths, empty)...)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Files != n+1 || rep.NeedlesFound != n {
		t.Errorf("scanned %d files, found %d needles; want %d files, %d needles", rep.Files, rep.NeedlesFound, n+1, n)
	}
	if after := openFDs(t); after > before+2 {
		t.Errorf("%d descriptors open after the scan, %d before: the scanner kept files open that no SQLite lock needs", after, before)
	}
	fds.Lock()
	defer fds.Unlock()
	for _, p := range append(paths[:3], empty) {
		if fds.m[p] != nil {
			t.Errorf("%s is held", filepath.Base(p))
		}
	}
}

// holdWriteLock creates a SQLite database (rollback journal) holding a
// planted needle, opens a write transaction on it in this process, and
// returns its path and a check that another process cannot write to it
// (nil: it found the database locked).
func holdWriteLock(t *testing.T) (path string, otherWrites func() error) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "app.db")
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=DELETE")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE t (v TEXT); INSERT INTO t VALUES ('the planted needle in a database page')`); err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.ExecContext(context.Background(), `BEGIN IMMEDIATE; INSERT INTO t VALUES ('more')`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.ExecContext(context.Background(), `ROLLBACK`) })
	otherWrites = func() error {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run", "^TestScanKeepsSQLiteLocksChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "AMNESIA_FDCACHE_CHILD="+path)
		out, err := cmd.CombinedOutput()
		if err != nil {
			if strings.Contains(string(out), "database is locked") {
				return nil
			}
			t.Fatalf("child: %v\n%s", err, out)
		}
		return fmt.Errorf("another process wrote to the database while this one held a write transaction")
	}
	if err := otherWrites(); err != nil {
		t.Fatalf("before reading the files: %v", err)
	}
	return path, otherWrites
}

// The scanner must not drop the SQLite locks this process holds: closing any
// descriptor of a database file releases them all (POSIX advisory locks), and
// another process could then write under a connection that believes it holds
// a lock. A connection here holds a write transaction; the scanner reads the
// database and its journal; a second process must still find it locked.
func TestScanKeepsSQLiteLocks(t *testing.T) {
	if os.Getenv("AMNESIA_FDCACHE_CHILD") != "" {
		return // run by the parent as the other process, see below
	}
	path, otherWrites := holdWriteLock(t)
	set := NewNeedleSet(map[string]*Evidence{"k": {Needles: [][]byte{[]byte("the planted needle in a database")}}})
	rep, err := ScanFiles(context.Background(), set, "t", path, path+"-journal", path+"-wal")
	if err != nil {
		t.Fatal(err)
	}
	if rep.NeedlesFound != 1 {
		t.Errorf("found %d needles in the database, want 1", rep.NeedlesFound)
	}
	if err := otherWrites(); err != nil {
		t.Fatalf("after the scan: %v", err)
	}
	fds.Lock()
	held := fds.m[path] != nil && fds.m[path+"-journal"] != nil
	fds.Unlock()
	if !held {
		t.Errorf("the database and its journal are not held")
	}
}

// OpenRead, used by the SQLite free-space audit, the census and Chroma's
// check, keeps the locks the same way: reading a database and its journal
// through it, then calling done, leaves the write transaction locked. (With
// os.Open and Close, as the audit did before, the other process wrote.)
func TestOpenReadKeepsSQLiteLocks(t *testing.T) {
	if os.Getenv("AMNESIA_FDCACHE_CHILD") != "" {
		return
	}
	path, otherWrites := holdWriteLock(t)
	for _, p := range []string{path, path + "-journal"} {
		f, size, done, err := OpenRead(p)
		if err != nil {
			t.Fatal(err)
		}
		if f == nil || size == 0 {
			t.Fatalf("%s: nothing to read (size %d)", filepath.Base(p), size)
		}
		b := make([]byte, 16)
		if _, err := f.ReadAt(b, 0); err != nil {
			t.Fatal(err)
		}
		if p == path && string(b) != sqliteHeader {
			t.Errorf("read %q, want SQLite's header", b)
		}
		done()
	}
	if err := otherWrites(); err != nil {
		t.Fatalf("after OpenRead and done: %v", err)
	}
	// A file that is not SQLite's is closed by done.
	other := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(other, []byte("plain text, not a database"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, _, done, err := OpenRead(other)
	if err != nil {
		t.Fatal(err)
	}
	done()
	if _, err := f.ReadAt(make([]byte, 1), 0); err == nil {
		t.Errorf("a file that is not SQLite's stayed open after done")
	}
}

// TestScanKeepsSQLiteLocksChild is the other process of TestScanKeepsSQLiteLocks.
func TestScanKeepsSQLiteLocksChild(t *testing.T) {
	path := os.Getenv("AMNESIA_FDCACHE_CHILD")
	if path == "" {
		t.Skip("run by TestScanKeepsSQLiteLocks")
	}
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=0")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`INSERT INTO t VALUES ('from the other process')`); err != nil {
		t.Fatal(err)
	}
}
