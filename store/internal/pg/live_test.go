package pg

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/internal/pgtest"
	"github.com/amnesia-dev/amnesia/store"
)

func liveDB(t *testing.T) (*DB, string) {
	t.Helper()
	db, _ := liveDSN(t)
	return db, os.Getenv("AMNESIA_TEST_PG_DATADIR")
}

// liveDSN connects to a database of the test's own (it skips without a
// server) and returns the connection pool and the database's URL.
func liveDSN(t *testing.T) (*DB, string) {
	t.Helper()
	d := pgtest.DB(t)
	db, err := Connect(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, d
}

// pg_read_binary_file in chunks returns the file byte for byte.
func TestSQLFileChunks(t *testing.T) {
	ctx := context.Background()
	db, dataDir := liveDB(t)
	if dataDir == "" {
		t.Skip("AMNESIA_TEST_PG_DATADIR is not set")
	}
	old := chunkSize
	chunkSize = 1000
	defer func() { chunkSize = old }()
	tbl := "pgchunk_" + time.Now().Format("150405000000")
	var rel string
	err := db.With(ctx, func(c *pgx.Conn) error {
		for _, q := range []string{
			`CREATE TABLE ` + tbl + ` (x text)`,
			`INSERT INTO ` + tbl + ` SELECT md5(g::text) FROM generate_series(1, 500) g`,
			`CHECKPOINT`,
		} {
			if _, err := c.Exec(ctx, q); err != nil {
				return err
			}
		}
		if err := c.QueryRow(ctx, `SELECT pg_relation_filepath($1)`, tbl).Scan(&rel); err != nil {
			return err
		}
		f := &sqlFile{ctx: ctx, c: c, path: rel}
		got, err := io.ReadAll(f)
		f.close()
		if err != nil {
			return err
		}
		want, err := os.ReadFile(filepath.Join(dataDir, rel))
		if err != nil {
			return err
		}
		if len(want) < 3*1000 || !bytes.Equal(got, want) {
			t.Errorf("chunked read: %d bytes, direct read %d bytes, equal=%v", len(got), len(want), bytes.Equal(got, want))
		}
		if f.off != int64(len(want)) {
			t.Errorf("%d bytes fetched, the file has %d", f.off, len(want))
		}
		// A reader that stops part-way (a scan that found every needle)
		// leaves the connection usable once closed: the fetch ahead of it
		// has finished.
		for _, stopAt := range []int{0, 1, 1500, 2999} {
			part := &sqlFile{ctx: ctx, c: c, path: rel}
			b := make([]byte, stopAt)
			if _, err := io.ReadFull(part, b); err != nil {
				return err
			}
			part.close()
			if !bytes.Equal(b, want[:stopAt]) {
				t.Errorf("the first %d bytes differ from the file's", stopAt)
			}
			var one int
			if err := c.QueryRow(ctx, `SELECT 1`).Scan(&one); err != nil || one != 1 {
				t.Fatalf("the connection after a reader stopped at %d bytes: %d, %v", stopAt, one, err)
			}
		}
		f = &sqlFile{ctx: ctx, c: c, path: "base/0/nope"}
		missing, err := io.ReadAll(f)
		f.close()
		if err != nil || len(missing) != 0 || f.off != 0 {
			t.Errorf("missing file: %d bytes (%d fetched), %v", len(missing), f.off, err)
		}
		_, err = c.Exec(ctx, `DROP TABLE `+tbl)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A context cancelled mid-statement breaks the connection; the next use
// connects again.
func TestReconnectAfterCancel(t *testing.T) {
	db, _ := liveDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := db.Exec(ctx, `SELECT pg_sleep(5)`)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Exec under a 200ms deadline = %v, want DeadlineExceeded", err)
	}
	if err := db.Exec(context.Background(), `SELECT 1`); err != nil {
		t.Fatalf("Exec after the cancelled one = %v", err)
	}
	cancelled, stop := context.WithCancel(context.Background())
	stop()
	if err := db.Exec(cancelled, `SELECT 1`); !errors.Is(err, context.Canceled) {
		t.Fatalf("Exec with a cancelled context = %v", err)
	}
}

// CompressedRows answers for many keys, a few per query, what Compressed
// answers for each key's row: only the long values of compressible storage
// are compressed, row by row; a key asked twice gets its answer twice. It
// fails safe where Compressed's one row is not the whole answer: a key
// without a row reports every compressible column compressed, and a key
// that two rows answer to reports a column compressed in either.
func TestCompressedRows(t *testing.T) {
	ctx := context.Background()
	db, _ := liveDB(t)
	old := compressedChunk
	compressedChunk = 2 // three queries for six keys
	defer func() { compressedChunk = old }()
	tbl := Table{Name: "pgcomp_" + time.Now().Format("150405000000")}
	long := func(seed string) string { return strings.Repeat("compressible text of row "+seed+". ", 400) } // about 12 KB
	var version int
	var cols map[string]Column
	err := db.With(ctx, func(c *pgx.Conn) error {
		if _, err := c.Exec(ctx, `CREATE TABLE `+tbl.Ident()+` (id text, a text, b text)`); err != nil {
			return err
		}
		for _, r := range [][3]string{
			{"1", "short a of row 1", "short b of row 1"},
			{"2", long("2a"), "short b of row 2"},
			{"3", "short a of row 3", long("3b")},
			{"4", long("4a"), long("4b")},
			{"5", "short a of row 5", long("5b")},
			{"5", long("5a"), "short b of the other row 5"},
		} {
			if _, err := c.Exec(ctx, `INSERT INTO `+tbl.Ident()+` (id, a, b) VALUES ($1, $2, $3)`, r[0], r[1], r[2]); err != nil {
				return err
			}
		}
		if err := c.QueryRow(ctx, `SELECT current_setting('server_version_num')::int`).Scan(&version); err != nil {
			return err
		}
		var err error
		cols, err = Columns(ctx, c, tbl)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Exec(context.Background(), `DROP TABLE `+tbl.Ident()) })
	storage := map[string]string{"a": cols["a"].Storage, "b": cols["b"].Storage}
	if storage["a"] != "x" || storage["b"] != "x" {
		t.Fatalf("storage %v: want text columns of extended (compressible) storage", storage)
	}
	m := Mapping{Label: "test", Table: tbl.Name, Keys: []string{"id"}, KeyTypes: []string{"text"}, Content: []string{"a", "b"}}
	keys := []string{"4", "1", "none", "2", "3", "2", "5"}
	want := [][]bool{{true, true}, {false, false}, {true, true}, {true, false}, {false, true}, {true, false}, {true, true}}
	got, err := CompressedRows(ctx, db, tbl, m, storage, version, keys)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(keys) {
		t.Fatalf("CompressedRows: %d answers for %d keys", len(got), len(keys))
	}
	for j, k := range keys {
		var a Args
		where := m.Where(&a, []string{k}) // before the call that reads a
		one, err := Compressed(ctx, db, tbl, m.Content, storage, version, where, a)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got[j], want[j]) {
			t.Errorf("key %s: CompressedRows %v, want %v", k, got[j], want[j])
		}
		// Where one row answers, Compressed's answer for it is the same.
		if k != "none" && k != "5" && !slices.Equal(got[j], one) {
			t.Errorf("key %s: CompressedRows %v, Compressed %v", k, got[j], one)
		}
	}
	// No compressible column: nothing asked, none compressed.
	got, err = CompressedRows(ctx, db, tbl, m, map[string]string{"a": "e", "b": "p"}, version, keys)
	if err != nil || len(got) != len(keys) || slices.Contains(got[0], true) {
		t.Fatalf("external storage: %v, %v; want none compressed", got, err)
	}
}

// The statistics step clears the table's pg_statistic rows and analyses
// it in one transaction under SHARE UPDATE EXCLUSIVE, the lock ANALYZE
// takes: another session's ANALYZE in progress (another host's reclaim,
// autovacuum) makes it wait, and a wait past lock_timeout is a timeout
// recorded for the verdict, not an error (a clearing DELETE that did not
// take the lock raced with such an ANALYZE: "tuple concurrently deleted"
// ended a workers=4 benchmark reclaim). Once the other ANALYZE is done, it
// clears the statistics and names the clearing's transaction.
func TestStatisticsWaitForAnotherAnalyze(t *testing.T) {
	ctx := context.Background()
	db, dsn := liveDSN(t)
	tbl := "pgstats_" + time.Now().Format("150405000000")
	table, err := ParseTable(tbl)
	if err != nil {
		t.Fatal(err)
	}
	err = db.With(ctx, func(c *pgx.Conn) error {
		for _, q := range []string{
			`CREATE TABLE ` + tbl + ` (x text)`,
			`INSERT INTO ` + tbl + ` SELECT 'value ' || g FROM generate_series(1, 50) g`,
			`ANALYZE ` + tbl,
		} {
			if _, err := c.Exec(ctx, q); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	other, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	for _, q := range []string{`BEGIN`, `ANALYZE ` + tbl} {
		if _, err := other.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	tg := &Target{DB: db, Table: table, Opts: Options{LockTimeout: 200 * time.Millisecond}, Priv: Privileges{Superuser: true}}
	statistics := func() *run {
		var r *run
		if err := db.With(ctx, func(c *pgx.Conn) error {
			r = &run{t: tg, c: c, rep: &store.ReclaimReport{}}
			if err := r.setTimeouts(ctx); err != nil {
				return err
			}
			defer r.resetTimeouts()
			return r.statistics(ctx, nil)
		}); err != nil {
			t.Fatalf("statistics: %v", err)
		}
		t.Logf("steps %q findings %v", r.rep.Steps, r.findings)
		return r
	}
	r := statistics()
	if len(r.timeouts) != 1 || r.timeouts[0].kind != StateLockTimeout || !strings.Contains(r.timeouts[0].what, "clearing the statistics") {
		t.Fatalf("timeouts %v: want one lock timeout on clearing the statistics while another ANALYZE holds the table", r.timeouts)
	}
	if _, err := other.Exec(ctx, `COMMIT`); err != nil {
		t.Fatal(err)
	}
	r = statistics()
	steps := strings.Join(r.rep.Steps, "\n")
	if len(r.timeouts) != 0 || len(r.findings) != 0 || !strings.Contains(steps, "cleared; ANALYZE") || !strings.Contains(steps, "VACUUM FULL pg_statistic") {
		t.Fatalf("after the other ANALYZE: timeouts %v findings %v steps %q, want the statistics cleared and pg_statistic rewritten", r.timeouts, r.findings, r.rep.Steps)
	}
}
