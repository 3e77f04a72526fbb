package pg

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// dropLeftovers drops the transient copies an interrupted REINDEX
// CONCURRENTLY leaves on the table: INVALID indexes named <index>_ccnew or
// <index>_ccold, and valid ones that duplicate a live <index> (VACUUM FULL
// validates every index it rebuilds). Other INVALID indexes are the
// application's and are never dropped.
func (r *run) dropLeftovers(ctx context.Context, tb Table) error {
	list, err := Indexes(ctx, r.c, tb)
	if err != nil {
		return err
	}
	exists := map[string]bool{}
	for _, i := range list {
		exists[i.Schema+"."+i.Name] = true
	}
	for _, i := range list {
		if !i.Leftover || i.Schema == "pg_toast" {
			continue
		}
		if i.Valid && !exists[i.Schema+"."+baseName(i.Name)] {
			continue
		}
		label := "DROP INDEX CONCURRENTLY " + i.String() + " (leftover of an interrupted REINDEX CONCURRENTLY)"
		if _, err := r.stmt(ctx, label, "DROP INDEX CONCURRENTLY IF EXISTS "+i.Ident()); err != nil {
			return err
		}
	}
	return nil
}

// baseName strips a _ccnew/_ccold suffix (and its digits).
func baseName(name string) string {
	for _, suf := range []string{"_ccnew", "_ccold"} {
		if i := strings.LastIndex(name, suf); i > 0 && strings.Trim(name[i+len(suf):], "0123456789") == "" {
			return name[:i]
		}
	}
	return name
}

// reindex rebuilds the selected indexes with REINDEX INDEX CONCURRENTLY
// (SHARE UPDATE EXCLUSIVE on the table: reads and writes go on). One that
// times out leaves an INVALID copy, which is dropped at once when possible.
func (r *run) reindex(ctx context.Context, tb Table) error {
	if r.t.Reindex == nil {
		return nil
	}
	list, err := Indexes(ctx, r.c, tb)
	if err != nil {
		return err
	}
	for _, i := range list {
		if i.Leftover || i.Schema == "pg_toast" || !r.t.Reindex(i) {
			continue
		}
		ok, err := r.stmt(ctx, "REINDEX INDEX CONCURRENTLY "+i.String(), "REINDEX INDEX CONCURRENTLY "+i.Ident())
		if err != nil {
			return err
		}
		if !ok {
			if err := r.dropLeftovers(ctx, tb); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkIndexes reports INVALID indexes that are still there.
func (r *run) checkIndexes(ctx context.Context, tb Table) error {
	list, err := Indexes(ctx, r.c, tb)
	if err != nil {
		return err
	}
	bad := Invalid(list)
	if len(bad) == 0 {
		return nil
	}
	r.step("INVALID indexes remain: " + names(bad))
	r.add(StateIndexNotRebuilt, fmt.Sprintf("INVALID index(es) on %s were not rebuilt: %s (pg_index.indisvalid = false; "+
		"queries do not use them, but they may still hold deleted rows' bytes; an interrupted REINDEX CONCURRENTLY leaves such "+
		"_ccnew/_ccold copies: run reclaim again, or DROP INDEX CONCURRENTLY them)", tb, names(bad)))
	return nil
}

// checkDead counts dead tuples in the rewritten tables sel after the
// rewrite, where pgstattuple exists.
func (r *run) checkDead(ctx context.Context, sel []Table) error {
	n, ok, err := deadIn(ctx, r.c, r.t.Priv, sel)
	if err != nil {
		return err
	}
	if !ok {
		r.step("dead tuples not counted (pgstattuple not installed or not permitted)")
		return nil
	}
	what := tableNames(sel)
	r.step(fmt.Sprintf("pgstattuple %s: %d dead tuples", what, n))
	if n == 0 {
		return nil
	}
	pins, err := FindPins(ctx, r.c, r.t.refXid())
	if err != nil {
		return err
	}
	if f := PinFinding(pins); f != nil {
		r.add(f.State, f.Evidence+fmt.Sprintf("; pgstattuple: %d dead tuples in %s", n, what))
		return nil
	}
	r.add(StateDeadTuples, fmt.Sprintf("pgstattuple: %d dead tuples remain in %s after reclaim (rows deleted since, or by transactions still open, count too)", n, what))
	return nil
}

// deadNote is the dead tuple count of sel for evidence, or "".
func (r *run) deadNote(ctx context.Context, sel []Table) string {
	n, ok, err := deadIn(ctx, r.c, r.t.Priv, sel)
	if err != nil || !ok {
		return ""
	}
	return fmt.Sprintf("; pgstattuple: %d dead tuples in %s", n, tableNames(sel))
}

// deadIn sums DeadTuples over tables.
func deadIn(ctx context.Context, c *pgx.Conn, p Privileges, tables []Table) (int64, bool, error) {
	var sum int64
	for _, tb := range tables {
		n, ok, err := DeadTuples(ctx, c, p, tb)
		if err != nil || !ok {
			return 0, ok, err
		}
		sum += n
	}
	return sum, true, nil
}

// testHookVacuum, when set, runs before (done false) and after (done true)
// the first plain VACUUM of each table a full reclaim rewrites, and of
// pg_statistic: tests take and end snapshots there.
var testHookVacuum func(tb Table, done bool)

func hookVacuum(tb Table, done bool) {
	if testHookVacuum != nil {
		testHookVacuum(tb, done)
	}
}

// pgStatistic is the catalog the statistics step rewrites.
var pgStatistic = Table{Schema: "pg_catalog", Name: "pg_statistic"}

// vacuumDead runs plain VACUUM of sel again while VACUUM FULL would copy
// rows deleted by transaction ref (xid8; 0 = unknown) that the last one
// could not remove, waiting between rounds, up to the lock timeout. It
// returns the pins older than ref still there at the deadline (the rewrite
// is then skipped).
//
// VACUUM FULL copies every row version its own snapshot may still need. That
// snapshot's xmin is the oldest transaction running in any database of the
// cluster, so while another database has a transaction open that began
// before the delete, VACUUM FULL keeps the deleted rows as "recently dead"
// and copies their bytes into the new file. A plain VACUUM heeds only this
// database's snapshots, and removes them unless one of those was open when
// it ran: a short transaction of another host that had ended by the pin
// check, say. Measured on PostgreSQL 15 (a transaction open in another
// database, a snapshot here during the first VACUUM only): VACUUM FULL then
// copied all 10 deleted rows; after a second plain VACUUM it copied none.
//
// So the rounds run only while a snapshot taken now has its xmin at or
// before ref (always, when ref is unknown) and
// pg_stat_get_dead_tuples counts row versions in sel: what the last plain
// VACUUM found dead but could not remove, plus rows deleted since (by this
// erasure's delete, when its count reached the statistics after the
// VACUUM; or by others, which a round removes too, or waits for). A pin
// older than ref seen between rounds (a snapshot here that began meanwhile,
// its xmin held back like every other) is waited for; one still there at
// the deadline is returned.
func (r *run) vacuumDead(ctx context.Context, sel []Table, ref uint64) ([]Pin, error) {
	start := time.Now()
	deadline := start.Add(r.t.Opts.LockTimeout)
	d := 10 * time.Millisecond
	var pins []Pin // what held the horizon at the last look
	for rounds := 0; ; {
		var held bool
		if err := r.c.QueryRow(ctx, `SELECT $1::int8 = 0 OR pg_snapshot_xmin(pg_current_snapshot()) <= $1::int8::text::xid8`, int64(ref)).Scan(&held); err != nil {
			return nil, fmt.Errorf("read the oldest running transaction: %w", err)
		}
		var left []Table
		var n int64
		for _, tb := range sel {
			if !held {
				break
			}
			var k int64
			if err := r.c.QueryRow(ctx, `SELECT COALESCE(sum(pg_stat_get_dead_tuples(l.oid)), 0)::int8 FROM `+leavesSQL+` l(oid)`, tb.Ident()).Scan(&k); err != nil {
				return nil, fmt.Errorf("count dead row versions: %w", err)
			}
			if k > 0 {
				left, n = append(left, tb), n+k
			}
		}
		waited := time.Since(start).Round(time.Millisecond)
		if len(left) == 0 {
			if rounds > 0 {
				r.step(fmt.Sprintf("VACUUM %s ran %d more time(s) in %s before VACUUM FULL, whose snapshot a transaction older than the delete (in any database) held back: no dead row versions left for it to copy", tableNames(sel), rounds, waited))
			}
			return nil, nil
		}
		rest := time.Until(deadline)
		if rest <= 0 {
			if len(pins) > 0 {
				return pins, nil
			}
			r.step(fmt.Sprintf("%d dead row versions in %s not removed by VACUUM after waiting %s (rows deleted since count too), while a transaction older than the delete (in any database) holds back VACUUM FULL's snapshot: VACUUM FULL copies those it may still see", n, tableNames(left), waited))
			return nil, nil
		}
		if err := sleep(ctx, min(d, rest)); err != nil {
			return nil, err
		}
		d = min(2*d, 250*time.Millisecond)
		// A snapshot here that began meanwhile has its xmin held back too:
		// wait for it to end before the next VACUUM, as long as the
		// deadline allows.
		var err error
		if pins, err = FindPins(ctx, r.c, uint32(ref)); err != nil {
			return nil, err
		}
		if len(pins) > 0 {
			continue
		}
		rounds++
		for _, tb := range left {
			if _, err := r.exec(ctx, "VACUUM (INDEX_CLEANUP ON) "+tb.String(), "VACUUM (INDEX_CLEANUP ON) "+tb.Ident()); err != nil {
				return nil, err
			}
		}
	}
}
