package pgdoc_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/internal/pgtest"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/internal/pg"
	"github.com/amnesia-dev/amnesia/store/pgdoc"
)

// setup opens a store with rec-a and rec-b and reads their evidence.
func setup(t *testing.T, c store.Config) (*pgdoc.Store, map[string]*store.Evidence) {
	t.Helper()
	s := open(t, c)
	put(t, s, "rec-a", "subject-1", 1)
	put(t, s, "rec-b", "subject-2", 2)
	ev := evidence(t, s, "rec-a")
	ev["rec-b"] = evidence(t, s, "rec-b")["rec-b"]
	return s, ev
}

func reclaim(t *testing.T, s *pgdoc.Store) store.ReclaimReport {
	t.Helper()
	rep, err := s.Reclaim(context.Background())
	if err != nil {
		t.Fatalf("Reclaim: %v", err)
	}
	t.Logf("reclaim: state=%q evidence=%q steps=%q", rep.State, rep.Evidence, rep.Steps)
	return rep
}

func TestDeleteOnlyReportsPending(t *testing.T) {
	ctx := context.Background()
	c := config(t)
	c.Reclaim = pg.ModeDeleteOnly
	s, ev := setup(t, c)
	if s.Info().Has(store.CapReclaim) {
		t.Fatalf("delete-only declares %v: it must not declare reclaim", s.Info().Capabilities)
	}
	if err := s.Delete(ctx, []string{"rec-a"}); err != nil {
		t.Fatal(err)
	}
	rep := reclaim(t, s)
	if rep.State != pg.StateDeferred || !strings.Contains(rep.Evidence, "delete-only") || !strings.Contains(rep.Evidence, "1 dead tuples") {
		t.Fatalf("Reclaim in delete-only = %+v, want %s with the dead tuple count", rep, pg.StateDeferred)
	}
	if f := found(t, s, ev); f["rec-a"] == 0 {
		t.Errorf("delete-only left no bytes of rec-a (found %v): the PENDING state would be unfounded", f)
	}
}

// A transaction holding ACCESS SHARE on the table blocks VACUUM FULL: with a
// short lock_timeout reclaim gives up with PENDING-lock-timeout instead of
// queueing an ACCESS EXCLUSIVE request that would stall every reader, and it
// completes once the lock is released.
func TestLockTimeout(t *testing.T) {
	ctx := context.Background()
	c := config(t)
	c.LockTimeout = "200ms"
	s, ev := setup(t, c)
	holder := admin(t)
	exec(t, holder, "BEGIN")
	exec(t, holder, "LOCK TABLE "+s.Table()+" IN ACCESS SHARE MODE")
	if err := s.Delete(ctx, []string{"rec-a"}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	rep := reclaim(t, s)
	if rep.State != pg.StateLockTimeout || !strings.Contains(rep.Evidence, "VACUUM FULL") {
		t.Fatalf("Reclaim under a conflicting lock = state %q evidence %q, want %s naming VACUUM FULL", rep.State, rep.Evidence, pg.StateLockTimeout)
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("Reclaim took %v under a 200ms lock_timeout: it waited for the lock instead of giving up", d)
	}
	// The plain VACUUM before the timed-out rewrite may have pruned rec-a's
	// tuple from its page, leaving its bytes only in pg_wal, which the
	// tests of other packages (running in parallel on the same cluster)
	// rotate. So finding them here is not required; the probe's power is
	// asserted by TestDeleteOnlyReportsPending.
	if f := found(t, s, ev); f["rec-a"] == 0 {
		t.Logf("after the timed-out rewrite no bytes of rec-a were found (pruned by VACUUM, and the WAL that held them recycled)")
	}
	exec(t, holder, "COMMIT")
	rep = reclaim(t, s)
	if rep.State != "" {
		t.Fatalf("Reclaim after release = state %q evidence %q, want clean", rep.State, rep.Evidence)
	}
	if f := found(t, s, ev); f["rec-a"] != 0 || f["rec-b"] == 0 {
		t.Errorf("after reclaim found %v: want none of rec-a and some of rec-b", f)
	}
}

// With retries, a lock released during the backoff lets the retry succeed.
func TestLockTimeoutRetry(t *testing.T) {
	ctx := context.Background()
	c := config(t)
	c.LockTimeout, c.Retries = "200ms", 3
	s, _ := setup(t, c)
	holder := admin(t)
	exec(t, holder, "BEGIN")
	exec(t, holder, "LOCK TABLE "+s.Table()+" IN ACCESS SHARE MODE")
	if err := s.Delete(ctx, []string{"rec-a"}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		time.Sleep(400 * time.Millisecond)
		_, err := holder.Exec(ctx, "COMMIT")
		done <- err
	}()
	rep := reclaim(t, s)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if rep.State != "" {
		t.Fatalf("Reclaim with retries = state %q evidence %q, want clean after the lock was released", rep.State, rep.Evidence)
	}
}

// statement_timeout bounds a statement even when the lock wait is allowed
// to be long.
func TestStatementTimeout(t *testing.T) {
	ctx := context.Background()
	c := config(t)
	c.LockTimeout, c.StatementTimeout = "30s", "300ms"
	s, _ := setup(t, c)
	holder := admin(t)
	exec(t, holder, "BEGIN")
	exec(t, holder, "LOCK TABLE "+s.Table()+" IN ACCESS SHARE MODE")
	defer exec(t, holder, "COMMIT")
	if err := s.Delete(ctx, []string{"rec-a"}); err != nil {
		t.Fatal(err)
	}
	rep := reclaim(t, s)
	if rep.State != pg.StateStatementTimeout || !strings.Contains(rep.Evidence, "VACUUM FULL") {
		t.Fatalf("Reclaim = state %q evidence %q, want %s naming VACUUM FULL", rep.State, rep.Evidence, pg.StateStatementTimeout)
	}
}

// A REPEATABLE READ snapshot taken before the delete pins the dead tuples:
// VACUUM cannot remove them and VACUUM FULL would copy them. Reclaim says
// so, names the backend, and completes once the snapshot is gone.
func TestPinnedXmin(t *testing.T) {
	ctx := context.Background()
	s, ev := setup(t, config(t))
	holder := admin(t)
	exec(t, holder, "BEGIN ISOLATION LEVEL REPEATABLE READ")
	exec(t, holder, "SELECT 1") // takes the snapshot; no lock on the table
	var pid int
	if err := holder.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, []string{"rec-a"}); err != nil {
		t.Fatal(err)
	}
	rep := reclaim(t, s)
	if rep.State != "PENDING-long-transaction" || !strings.Contains(rep.Evidence, "pid "+strconv.Itoa(pid)) || !strings.Contains(rep.Evidence, "dead tuples") {
		t.Fatalf("Reclaim under a pinned xmin = state %q evidence %q, want PENDING-long-transaction naming pid %d and the dead tuple count", rep.State, rep.Evidence, pid)
	}
	if f := found(t, s, ev); f["rec-a"] == 0 {
		t.Errorf("the xmin is pinned, yet no bytes of rec-a were found")
	}
	exec(t, holder, "COMMIT")
	if rep := reclaim(t, s); rep.State != "" {
		t.Fatalf("Reclaim after the snapshot ended = state %q evidence %q, want clean", rep.State, rep.Evidence)
	}
	if f := found(t, s, ev); f["rec-a"] != 0 || f["rec-b"] == 0 {
		t.Errorf("after reclaim found %v: want none of rec-a and some of rec-b", f)
	}
}

// An INVALID index left behind by a REINDEX CONCURRENTLY that timed out is
// reported while it cannot be dropped, and dropped by the next reclaim.
func TestInvalidIndexLeftByReindex(t *testing.T) {
	ctx := context.Background()
	c := config(t)
	c.LockTimeout = "200ms"
	s, ev := setup(t, c)
	holder, other := admin(t), admin(t)
	exec(t, holder, "BEGIN")
	exec(t, holder, "LOCK TABLE "+s.Table()+" IN ACCESS SHARE MODE")
	exec(t, other, "SET lock_timeout = '200ms'")
	idx := strings.Trim(s.Table(), `"`) + "_subject"
	if _, err := other.Exec(ctx, `REINDEX INDEX CONCURRENTLY `+idx); err == nil {
		t.Fatal("REINDEX CONCURRENTLY did not time out under a conflicting lock: the test cannot build its INVALID index")
	}
	if err := s.Delete(ctx, []string{"rec-a"}); err != nil {
		t.Fatal(err)
	}
	rep := reclaim(t, s)
	// Depending on the phase it timed out in, the leftover is the new copy
	// (<index>_ccnew) or the old index after the swap (<index>_ccold).
	if rep.State != pg.StateIndexNotRebuilt || !strings.Contains(rep.Evidence, idx+"_cc") {
		t.Fatalf("Reclaim with an INVALID index = state %q evidence %q, want %s naming %s_ccnew or _ccold", rep.State, rep.Evidence, pg.StateIndexNotRebuilt, idx)
	}
	exec(t, holder, "COMMIT")
	rep = reclaim(t, s)
	if rep.State != "" || !strings.Contains(strings.Join(rep.Steps, "\n"), "DROP INDEX CONCURRENTLY") {
		t.Fatalf("Reclaim after release = state %q steps %q, want clean with the leftover dropped", rep.State, rep.Steps)
	}
	var invalid int
	if err := other.QueryRow(ctx, `SELECT count(*) FROM pg_index WHERE indrelid = $1::text::regclass AND NOT indisvalid`, s.Table()).Scan(&invalid); err != nil {
		t.Fatal(err)
	}
	if invalid != 0 {
		t.Errorf("%d INVALID indexes remain after reclaim", invalid)
	}
	if f := found(t, s, ev); f["rec-a"] != 0 {
		t.Errorf("after reclaim %d needles of rec-a remain", f["rec-a"])
	}
}

// untilNotPinnedBeforeTheDelete runs scenario until it returns true, up to
// 30 times, waiting a little longer each time: it returns false when a
// snapshot whose xmin predates the delete (another test's transaction on
// the shared server, in any database) pinned the deleted rows, and the
// scenario is set up again.
func untilNotPinnedBeforeTheDelete(t *testing.T, scenario func(t *testing.T, attempt int) bool) {
	t.Helper()
	for attempt := 1; attempt <= 30; attempt++ {
		if scenario(t, attempt) {
			return
		}
		time.Sleep(time.Duration(attempt) * 50 * time.Millisecond)
	}
	t.Fatal("every attempt was pinned by a transaction older than the delete: the server is too busy for this test")
}

// Dead tuples that no pin older than the delete explains: a snapshot taken
// after amnesia's delete still sees a row the application deleted later, so
// VACUUM FULL copies that row's dead tuple. Reclaim reports it from
// pgstattuple; amnesia's own record is gone all the same.
//
// A snapshot's xmin is the oldest xid running anywhere in the cluster when
// it is taken: if another database on the shared server had a transaction
// open from before the delete, the snapshot really does pin the deleted row
// (PENDING-long-transaction is then the right answer), and the scenario is
// set up again, up to 30 times, waiting a little longer each time (the
// test packages run in parallel on one server; five attempts were not
// enough once in CI).
func TestDeadTuplesRemain(t *testing.T) {
	untilNotPinnedBeforeTheDelete(t, deadTuplesScenario)
}

func deadTuplesScenario(t *testing.T, attempt int) bool {
	ctx := context.Background()
	s, ev := setup(t, config(t))
	put(t, s, "rec-c", "subject-3", 3)
	if err := s.Delete(ctx, []string{"rec-a"}); err != nil {
		t.Fatal(err)
	}
	holder, app := admin(t), admin(t)
	exec(t, holder, "BEGIN ISOLATION LEVEL REPEATABLE READ")
	exec(t, holder, "SELECT 1")
	defer exec(t, holder, "COMMIT")
	exec(t, app, "DELETE FROM "+s.Table()+" WHERE id = 'rec-c'")
	rep := reclaim(t, s)
	if rep.State == "PENDING-long-transaction" {
		t.Logf("attempt %d: the snapshot's xmin predates the delete; setting up again", attempt)
		return false
	}
	if rep.State != pg.StateDeadTuples || !strings.Contains(rep.Evidence, "1 dead tuples") {
		t.Fatalf("Reclaim = state %q evidence %q, want %s with the count", rep.State, rep.Evidence, pg.StateDeadTuples)
	}
	if f := found(t, s, ev); f["rec-a"] != 0 || f["rec-b"] == 0 {
		t.Errorf("found %v: rec-a, deleted before the snapshot, must be gone and rec-b found", f)
	}
	return true
}

// shortContent is record i's content in table: short, so pg_statistic
// keeps it uncompressed, where the probe can see it, and not the same in
// two tables, not even in part (the probe scans all of pg_statistic, and a
// test that sets up again keeps its earlier tables until it ends).
func shortContent(table string, i int) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%s/%d", table, i)))
	return fmt.Sprintf("order %x, turn %d", h[:24], i) // every window holds some of the hash
}

// analysed opens a store of six short records whose statistics hold the
// content of rec-0, and returns their evidence.
func analysed(t *testing.T, c store.Config) (*pgdoc.Store, map[string]*store.Evidence) {
	t.Helper()
	ctx := context.Background()
	s := open(t, c)
	for i := 0; i < 6; i++ {
		if err := s.Put(ctx, pgdoc.Record{ID: fmt.Sprintf("rec-%d", i), Subject: fmt.Sprintf("subject-%d", i), Kind: "chat", Content: shortContent(s.Table(), i)}); err != nil {
			t.Fatal(err)
		}
	}
	a := admin(t)
	exec(t, a, "ANALYZE "+s.Table())
	if !inStatistics(t, a, s.Table(), shortContent(s.Table(), 0)) {
		t.Fatal("ANALYZE kept no sample of rec-0's content in pg_statistic: the test has no power")
	}
	ev := evidence(t, s, "rec-0")
	for i := 1; i < 6; i++ {
		k := fmt.Sprintf("rec-%d", i)
		ev[k] = evidence(t, s, k)[k]
	}
	return s, ev
}

// inStatistics reports whether a live pg_statistic row of table holds value.
func inStatistics(t *testing.T, c *pgx.Conn, table, value string) bool {
	t.Helper()
	var in bool
	if err := c.QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM pg_statistic WHERE starelid = $1::text::regclass
		AND concat(stavalues1::text, stavalues2::text, stavalues3::text, stavalues4::text, stavalues5::text) LIKE '%' || $2 || '%')`,
		table, value).Scan(&in); err != nil {
		t.Fatal(err)
	}
	return in
}

// A transaction with an xid open in another database of the cluster holds
// back the xmin of every snapshot, VACUUM FULL's own included: a VACUUM FULL
// of pg_statistic alone keeps the deleted statistics rows as "recently dead"
// and copies their sample values (whole texts here) into its new file. The
// reclaim vacuums pg_statistic first (a plain VACUUM heeds this database's
// transactions only), so none of them is left. This is what made the saga's
// PostgreSQL test fail whenever another package's write transaction was open
// on the shared test server.
func TestStatisticsReclaimedWhileAnotherDatabaseWrites(t *testing.T) {
	ctx := context.Background()
	s, ev := analysed(t, config(t))

	// The other database's writer: an xid, held until the test ends.
	other, err := pgx.Connect(ctx, pgtest.DB(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close(context.Background()) })
	for _, q := range []string{`CREATE TABLE w (x int)`, `BEGIN`, `INSERT INTO w VALUES (1)`} {
		if _, err := other.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	if err := s.Delete(ctx, []string{"rec-0"}); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Reclaim(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.State != "" {
		t.Fatalf("Reclaim = %q %q: a transaction in another database does not pin this one", rep.State, rep.Evidence)
	}
	if f := found(t, s, ev); f["rec-0"] != 0 || f["rec-1"] == 0 {
		t.Fatalf("after reclaim found %v: want none of rec-0 (pg_statistic's copies included), some of rec-1", f)
	}
}

// A reclaim in another process (a resumed erasure) gets the delete's
// transaction id back through store.DeleteMarker: a snapshot taken after
// the delete does not pin the deleted rows. Without the mark, every open
// snapshot counts. As in TestDeadTuplesRemain, a snapshot whose xmin
// predates the delete (another test's transaction on the shared server)
// really pins it: the scenario is set up again.
func TestDeleteMarkResumesReclaim(t *testing.T) {
	untilNotPinnedBeforeTheDelete(t, deleteMarkScenario)
}

func deleteMarkScenario(t *testing.T, attempt int) bool {
	ctx := context.Background()
	c := config(t)
	s, ev := setup(t, c)
	if err := s.Delete(ctx, []string{"rec-a"}); err != nil {
		t.Fatal(err)
	}
	mark := s.DeleteMark()
	if mark == "" {
		t.Fatal("no delete mark after a delete")
	}
	holder := admin(t)
	exec(t, holder, "BEGIN ISOLATION LEVEL REPEATABLE READ")
	exec(t, holder, "SELECT 1")
	defer exec(t, holder, "COMMIT")
	if rep := reclaim(t, open(t, c)); rep.State != "PENDING-long-transaction" {
		t.Fatalf("a reclaim without the delete's mark = state %q, want every open snapshot counted (PENDING-long-transaction)", rep.State)
	}
	resumed := open(t, c)
	if err := resumed.SetDeleteMark(mark); err != nil {
		t.Fatal(err)
	}
	if err := resumed.SetDeleteMark("not-a-xid"); err == nil {
		t.Error("a malformed mark was accepted")
	}
	rep := reclaim(t, resumed)
	if rep.State == "PENDING-long-transaction" {
		t.Logf("attempt %d: the snapshot's xmin predates the delete; setting up again", attempt)
		return false
	}
	if rep.State != "" {
		t.Fatalf("a resumed reclaim with the delete's mark = state %q evidence %q, want clean", rep.State, rep.Evidence)
	}
	if f := found(t, resumed, ev); f["rec-a"] != 0 || f["rec-b"] == 0 {
		t.Errorf("after the resumed reclaim found %v: want none of rec-a and some of rec-b", f)
	}
	return true
}

// A snapshot taken after the delete does not pin the deleted row, but it
// still sees the statistics sampled before the delete, which the reclaim
// clears: VACUUM cannot remove them from pg_statistic while it lasts (and
// VACUUM FULL would copy them into its new file). The reclaim waits up to
// the lock timeout for it to end, then reports PENDING-long-transaction
// naming it; once it has ended, a reclaim leaves no copy. This is how a
// workers=4 benchmark run on one database ended an erasure RESIDUAL.
func TestStatisticsHeldByASnapshotAfterTheDelete(t *testing.T) {
	untilNotPinnedBeforeTheDelete(t, statisticsHeldScenario)
}

// snapshotAfterTheDelete opens an analysed store (see analysed) with the
// given lock_timeout, deletes rec-0, and opens a REPEATABLE READ snapshot
// after the delete in another session: its connection and backend pid.
func snapshotAfterTheDelete(t *testing.T, lockTimeout string) (*pgdoc.Store, map[string]*store.Evidence, *pgx.Conn, int) {
	t.Helper()
	ctx := context.Background()
	c := config(t)
	c.LockTimeout = lockTimeout
	s, ev := analysed(t, c)
	if err := s.Delete(ctx, []string{"rec-0"}); err != nil {
		t.Fatal(err)
	}
	holder := admin(t)
	exec(t, holder, "BEGIN ISOLATION LEVEL REPEATABLE READ")
	exec(t, holder, "SELECT 1")
	var pid int
	if err := holder.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	return s, ev, holder, pid
}

func statisticsHeldScenario(t *testing.T, attempt int) bool {
	s, ev, holder, pid := snapshotAfterTheDelete(t, "300ms")
	start := time.Now()
	rep := reclaim(t, s)
	waited := time.Since(start)
	if rep.State == "PENDING-long-transaction" && !strings.Contains(rep.Evidence, "pg_statistic") {
		// The heap step's pin: the snapshot's xmin predates the delete
		// (another database's transaction was open when it was taken).
		t.Logf("attempt %d: the snapshot's xmin predates the delete; setting up again", attempt)
		exec(t, holder, "COMMIT")
		return false
	}
	if rep.State != "PENDING-long-transaction" || !strings.Contains(rep.Evidence, "pid "+strconv.Itoa(pid)) || !strings.Contains(rep.Evidence, "pg_statistic") {
		t.Fatalf("Reclaim while a snapshot sees the cleared statistics = state %q evidence %q, want PENDING-long-transaction naming pid %d and pg_statistic", rep.State, rep.Evidence, pid)
	}
	if waited < 300*time.Millisecond {
		t.Errorf("Reclaim returned after %v: it did not wait the lock timeout (300ms) for the snapshot", waited)
	}
	if f := found(t, s, ev); f["rec-0"] == 0 {
		t.Errorf("the statistics are held, yet no bytes of rec-0 were found: the PENDING state would be unfounded")
	}
	exec(t, holder, "COMMIT")
	if rep := reclaim(t, s); rep.State != "" {
		t.Fatalf("Reclaim after the snapshot ended = state %q evidence %q, want clean", rep.State, rep.Evidence)
	}
	if f := found(t, s, ev); f["rec-0"] != 0 || f["rec-1"] == 0 {
		t.Errorf("after reclaim found %v: want none of rec-0 (pg_statistic's copies included) and some of rec-1", f)
	}
	return true
}

// A snapshot that sees the cleared statistics and ends while the reclaim
// waits for it: the reclaim goes on, rewrites pg_statistic and is clean.
func TestStatisticsWaitForASnapshotToEnd(t *testing.T) {
	untilNotPinnedBeforeTheDelete(t, statisticsWaitScenario)
}

func statisticsWaitScenario(t *testing.T, attempt int) bool {
	ctx := context.Background()
	s, ev, holder, holderPid := snapshotAfterTheDelete(t, "20s")
	// The holder ends once the reclaim has cleared the statistics (rec-0's
	// content is gone from the table's live pg_statistic rows) and looks
	// for pins (its last query is FindPins', which names 'long-transaction'
	// near its start: pg_stat_activity shows the first 1024 bytes; the
	// heap's pin check came before the clearing, and each later statement
	// replaces the query pg_stat_activity shows).
	done, returned := make(chan error, 1), make(chan struct{})
	go func() {
		done <- func() error {
			watch, err := pgx.Connect(ctx, dsn(t))
			if err != nil {
				return err
			}
			defer watch.Close(ctx)
			for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				select {
				case <-returned: // the reclaim stopped before the statistics
					_, err = holder.Exec(ctx, "COMMIT")
					return err
				default:
				}
				var waiting bool
				if err := watch.QueryRow(ctx, `SELECT NOT EXISTS (SELECT 1 FROM pg_statistic WHERE starelid = $1::text::regclass
					AND concat(stavalues1::text, stavalues2::text, stavalues3::text, stavalues4::text, stavalues5::text) LIKE '%' || $2 || '%')
					AND EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND pid NOT IN (pg_backend_pid(), $3)
					AND query LIKE '%''long-transaction''%')`, s.Table(), shortContent(s.Table(), 0), holderPid).Scan(&waiting); err != nil {
					return err
				}
				if waiting {
					break
				}
			}
			_, err = holder.Exec(ctx, "COMMIT")
			return err
		}()
	}()
	rep := reclaim(t, s)
	close(returned)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if rep.State == "PENDING-long-transaction" && !strings.Contains(rep.Evidence, "pg_statistic") {
		t.Logf("attempt %d: the snapshot's xmin predates the delete; setting up again", attempt)
		return false
	}
	if rep.State != "" {
		t.Fatalf("Reclaim with a snapshot that ended during the wait = state %q evidence %q, want clean", rep.State, rep.Evidence)
	}
	steps := strings.Join(rep.Steps, "\n")
	if !strings.Contains(steps, "waited") || !strings.Contains(steps, "VACUUM FULL pg_statistic") {
		t.Errorf("steps %q: want the wait and the rewrite of pg_statistic recorded", rep.Steps)
	}
	if f := found(t, s, ev); f["rec-0"] != 0 || f["rec-1"] == 0 {
		t.Errorf("after reclaim found %v: want none of rec-0 and some of rec-1", f)
	}
	return true
}

// A query the reclaim makes between its statements (here listing the
// table's indexes) runs under the same lock_timeout: held up by a lock on
// a catalog (another host's VACUUM FULL of pg_statistic takes one), it
// gives up, and the reclaim stops with PENDING-lock-timeout naming it,
// not with an error; a later reclaim completes.
func TestCatalogLockTimeoutIsPending(t *testing.T) {
	ctx := context.Background()
	c := config(t)
	c.LockTimeout = "200ms"
	s, ev := setup(t, c)
	if err := s.Delete(ctx, []string{"rec-a"}); err != nil {
		t.Fatal(err)
	}
	holder := admin(t)
	exec(t, holder, "BEGIN")
	exec(t, holder, "LOCK TABLE pg_catalog.pg_index IN ACCESS EXCLUSIVE MODE")
	rep, err := s.Reclaim(ctx)
	exec(t, holder, "COMMIT")
	if err != nil {
		t.Fatalf("Reclaim behind a catalog lock: %v, want a residue state", err)
	}
	if rep.State != pg.StateLockTimeout || !strings.Contains(rep.Evidence, "list indexes") {
		t.Fatalf("Reclaim behind a catalog lock = state %q evidence %q, want %s naming the query", rep.State, rep.Evidence, pg.StateLockTimeout)
	}
	if rep := reclaim(t, s); rep.State != "" {
		t.Fatalf("Reclaim after the lock was released = state %q evidence %q, want clean", rep.State, rep.Evidence)
	}
	if f := found(t, s, ev); f["rec-a"] != 0 || f["rec-b"] == 0 {
		t.Errorf("after reclaim found %v: want none of rec-a and some of rec-b", f)
	}
}
