package saga_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/internal/bench"
	"github.com/amnesia-dev/amnesia/internal/bench/provenance"
	"github.com/amnesia-dev/amnesia/internal/demo"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
)

// docFixture is one sqlite-doc store (documents and their chunks) with a
// SQLite ledger, filled through capture: the store of B4 on sqlite-doc.
type docFixture struct {
	dir    *state.Dir
	ledger *sqliteledger.Ledger
	raw    *sqlitedoc.Store
	corpus *demo.Corpus
}

func newDocFixture(tb testing.TB, root string, people, docsEach int) *docFixture {
	tb.Helper()
	ctx := context.Background()
	cfg := state.DefaultConfig()
	cfg.Stores = []state.StoreConfig{{Name: "docs", Type: sqlitedoc.Type, Path: filepath.Join(root, "docs.db")}}
	sd, err := state.Init(filepath.Join(root, "state"), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	l, err := sqliteledger.Open(ctx, sd.LedgerPath())
	if err != nil {
		tb.Fatal(err)
	}
	f := &docFixture{dir: sd, ledger: l, corpus: demo.Generate(3, people, docsEach)}
	if f.raw, err = sqlitedoc.Open(ctx, "docs", cfg.Stores[0].Path, true); err != nil {
		tb.Fatal(err)
	}
	docs := capture.New(l, sd.Keyer, "").Docs(f.raw)
	for _, d := range f.corpus.Docs {
		var mentions []string
		for _, m := range d.Mentions {
			mentions = append(mentions, f.corpus.People[m].ID)
		}
		owner := f.corpus.People[d.Owner].ID
		if err := docs.Put(ctx, capture.Doc{ID: d.ID, Kind: sqlitedoc.KindDocument, Subject: owner, Text: d.Text, Mentions: mentions}); err != nil {
			tb.Fatal(err)
		}
		for i, c := range demo.Chunk(d.Text, demo.ChunkSize) {
			if err := docs.Put(ctx, capture.Doc{ID: fmt.Sprintf("%s#%d", d.ID, i), Kind: sqlitedoc.KindChunk, Parent: d.ID, Text: c, Mentions: mentions}); err != nil {
				tb.Fatal(err)
			}
		}
	}
	// Settle the file, as the residue benchmark does.
	if _, err := f.raw.Reclaim(ctx); err != nil {
		tb.Fatal(err)
	}
	return f
}

func (f *docFixture) close() { f.raw.Close(); f.ledger.Close() }

func (f *docFixture) erase(tb testing.TB, person int, progress *bench.StepClock) {
	tb.Helper()
	ctx := context.Background()
	k, err := f.dir.Keyer.Key(f.dir.Config.Scope, f.corpus.People[person].ID)
	if err != nil {
		tb.Fatal(err)
	}
	v, err := f.ledger.View(ctx, f.dir.Config.Scope, k)
	if err != nil {
		tb.Fatal(err)
	}
	tr, err := lineage.BuildTrace(v)
	if err != nil {
		tb.Fatal(err)
	}
	e := &saga.Erasure{Dir: f.dir, Ledger: f.ledger, Stores: map[string]store.Store{"docs": f.raw}, Trace: tr, Reason: "BENCH"}
	if progress != nil {
		e.Progress = progress // a nil *bench.StepClock in the interface would not be nil
	}
	res, err := saga.Run(ctx, e)
	if err != nil {
		tb.Fatal(err)
	}
	if c := res.Statement.Predicate.Counts; c.Unverified != 0 || c.Residual != 0 || c.OutOfScope != 0 {
		tb.Fatalf("erasure of person %d incomplete: %+v", person, c)
	}
}

// fixedCostPaths is the code BenchmarkErasureFixedCost measures.
var fixedCostPaths = provenance.ResiduePaths

// BenchmarkErasureFixedCost measures one erasure (B4: trace, journaled saga,
// certificate, transparency log) of one subject at a time on a sqlite-doc
// store with a SQLite ledger: on a small store (50 subjects of 1 document),
// where what the store's size costs (its VACUUM, its scans) is small and the
// rest is the fixed cost per erasure, and on the residue benchmark's default
// corpus (200 subjects of 15 documents; skipped with -short). A run with
// b.N ≥ 20 writes bench/results/fixedcost-<store>-<people>x<docs>.json:
//
//	go test -run '^$' -bench ErasureFixedCost -benchtime 100x ./internal/saga/
func BenchmarkErasureFixedCost(b *testing.B) {
	for _, size := range []struct{ people, docs int }{{50, 1}, {200, 15}} {
		name := fmt.Sprintf("sqlite-doc-%dx%d", size.people, size.docs)
		b.Run(name, func(b *testing.B) {
			if size.docs > 1 && testing.Short() {
				b.Skip("the default corpus takes a while to build")
			}
			prov := provenance.Capture(fixedCostPaths)
			steps := bench.NewStepClock()
			synced, stop := saga.JournalSyncs()
			defer stop()
			var f *docFixture
			var walls []float64
			next := size.people
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if next == size.people {
					b.StopTimer()
					if f != nil {
						f.close()
					}
					f = newDocFixture(b, b.TempDir(), size.people, size.docs)
					next = 0
					b.StartTimer()
				}
				t0 := time.Now()
				f.erase(b, next, steps)
				walls = append(walls, float64(time.Since(t0).Microseconds())/1000)
				next++
			}
			b.StopTimer()
			f.close()
			syncs := float64(len(synced())) / float64(b.N)
			b.ReportMetric(syncs, "journal-fsyncs/op")
			if b.N < 20 {
				return
			}
			res := bench.FixedCostResult{Kind: "fixedcost", Store: "sqlite-doc", Subjects: size.people, DocsEach: size.docs, Provenance: prov,
				Erasures: b.N, JournalSyncs: syncs, StepsMs: steps.PerErasure(b.N)}
			sum := 0.0
			for _, w := range walls {
				sum += w
			}
			sort.Float64s(walls)
			res.MeanMs, res.MedianMs, res.P95Ms = sum/float64(b.N), walls[len(walls)/2], walls[int(0.95*float64(len(walls)-1))]
			out, err := json.MarshalIndent(res, "", "  ")
			if err != nil {
				b.Fatal(err)
			}
			path := filepath.Join("..", "..", "bench", "results", "fixedcost-"+name+".json")
			if err := os.WriteFile(path, append(out, '\n'), 0o644); err != nil {
				b.Fatal(err)
			}
			b.Logf("wrote %s", path)
		})
	}
}
