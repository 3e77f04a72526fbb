package ledgertest

import (
	"context"
	"testing"

	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/subject"
)

// testErasedBy: ErasedBy lists exactly what one erasure marked, with each
// artifact's store and key (kept after erasure).
func testErasedBy(t *testing.T, l lineage.Ledger) {
	ctx := context.Background()
	er, ok := l.(lineage.ErasureReader)
	if !ok {
		t.Fatalf("%T is not an ErasureReader", l)
	}
	k, _ := subject.NewKeyer(make([]byte, subject.PepperSize))
	owner, _ := k.Key("default", "someone@example.org")
	other, _ := k.Key("default", "other@example.org")
	rec := func(s lineage.Kind, store, key string, owner subject.Key) string {
		id := lineage.ArtifactID(k, "default", store, key)
		if err := l.Record(ctx, lineage.Artifact{ID: id, Scope: "default", Subject: owner, Kind: s, Store: store, Key: key, Digest: "d"}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	a := rec(lineage.KindSource, "docs", "b-key", owner)
	b := rec(lineage.KindSource, "docs", "a-key", owner)
	c := rec(lineage.KindEmbedding, "vectors", "a-key", owner)
	d := rec(lineage.KindSource, "docs", "c-key", other)
	if err := l.MarkErased(ctx, []lineage.ErasureMark{{Artifact: a, Erasure: "er-1", Outcome: "VERIFIED"}, {Artifact: c, Erasure: "er-1", Outcome: "RESIDUAL"}, {Artifact: b, Erasure: "er-1", Outcome: "VERIFIED"}}); err != nil {
		t.Fatal(err)
	}
	if err := l.MarkErased(ctx, []lineage.ErasureMark{{Artifact: d, Erasure: "er-2", Outcome: "VERIFIED"}}); err != nil {
		t.Fatal(err)
	}
	got, err := er.ErasedBy(ctx, "er-1")
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ id, store, key, outcome string }{{b, "docs", "a-key", "VERIFIED"}, {a, "docs", "b-key", "VERIFIED"}, {c, "vectors", "a-key", "RESIDUAL"}}
	if len(got) != len(want) {
		t.Fatalf("ErasedBy(er-1) = %d artifacts, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.ID != w.id || g.Store != w.store || g.Key != w.key || g.Outcome != w.outcome || g.Scope != "default" || g.Subject != owner {
			t.Errorf("ErasedBy(er-1)[%d] = %s %s/%s %s, want %s %s/%s %s", i, g.ID, g.Store, g.Key, g.Outcome, w.id, w.store, w.key, w.outcome)
		}
	}
	if none, err := er.ErasedBy(ctx, "er-unknown"); err != nil || len(none) != 0 {
		t.Errorf("ErasedBy(unknown) = %d, %v", len(none), err)
	}
}
