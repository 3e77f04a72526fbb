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
// marked INVALID, is rebuilt by REINDEX INDEX CONCURRENTLY; for each kind
// of vector index. The INVALID state is made as a superuser does it by hand.
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
		!strings.Contains(steps, "REINDEX INDEX CONCURRENTLY public."+index) {
		t.Fatalf("Reclaim = state %q steps %q: want the leftover dropped and the vector index rebuilt", rep.State, rep.Steps)
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
	if rep := reclaim(t, s); rep.State != "" {
		t.Fatalf("Reclaim = %q %q", rep.State, rep.Evidence)
	}
	if f := found(t, s, ev); f["rec-a"] != 0 {
		t.Fatalf("after reclaim %d vector needles remain", f["rec-a"])
	}
	if fileHolds(t, idx, pgvector.OnDisk(vector(100))) {
		t.Fatalf("after reclaim the %s index file still holds rec-a's vector", kind)
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
