package pg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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

// A transaction open in another database holds back the xmin of every new
// snapshot here, VACUUM FULL's own included: rows deleted after it began are
// "recently dead" to VACUUM FULL, which copies them into the new file. A
// plain VACUUM heeds only this database's snapshots; when one of those (a
// short transaction of another host) was open while it ran and has ended by
// the pin check, the reclaim must VACUUM again before VACUUM FULL, or the
// deleted rows' bytes are in the rewritten file.
func TestVacuumAgainWhenASnapshotKeptDeletedRows(t *testing.T) {
	ctx := context.Background()
	db, dsn, tg := deletedRowsTable(t, 2*time.Second)
	xidElsewhere(t)
	if err := tg.Delete(ctx, nil, "", `DELETE FROM pgcopy WHERE id <= 10`); err != nil {
		t.Fatal(err)
	}
	snap := snapshot(t, dsn)
	ended := false
	rep := reclaimHooked(t, tg, func(tb Table, done bool) {
		if done && !ended {
			ended = true
			if _, err := snap.Exec(ctx, `COMMIT`); err != nil {
				t.Error(err)
			}
		}
	})
	if !ended {
		t.Fatal("the hook did not run: no plain VACUUM before the pin check")
	}
	dead, copied := deletedRowsLeft(t, db, 10)
	if dead != 0 || len(copied) > 0 || rep.State != "" {
		t.Fatalf("after reclaim: %d dead tuples, deleted rows %v in the heap file, state %q: want none, none and a clean reclaim", dead, copied, rep.State)
	}
	if !strings.Contains(strings.Join(rep.Steps, "\n"), "VACUUM pgcopy ran 1 more time(s)") {
		t.Errorf("steps %q: want the extra VACUUM recorded", rep.Steps)
	}
}

// The same copy in pg_statistic: the statistics step clears the table's
// statistics (sampled before the delete: they hold deleted values), waits
// for older snapshots, VACUUMs pg_statistic and rewrites it. A snapshot here
// that began after the wait and ended after that VACUUM (its xmin held back
// by another database's transaction) leaves the cleared rows for VACUUM
// FULL pg_statistic to copy, unless the step VACUUMs again first.
func TestVacuumStatisticsAgainWhenASnapshotKeptThem(t *testing.T) {
	ctx := context.Background()
	db, dsn, tg := deletedRowsTable(t, 2*time.Second)
	if err := db.With(ctx, func(c *pgx.Conn) error {
		_, err := c.Exec(ctx, `ANALYZE pgcopy`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	sampled := rowsIn(t, db, "pg_catalog.pg_statistic", 10)
	if len(sampled) == 0 {
		t.Fatal("no deleted row's value is in pg_statistic before the delete: the scenario proves nothing")
	}
	xidElsewhere(t)
	if err := tg.Delete(ctx, nil, "", `DELETE FROM pgcopy WHERE id <= 10`); err != nil {
		t.Fatal(err)
	}
	var snap *pgx.Conn
	rep := reclaimHooked(t, tg, func(tb Table, done bool) {
		if tb != pgStatistic {
			return
		}
		if !done && snap == nil {
			snap = snapshot(t, dsn)
		} else if done && snap != nil {
			if _, err := snap.Exec(ctx, `COMMIT`); err != nil {
				t.Error(err)
			}
		}
	})
	if snap == nil {
		t.Fatal("the hook did not run: pg_statistic was not vacuumed")
	}
	if in := rowsIn(t, db, "pg_catalog.pg_statistic", 10); len(in) > 0 || rep.State != "" {
		t.Fatalf("after reclaim: deleted rows %v (of %v sampled before the delete) in pg_statistic's file, state %q: want none and a clean reclaim", in, sampled, rep.State)
	}
	if !strings.Contains(strings.Join(rep.Steps, "\n"), "VACUUM pg_catalog.pg_statistic ran 1 more time(s)") {
		t.Errorf("steps %q: want the extra VACUUM of pg_statistic recorded", rep.Steps)
	}
}

// Without a transaction older than the delete anywhere in the cluster,
// VACUUM FULL removes the delete's rows itself: the reclaim does not wait
// for dead row versions that a later snapshot keeps (another session's
// later delete), and runs no extra VACUUM.
func TestNoExtraVacuumWhenNothingOlderThanTheDeleteRuns(t *testing.T) {
	ctx := context.Background()
	var db *DB
	var tg *Target
	var snap *pgx.Conn
	for attempt := 1; ; attempt++ {
		var dsn string
		db, dsn, tg = deletedRowsTable(t, 2*time.Second)
		if err := tg.Delete(ctx, nil, "", `DELETE FROM pgcopy WHERE id <= 10`); err != nil {
			t.Fatal(err)
		}
		snap = snapshot(t, dsn)
		// Another database's transaction (a parallel package's test) that
		// began before the delete holds back the snapshot's xmin: then it
		// pins the delete, and this scenario needs setting up again.
		var xmin uint64
		if err := snap.QueryRow(ctx, `SELECT pg_snapshot_xmin(pg_current_snapshot())::text::numeric`).Scan(&xmin); err != nil {
			t.Fatal(err)
		}
		if xmin > tg.deleteXid8() {
			later, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer later.Close(ctx)
			if _, err := later.Exec(ctx, `DELETE FROM pgcopy WHERE id BETWEEN 101 AND 110`); err != nil {
				t.Fatal(err)
			}
			break
		}
		snap.Exec(ctx, `COMMIT`)
		if attempt == 20 {
			t.Skipf("a transaction older than the delete ran in another database in each of %d attempts", attempt)
		}
		time.Sleep(200 * time.Millisecond)
	}
	rep := reclaimHooked(t, tg, nil)
	snap.Exec(ctx, `COMMIT`)
	steps := strings.Join(rep.Steps, "\n")
	if strings.Contains(steps, "VACUUM ran") || strings.Contains(steps, "not removed by VACUUM after waiting") || !strings.Contains(steps, "VACUUM FULL pgcopy") {
		t.Fatalf("steps %q: want VACUUM FULL at once, with no extra VACUUM and no wait", rep.Steps)
	}
	if rep.State != StateDeadTuples {
		t.Errorf("state %q: want %s (pgstattuple counts the later delete's rows, which the snapshot keeps)", rep.State, StateDeadTuples)
	}
	if _, copied := deletedRowsLeft(t, db, 10); len(copied) > 0 {
		t.Errorf("the delete's rows %v are in the heap file", copied)
	}
}

// reclaimHooked runs tg's reclaim with testHookVacuum set to hook, and
// logs its report.
func reclaimHooked(t *testing.T, tg *Target, hook func(tb Table, done bool)) store.ReclaimReport {
	t.Helper()
	testHookVacuum = hook
	defer func() { testHookVacuum = nil }()
	rep, err := tg.Reclaim(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("state %q evidence %q steps %q", rep.State, rep.Evidence, rep.Steps)
	return rep
}

// xidElsewhere opens, in another database of the cluster, a transaction
// with an xid, open until the test ends: every snapshot taken meanwhile, in
// any database, has its xmin at or before that xid.
func xidElsewhere(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, pgtest.DB(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(ctx) })
	for _, q := range []string{`BEGIN`, `SELECT pg_current_xact_id()`} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
}

// snapshot opens a REPEATABLE READ transaction on dsn with its snapshot
// taken; the caller ends it (or the test's end does).
func snapshot(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(ctx) })
	for _, q := range []string{`BEGIN ISOLATION LEVEL REPEATABLE READ`, `SELECT 1`} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// deletedRowsLeft returns pgstattuple's dead tuple count of pgcopy and
// which of rows 1..n have their contents in its current heap file.
func deletedRowsLeft(t *testing.T, db *DB, n int) (dead int64, copied []int) {
	t.Helper()
	if err := db.With(context.Background(), func(c *pgx.Conn) error {
		return c.QueryRow(context.Background(), `SELECT dead_tuple_count FROM pgstattuple('pgcopy')`).Scan(&dead)
	}); err != nil {
		t.Fatal(err)
	}
	return dead, rowsIn(t, db, "pgcopy", n)
}

// rowsIn returns which of pgcopy's rows 1..n have their contents in rel's
// current main file, after a checkpoint.
func rowsIn(t *testing.T, db *DB, rel string, n int) (in []int) {
	t.Helper()
	var file []byte
	if err := db.With(context.Background(), func(c *pgx.Conn) error {
		if _, err := c.Exec(context.Background(), `CHECKPOINT`); err != nil {
			return err
		}
		return c.QueryRow(context.Background(), `SELECT pg_read_binary_file(pg_relation_filepath($1::text::regclass))`, rel).Scan(&file)
	}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		if bytes.Contains(file, fmt.Appendf(nil, "drow-%04d", i)) {
			in = append(in, i)
		}
	}
	return in
}

// deletedRowsTable makes table pgcopy, 200 rows with contents
// "drow-<id, 4 digits>", in a database of its own with pgstattuple,
// and its Target (full reclaim, lock timeout lt).
func deletedRowsTable(t *testing.T, lt time.Duration) (*DB, string, *Target) {
	t.Helper()
	ctx := context.Background()
	dsn := pgtest.DB(t, "pgstattuple")
	db, err := Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	const tbl = "pgcopy"
	table, err := ParseTable(tbl)
	if err != nil {
		t.Fatal(err)
	}
	err = db.With(ctx, func(c *pgx.Conn) error {
		for _, q := range []string{
			`CREATE TABLE ` + tbl + ` (id int PRIMARY KEY, x text)`,
			`INSERT INTO ` + tbl + ` SELECT g, 'drow-' || lpad(g::text, 4, '0') FROM generate_series(1, 200) g`,
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
	tg, err := NewTarget(ctx, db, table, Options{Mode: ModeFull, LockTimeout: lt, Backoff: DefaultBackoff})
	if err != nil {
		t.Fatal(err)
	}
	if !tg.Priv.Pgstattuple || !tg.Priv.Superuser {
		t.Fatalf("privileges %+v: the test needs a superuser and pgstattuple", tg.Priv)
	}
	return db, dsn, tg
}

// A plain VACUUM in progress (another host's reclaim) holds back no other
// vacuum, so it is no pin; a VACUUM FULL (a snapshot that does) is. Each is
// kept in progress waiting for a lock that a transaction without a
// snapshot holds.
func TestLazyVacuumIsNoPin(t *testing.T) {
	ctx := context.Background()
	db, dsn := liveDSN(t)
	if err := db.With(ctx, func(c *pgx.Conn) error {
		_, err := c.Exec(ctx, `CREATE TABLE pinvac (x text)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		stmt string
		pin  bool
	}{{`VACUUM (INDEX_CLEANUP ON) pinvac`, false}, {`vacuum pinvac`, false}, {`VACUUM FULL pinvac`, true}, {`VACUUM (ANALYZE) pinvac`, true}} {
		holder, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{`BEGIN`, `LOCK TABLE pinvac IN SHARE UPDATE EXCLUSIVE MODE`} {
			if _, err := holder.Exec(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		vac, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		var pid int
		if err := vac.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { _, err := vac.Exec(ctx, tc.stmt); done <- err }()
		var pins []Pin
		err = db.With(ctx, func(c *pgx.Conn) error {
			for i := 0; ; i++ {
				var waiting bool
				if err := c.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock' AND backend_xmin IS NOT NULL)`, pid).Scan(&waiting); err != nil {
					return err
				}
				if waiting {
					break
				}
				if i == 500 {
					return errors.New("the VACUUM never waited for the lock with a snapshot")
				}
				time.Sleep(10 * time.Millisecond)
			}
			var err error
			pins, err = FindPins(ctx, c, 0)
			return err
		})
		if _, err := holder.Exec(ctx, `COMMIT`); err != nil {
			t.Fatal(err)
		}
		if verr := <-done; verr != nil {
			t.Errorf("%s: %v", tc.stmt, verr)
		}
		holder.Close(ctx)
		vac.Close(ctx)
		if err != nil {
			t.Fatalf("%s: %v", tc.stmt, err)
		}
		found := false
		for _, p := range pins {
			found = found || strings.Contains(p.Desc, fmt.Sprintf("pid %d ", pid))
		}
		if found != tc.pin {
			t.Errorf("%s in progress: pin %v (pins %v), want %v", tc.stmt, found, pins, tc.pin)
		}
	}
}
