package bench

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

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
