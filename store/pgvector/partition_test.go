package pgvector_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// A partitioned vector table (range of id, an HNSW index on each
// partition): reclaim rewrites only the partition that held the deleted
// row, which gets a new heap and a new HNSW index file, the other keeps
// both; the probe scans both, and the erased vector is found nowhere.
func TestPartitionedReclaimsOnlyWhatHeldTheRows(t *testing.T) {
	ctx := context.Background()
	c := config(t)
	tb := c.Table
	sql(t,
		fmt.Sprintf(`CREATE TABLE %s (id text PRIMARY KEY, embedding vector(%d) NOT NULL, content text NOT NULL DEFAULT '', metadata jsonb NOT NULL DEFAULT '{}') PARTITION BY RANGE (id)`, tb, dim),
		`ALTER TABLE `+tb+` ALTER COLUMN content SET STORAGE EXTERNAL`,
		`CREATE TABLE `+tb+`_am PARTITION OF `+tb+` FOR VALUES FROM ('a') TO ('m')`,
		`CREATE TABLE `+tb+`_mz PARTITION OF `+tb+` FOR VALUES FROM ('m') TO (MAXVALUE)`,
		`CREATE INDEX `+tb+`_embedding_hnsw ON `+tb+` USING hnsw (embedding vector_l2_ops)`,
		`CREATE INDEX `+tb+`_subject ON `+tb+` ((metadata->>'subject'))`,
	)
	s := open(t, c)
	put(t, s, "a-1", "subject-1", 1)
	put(t, s, "n-2", "subject-2", 2)
	ev := evidence(t, s, "a-1")
	ev["n-2"] = evidence(t, s, "n-2")["n-2"]
	admin, err := pgx.Connect(ctx, dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	nodes := func() map[string]uint32 {
		out := map[string]uint32{}
		rows, err := admin.Query(ctx, `SELECT c.relname::text, c.relfilenode FROM pg_class c
			WHERE c.oid IN (SELECT relid FROM pg_partition_tree($1::regclass) WHERE isleaf)
			   OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid IN (SELECT relid FROM pg_partition_tree($1::regclass) WHERE isleaf))`, tb)
		if err != nil {
			t.Fatal(err)
		}
		var name string
		var node uint32
		if _, err := pgx.ForEachRow(rows, []any{&name, &node}, func() error { out[name] = node; return nil }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	before := nodes()
	if err := s.Delete(ctx, []string{"a-1"}); err != nil {
		t.Fatal(err)
	}
	rep := reclaim(t, s)
	after := nodes()
	if rep.State != "" || !strings.Contains(rep.Method, "rewritten only the 1 of 2 partitions") || !strings.Contains(rep.Method, "not rewritten: public."+tb+"_mz") {
		t.Fatalf("state %q method %q: want clean, with only %s_am rewritten", rep.State, rep.Method, tb)
	}
	hnsw := 0
	for name, n := range before {
		am := strings.HasPrefix(name, tb+"_am")
		if am == (after[name] == n) {
			t.Errorf("%s: relfilenode %d -> %d: want a new file exactly for %s_am and its indexes", name, n, after[name], tb)
		}
		if strings.Contains(name, "embedding") {
			hnsw++
		}
	}
	if len(before) != 8 || hnsw != 2 {
		t.Fatalf("relations %v: want 2 partitions with 3 indexes each (key, subject, HNSW)", before)
	}
	if f := found(t, s, ev); f["a-1"] != 0 || f["n-2"] == 0 {
		t.Errorf("found %v: want none of a-1, and n-2 in the partition not rewritten", f)
	}
}
