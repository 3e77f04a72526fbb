package saga_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/capture"
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

func (f *docFixture) erase(tb testing.TB, person int, progress *stepTimes) {
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
		e.Progress = progress
	}
	res, err := saga.Run(ctx, e)
	if err != nil {
		tb.Fatal(err)
	}
	if c := res.Statement.Predicate.Counts; c.Unverified != 0 || c.Residual != 0 || c.OutOfScope != 0 {
		tb.Fatalf("erasure of person %d incomplete: %+v", person, c)
	}
}

// stepTimes sums the step durations the saga prints as progress.
type stepTimes struct{ d map[string]time.Duration }

var stepLine = regexp.MustCompile(`^\s+(\S+)\s+done \(([^)]+)\)`)

func (s *stepTimes) Write(p []byte) (int, error) {
	for _, line := range strings.Split(string(p), "\n") {
		m := stepLine.FindStringSubmatch(line)
		if m == nil || m[2] == "journal" {
			continue
		}
		d, err := time.ParseDuration(m[2])
		if err != nil {
			continue
		}
		name, _, _ := strings.Cut(m[1], ":")
		s.d[name] += d
	}
	return len(p), nil
}

// BenchmarkErasureFixedCost measures one erasure (B4: trace, journaled
// saga, certificate, transparency log) of one subject with one document on
// a small sqlite-doc store, so that what the store's size costs (its
// VACUUM, its scan) is small and the rest is the fixed cost per erasure.
// AMNESIA_BENCH_STEPS=1 prints the time each step took, summed over the run.
func BenchmarkErasureFixedCost(b *testing.B) {
	for _, size := range []struct{ people, docs int }{{50, 1}, {200, 15}} {
		b.Run(fmt.Sprintf("sqlite-doc-%dx%d", size.people, size.docs), func(b *testing.B) {
			if size.docs > 1 && testing.Short() {
				b.Skip("the default corpus takes a while to build")
			}
			var steps *stepTimes
			if os.Getenv("AMNESIA_BENCH_STEPS") != "" {
				steps = &stepTimes{d: map[string]time.Duration{}}
			}
			var f *docFixture
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
				f.erase(b, next, steps)
				next++
			}
			b.StopTimer()
			f.close()
			if steps != nil {
				names := make([]string, 0, len(steps.d))
				for n := range steps.d {
					names = append(names, n)
				}
				sort.Strings(names)
				for _, n := range names {
					b.Logf("%-12s %8.2f ms/erasure", n, float64(steps.d[n].Microseconds())/1000/float64(b.N))
				}
			}
		})
	}
}
