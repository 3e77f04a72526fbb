package sqlitex

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/store"
)

// Bytes left in a page's unused space (as a page rebuild leaves cells
// behind) are zeroed in place: Reclaim says so and skips VACUUM, the file
// audits clean, and every row is still there, through the index too. When
// the audit cannot list the dirty pages (more than maxZeroPages), the same
// bytes in an index page are removed by rebuilding that index alone, and
// in a table page by VACUUM.
func TestReclaimRebuildsDirtyIndexes(t *testing.T) {
	ctx := context.Background()
	b := filled(t)
	secret := []byte("SECRET-LEFT-BEHIND")
	const inPlace = "those bytes zeroed in place under SQLite's write lock"
	const zeroedSkipped = "VACUUM skipped: free-space audit of 286 pages (87 on the freelist): every unused byte is zero but the 18 non-zero unused bytes on 1 pages it found, zeroed in place after it"
	for _, c := range []struct {
		name   string
		off    int
		list   int // maxZeroPages
		method []string
	}{
		{"index", gapEnd(t, b, leafIndex, 16) - len(secret), 1, []string{"(1 pages of 1 indexes, 0 pages of tables", inPlace, zeroedSkipped}},
		{"table", gapEnd(t, b, leafTable, 32) - len(secret), 1, []string{"(0 pages of 0 indexes, 1 pages of tables", inPlace, zeroedSkipped}},
		{"index, not listed", gapEnd(t, b, leafIndex, 16) - len(secret), 0, []string{"not zeroed in place: more than 0 dirty pages", "REINDEX of 1 indexes (sqlite_autoindex_t_1)", "then VACUUM skipped: free-space audit of"}},
		{"table, not listed", gapEnd(t, b, leafTable, 32) - len(secret), 0, []string{"VACUUM, because free-space audit of", "0 pages of 0 indexes, 1 pages of tables", "not zeroed in place: more than 0 dirty pages"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func(n int) { maxZeroPages = n }(maxZeroPages)
			maxZeroPages = c.list
			p := filepath.Join(t.TempDir(), "x.db")
			f := append([]byte(nil), b...)
			copy(f[c.off:], secret)
			if err := os.WriteFile(p, f, 0o600); err != nil {
				t.Fatal(err)
			}
			db, err := Open(ctx, p, false)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var rows int
			if err := db.QueryRow(`SELECT count(*) FROM t`).Scan(&rows); err != nil {
				t.Fatal(err)
			}
			rep, err := Reclaim(ctx, db, p)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range c.method {
				if !strings.Contains(rep.Method, m) {
					t.Errorf("method %q lacks %q", rep.Method, m)
				}
			}
			for _, fn := range Files(p) {
				if got, _ := os.ReadFile(fn); bytes.Contains(got, secret) {
					t.Errorf("%s still holds the planted bytes after Reclaim (%s)", filepath.Base(fn), rep.Method)
				}
			}
			if fs := audit(t, p); !fs.Clean() {
				t.Errorf("after Reclaim: %s", fs)
			}
			var after int
			intact(t, db, "after Reclaim")
			if err := db.QueryRow(`SELECT count(*) FROM t INDEXED BY sqlite_autoindex_t_1 WHERE k > ''`).Scan(&after); err != nil || after != rows {
				t.Errorf("rows through the rebuilt index: %d, %v; want %d", after, err, rows)
			}
		})
	}
}

// A REINDEX that fails (the index is gone) is no error: the audit comes
// back undecided and Reclaim goes on to VACUUM.
func TestReindexFailureIsUndecided(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "x.db")
	fill(t, path, true)
	_, conn := openConn(t, path)
	var rep store.ReclaimReport
	fs, rebuilt, err := reindex(ctx, conn, &rep, path, []string{"no_such_index"})
	if err != nil || rebuilt || fs.Clean() || !strings.Contains(fs.Undecided, "REINDEX no_such_index failed") {
		t.Errorf("reindex of a missing index: %+v, %v; want an undecided audit", fs, err)
	}
}

// An application's full-text index keeps the tokens of deleted rows in its
// segments, which VACUUM copies as they are and a byte scan for windows of
// the row cannot tell apart: Reclaim merges it ('optimize'), after which
// no file holds a deleted row's token. A full-text index Reclaim cannot
// merge (an FTS5 table in a build without FTS5, or a broken one) makes the
// state StateFTSNotMerged, unseen residue, naming the index.
func TestReclaimMergesFullTextIndex(t *testing.T) {
	ctx := context.Background()
	t.Run("fts4", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "fts.db")
		app, err := sql.Open("sqlite3", "file:"+p+"?_journal_mode=WAL")
		if err != nil {
			t.Fatal(err)
		}
		defer app.Close()
		token := "zqxjvwkpfy" // no other token starts with z: stored whole in its segment
		stmts := []string{`CREATE VIRTUAL TABLE notes USING fts4(body)`}
		for i := 0; i < 40; i++ {
			stmts = append(stmts, fmt.Sprintf(`INSERT INTO notes(docid, body) VALUES (%d, 'alpha beta gamma delta %d')`, i+1, i))
		}
		stmts = append(stmts, `INSERT INTO notes(docid, body) VALUES (100, 'alpha `+token+` gamma')`, `DELETE FROM notes WHERE docid = 100`)
		for _, q := range stmts {
			if _, err := app.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		app.Close()
		held := false
		for _, fn := range Files(p) {
			if got, _ := os.ReadFile(fn); bytes.Contains(got, []byte(token)) {
				held = true
			}
		}
		if !held {
			t.Fatal("the deleted row's token is in no file before Reclaim: the test proves nothing")
		}
		db, err := Open(ctx, p, false)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		rep, err := Reclaim(ctx, db, p)
		if err != nil {
			t.Fatal(err)
		}
		if rep.State != "" || rep.Unseen || !strings.Contains(strings.Join(rep.Steps, "\n"), "optimize (merge) of full-text index notes") {
			t.Errorf("Reclaim: state %q unseen %v steps %q, want the index merged", rep.State, rep.Unseen, rep.Steps)
		}
		for _, fn := range Files(p) {
			if got, _ := os.ReadFile(fn); bytes.Contains(got, []byte(token)) {
				t.Errorf("%s still holds the deleted row's token after Reclaim (%s)", filepath.Base(fn), rep.Method)
			}
		}
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM notes WHERE notes MATCH 'gamma'`).Scan(&n); err != nil || n != 40 {
			t.Errorf("rows matching gamma after the merge: %d, %v; want 40", n, err)
		}
	})
	t.Run("unmergeable", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "ghost.db")
		db, err := Open(ctx, p, true)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		// A full-text table whose module or shadow tables this build
		// cannot use: its 'optimize' fails.
		for _, q := range []string{`CREATE TABLE t(k TEXT)`, `PRAGMA writable_schema = ON`,
			`INSERT INTO sqlite_master(type, name, tbl_name, rootpage, sql) VALUES ('table', 'ghost', 'ghost', 0, 'CREATE VIRTUAL TABLE ghost USING fts5(x)')`,
			`PRAGMA writable_schema = OFF`} {
			if _, err := db.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		db.Close()
		db, err = Open(ctx, p, false)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		rep, err := Reclaim(ctx, db, p)
		if err != nil {
			t.Fatal(err)
		}
		if rep.State != StateFTSNotMerged || !rep.Unseen || !strings.Contains(rep.Evidence, "ghost") {
			t.Errorf("Reclaim: state %q unseen %v evidence %q, want %s naming ghost", rep.State, rep.Unseen, rep.Evidence, StateFTSNotMerged)
		}
	})
}
