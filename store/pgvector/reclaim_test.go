package pgvector_test

import (
	"context"
	"strings"
	"testing"
)

// INVALID vector indexes: a leftover copy of an interrupted REINDEX
// CONCURRENTLY (<index>_ccnew) is dropped, and the vector index itself,
// marked INVALID, is rebuilt by REINDEX INDEX CONCURRENTLY. PGlite has one
// backend, so the INVALID state is made as a superuser does it by hand.
func TestInvalidVectorIndexes(t *testing.T) {
	ctx := context.Background()
	s := open(t, config(t))
	put(t, s, "rec-a", "subject-1", 1)
	put(t, s, "rec-b", "subject-2", 2)
	ev := evidence(t, s, "rec-a")
	ev["rec-b"] = evidence(t, s, "rec-b")["rec-b"]
	tbl := strings.Trim(s.Table(), `"`)
	for _, q := range []string{
		`CREATE INDEX ` + tbl + `_embedding_hnsw_ccnew ON ` + tbl + ` USING hnsw (embedding vector_l2_ops)`,
		`UPDATE pg_index SET indisvalid = false WHERE indexrelid IN ('` + tbl + `_embedding_hnsw_ccnew'::regclass, '` + tbl + `_embedding_hnsw'::regclass)`,
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
	if rep.State != "" || !strings.Contains(steps, "DROP INDEX CONCURRENTLY public."+tbl+"_embedding_hnsw_ccnew") ||
		!strings.Contains(steps, "REINDEX INDEX CONCURRENTLY public."+tbl+"_embedding_hnsw") {
		t.Fatalf("Reclaim = state %q steps %q: want the leftover dropped and the vector index rebuilt", rep.State, rep.Steps)
	}
	check := `DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_index WHERE indrelid = '` + tbl + `'::regclass AND NOT indisvalid)
		OR to_regclass('` + tbl + `_embedding_hnsw_ccnew') IS NOT NULL THEN RAISE EXCEPTION 'invalid index left'; END IF; END $$`
	if err := s.Exec(ctx, check); err != nil {
		t.Fatalf("after reclaim: %v", err)
	}
	if f := found(t, s, ev); f["rec-a"] != 0 || f["rec-b"] == 0 {
		t.Fatalf("after reclaim found %v", f)
	}
}

// HNSW keeps a deleted element's vector until VACUUM; reclaim leaves none
// of it in the index files (the conformance suite checks the whole table;
// this checks the vector's windows alone, which only the heap and the HNSW
// index hold).
func TestVectorGoneFromIndex(t *testing.T) {
	ctx := context.Background()
	s := open(t, config(t))
	for i := 0; i < 20; i++ {
		put(t, s, "rec-"+string(rune('a'+i)), "subject", 100+i)
	}
	ev := evidence(t, s, "rec-a")
	e := ev["rec-a"]
	e.Needles = e.Needles[:len(e.Needles)-len(windowsOf(text(100)))]
	if f := found(t, s, ev); f["rec-a"] != len(e.Needles) {
		t.Fatalf("before deletion %d of %d vector needles found", f["rec-a"], len(e.Needles))
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
}
