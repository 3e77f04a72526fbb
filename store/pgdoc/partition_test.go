package pgdoc_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/pgdoc"
)

// partitioned creates c.Table as a table partitioned by range of id, with
// partition _am (ids a..m) and _mz (the rest), and returns the partitions'
// names.
func partitioned(t *testing.T, c store.Config) (string, string) {
	t.Helper()
	a := admin(t)
	tb := c.Table
	for _, q := range []string{
		`CREATE TABLE ` + tb + ` (id text PRIMARY KEY, subject text NOT NULL DEFAULT '', kind text NOT NULL DEFAULT 'document', content text NOT NULL DEFAULT '', metadata jsonb NOT NULL DEFAULT '{}') PARTITION BY RANGE (id)`,
		`ALTER TABLE ` + tb + ` ALTER COLUMN content SET STORAGE EXTERNAL`,
		`CREATE TABLE ` + tb + `_am PARTITION OF ` + tb + ` FOR VALUES FROM ('a') TO ('m')`,
		`CREATE TABLE ` + tb + `_mz PARTITION OF ` + tb + ` FOR VALUES FROM ('m') TO (MAXVALUE)`,
		`CREATE INDEX ON ` + tb + ` (subject)`,
	} {
		exec(t, a, q)
	}
	return tb + "_am", tb + "_mz"
}

// relfilenodes returns each table's relfilenode: VACUUM FULL gives it a new one.
func relfilenodes(t *testing.T, c *pgx.Conn, tables ...string) map[string]uint32 {
	t.Helper()
	out := map[string]uint32{}
	for _, tb := range tables {
		var n uint32
		if err := c.QueryRow(context.Background(), `SELECT relfilenode FROM pg_class WHERE oid = $1::regclass`, tb).Scan(&n); err != nil {
			t.Fatal(err)
		}
		out[tb] = n
	}
	return out
}

// On a partitioned table, reclaim rewrites only the partition that held
// the deleted rows (its relfilenode changes, the other's does not), the
// method names both, and the probe scans every partition: the erased
// records' needles are gone, the other partition's record is found.
func TestPartitionedReclaimsOnlyWhatHeldTheRows(t *testing.T) {
	ctx := context.Background()
	c := config(t)
	am, mz := partitioned(t, c)
	s := open(t, c)
	put(t, s, "a-1", "subject-1", 1)
	put(t, s, "b-2", "subject-1", 3)
	put(t, s, "n-1", "subject-2", 2)
	ev := evidence(t, s, "a-1", "b-2") // windows n-1 also holds are not needles
	ev["n-1"] = evidence(t, s, "n-1")["n-1"]
	a := admin(t)
	before := relfilenodes(t, a, am, mz)
	if err := s.Delete(ctx, []string{"a-1", "b-2"}); err != nil {
		t.Fatal(err)
	}
	rep := reclaim(t, s)
	after := relfilenodes(t, a, am, mz)
	if rep.State != "" {
		t.Fatalf("state %q evidence %q: want clean", rep.State, rep.Evidence)
	}
	if after[am] == before[am] || after[mz] != before[mz] {
		t.Errorf("relfilenodes %v -> %v: want %s rewritten and %s not", before, after, am, mz)
	}
	if !strings.Contains(rep.Method, "rewritten only the 1 of 2 partitions that held the deleted rows (tableoid at the DELETE): public."+am) ||
		!strings.Contains(rep.Method, "not rewritten: public."+mz) {
		t.Errorf("method %q: want the rewritten and the skipped partition named", rep.Method)
	}
	f := found(t, s, ev)
	if f["a-1"] != 0 || f["b-2"] != 0 || f["n-1"] == 0 {
		t.Errorf("found %v: want none of a-1 and b-2, and n-1 (in the partition not rewritten, scanned all the same)", f)
	}
	pr, err := s.ProbePhysical(ctx, store.NewNeedleSet(ev))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(pr.Method, "heap "+am) || !strings.Contains(pr.Method, "heap "+mz) {
		t.Errorf("probe method %q: want both partitions' heaps scanned", pr.Method)
	}

	// A second reclaim with nothing deleted since: where rows were is not
	// known, so every partition is rewritten.
	rep = reclaim(t, s)
	again := relfilenodes(t, a, am, mz)
	if !strings.Contains(rep.Method, "every partition (2) rewritten, because no delete through this process recorded") ||
		again[am] == after[am] || again[mz] == after[mz] {
		t.Errorf("reclaim with no delete recorded: method %q, relfilenodes %v -> %v: want every partition rewritten", rep.Method, after, again)
	}

	// A key that matches no row (its row may have been deleted before,
	// anywhere): every partition.
	if err := s.Delete(ctx, []string{"n-1", "c-404"}); err != nil {
		t.Fatal(err)
	}
	rep = reclaim(t, s)
	last := relfilenodes(t, a, am, mz)
	if !strings.Contains(rep.Method, "every partition (2) rewritten, because a key matched no row") || last[am] == again[am] || last[mz] == again[mz] {
		t.Errorf("reclaim after a key that matched no row: method %q, relfilenodes %v -> %v: want every partition rewritten", rep.Method, again, last)
	}
	if f := found(t, s, ev); len(f) != 0 {
		t.Errorf("found %v after every record was erased", f)
	}
}

// A partitioned table opens without create, and the configuration check
// accepts it.
func TestPartitionedOpens(t *testing.T) {
	c := config(t)
	partitioned(t, c)
	s, err := pgdoc.Open(context.Background(), c, false)
	if err != nil {
		t.Fatalf("open a partitioned table: %v", err)
	}
	s.Close()
	if probs := store.Check(context.Background(), c); len(store.Errors(probs)) != 0 {
		t.Errorf("check of a partitioned table: %v", probs)
	}
}
