package bench

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/subject"
)

// A trace ledger built with --keep is measured again with --reuse, grown
// further where --edges asks for more, and refused once it has changed
// since it was kept.
func TestTracePerfKeepReuse(t *testing.T) {
	ctx := context.Background()
	kinds := []string{"sqlite"}
	dsn := os.Getenv("AMNESIA_TEST_PG_DSN")
	if dsn != "" {
		kinds = append(kinds, "postgres")
		t.Cleanup(func() {
			if c, err := pgx.Connect(ctx, dsn); err == nil {
				c.Exec(ctx, "DROP DATABASE IF EXISTS amnesia_bench_trace_keep")
				c.Close(ctx)
			}
		})
	} else {
		t.Log("no AMNESIA_TEST_PG_DSN: SQLite only")
	}
	dir := t.TempDir()
	o := PerfOptions{Edges: []int{1600}, Traces: 10, Ledgers: kinds, PG: dsn, Name: "trace_keep", TxSubjects: 7, Keep: dir, Work: t.TempDir()}
	built, err := TracePerf(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(built.Runs) != len(kinds) {
		t.Fatalf("runs: %+v", built.Runs)
	}
	for _, r := range built.Runs {
		if r.Reused || r.BuildSeconds <= 0 || r.TxSubjects != 7 || len(r.BuiltBy) != 1 || r.BuiltBy[0] != built.Commit || r.KeptIn != dir {
			t.Errorf("kept run: %+v", r)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "trace_keep.db")); err != nil {
		t.Fatal(err)
	}

	// Reused at the same size: nothing built, the same ledger measured.
	o.Keep, o.Reuse = "", dir
	again, err := TracePerf(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range again.Runs {
		if !r.Reused || r.BuildSeconds != 0 || r.Events != built.Runs[i].Events || r.WarmP50Ms <= 0 || len(r.BuiltBy) != 1 {
			t.Errorf("reused run: %+v", r)
		}
	}
	// Reused and grown: the growth is recorded as a second build step.
	o.Edges = []int{2400}
	grown, err := TracePerf(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range grown.Runs {
		if !r.Reused || r.BuildSeconds <= 0 || r.Edges != 2400 || r.Events != 2700 || len(r.BuiltBy) != 2 {
			t.Errorf("grown run: %+v", r)
		}
		k, err := readKept(dir, r.Ledger)
		if err != nil || k.Subjects != 30 || k.Events != 2700 || len(k.Builds) != 2 || k.Builds[1].FromSubjects != 20 {
			t.Errorf("manifest %+v: %v", k, err)
		}
	}
	// Fewer edges than the kept ledger holds: refused.
	o.Edges = []int{1600}
	if _, err := TracePerf(ctx, o); err == nil {
		t.Error("a reuse asking for fewer edges than kept was accepted")
	}
	// A ledger written to since it was kept: refused.
	l, err := sqliteledger.OpenExisting(ctx, filepath.Join(dir, "trace_keep.db"))
	if err != nil {
		t.Fatal(err)
	}
	keyer, _ := subject.NewKeyer(make([]byte, subject.PepperSize))
	if err := l.RecordBatch(ctx, subjectBatch(keyer, 1000), nil); err != nil {
		t.Fatal(err)
	}
	l.Close()
	o.Edges, o.Ledgers = []int{2400}, []string{"sqlite"}
	if _, err := TracePerf(ctx, o); err == nil {
		t.Error("a ledger changed since it was kept was measured")
	}
	// Keep and reuse together: refused.
	o.Keep = dir
	if _, err := TracePerf(ctx, o); err == nil {
		t.Error("--keep with --reuse was accepted")
	}
}
