package sqlitedoc_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/internal/sqlitex"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
)

// evidenceBothWays returns ReadEvidence's evidence for keys with the other
// rows read from the database file and through SQL.
func evidenceBothWays(t *testing.T, s *sqlitedoc.Store, keys []string) (file, viaSQL map[string]*store.Evidence) {
	t.Helper()
	ctx := context.Background()
	var err error
	if file, err = s.ReadEvidence(ctx, keys); err != nil {
		t.Fatal(err)
	}
	defer sqlitedoc.ReadFile(sqlitedoc.ReadFile(false))
	if viaSQL, err = s.ReadEvidence(ctx, keys); err != nil {
		t.Fatal(err)
	}
	return file, viaSQL
}

// Shared windows, and the records named as holding them, are the same
// whether ReadEvidence reads the other rows from the database file or
// through SQL: on an application's table with two content columns, rows
// that copy an erased record whole or in part, boilerplate every row has,
// and rows deleted and rewritten before.
func TestEvidenceFromFileAsFromSQL(t *testing.T) {
	ctx := context.Background()
	c := appDB(t)
	boiler := " -- Kind regards, the customer support team of Example Corp. Call us any day."
	db, err := sql.Open("sqlite3", "file:"+c.Path+"?_secure_delete=off")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 600 {
		body := text(i) + boiler
		switch {
		case i%50 == 7: // a copy of an earlier record
			body = text(i - 7)
		case i%50 == 8: // half of one
			body = text(i - 8)[:len(text(i-8))/2]
		case i%13 == 0:
			body = strings.Repeat(text(i), 12) // overflow pages
		}
		var title any = fmt.Sprintf("title %d: callback %x", i, i*6151)
		if i%9 == 0 {
			title = nil
		}
		if _, err := db.Exec(`INSERT INTO notes (note_ref, attrs, body, title, thread) VALUES (?, json_object('owner', ?), ?, ?, 't')`,
			fmt.Sprintf("n-%03d", i), fmt.Sprintf("s%d", i%60), body, title); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(`DELETE FROM notes WHERE rowid % 10 = 3`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE notes SET body = body || ' amended' WHERE rowid % 10 = 4`); err != nil {
		t.Fatal(err)
	}
	// A third content column, added later (older rows end before it), of
	// no type: it keeps values as they are given.
	if _, err := db.Exec(`ALTER TABLE notes ADD COLUMN extra`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE notes SET extra = CASE WHEN rowid % 3 = 0 THEN CAST(body AS BLOB) ELSE rowid * 7919 END WHERE rowid % 4 = 1`); err != nil {
		t.Fatal(err)
	}
	c.Mapping.Content = append(c.Mapping.Content, "extra")
	db.Close()
	s := openApp(t, c)
	defer s.Close()
	keys := []string{"n-000", "n-001", "n-050", "n-099", "n-117", "n-204", "n-401", "n-003", "no-such-key"}
	// The file is read, not refused (else both ways are SQL's).
	spec := sqlitex.RowsSpec{Table: "notes", Key: "note_ref", Content: []string{"body", "title", "extra"}}
	rows := 0
	if err := sqlitex.FileRows(ctx, sqlitedoc.DB(s), c.Path, spec, func(string, []byte) error { rows++; return nil }); err != nil {
		t.Fatalf("FileRows on the table: %v", err)
	}
	if rows < 500 {
		t.Fatalf("FileRows passed %d values, want those of 540 rows", rows)
	}
	file, viaSQL := evidenceBothWays(t, s, keys)
	if !reflect.DeepEqual(file, viaSQL) {
		t.Fatalf("evidence differs:\nfile: %s\nSQL:  %s", summary(file), summary(viaSQL))
	}
	var shared, with int
	for _, e := range file {
		shared += e.Shared
		with += len(e.SharedWith)
	}
	if shared == 0 || with == 0 || file["n-000"].SharedWith["n-007"] == 0 {
		t.Fatalf("no shared window or holder found (shared %d, holders %d, n-007 for n-000: %d): the comparison shows little", shared, with, file["n-000"].SharedWith["n-007"])
	}

	// Another connection's read transaction with the WAL written after
	// it: FileRows cannot empty the WAL and refuses at once, and the SQL
	// read decides (the store is not waited for, nor the erasure failed).
	reader, err := sql.Open("sqlite3", "file:"+c.Path+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	tx, err := reader.Begin()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := tx.QueryRow(`SELECT count(*) FROM notes`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if err := sqlitedoc.Exec(s, `UPDATE notes SET title = title || '.' WHERE note_ref = 'n-100'`); err != nil {
		t.Fatal(err)
	}
	var nr *sqlitex.NotRead
	if err := sqlitex.FileRows(ctx, sqlitedoc.DB(s), c.Path, spec, func(string, []byte) error { return nil }); !errors.As(err, &nr) {
		t.Fatalf("FileRows while a reader holds the WAL: %v; want a NotRead", err)
	}
	file, viaSQL = evidenceBothWays(t, s, keys)
	if !reflect.DeepEqual(file, viaSQL) {
		t.Fatalf("with the WAL held, evidence differs:\nfile: %s\nSQL:  %s", summary(file), summary(viaSQL))
	}
	tx.Rollback()

	// A value FileRows cannot read (a REAL), late in the table: it refuses after
	// passing most rows, and the SQL read that follows decides alone.
	if err := sqlitedoc.Exec(s, `UPDATE notes SET extra = 2.5 WHERE note_ref = 'n-598'`); err != nil {
		t.Fatal(err)
	}
	if err := sqlitex.FileRows(ctx, sqlitedoc.DB(s), c.Path, spec, func(string, []byte) error { return nil }); !errors.As(err, &nr) {
		t.Fatalf("FileRows with a REAL value: %v; want a NotRead", err)
	}
	file, viaSQL = evidenceBothWays(t, s, keys)
	if !reflect.DeepEqual(file, viaSQL) {
		t.Fatalf("after a refused file read, evidence differs:\nfile: %s\nSQL:  %s", summary(file), summary(viaSQL))
	}
}

func summary(ev map[string]*store.Evidence) string {
	var b strings.Builder
	for k, e := range ev {
		fmt.Fprintf(&b, "%s: %d needles, %d shared, with %v (+%d); ", k, len(e.Needles), e.Shared, e.SharedWith, e.SharedWithMore)
	}
	return b.String()
}
