package sqlitex

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// rowsCase is a table FileRows must read as SQL does, or refuse.
type rowsCase struct {
	name     string
	pageSize int
	setup    []string // statements run in order; rows are added by fillRows
	fill     func(t *testing.T, db *sql.DB)
	spec     RowsSpec
	notRead  string // non-empty: FileRows must refuse, with this in its reason
}

// text returns a deterministic value of about n bytes, with a marker of i
// at both ends (a value cut short or joined wrongly differs).
func text(i, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<%d>", i)
	for b.Len() < n {
		fmt.Fprintf(&b, "word%x ", (i*7919+b.Len())%65521)
	}
	fmt.Fprintf(&b, "</%d>", i)
	return b.String()
}

// sizes spread values from empty to several overflow pages.
func size(r *rand.Rand) int {
	switch r.IntN(10) {
	case 0:
		return 0
	case 1, 2:
		return 3000 + r.IntN(30000) // overflow pages at every page size used here
	}
	return r.IntN(600)
}

func insertDocs(t *testing.T, db *sql.DB, q string, n int, args func(i int, r *rand.Rand) []any) {
	t.Helper()
	r := rand.New(rand.NewPCG(uint64(n), 7))
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := tx.Exec(q, args(i, r)...); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// sqlRows reads spec's rows as sqlitedoc's SQL source does.
func sqlRows(t *testing.T, db *sql.DB, spec RowsSpec) []string {
	t.Helper()
	var qs []string
	for _, c := range spec.Content {
		qs = append(qs, `SELECT CAST(`+Quote(spec.Key)+` AS TEXT), CAST(`+Quote(c)+` AS BLOB) FROM `+Quote(spec.Table)+` WHERE `+Quote(c)+` IS NOT NULL`)
	}
	var out []string
	err := Others(context.Background(), db, strings.Join(qs, " UNION ALL "), nil)(func(k string, b []byte) error {
		out = append(out, fmt.Sprintf("%q=%q", k, b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func fileRows(db *sql.DB, path string, spec RowsSpec) ([]string, error) {
	var out []string
	err := FileRows(context.Background(), db, path, spec, func(k string, b []byte) error {
		out = append(out, fmt.Sprintf("%q=%q", k, b))
		return nil
	})
	slices.Sort(out)
	return out, err
}

func TestFileRowsReadAsSQLDoes(t *testing.T) {
	docs := func(n int) func(t *testing.T, db *sql.DB) {
		return func(t *testing.T, db *sql.DB) {
			insertDocs(t, db, `INSERT INTO documents (id, subject, text, parent) VALUES (?, ?, ?, ?)`, n, func(i int, r *rand.Rand) []any {
				var v any = text(i, size(r))
				if i%17 == 5 {
					v = nil
				}
				return []any{fmt.Sprintf("doc-%05d", i), fmt.Sprintf("s%d", i%40), v, nil}
			})
			// Deleted and rewritten rows leave free blocks, free pages and
			// moved cells behind.
			for _, q := range []string{
				`DELETE FROM documents WHERE rowid % 5 = 0`,
				`UPDATE documents SET text = text || ' and more' WHERE rowid % 7 = 0`,
				`UPDATE documents SET text = substr(text, 1, 40) WHERE rowid % 11 = 0`,
			} {
				if _, err := db.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	docTable := `CREATE TABLE documents (id TEXT PRIMARY KEY, subject TEXT, text TEXT, parent TEXT)`
	docSpec := RowsSpec{Table: "documents", Key: "id", Content: []string{"text"}}
	cases := []rowsCase{
		{name: "documents, 4 KiB pages", pageSize: 4096, setup: []string{docTable}, fill: docs(3000), spec: docSpec},
		{name: "documents, 512-byte pages", pageSize: 512, setup: []string{docTable}, fill: docs(800), spec: docSpec},
		{name: "documents, 64 KiB pages", pageSize: 65536, setup: []string{docTable}, fill: docs(800), spec: docSpec},
		{name: "documents, one page", pageSize: 4096, setup: []string{docTable}, fill: docs(3), spec: docSpec},
		{name: "documents, empty", pageSize: 4096, setup: []string{docTable}, fill: docs(0), spec: docSpec},
		{
			name: "rowid key, two content columns of every kind", pageSize: 4096,
			setup: []string{`CREATE TABLE notes (note_id INTEGER PRIMARY KEY, body TEXT, extra)`},
			fill: func(t *testing.T, db *sql.DB) {
				insertDocs(t, db, `INSERT INTO notes (note_id, body, extra) VALUES (?, ?, ?)`, 1500, func(i int, r *rand.Rand) []any {
					var extra any
					switch i % 6 {
					case 0:
						extra = []byte(text(i, size(r)))
					case 1:
						extra = int64(i) * -7919
					case 2:
						extra = int64(i) << 40
					case 3:
						extra = i % 2 // serial types 8 and 9
					case 4:
						extra = []byte{}
					}
					id := int64(i*13 + 1)
					if i%9 == 0 {
						id = -id
					}
					return []any{id, text(i, size(r)), extra}
				})
			},
			spec: RowsSpec{Table: "notes", Key: "note_id", Content: []string{"body", "extra"}},
		},
		{
			name: "integer key that is not the rowid (INT), and a column added later", pageSize: 4096,
			setup: []string{`CREATE TABLE kv (k INT PRIMARY KEY, v TEXT)`},
			fill: func(t *testing.T, db *sql.DB) {
				insertDocs(t, db, `INSERT INTO kv (k, v) VALUES (?, ?)`, 500, func(i int, r *rand.Rand) []any {
					return []any{int64(i)*1000003 - 250000000, text(i, size(r))}
				})
				if _, err := db.Exec(`ALTER TABLE kv ADD COLUMN w TEXT`); err != nil {
					t.Fatal(err)
				}
				insertDocs(t, db, `INSERT INTO kv (k, v, w) VALUES (?, ?, ?)`, 300, func(i int, r *rand.Rand) []any {
					return []any{int64(i)*7 + 1e12, text(i, size(r)), text(-i, size(r))}
				})
			},
			spec: RowsSpec{Table: "KV", Key: "K", Content: []string{"v", "w"}},
		},
		{
			name: "WITHOUT ROWID", pageSize: 4096,
			setup: []string{`CREATE TABLE w (id TEXT PRIMARY KEY, v TEXT) WITHOUT ROWID`, `INSERT INTO w VALUES ('a', 'text')`},
			spec:  RowsSpec{Table: "w", Key: "id", Content: []string{"v"}}, notRead: "WITHOUT ROWID",
		},
		{
			name: "a generated column", pageSize: 4096,
			setup: []string{`CREATE TABLE g (id TEXT, v TEXT, u TEXT GENERATED ALWAYS AS (upper(v)) VIRTUAL)`, `INSERT INTO g (id, v) VALUES ('a', 'text')`},
			spec:  RowsSpec{Table: "g", Key: "id", Content: []string{"v"}}, notRead: "generated",
		},
		{
			name: "a column added with a default", pageSize: 4096,
			setup: []string{`CREATE TABLE d (id TEXT, v TEXT)`, `INSERT INTO d VALUES ('a', 'text')`, `ALTER TABLE d ADD COLUMN w TEXT DEFAULT 'a default'`},
			spec:  RowsSpec{Table: "d", Key: "id", Content: []string{"v", "w"}}, notRead: "default",
		},
		{
			name: "a floating-point key", pageSize: 4096,
			setup: []string{`CREATE TABLE f (id, v TEXT)`, `INSERT INTO f VALUES (1.5, 'text')`},
			spec:  RowsSpec{Table: "f", Key: "id", Content: []string{"v"}}, notRead: "floating-point",
		},
		{
			name: "a floating-point value", pageSize: 4096,
			setup: []string{`CREATE TABLE f (id TEXT, v)`, `INSERT INTO f VALUES ('a', 2.25)`},
			spec:  RowsSpec{Table: "f", Key: "id", Content: []string{"v"}}, notRead: "floating-point",
		},
		{
			// 3.0 is kept as the integer 3 in the file, and read back as 3.0.
			name: "a content column of REAL affinity", pageSize: 4096,
			setup: []string{`CREATE TABLE r (id TEXT, v DOUBLE PRECISION)`, `INSERT INTO r VALUES ('a', 3.0)`},
			spec:  RowsSpec{Table: "r", Key: "id", Content: []string{"v"}}, notRead: "REAL affinity",
		},
		{
			name: "a NULL key", pageSize: 4096,
			setup: []string{`CREATE TABLE n (id TEXT, v TEXT)`, `INSERT INTO n VALUES (NULL, 'text')`},
			spec:  RowsSpec{Table: "n", Key: "id", Content: []string{"v"}}, notRead: "NULL key",
		},
		{
			name: "INTEGER PRIMARY KEY DESC", pageSize: 4096,
			setup: []string{`CREATE TABLE x (id INTEGER PRIMARY KEY DESC, v TEXT)`, `INSERT INTO x VALUES (3, 'text')`},
			spec:  RowsSpec{Table: "x", Key: "id", Content: []string{"v"}}, notRead: "DESC",
		},
		{
			name: "no such table", pageSize: 4096, setup: []string{`CREATE TABLE y (id TEXT, v TEXT)`},
			spec: RowsSpec{Table: "z", Key: "id", Content: []string{"v"}}, notRead: "no table",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "db.sqlite")
			// The page size is set before the first table (and WAL mode,
			// which fixes it); Open switches the file to WAL below.
			db, err := sql.Open("sqlite3", fmt.Sprintf("file:%s?_secure_delete=off&_busy_timeout=5000", path))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			db.SetMaxOpenConns(1)
			if _, err := db.Exec(fmt.Sprintf("PRAGMA page_size = %d", c.pageSize)); err != nil {
				t.Fatal(err)
			}
			for _, q := range c.setup {
				if _, err := db.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
			if c.fill != nil {
				c.fill(t, db)
			}
			db.Close()
			// As the store opens it: WAL, busy timeout, other connections.
			db, err = Open(context.Background(), path, false)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			got, err := fileRows(db, path, c.spec)
			var nr *NotRead
			if c.notRead != "" {
				if !errors.As(err, &nr) || !strings.Contains(nr.Reason, c.notRead) {
					t.Fatalf("FileRows: %v; want a NotRead for %q", err, c.notRead)
				}
				return
			}
			if err != nil {
				t.Fatalf("FileRows: %v", err)
			}
			if c.fill != nil && c.name != "documents, empty" && len(got) == 0 {
				t.Fatal("FileRows read no row")
			}
			want := sqlRows(t, db, c.spec)
			if !slices.Equal(got, want) {
				t.Fatalf("FileRows read %d values, SQL %d; first difference:\n%s", len(got), len(want), firstDiff(got, want))
			}
			var ps int
			if err := db.QueryRow("PRAGMA page_size").Scan(&ps); err != nil || ps != c.pageSize {
				t.Fatalf("page size %d (%v), want %d", ps, err, c.pageSize)
			}
			// The busy timeout the store set is back on the connection.
			var wait int
			if err := db.QueryRow("PRAGMA busy_timeout").Scan(&wait); err != nil || wait != 10000 {
				t.Fatalf("busy_timeout after FileRows: %d (%v), want 10000", wait, err)
			}
		})
	}
}

func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("file: %.200s\nsql:  %.200s", a[i], b[i])
		}
	}
	return fmt.Sprintf("one is a prefix of the other (%d, %d)", len(a), len(b))
}

// FileRows does not read a file that another connection's transaction
// keeps the WAL of: the file alone is not the database then.
func TestFileRowsNotWithAWALItCannotEmpty(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "db.sqlite")
	db, err := Open(ctx, path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE t (id TEXT, v TEXT)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO t VALUES ('a', 'old')`); err != nil {
		t.Fatal(err)
	}
	// Another connection's read transaction, then a write it cannot see:
	// the WAL holds it and cannot be reset while the reader lives.
	reader, err := Open(ctx, path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	tx, err := reader.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRow(`SELECT count(*) FROM t`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE t SET v = 'new'`); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = fileRows(db, path, RowsSpec{Table: "t", Key: "id", Content: []string{"v"}})
	var nr *NotRead
	if !errors.As(err, &nr) {
		t.Fatalf("FileRows with a reader holding the WAL: %v; want a NotRead", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("FileRows waited %v for the reader (the store's busy timeout is 10 s): it must not wait", d)
	}
	tx.Rollback()
	got, err := fileRows(db, path, RowsSpec{Table: "t", Key: "id", Content: []string{"v"}})
	if err != nil || !slices.Equal(got, []string{`"a"="new"`}) {
		t.Fatalf("FileRows once the reader is gone: %q, %v; want the row as written", got, err)
	}
}

// While another connection writes, each read FileRows completes is one
// state of the table that a transaction committed: rows are added in
// transactions of ten, with known content, so what a read sees must be
// the first 10·m rows exactly.
func TestFileRowsWhileWritten(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	path := filepath.Join(t.TempDir(), "db.sqlite")
	db, err := Open(ctx, path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE t (id TEXT PRIMARY KEY, v TEXT)`); err != nil {
		t.Fatal(err)
	}
	writer, err := Open(ctx, path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	value := func(i int) string { return text(i, 200+(i*131)%9000) }
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for m := 0; ctx.Err() == nil && m < 2000; m++ {
			tx, err := writer.Begin()
			if err != nil {
				continue
			}
			for i := 10 * m; i < 10*m+10; i++ {
				tx.Exec(`INSERT INTO t VALUES (?, ?)`, fmt.Sprintf("k%06d", i), value(i))
			}
			if tx.Commit() != nil {
				m--
			}
			time.Sleep(time.Millisecond)
		}
	}()
	reads, refused := 0, 0
	for try := 0; try < 400 && reads < 10; try++ {
		rows := map[string]string{}
		err := FileRows(ctx, db, path, RowsSpec{Table: "t", Key: "id", Content: []string{"v"}}, func(k string, b []byte) error {
			rows[k] = string(b)
			return nil
		})
		var nr *NotRead
		if errors.As(err, &nr) {
			refused++
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		reads++
		if len(rows)%10 != 0 {
			t.Fatalf("a read saw %d rows: not a whole number of transactions of 10", len(rows))
		}
		for i := range len(rows) {
			if v, ok := rows[fmt.Sprintf("k%06d", i)]; !ok || v != value(i) {
				t.Fatalf("a read of %d rows lacks row %d or has it changed (found %v)", len(rows), i, ok)
			}
		}
		time.Sleep(3 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	t.Logf("%d reads, %d refused (the writer held the WAL)", reads, refused)
	if reads == 0 {
		t.Fatal("no read while the table was written: the test checked nothing")
	}
}
