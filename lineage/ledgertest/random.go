package ledgertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/subject"
)

// testViewRandom records random graphs through l (one write at a time for
// some seeds, RecordBatch for others) and checks, for every subject of
// every scope, that the ledger's View and the trace built from it equal
// those of the naive reference (model.view: one artifact, edge and mark at
// a time, the walk ledgers did before they read a level at a time). The
// graphs have chunks shared by several owners, parents across scopes,
// cycles (a new version that adds a descendant as parent), mentions,
// suppressions, and artifacts marked by several erasures with different
// outcomes.
func testViewRandom(t *testing.T, open Opener) {
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			l := open(t)
			m, subjects := randomGraph(t, l, seed)
			if cycles, shared := graphShape(m); cycles == 0 || shared == 0 {
				t.Fatalf("the graph has %d cycles and %d artifacts shared by owners: the test would not check them", cycles, shared)
			}
			traces := 0
			for _, sc := range randomScopes {
				for _, s := range subjects[sc] {
					compareView(t, l, m, sc, s)
					traces++
				}
			}
			if traces < 10 {
				t.Fatalf("only %d subjects compared", traces)
			}
		})
	}
}

var randomScopes = []string{"default", "tenant-b", "tenant-c"}

// randomGraph records a random graph through l and returns its reference
// model and the subjects of each scope.
func randomGraph(t *testing.T, l lineage.Ledger, seed uint64) (*model, map[string][]subject.Key) {
	t.Helper()
	ctx := context.Background()
	k := Keyer(t)
	rng := rand.New(rand.NewPCG(seed, 5))
	m := newModel()
	subjects := map[string][]subject.Key{}
	for _, sc := range randomScopes {
		for i := 0; i < 5; i++ {
			subjects[sc] = append(subjects[sc], key(t, k, sc, fmt.Sprintf("person-%d@example.org", i)))
		}
	}
	kinds := []lineage.Kind{lineage.KindSource, lineage.KindChunk, lineage.KindEmbedding, lineage.KindCache, lineage.KindTrain, lineage.KindLog}
	stores := []string{"docs", "vectors", "cache", "train"}
	var ids []string // recorded, in order
	var arts []lineage.Artifact
	var ms []lineage.Mention
	batch := seed%2 == 0
	record := func(a lineage.Artifact) {
		m.record(a)
		if batch {
			arts = append(arts, a)
			return
		}
		if err := l.Record(ctx, a); err != nil {
			t.Fatalf("record %s: %v", a.Key, err)
		}
	}
	for i := 0; i < 160; i++ {
		sc := randomScopes[rng.IntN(len(randomScopes))]
		if rng.IntN(4) == 0 && len(ids) > 0 {
			// A new version of a recorded artifact: another digest, one
			// more parent, often one of its own descendants (a cycle).
			a := m.arts[ids[rng.IntN(len(ids))]]
			a.Digest = fmt.Sprintf("d-%s-v%d", a.Key, i)
			a.Parents = []string{ids[len(ids)-1-rng.IntN(min(len(ids), 8))]}
			if desc := descendants(m, a.ID); len(desc) > 0 && rng.IntN(2) == 0 {
				a.Parents = []string{desc[rng.IntN(len(desc))]}
			}
			record(a)
			continue
		}
		store := stores[rng.IntN(len(stores))]
		skey := fmt.Sprintf("r-%d-%d", seed, i)
		a := lineage.Artifact{ID: lineage.ArtifactID(k, sc, store, skey), Scope: sc, Subject: subjects[sc][rng.IntN(len(subjects[sc]))],
			Kind: kinds[rng.IntN(len(kinds))], Store: store, Key: skey, Digest: "d-" + skey}
		// Zero to three parents, most of the same scope; a chunk shared
		// by several owners when the parents' owners differ.
		for n := rng.IntN(4); n > 0 && len(ids) > 0; n-- {
			p := ids[rng.IntN(len(ids))]
			if m.arts[p].Scope != sc && rng.IntN(4) != 0 {
				continue
			}
			if !slices.Contains(a.Parents, p) {
				a.Parents = append(a.Parents, p)
			}
		}
		record(a)
		ids = append(ids, a.ID)
		if rng.IntN(6) == 0 {
			mn := lineage.Mention{Artifact: a.ID, Subject: subjects[sc][rng.IntN(len(subjects[sc]))]}
			if rng.IntN(5) == 0 { // a person of another scope
				other := randomScopes[rng.IntN(len(randomScopes))]
				mn.Subject = subjects[other][rng.IntN(len(subjects[other]))]
			}
			ms = append(ms, mn)
		}
	}
	if batch {
		if err := l.(lineage.BatchRecorder).RecordBatch(ctx, arts, ms); err != nil {
			t.Fatal(err)
		}
	} else {
		for _, mn := range ms {
			if err := l.Mention(ctx, mn); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, mn := range ms {
		if !slices.Contains(m.mentions, mn) {
			m.mentions = append(m.mentions, mn)
		}
	}
	// Suppressions (a View does not show them) and erasure marks: each
	// call marks an artifact at most once, under an erasure id of its own,
	// so the latest mark is the model's last.
	outcomes := []string{"VERIFIED", "PARTIAL", "FAILED", "NEEDS_HUMAN"}
	for e := 0; e < 6; e++ {
		var marks []lineage.ErasureMark
		var sup []string
		for _, i := range rng.Perm(len(ids))[:len(ids)/5] {
			marks = append(marks, lineage.ErasureMark{Artifact: ids[i], Erasure: fmt.Sprintf("er-%d-%d", seed, e), Outcome: outcomes[rng.IntN(len(outcomes))]})
			sup = append(sup, ids[i])
		}
		if err := l.Suppress(ctx, fmt.Sprintf("er-%d-%d", seed, e), sup[:len(sup)/2]); err != nil {
			t.Fatal(err)
		}
		if err := l.MarkErased(ctx, marks); err != nil {
			t.Fatal(err)
		}
		m.marks = append(m.marks, marks...)
	}
	return m, subjects
}

// descendants returns the ids reachable from id through the model's edges.
func descendants(m *model, id string) []string {
	var out []string
	seen := map[string]bool{id: true}
	todo := []string{id}
	for len(todo) > 0 {
		p := todo[0]
		todo = todo[1:]
		for _, c := range m.order {
			if !seen[c] && slices.Contains(m.arts[c].Parents, p) {
				seen[c] = true
				out = append(out, c)
				todo = append(todo, c)
			}
		}
	}
	return out
}

// graphShape counts the model's edges that close a cycle and its artifacts
// whose parents have several owners.
func graphShape(m *model) (cycles, shared int) {
	for _, id := range m.order {
		a := m.arts[id]
		owners := map[subject.Key]bool{}
		for _, p := range a.Parents {
			owners[m.arts[p].Subject] = true
			if p == id || slices.Contains(descendants(m, id), p) {
				cycles++
			}
		}
		if len(owners) > 1 {
			shared++
		}
	}
	return cycles, shared
}

// compareView checks l's View of s in scope, and the trace built from it,
// against the model's.
func compareView(t *testing.T, l lineage.Ledger, m *model, scope string, s subject.Key) {
	t.Helper()
	got, err := l.View(context.Background(), scope, s)
	if err != nil {
		t.Fatal(err)
	}
	want := m.view(scope, s)
	viewHead(t, l, got)
	normalise(got)
	normalise(want)
	if !reflect.DeepEqual(got, want) {
		for id, a := range want.Artifacts {
			if g := got.Artifacts[id]; g == nil || !reflect.DeepEqual(*g, *a) {
				t.Errorf("%s %s: artifact %s: got %+v, want %+v", scope, s.Ref(), id, g, a)
			}
		}
		t.Fatalf("%s %s: view differs from the naive reference: %d artifacts, want %d; children %v / %v; erased %v / %v",
			scope, s.Ref(), len(got.Artifacts), len(want.Artifacts), got.Children, want.Children, got.Erased, want.Erased)
	}
	gt, gerr := lineage.BuildTrace(got)
	wt, werr := lineage.BuildTrace(want)
	if !errors.Is(gerr, werr) && !(gerr == nil && werr == nil) {
		t.Fatalf("%s %s: trace error %v, want %v", scope, s.Ref(), gerr, werr)
	}
	if gerr != nil {
		return
	}
	gb, _ := gt.Encode()
	wb, _ := wt.Encode()
	if !bytes.Equal(gb, wb) {
		t.Fatalf("%s %s: trace differs from the naive reference's:\n%s\nwant:\n%s", scope, s.Ref(), gb, wb)
	}
}
