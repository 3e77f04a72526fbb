package bench

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/internal/bench/provenance"
	"github.com/amnesia-dev/amnesia/internal/pgtest"
)

// The smoke run: every baseline on every target, on a small corpus, so the
// benchmark never rots. It asserts what must hold whatever the machine.
func TestResidueSmoke(t *testing.T) {
	for _, typ := range ResidueTypes() {
		t.Run(typ, func(t *testing.T) {
			// The server targets run in a database of the test's own.
			switch typ {
			case "postgres":
				t.Setenv("AMNESIA_BENCH_PG_DSN", pgtest.DB(t, "pgstattuple"))
			case "pgvector":
				t.Setenv("AMNESIA_BENCH_PGVECTOR_DSN", pgtest.DB(t, "vector", "pgstattuple"))
				t.Setenv("AMNESIA_BENCH_PGVECTOR_DATADIR", os.Getenv(pgtest.DataDirEnv))
			}
			res, err := Residue(context.Background(), typ, Options{Seed: 1, Subjects: 6, DocsEach: 4, Sample: 2, Work: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Cells) != len(Baselines) {
				t.Fatalf("%d cells", len(res.Cells))
			}
			byID := map[string]Cell{}
			for _, c := range res.Cells {
				byID[c.Baseline] = c
				if c.Records == 0 || c.ProbePower < 0.5 {
					t.Errorf("%s: %d records, probe power %.2f: the measurement has no power", c.Baseline, c.Records, c.ProbePower)
				}
			}
			tg := targets[typ]
			switch b0 := byID["B0"]; {
			case tg.nativeKeeps:
				if b0.LogicalExclusion != 0 || b0.PhysicalResidue < b0.ProbePower {
					t.Errorf("B0 on a store without native delete: exclusion %.2f, residue %.2f, power %.2f; nothing should be removed", b0.LogicalExclusion, b0.PhysicalResidue, b0.ProbePower)
				}
			case (!tg.nativeDrops && b0.PhysicalResidue < 0.5) || b0.LogicalExclusion != 1:
				t.Errorf("B0 native delete: residue %.2f, exclusion %.2f; a plain DELETE should hide the rows and leave their bytes", b0.PhysicalResidue, b0.LogicalExclusion)
			}
			for id, n := range tg.notes {
				if !strings.Contains(byID[id].Note, n) {
					t.Errorf("%s: the JSON note does not say %q", id, n)
				}
			}
			if b3 := byID["B3"]; b3.LogicalExclusion != 1 || b3.PhysicalResidue < b3.ProbePower {
				t.Errorf("B3 suppression: exclusion %.2f residue %.2f power %.2f", b3.LogicalExclusion, b3.PhysicalResidue, b3.ProbePower)
			}
			for _, id := range []string{"B4", "B5"} {
				if c := byID[id]; c.PhysicalResidue != 0 || c.LogicalExclusion != 1 {
					t.Errorf("%s amnesia: residue %.2f, exclusion %.2f", id, c.PhysicalResidue, c.LogicalExclusion)
				}
				// At this size every erasure ends with a certificate and
				// nothing RESIDUAL, UNVERIFIED or OUT_OF_SCOPE (NEEDS_HUMAN,
				// a boilerplate chunk another subject holds whole, may be).
				if o := byID[id].Outcomes; o == nil || o.Erasures != byID[id].Subjects || o.Pending+o.Residual+o.Unverified+o.OutOfScope != 0 {
					t.Errorf("%s amnesia: outcomes %+v", id, o)
				}
			}
		})
	}
}

func TestPerfSmoke(t *testing.T) {
	ctx := context.Background()
	o := PerfOptions{Edges: []int{1600, 4000}, Traces: 20, Batches: 3, Singles: 10, Ledgers: []string{"sqlite"}, Work: t.TempDir()}
	tr, err := TracePerf(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Runs) != 2 || tr.Runs[1].Edges != 4000 || tr.Runs[1].Events != 4500 || tr.Runs[1].WarmP99Ms <= 0 || tr.Commit == "" {
		t.Errorf("trace result: %+v", tr)
	}
	if runtime.GOOS == "linux" && (tr.Runs[1].ColdTraces != 2 || tr.Runs[1].ColdP99Ms == nil || tr.Runs[1].ColdMethod == "") {
		t.Errorf("no cold traces on SQLite: %+v", tr.Runs[1])
	}
	cr, err := CapturePerf(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(cr.Runs) != 1 || cr.Runs[0].Batched.Ingestions != 3 || cr.Runs[0].Batched.LedgerPerS <= 0 || cr.Runs[0].Single.Writes != 10 {
		t.Errorf("capture result: %+v", cr)
	}
	// Both record the provenance every results file records, so report
	// can tell whether their code changed (a short hash with "-dirty"
	// could not be looked up).
	root, err := provenance.Toplevel(".")
	if err != nil {
		t.Skip("not in a git checkout:", err)
	}
	for name, p := range map[string]provenance.Provenance{"trace": tr.Provenance, "capture": cr.Provenance} {
		f := provenance.Check(root, p, nil)
		if len(p.Commit) < 40 || len(p.MeasuredPaths) == 0 || p.MeasuredAt == "" || f.Commit == "" || strings.Contains(f.Why, "not in this repository") || strings.Contains(f.Why, "unknown") {
			t.Errorf("%s provenance %+v: report reads it as %+v", name, p, f)
		}
	}
}

// TestTracePerfPostgresSmoke: the trace benchmark on PostgreSQL, cold
// traces included (its database's files dropped from the page cache), when
// the test server's data directory is readable here.
func TestTracePerfPostgresSmoke(t *testing.T) {
	dsn, data := os.Getenv("AMNESIA_TEST_PG_DSN"), os.Getenv("AMNESIA_TEST_PG_DATADIR")
	if dsn == "" || data == "" || runtime.GOOS != "linux" {
		t.Skip("needs AMNESIA_TEST_PG_DSN and AMNESIA_TEST_PG_DATADIR, on Linux")
	}
	if _, err := os.ReadDir(filepath.Join(data, "base")); err != nil {
		t.Skipf("the server's data directory is not readable here: %v", err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		if c, err := pgx.Connect(ctx, dsn); err == nil {
			c.Exec(ctx, "DROP DATABASE IF EXISTS amnesia_bench_trace_smoke")
			c.Close(ctx)
		}
	})
	o := PerfOptions{Edges: []int{1600}, Traces: 20, Ledgers: []string{"postgres"}, PG: dsn, PGData: data, Name: "trace_smoke", Work: t.TempDir()}
	tr, err := TracePerf(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Runs) != 1 || tr.Runs[0].WarmP99Ms <= 0 || tr.Runs[0].ColdTraces != 2 || tr.Runs[0].ColdP99Ms == nil || !strings.Contains(tr.Runs[0].ColdMethod, "shared_buffers") {
		t.Errorf("trace result: %+v", tr.Runs)
	}
}

// The scanner benchmark at a few MiB: every row measured, planted needles
// found, no file left behind.
func TestScannerSmoke(t *testing.T) {
	work := t.TempDir()
	r, err := Scanner(context.Background(), ScannerOptions{MiB: 4, Needles: []int{100, 400}, Runs: 1, Work: work})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Rows) != 4 || r.Kind != "scanner" || r.Commit == "" || r.Params.Workers < 1 {
		t.Fatalf("scanner result: %+v", r)
	}
	for _, row := range r.Rows {
		if row.Bytes != 4<<20 || row.NeedlesFound == 0 || row.Needles == 0 || row.Needles > 400 || row.ScanMBps <= 0 || row.ReadMBps <= 0 {
			t.Errorf("row %+v", row)
		}
	}
	if left, _ := os.ReadDir(work); len(left) != 0 {
		t.Errorf("files left in the work dir: %v", left)
	}
	if _, err := Scanner(context.Background(), ScannerOptions{MiB: 0, Needles: []int{1}, Runs: 1, Work: work}); err == nil || !strings.Contains(err.Error(), "--mib") {
		t.Errorf("a zero size: err = %v, want one naming --mib", err)
	}
}
