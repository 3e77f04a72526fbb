package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	pgv "github.com/pgvector/pgvector-go"

	"github.com/amnesia-dev/amnesia/internal/pgtest"
)

// The pgvector benchmark at toy scale: every baseline runs, and what must
// hold whatever the machine holds.
func TestPGVectorSmoke(t *testing.T) {
	dsn := pgtest.DB(t, "vector") // a database of the test's own
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	res, err := PGVector(ctx, PGVectorOptions{DSN: dsn, DataDir: os.Getenv(pgtest.DataDirEnv),
		Vectors: 600, Dim: 16, Subjects: 30, Sample: 2, Batch: 5, Seed: 1,
		Index: "auto", Lists: 4, HNSWBudget: time.Minute, Tables: "bench_vectors_smoke_", Work: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Kind != "pgvector" || res.Params.Vectors != 600 || res.Params.Dim != 16 || res.Params.VectorsPerSubject != 20 || res.Index.Method == "" {
		t.Errorf("result header: %+v %+v", res.Params, res.Index)
	}
	if len(res.Cells) != len(PGVectorBaselines) {
		t.Fatalf("%d baselines, want %d", len(res.Cells), len(PGVectorBaselines))
	}
	by := map[string]PGVectorCell{}
	for _, c := range res.Cells {
		by[c.Baseline] = c
		if c.Vectors == 0 || c.ProbePower == 0 || c.WallMedianMs <= 0 {
			t.Errorf("%s: %d vectors, power %.2f, wall %.1f ms: nothing measured", c.Baseline, c.Vectors, c.ProbePower, c.WallMedianMs)
		}
	}
	if c := by["native-delete"]; c.Residue == 0 || c.FoundAfter == 0 {
		t.Errorf("native DELETE: residue %.2f (power %.2f); a plain DELETE leaves the vectors in the heap", c.Residue, c.ProbePower)
	}
	if c := by["native-delete"]; c.Vectors != 2*20 || c.Subjects != 2 {
		t.Errorf("native DELETE: %d subjects, %d vectors, want 2 and 40", c.Subjects, c.Vectors)
	}
	for _, id := range []string{"amnesia-full", "amnesia-full-batch"} {
		c := by[id]
		if c.Residue != 0 || c.FoundAfter != 0 {
			t.Errorf("%s: residue %.2f (%d vectors found after)", id, c.Residue, c.FoundAfter)
		}
		if cs := c.Certificates; cs == nil || cs.Complete != cs.Erasures || cs.Residue["VERIFIED"] != cs.Erasures || cs.FoundAfter != 0 {
			t.Errorf("%s: certificates %+v", id, cs)
		}
	}
	if c := by["amnesia-full-batch"]; c.Subjects != 5 || c.Vectors != 100 || c.Certificates.Erasures != 5 || c.Certificates.Steps["reclaim"].Count != 5 {
		t.Errorf("batch: %d subjects, %d vectors, certificates %+v", c.Subjects, c.Vectors, c.Certificates)
	} else if c.Certificates.FirstSteps["evidence"] <= 0 || c.Certificates.FirstSteps["probe"] <= 0 {
		t.Errorf("batch: the first erasure's step times %+v: want its evidence and probe steps", c.Certificates.FirstSteps)
	}
	d := by["amnesia-delete-only"]
	if cs := d.Certificates; cs == nil || cs.ReclaimState["PENDING-reclaim-deferred"] != cs.Erasures || pending(cs.Residue) != cs.Erasures {
		t.Errorf("delete-only: certificates %+v: want a PENDING state (reclaim deferred) for every erasure", cs)
	}
	if d.Residue == 0 {
		t.Errorf("delete-only: residue %.2f; a deferred reclaim leaves the vectors in the heap", d.Residue)
	}
	// The report renders it.
	md := (&Results{PGVector: res}).Markdown()
	if !strings.Contains(md, "## pgvector at scale") || !strings.Contains(md, "amnesia-full-batch") {
		t.Errorf("markdown:\n%s", md)
	}
}

// pending counts the erasures whose certificate gives the store a PENDING-
// residue state.
func pending(residue map[string]int) int {
	n := 0
	for k, v := range residue {
		if strings.HasPrefix(k, "PENDING-") {
			n += v
		}
	}
	return n
}

// load fills a table with the seeded vectors, sent through pgvector-go's
// pgx codec: every row reads back with its own vector, exactly, and its
// subject tag.
func TestPGVectorLoad(t *testing.T) {
	dsn := pgtest.DB(t, "vector")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const rows, dim, subjects = 40, 8, 4
	r := &pgvRun{o: PGVectorOptions{DSN: dsn, Vectors: rows, Dim: dim, Subjects: subjects, Seed: 7, Lists: 2}, res: &PGVectorResult{}, start: time.Now()}
	for s := range subjects {
		r.tags = append(r.tags, fmt.Sprintf("tag-%d", s))
	}
	if err := r.withConn(ctx, func(c *pgx.Conn) error {
		_, err := c.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS vector`)
		return err
	}); err != nil {
		t.Skipf("no pgvector on this server: %v", err)
	}
	defer r.dropAll()
	table := "bench_vectors_loadtest_" + runTag
	su, err := r.load(ctx, table, "ivfflat", rows)
	if err != nil {
		t.Fatal(err)
	}
	if su.Table != table || su.InsertSeconds <= 0 || su.IndexSeconds <= 0 {
		t.Errorf("setup %+v", su)
	}
	got := 0
	err = r.withConn(ctx, func(c *pgx.Conn) error {
		rs, err := c.Query(ctx, `SELECT id, embedding::text, metadata->>'subject' FROM `+pgx.Identifier{table}.Sanitize()+` ORDER BY id`)
		if err != nil {
			return err
		}
		defer rs.Close()
		for i := 0; rs.Next(); i++ {
			var id, text, subject string
			if err := rs.Scan(&id, &text, &subject); err != nil {
				return err
			}
			var v pgv.Vector
			if err := v.Parse(text); err != nil {
				return err
			}
			if id != pgvKey(i) || subject != r.tags[i%subjects] || !slices.Equal(v.Slice(), pgvVector(7, i, dim)) {
				t.Errorf("row %d: id %s, subject %s, vector %v; want %s, %s, %v", i, id, subject, v.Slice(), pgvKey(i), r.tags[i%subjects], pgvVector(7, i, dim))
			}
			got++
		}
		return rs.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if got != rows {
		t.Errorf("%d rows, want %d", got, rows)
	}
}
