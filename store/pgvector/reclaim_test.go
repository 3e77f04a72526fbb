package pgvector_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/store/pgvector"
)

// INVALID vector indexes: a leftover copy of an interrupted REINDEX
// CONCURRENTLY (<index>_ccnew) is dropped, and the vector index itself,
// marked INVALID, is rebuilt, once, by VACUUM FULL (no REINDEX); for each
// kind of vector index. The INVALID state is made as a superuser does it by hand.
func TestInvalidVectorIndexes(t *testing.T) {
	for _, kind := range indexKinds {
		t.Run(kind, func(t *testing.T) { testInvalidVectorIndexes(t, kind) })
	}
}

func testInvalidVectorIndexes(t *testing.T, kind string) {
	ctx := context.Background()
	s := open(t, configIndex(t, kind))
	put(t, s, "rec-a", "subject-1", 1)
	put(t, s, "rec-b", "subject-2", 2)
	ev := evidence(t, s, "rec-a")
	ev["rec-b"] = evidence(t, s, "rec-b")["rec-b"]
	tbl := strings.Trim(s.Table(), `"`)
	index := tbl + "_embedding_" + kind
	using := map[string]string{HNSW: "hnsw (embedding vector_l2_ops)", IVFFlat: "ivfflat (embedding vector_l2_ops) WITH (lists = 1)"}[kind]
	for _, q := range []string{
		`CREATE INDEX ` + index + `_ccnew ON ` + tbl + ` USING ` + using,
		`UPDATE pg_index SET indisvalid = false WHERE indexrelid IN ('` + index + `_ccnew'::regclass, '` + index + `'::regclass)`,
	} {
		if err := s.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := s.Delete(ctx, []string{"rec-a"}); err != nil {
		t.Fatal(err)
	}
	rep := reclaim(t, s)
	steps := strings.Join(rep.Steps, "\n")
	if rep.State != "" || !strings.Contains(steps, "DROP INDEX CONCURRENTLY public."+index+"_ccnew") ||
		!strings.Contains(steps, "vector indexes built once, by VACUUM FULL") || strings.Contains(steps, "REINDEX INDEX") {
		t.Fatalf("Reclaim = state %q steps %q: want the leftover dropped and the vector index rebuilt once, by VACUUM FULL", rep.State, rep.Steps)
	}
	check := `DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_index WHERE indrelid = '` + tbl + `'::regclass AND NOT indisvalid)
		OR to_regclass('` + index + `_ccnew') IS NOT NULL THEN RAISE EXCEPTION 'invalid index left'; END IF; END $$`
	if err := s.Exec(ctx, check); err != nil {
		t.Fatalf("after reclaim: %v", err)
	}
	if f := found(t, s, ev); f["rec-a"] != 0 || f["rec-b"] == 0 {
		t.Fatalf("after reclaim found %v", f)
	}
}

// HNSW and IVFFlat keep a deleted element's vector until VACUUM; reclaim
// leaves none of it in the index files (the conformance suite checks the
// whole table; this checks the vector's windows alone, which only the heap
// and the vector index hold).
func TestVectorGoneFromIndex(t *testing.T) {
	for _, kind := range indexKinds {
		t.Run(kind, func(t *testing.T) { testVectorGoneFromIndex(t, kind) })
	}
}

func testVectorGoneFromIndex(t *testing.T, kind string) {
	ctx := context.Background()
	s := open(t, configIndex(t, kind))
	for i := 0; i < 20; i++ {
		put(t, s, "rec-"+string(rune('a'+i)), "subject", 100+i)
	}
	ev := evidence(t, s, "rec-a")
	e := ev["rec-a"]
	e.Needles = e.Needles[:len(e.Needles)-len(windowsOf(text(100)))]
	if f := found(t, s, ev); f["rec-a"] != len(e.Needles) {
		t.Fatalf("before deletion %d of %d vector needles found", f["rec-a"], len(e.Needles))
	}
	// The index's own file holds the vector too: the heap alone would not
	// show that the index is cleaned.
	idx := strings.Trim(s.Table(), `"`) + "_embedding_" + kind
	if !fileHolds(t, idx, pgvector.OnDisk(vector(100))) {
		t.Fatalf("the %s index file does not hold rec-a's vector before deletion: the test has no power", kind)
	}
	if err := s.Delete(ctx, []string{"rec-a"}); err != nil {
		t.Fatal(err)
	}
	if f := found(t, s, ev); f["rec-a"] == 0 {
		t.Fatalf("a plain delete left no vector bytes: the test has no power")
	}
	oid, node := relfile(t, idx)
	rep := reclaim(t, s)
	if rep.State != "" {
		t.Fatalf("Reclaim = %q %q", rep.State, rep.Evidence)
	}
	// Built once: VACUUM FULL gave the index a new file under the same
	// OID; REINDEX CONCURRENTLY (a second build) would have replaced the
	// index by a new one, with a new OID.
	if oid2, node2 := relfile(t, idx); oid2 != oid || node2 == node || strings.Contains(strings.Join(rep.Steps, "\n"), "REINDEX") ||
		!strings.Contains(strings.Join(rep.Steps, "\n"), "vector indexes built once, by VACUUM FULL") || !strings.Contains(rep.Method, "only if VACUUM FULL timed out") {
		t.Fatalf("the %s index: oid %d -> %d, file %d -> %d, steps %q, method %q: want it rebuilt once, by VACUUM FULL", kind, oid, oid2, node, node2, rep.Steps, rep.Method)
	}
	if f := found(t, s, ev); f["rec-a"] != 0 {
		t.Fatalf("after reclaim %d vector needles remain", f["rec-a"])
	}
	if fileHolds(t, idx, pgvector.OnDisk(vector(100))) {
		t.Fatalf("after reclaim the %s index file still holds rec-a's vector", kind)
	}
}

// relfile returns the relation's OID and file node.
func relfile(t *testing.T, relation string) (oid, node uint32) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if err := c.QueryRow(ctx, `SELECT oid, relfilenode FROM pg_class WHERE oid = $1::text::regclass`, relation).Scan(&oid, &node); err != nil {
		t.Fatal(err)
	}
	return oid, node
}

// When VACUUM FULL cannot take its lock, REINDEX INDEX CONCURRENTLY of the
// vector index is tried after it (its lock is weaker; under this ACCESS
// SHARE holder it times out too, in its wait for the table's lockers), the
// state names the lock timeout, and once the lock is released reclaim
// completes, building the index once, and leaves none of the record's bytes.
func TestReindexOnlyWhenVacuumFullTimesOut(t *testing.T) {
	ctx := context.Background()
	c := config(t)
	c.LockTimeout = "200ms"
	s := open(t, c)
	put(t, s, "rec-a", "subject-1", 1)
	put(t, s, "rec-b", "subject-2", 2)
	ev := evidence(t, s, "rec-a")
	ev["rec-b"] = evidence(t, s, "rec-b")["rec-b"]
	holder, err := pgx.Connect(ctx, dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	for _, q := range []string{"BEGIN", "LOCK TABLE " + s.Table() + " IN ACCESS SHARE MODE"} {
		if _, err := holder.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := s.Delete(ctx, []string{"rec-a"}); err != nil {
		t.Fatal(err)
	}
	rep := reclaim(t, s)
	steps := strings.Join(rep.Steps, "\n")
	vf, ri := strings.Index(steps, "VACUUM FULL"), strings.Index(steps, "REINDEX INDEX CONCURRENTLY")
	if rep.State == "" || !strings.Contains(rep.Evidence, "VACUUM FULL") || vf < 0 || ri < vf || strings.Contains(steps, "built once") {
		t.Fatalf("Reclaim under a conflicting lock = state %q evidence %q steps %q: want VACUUM FULL timed out, then REINDEX INDEX CONCURRENTLY tried", rep.State, rep.Evidence, rep.Steps)
	}
	if _, err := holder.Exec(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	rep = reclaim(t, s)
	if rep.State != "" || !strings.Contains(strings.Join(rep.Steps, "\n"), "vector indexes built once, by VACUUM FULL") {
		t.Fatalf("Reclaim after release = state %q evidence %q steps %q, want clean, the index built by VACUUM FULL", rep.State, rep.Evidence, rep.Steps)
	}
	if f := found(t, s, ev); f["rec-a"] != 0 || f["rec-b"] == 0 {
		t.Fatalf("after reclaim found %v: want none of rec-a and some of rec-b", f)
	}
}

// fileHolds reports whether the relation's main fork, after a CHECKPOINT,
// holds b, read by the server (pg_read_binary_file) on a connection of its own.
func fileHolds(t *testing.T, relation string, b []byte) bool {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var pos int
	if _, err := c.Exec(ctx, `CHECKPOINT`); err != nil {
		t.Fatal(err)
	}
	if err := c.QueryRow(ctx, `SELECT position($1::bytea in pg_read_binary_file(pg_relation_filepath($2::text::regclass)))`, b, relation).Scan(&pos); err != nil {
		t.Fatal(err)
	}
	return pos > 0
}
