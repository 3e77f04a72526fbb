package pg

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/store"
)

// Reclaim implements the configured mode. In full mode it makes the server
// rewrite what held deleted rows:
//
//  1. DROP INDEX CONCURRENTLY of leftovers of an interrupted REINDEX
//     CONCURRENTLY (INVALID <index>_ccnew/_ccold, or duplicates of a live index);
//  2. VACUUM (INDEX_CLEANUP ON): dead tuples out of heap and indexes
//     (pgvector's HNSW vacuum zeroes a deleted element's vector);
//  3. if a snapshot, replication slot or prepared transaction at or before
//     the delete holds the xmin horizon, stop: PENDING-<pin>;
//  4. VACUUM FULL: a new heap, TOAST table and indexes, from live rows only
//     (each index is built once: an HNSW build is the costliest step);
//  5. only if VACUUM FULL timed out: REINDEX INDEX CONCURRENTLY of the
//     Reindex indexes (vector indexes), whose lock does not block readers
//     or writers and may be granted where VACUUM FULL's was not; after a
//     rewrite, the statistics (see statistics: a snapshot that still sees
//     the cleared ones after a wait of up to lock_timeout: PENDING-<pin>);
//  6. INVALID indexes left: UNVERIFIED-index-not-rebuilt; pgstattuple dead
//     tuples left: PENDING-<pin> or UNVERIFIED-dead-tuples-remain;
//  7. CHECKPOINT, then pg_switch_wal + CHECKPOINT until the write position
//     has passed every WAL segment file the first switch and checkpoint
//     left at or ahead of it, recycled ones written again (see rotateWAL).
//
// Every statement runs under SET lock_timeout (and statement_timeout when
// configured); a timeout, after the configured retries, is a residue state
// (PENDING-lock-timeout, PENDING-statement-timeout), not an error. Errors
// are returned only for what a retry cannot fix by waiting.
func (t *Target) Reclaim(ctx context.Context) (store.ReclaimReport, error) {
	if t.Opts.Mode == ModeDeleteOnly {
		return t.deferred(ctx)
	}
	rep := store.ReclaimReport{Method: t.method()}
	var fs []Finding
	err := t.DB.With(ctx, func(c *pgx.Conn) error {
		r := &run{t: t, c: c, rep: &rep}
		defer r.resetTimeouts()
		err := r.full(ctx)
		if kind := timeoutKind(err); kind != "" && ctx.Err() == nil {
			// A query between the reclaim statements (the catalog, the
			// WAL position) ran under the same timeouts and gave up, behind
			// another session's lock on a catalog (another host's VACUUM
			// FULL of pg_statistic, say): the reclaim stopped there, and
			// a later one completes it.
			r.step(t.timeoutWhat(kind) + ": " + err.Error() + "; the reclaim stopped there")
			r.add(kind, t.timeoutWhat(kind)+" on a query between the reclaim's statements ("+err.Error()+"); the steps after it did not run; run reclaim again when the lock holders are gone")
			err = nil
		}
		fs = r.findings
		return err
	})
	if err != nil {
		return rep, err
	}
	rep.State, rep.Evidence = Verdict(fs)
	return rep, nil
}

func (t *Target) method() string {
	s := "full: DELETE; VACUUM (INDEX_CLEANUP ON); VACUUM FULL (rebuilds each index once); "
	if t.Reindex != nil {
		s += "REINDEX INDEX CONCURRENTLY (vector indexes) only if VACUUM FULL timed out; "
	}
	if t.Priv.SwitchWAL {
		s += "CHECKPOINT; pg_switch_wal + CHECKPOINT until the write position has passed every WAL segment file left at or ahead of it (recycled ones written again); "
	} else {
		s += "CHECKPOINT; no pg_switch_wal (not granted: pre-reclaim WAL is not rotated); "
	}
	s += "lock_timeout=" + t.Opts.LockTimeout.String()
	if t.Opts.StatementTimeout > 0 {
		s += ", statement_timeout=" + t.Opts.StatementTimeout.String()
	}
	if t.Opts.Retries > 0 {
		s += fmt.Sprintf(", retries=%d", t.Opts.Retries)
	}
	return s
}

// deferred is Reclaim in delete-only mode: nothing is rewritten, the store's
// residue is reported as pending with what can be measured.
func (t *Target) deferred(ctx context.Context) (store.ReclaimReport, error) {
	rep := store.ReclaimReport{Method: "delete-only: rows deleted; no VACUUM, no rewrite, no WAL rotation (reclaim deferred)"}
	ev := "reclaim: delete-only is configured for " + t.Table.String() + ": deleted rows stay as dead tuples until VACUUM, their bytes in the relation's free space until it is rewritten (VACUUM FULL), and in pg_wal until its segments are recycled"
	err := t.DB.With(ctx, func(c *pgx.Conn) error {
		n, ok, err := DeadTuples(ctx, c, t.Priv, t.Table)
		if err != nil {
			return err
		}
		if p := t.Priv.MissingPhysical(); p != "" {
			ev += "; " + p
		}
		if ok {
			ev += fmt.Sprintf("; pgstattuple: %d dead tuples now", n)
			rep.Steps = append(rep.Steps, fmt.Sprintf("pgstattuple %s: %d dead tuples", t.Table, n))
		}
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("reclaim: %w", err)
	}
	rep.State, rep.Evidence = StateDeferred, ev
	return rep, nil
}

// timeout is one statement that timed out on every attempt.
type timeout struct {
	kind, what string
}

// run is one reclaim on one connection.
type run struct {
	t         *Target
	c         *pgx.Conn
	rep       *store.ReclaimReport
	findings  []Finding
	timeouts  []timeout
	rewritten bool
	partsGen  uint64 // Target.partsGen when the partitions to rewrite were chosen
}

func (r *run) add(state, evidence string) { r.findings = append(r.findings, Finding{state, evidence}) }

func (r *run) step(s string) { r.rep.Steps = append(r.rep.Steps, s) }

func (r *run) full(ctx context.Context) error {
	t := r.t
	if m := t.Priv.MissingMaintain(t.Table); m != "" {
		ev := m + "; nothing was rewritten"
		if n, ok, err := DeadTuples(ctx, r.c, t.Priv, t.Table); err == nil && ok {
			ev += fmt.Sprintf("; pgstattuple: %d dead tuples", n)
		}
		if p := t.Priv.MissingPhysical(); p != "" {
			ev += "; " + p
		}
		r.add(StateManaged, ev)
		return nil
	}
	if err := r.setTimeouts(ctx); err != nil {
		return err
	}
	sel, note, err := r.selection(ctx)
	if err != nil {
		return err
	}
	if note != "" {
		r.rep.Method += "; " + note
		r.step(note)
	}
	for _, tb := range sel {
		if err := r.dropLeftovers(ctx, tb); err != nil {
			return err
		}
	}
	for _, tb := range sel {
		hookVacuum(tb, false)
		if _, err := r.stmt(ctx, "VACUUM (INDEX_CLEANUP ON) "+tb.String(), "VACUUM (INDEX_CLEANUP ON) "+tb.Ident()); err != nil {
			return err
		}
		hookVacuum(tb, true)
	}
	pins, err := FindPins(ctx, r.c, t.refXid())
	if err != nil {
		return err
	}
	if len(pins) == 0 {
		if pins, err = r.vacuumDead(ctx, sel, t.deleteXid8()); err != nil {
			return err
		}
	}
	if f := PinFinding(pins); f != nil {
		r.step("rewrite skipped: the xmin horizon is held (" + f.State + ")")
		r.add(f.State, f.Evidence+r.deadNote(ctx, sel))
		r.managed()
		return r.finish(ctx)
	}
	all := true
	for _, tb := range sel {
		ok, err := r.stmt(ctx, "VACUUM FULL "+tb.String(), "VACUUM FULL "+tb.Ident())
		if err != nil {
			return err
		}
		r.rewritten = r.rewritten || ok
		all = all && ok
		if ok {
			// VACUUM FULL built every index of the table anew, from live rows
			// only (INVALID ones too, which it marks valid): each is built
			// once in this reclaim, none again by REINDEX.
			if r.t.Reindex != nil {
				r.step("vector indexes built once, by VACUUM FULL " + tb.String() + "; no second build")
			}
		} else if err := r.reindex(ctx, tb); err != nil {
			// VACUUM FULL could not take its lock: REINDEX CONCURRENTLY, under
			// a weaker lock, may still rebuild the vector indexes.
			return err
		}
	}
	if r.rewritten {
		if err := r.statistics(ctx, sel); err != nil {
			return err
		}
	}
	for _, tb := range sel {
		if err := r.dropLeftovers(ctx, tb); err != nil {
			return err
		}
		if err := r.checkIndexes(ctx, tb); err != nil {
			return err
		}
	}
	if err := r.checkDead(ctx, sel); err != nil {
		return err
	}
	r.managed()
	if err := r.finish(ctx); err != nil {
		return err
	}
	if all && len(r.timeouts) == 0 {
		t.forgetParts(r.partsGen)
	}
	return nil
}

// managed records that no physical probe can measure what reclaim left.
func (r *run) managed() {
	if p := r.t.Priv.MissingPhysical(); p != "" {
		r.add(StateManaged, p+"; the reclaim statements that ran cannot be verified in the files")
	}
}

// finish records timeouts, then (after a rewrite) checkpoints and rotates WAL.
func (r *run) finish(ctx context.Context) error {
	if r.rewritten {
		if !r.t.Priv.Checkpoint {
			role := Display(r.t.Priv.Role)
			r.step("CHECKPOINT and WAL rotation skipped: role " + role + " may not CHECKPOINT (GRANT pg_checkpoint TO " + role + ")")
		} else if ok, err := r.stmt(ctx, "CHECKPOINT", "CHECKPOINT"); err != nil {
			return err
		} else if ok {
			if err := r.rotateWAL(ctx); err != nil {
				return err
			}
		}
	}
	for _, kind := range []string{StateLockTimeout, StateStatementTimeout} {
		var all []string
		seen := map[string]bool{}
		for _, to := range r.timeouts {
			if to.kind == kind && !seen[to.what] {
				seen[to.what] = true
				all = append(all, to.what)
			}
		}
		if len(all) > 0 {
			next := "; run reclaim again when the lock holders are gone"
			if kind == StateStatementTimeout {
				next = "; run reclaim again with a longer statement_timeout, or when the lock holders are gone"
			}
			r.add(kind, strings.Join(all, "; ")+next)
		}
	}
	return nil
}

func (r *run) setTimeouts(ctx context.Context) error {
	if _, err := r.c.Exec(ctx, "SET lock_timeout = '"+ms(r.t.Opts.LockTimeout)+"'"); err != nil {
		return fmt.Errorf("reclaim: set lock_timeout: %w", err)
	}
	st := "0"
	if r.t.Opts.StatementTimeout > 0 {
		st = ms(r.t.Opts.StatementTimeout)
	}
	if _, err := r.c.Exec(ctx, "SET statement_timeout = '"+st+"'"); err != nil {
		return fmt.Errorf("reclaim: set statement_timeout: %w", err)
	}
	return nil
}

func (r *run) resetTimeouts() {
	if r.c.IsClosed() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	r.c.Exec(ctx, "RESET lock_timeout")
	r.c.Exec(ctx, "RESET statement_timeout")
}

// stmt runs one reclaim statement with retries and records it as a step.
// It returns false, nil when the statement timed out every time (recorded
// for the verdict).
func (r *run) stmt(ctx context.Context, label, sql string) (bool, error) {
	ok, err := r.exec(ctx, label, sql)
	if ok {
		r.step(label)
	}
	return ok, err
}

// exec is stmt without the step on success.
func (r *run) exec(ctx context.Context, label, sql string) (bool, error) {
	return r.try(ctx, label, func() error {
		_, err := r.c.Exec(ctx, sql)
		return err
	})
}

// try runs do, which must leave no transaction open, with retries of a
// lock or statement timeout: false, nil when it timed out every time
// (recorded for the verdict).
func (r *run) try(ctx context.Context, label string, do func() error) (bool, error) {
	for attempt := 0; ; attempt++ {
		err := do()
		if err == nil {
			return true, nil
		}
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		kind := timeoutKind(err)
		if kind == "" {
			return false, fmt.Errorf("reclaim: %s: %s", label, sqlCause(err))
		}
		if attempt < r.t.Opts.Retries {
			if err := sleep(ctx, r.t.Opts.backoff(attempt)); err != nil {
				return false, err
			}
			continue
		}
		what := fmt.Sprintf("%s on %s after %d attempt(s)", r.t.timeoutWhat(kind), label, attempt+1)
		r.step(what)
		r.timeouts = append(r.timeouts, timeout{kind: kind, what: what})
		return false, nil
	}
}

// statistics replaces the table's statistics with ones sampled from live
// rows only, then vacuums and rewrites pg_statistic so the old sample
// values, which can be whole deleted vectors or texts, leave its files. ANALYZE of a table left
// with no rows keeps the old statistics (analyze.c writes none from an empty
// sample), so a superuser first deletes the rows of pg_statistic of the
// table and of the rewritten partitions sel. ANALYZE of a partitioned table
// samples every partition and analyses each. Without superuser neither is
// possible, and the probe, which scans pg_statistic, measures what is left.
//
// The cleared rows stay in pg_statistic's file while a snapshot older than
// the clearing can still see them: a transaction of another host (or of the
// application) that began after the heap's pin check but before the
// clearing. The step waits up to the lock timeout for such snapshots to
// end; one still open then is PENDING-<pin>, and pg_statistic is not
// rewritten (VACUUM FULL would copy the rows into its new file).
func (r *run) statistics(ctx context.Context, sel []Table) error {
	name, tbl := r.t.Table.String(), r.t.Table.Ident()
	if !r.t.Priv.Superuser {
		if _, err := r.stmt(ctx, "ANALYZE "+name, "ANALYZE "+tbl); err != nil {
			return err
		}
		r.step("pg_statistic not rewritten: needs superuser; statistics sampled before the delete (all of them, if the table is now empty) may keep copies until autovacuum re-analyses and rewrites it")
		return nil
	}
	rels := []string{tbl}
	for _, tb := range sel {
		if tb != r.t.Table {
			rels = append(rels, tb.Ident())
		}
	}
	label := "clearing the statistics of " + name + " and ANALYZE"
	var cleared uint64
	ok, err := r.try(ctx, label, func() (err error) {
		cleared, err = r.clearStatistics(ctx, rels)
		return err
	})
	if err != nil || !ok {
		// Not cleared: nothing of pg_statistic is rewritten, and the
		// timeout is the verdict.
		return err
	}
	if r.t.Partitioned {
		r.step("statistics of " + name + " and of " + tableNames(sel) + " cleared; ANALYZE " + name)
	} else {
		r.step("statistics of " + name + " cleared; ANALYZE " + name)
	}
	start := time.Now()
	var pins []Pin
	if cleared != 0 {
		var err error
		if pins, err = r.waitPins(ctx, uint32(cleared), r.t.Opts.LockTimeout); err != nil {
			return err
		}
	}
	waited := time.Since(start).Round(time.Millisecond)
	if len(pins) > 0 {
		r.statisticsHeld(name, waited, pins)
		return nil
	}
	if waited >= time.Millisecond {
		r.step("waited " + waited.String() + " for snapshots older than the clearing of the statistics to end")
	}
	// A plain VACUUM first removes the deleted rows. VACUUM FULL alone keeps
	// rows that are dead but "recently dead" to its own snapshot, and that
	// snapshot's xmin is held back by any transaction with an xid open in
	// any database of the cluster, where a plain VACUUM only heeds this
	// database's: VACUUM FULL would then copy the old sample values into
	// the new file (see vacuumDead).
	hookVacuum(pgStatistic, false)
	if _, err := r.stmt(ctx, "VACUUM pg_statistic", "VACUUM pg_catalog.pg_statistic"); err != nil {
		return err
	}
	hookVacuum(pgStatistic, true)
	if cleared != 0 {
		start := time.Now()
		pins, err := r.vacuumDead(ctx, []Table{pgStatistic}, cleared)
		if err != nil {
			return err
		}
		if len(pins) > 0 {
			r.statisticsHeld(name, time.Since(start).Round(time.Millisecond), pins)
			return nil
		}
	}
	_, err = r.stmt(ctx, "VACUUM FULL pg_statistic", "VACUUM FULL pg_catalog.pg_statistic")
	return err
}

// statisticsHeld records that pins older than the clearing of the
// statistics of name kept the cleared rows after waiting: pg_statistic is
// not rewritten.
func (r *run) statisticsHeld(name string, waited time.Duration, pins []Pin) {
	r.step("pg_statistic not rewritten: the cleared statistics are still visible to a snapshot older than the clearing after waiting " + waited.String())
	r.add("PENDING-"+pins[0].Kind, "the statistics of "+name+" that this reclaim cleared (sampled before it, they may hold deleted values) are still visible after waiting "+
		waited.String()+" to "+pinList(pins)+"; VACUUM cannot remove them from pg_statistic (and VACUUM FULL would copy them) until it ends; run reclaim again then")
}

// clearStatistics deletes the pg_statistic rows of rels (regclass names),
// then runs ANALYZE of the table, in one transaction that holds SHARE
// UPDATE EXCLUSIVE on rels throughout: another host's (or autovacuum's)
// ANALYZE, which takes the same lock, cannot update the rows while they are
// deleted ("tuple concurrently deleted"). It returns the transaction's
// xid (xid8): the rows it deleted, and older dead ones, stay visible to
// snapshots taken before it committed. It returns 0 when there was nothing
// to delete: no snapshot can then hold statistics this reclaim cleared.
func (r *run) clearStatistics(ctx context.Context, rels []string) (uint64, error) {
	tx, err := r.c.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `LOCK TABLE `+strings.Join(rels, ", ")+` IN SHARE UPDATE EXCLUSIVE MODE`); err != nil {
		return 0, err
	}
	tag, err := tx.Exec(ctx, `DELETE FROM pg_catalog.pg_statistic WHERE starelid = ANY($1::text[]::regclass[])`, rels)
	if err != nil {
		return 0, err
	}
	var xid uint64
	if tag.RowsAffected() > 0 {
		if err := tx.QueryRow(ctx, `SELECT pg_current_xact_id()::text::bigint`).Scan(&xid); err != nil {
			return 0, err
		}
	}
	if _, err := tx.Exec(ctx, `ANALYZE `+r.t.Table.Ident()); err != nil {
		return 0, err
	}
	return xid, tx.Commit(ctx)
}

// waitPins polls FindPins against ref until nothing holds the xmin horizon
// at or before it, or max has passed; it returns what still holds it.
func (r *run) waitPins(ctx context.Context, ref uint32, max time.Duration) ([]Pin, error) {
	deadline := time.Now().Add(max)
	d := 10 * time.Millisecond
	for {
		pins, err := FindPins(ctx, r.c, ref)
		if err != nil || len(pins) == 0 {
			return pins, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return pins, nil
		}
		if err := sleep(ctx, min(d, left)); err != nil {
			return nil, err
		}
		d = min(2*d, 250*time.Millisecond)
	}
}
