package ledgertest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"testing"

	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/subject"
)

// model is a naive reference ledger in memory: what was recorded, in order.
type model struct {
	arts     map[string]lineage.Artifact // latest version, Parents = every edge
	order    []string
	mentions []lineage.Mention
	marks    []lineage.ErasureMark
}

func newModel() *model { return &model{arts: map[string]lineage.Artifact{}} }

func (m *model) record(a lineage.Artifact) {
	old, ok := m.arts[a.ID]
	if !ok {
		m.order = append(m.order, a.ID)
	}
	ps := slices.Clone(old.Parents)
	for _, p := range a.Parents {
		if !slices.Contains(ps, p) {
			ps = append(ps, p)
		}
	}
	a.Parents = ps
	m.arts[a.ID] = a
}

// view is the View of s in scope, computed the naive way: every
// artifact, edge and mark looked at one by one.
func (m *model) view(scope string, s subject.Key) *lineage.View {
	v := &lineage.View{Scope: scope, Subject: s, Artifacts: map[string]*lineage.Artifact{}, Children: map[string][]string{}, Erased: map[string]string{}, ErasedBy: map[string]string{}}
	for _, id := range m.order {
		if a := m.arts[id]; a.Scope == scope && a.Subject == s {
			v.Owned = append(v.Owned, id)
		}
	}
	for _, mn := range m.mentions {
		if mn.Subject == s && m.arts[mn.Artifact].Scope == scope && !slices.Contains(v.Mentions, mn.Artifact) {
			v.Mentions = append(v.Mentions, mn.Artifact)
		}
	}
	sort.Strings(v.Owned)
	sort.Strings(v.Mentions)
	todo := append(slices.Clone(v.Owned), v.Mentions...)
	for len(todo) > 0 {
		id := todo[0]
		todo = todo[1:]
		if _, ok := v.Artifacts[id]; ok {
			continue
		}
		a := m.arts[id]
		a.Parents = slices.Clone(a.Parents)
		sort.Strings(a.Parents)
		if len(a.Parents) == 0 {
			a.Parents = nil
		}
		v.Artifacts[id] = &a
		var ch []string
		for _, cid := range m.order {
			if slices.Contains(m.arts[cid].Parents, id) {
				ch = append(ch, cid)
			}
		}
		sort.Strings(ch)
		v.Children[id] = ch
		todo = append(todo, ch...)
		for _, mk := range m.marks { // the latest mark wins
			if mk.Artifact == id {
				v.Erased[id], v.ErasedBy[id] = mk.Outcome, mk.Erasure
			}
		}
	}
	return v
}

func normalise(v *lineage.View) {
	v.HeadSeq, v.HeadHash = 0, "" // the model keeps no chain (viewHead checks them)
	if len(v.Owned) == 0 {
		v.Owned = nil
	}
	if len(v.Mentions) == 0 {
		v.Mentions = nil
	}
}

// viewHead checks that a view carries the ledger's head: read in the
// view's snapshot, it is the head now, as nothing was written since.
func viewHead(t *testing.T, l lineage.Ledger, v *lineage.View) {
	t.Helper()
	seq, hash, err := l.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if v.HeadSeq != seq || v.HeadHash != hash {
		t.Errorf("view head %d %q, ledger head %d %q", v.HeadSeq, v.HeadHash, seq, hash)
	}
}

// wideDeepGraph records, through l, a graph around alice that is wide (a
// document of 40 chunks), deep (a derivation chain of 12 levels),
// diamond-shaped (artifacts with two and three parents, reached twice),
// crosses owners (bob's artifacts derived from alice's, and mentioning
// her), spans two scopes, has new versions adding parents, and has
// artifacts erased twice; it returns the reference model.
func wideDeepGraph(t *testing.T, l lineage.Ledger, batch bool) (*model, subject.Key, subject.Key) {
	t.Helper()
	ctx := context.Background()
	k := Keyer(t)
	alice, bob := key(t, k, "default", "alice@example.org"), key(t, k, "default", "bob@example.org")
	m := newModel()
	var arts []lineage.Artifact
	rec := func(a lineage.Artifact) lineage.Artifact {
		arts = append(arts, a)
		m.record(a)
		return a
	}
	var ms []lineage.Mention
	for d := 0; d < 3; d++ {
		doc := rec(Art(k, alice, lineage.KindSource, "docs", fmt.Sprintf("doc-%d", d)))
		var chunks []lineage.Artifact
		for c := 0; c < 40; c++ {
			ch := rec(Art(k, alice, lineage.KindChunk, "docs", fmt.Sprintf("doc-%d#%d", d, c), doc.ID))
			chunks = append(chunks, ch)
			rec(Art(k, alice, lineage.KindEmbedding, "vectors", fmt.Sprintf("doc-%d#%d", d, c), ch.ID))
		}
		// A diamond: one cache entry from three chunks.
		rec(Art(k, alice, lineage.KindCache, "cache", fmt.Sprintf("c-%d", d), chunks[0].ID, chunks[7].ID, chunks[39].ID))
		// A deep chain.
		prev := chunks[3]
		for depth := 0; depth < 12; depth++ {
			prev = rec(Art(k, alice, lineage.KindTrain, "train", fmt.Sprintf("t-%d-%d", d, depth), prev.ID))
		}
		// Bob's summary derived from alice's chunk, and a child of it.
		sum := rec(Art(k, bob, lineage.KindLog, "logs", fmt.Sprintf("bob-sum-%d", d), chunks[5].ID))
		rec(Art(k, bob, lineage.KindEmbedding, "vectors", fmt.Sprintf("bob-sum-%d", d), sum.ID))
	}
	// Bob's own document mentions alice; its chunk is derived from it and
	// from alice's first document.
	bdoc := rec(Art(k, bob, lineage.KindSource, "docs", "bob-doc"))
	bch := rec(Art(k, bob, lineage.KindChunk, "docs", "bob-doc#0", bdoc.ID, lineage.ArtifactID(k, "default", "docs", "doc-0")))
	ms = append(ms, lineage.Mention{Artifact: bdoc.ID, Subject: alice}, lineage.Mention{Artifact: bch.ID, Subject: alice}, lineage.Mention{Artifact: bdoc.ID, Subject: alice})
	// A new version that adds a parent; an identical re-record.
	v2 := Art(k, alice, lineage.KindCache, "cache", "c-1", lineage.ArtifactID(k, "default", "docs", "doc-1#1"))
	v2.Digest = "d-c-1-v2"
	rec(v2)
	rec(Art(k, alice, lineage.KindChunk, "docs", "doc-2#2", lineage.ArtifactID(k, "default", "docs", "doc-2")))
	// Alice in another scope: not in the view.
	other := Art(k, key(t, k, "other", "alice@example.org"), lineage.KindSource, "docs", "doc-0")
	other.Scope, other.ID = "other", lineage.ArtifactID(k, "other", "docs", "doc-0")
	rec(other)
	other2 := other
	other2.Subject = alice // same subject key in another scope
	other2.Key, other2.ID = "doc-x", lineage.ArtifactID(k, "other", "docs", "doc-x")
	rec(other2)
	if batch {
		if err := l.(lineage.BatchRecorder).RecordBatch(ctx, arts, ms); err != nil {
			t.Fatal(err)
		}
	} else {
		if err := lineage.RecordAll(ctx, noBatch{l}, arts, ms); err != nil {
			t.Fatal(err)
		}
	}
	for _, mn := range ms {
		if !slices.Contains(m.mentions, mn) {
			m.mentions = append(m.mentions, mn)
		}
	}
	marks := [][]lineage.ErasureMark{
		{{Artifact: lineage.ArtifactID(k, "default", "train", "t-0-5"), Erasure: "er-1", Outcome: "PARTIAL"}, {Artifact: lineage.ArtifactID(k, "default", "vectors", "doc-1#9"), Erasure: "er-1", Outcome: "VERIFIED"}},
		{{Artifact: lineage.ArtifactID(k, "default", "train", "t-0-5"), Erasure: "er-2", Outcome: "VERIFIED"}},
	}
	for _, mk := range marks {
		if err := l.MarkErased(ctx, mk); err != nil {
			t.Fatal(err)
		}
		m.marks = append(m.marks, mk...)
	}
	return m, alice, bob
}

// noBatch hides RecordBatch: RecordAll then records one write at a time.
type noBatch struct{ lineage.Ledger }

func testViewNaive(t *testing.T, l lineage.Ledger) {
	m, alice, bob := wideDeepGraph(t, l, false)
	for _, s := range []subject.Key{alice, bob} {
		got, err := l.View(context.Background(), "default", s)
		if err != nil {
			t.Fatal(err)
		}
		want := m.view("default", s)
		viewHead(t, l, got)
		normalise(got)
		normalise(want)
		if s == alice && len(want.Artifacts) < 100 {
			t.Fatalf("reference view holds only %d artifacts", len(want.Artifacts))
		}
		if !reflect.DeepEqual(got, want) {
			for id, a := range want.Artifacts {
				if g := got.Artifacts[id]; g == nil || !reflect.DeepEqual(*g, *a) {
					t.Errorf("artifact %s: got %+v, want %+v", id, g, a)
				}
			}
			t.Fatalf("view differs from the naive reference: %d artifacts, want %d; owned %d/%d; mentions %v/%v; erased %v/%v",
				len(got.Artifacts), len(want.Artifacts), len(got.Owned), len(want.Owned), got.Mentions, want.Mentions, got.Erased, want.Erased)
		}
	}
}

func testBatch(t *testing.T, open Opener) {
	one, batched := open(t), open(t)
	if _, ok := batched.(lineage.BatchRecorder); !ok {
		t.Skip("this ledger has no RecordBatch")
	}
	ctx := context.Background()
	m, alice, _ := wideDeepGraph(t, one, false)
	wideDeepGraph(t, batched, true)
	s1, h1 := head(t, one)
	s2, h2 := head(t, batched)
	if s1 != s2 || h1 != h2 {
		t.Fatalf("chain head after RecordBatch = %d %s, one by one = %d %s", s2, h2, s1, h1)
	}
	if !reflect.DeepEqual(events(t, one), events(t, batched)) {
		t.Fatal("events of RecordBatch differ from those of one write at a time")
	}
	got, err := batched.View(ctx, "default", alice)
	if err != nil {
		t.Fatal(err)
	}
	want := m.view("default", alice)
	viewHead(t, batched, got)
	normalise(got)
	normalise(want)
	if !reflect.DeepEqual(got, want) {
		t.Fatal("view after RecordBatch differs from the naive reference")
	}

	// Refusals refuse the whole batch: nothing is appended, nothing recorded.
	k := Keyer(t)
	b := batched.(lineage.BatchRecorder)
	fresh := Art(k, alice, lineage.KindSource, "docs", "fresh")
	freshChunk := Art(k, alice, lineage.KindChunk, "docs", "fresh#0", fresh.ID)
	erased := Art(k, alice, lineage.KindTrain, "train", "t-0-5", lineage.ArtifactID(k, "default", "train", "t-0-4"))
	stolen := Art(k, key(t, k, "default", "carol@example.org"), lineage.KindSource, "docs", "doc-0")
	for _, c := range []struct {
		name string
		arts []lineage.Artifact
		want error
	}{
		{"erased", []lineage.Artifact{fresh, freshChunk, erased}, lineage.ErrErased},
		{"owner conflict", []lineage.Artifact{fresh, stolen, freshChunk}, lineage.ErrOwnerConflict},
		{"missing parent", []lineage.Artifact{freshChunk, fresh}, lineage.ErrNotFound},
	} {
		err := b.RecordBatch(ctx, c.arts, []lineage.Mention{{Artifact: fresh.ID, Subject: key(t, k, "default", "dave@example.org")}})
		if !errors.Is(err, c.want) {
			t.Errorf("%s: RecordBatch = %v, want %v", c.name, err, c.want)
		}
		if s, h := head(t, batched); s != s2 || h != h2 {
			t.Errorf("%s: a refused batch appended events (%d -> %d)", c.name, s2, s)
		}
		if _, err := batched.Lookup(ctx, "default", "docs", "fresh"); !errors.Is(err, lineage.ErrNotFound) {
			t.Errorf("%s: a refused batch recorded its first artifact: %v", c.name, err)
		}
	}
	if err := b.RecordBatch(ctx, []lineage.Artifact{fresh, {ID: "x"}}, nil); err == nil {
		t.Error("RecordBatch accepted an artifact without store, key, kind or subject")
	}
}
