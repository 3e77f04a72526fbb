package pg

import (
	"context"
	"fmt"
	"strings"

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
