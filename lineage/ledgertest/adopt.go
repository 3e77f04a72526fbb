package ledgertest

import (
	"context"
	"errors"
	"testing"

	"github.com/amnesia-dev/amnesia/lineage"
)

// testAdopt: adopted artifacts are recorded, traced like captured ones and
// marked with how they were adopted, in one event; adopting what the ledger
// already holds is refused and appends nothing.
func testAdopt(t *testing.T, l lineage.Ledger) {
	ad, ok := l.(lineage.Adopter)
	if !ok {
		t.Skip("the ledger does not adopt")
	}
	ctx := context.Background()
	k := Keyer(t)
	alice := key(t, k, "default", "alice@example.org")
	captured := Art(k, alice, lineage.KindSource, "docs", "d1")
	if err := l.Record(ctx, captured); err != nil {
		t.Fatal(err)
	}
	old1 := Art(k, alice, lineage.KindSource, "notes", "n1")
	old2 := Art(k, alice, lineage.KindEmbedding, "vectors", "n1")
	seq0, _ := head(t, l)
	if err := ad.Adopt(ctx, []lineage.Artifact{old1, old2}, lineage.ViaReconcile); err != nil {
		t.Fatal(err)
	}
	if seq, _ := head(t, l); seq != seq0+3 {
		t.Errorf("adopting two artifacts appended %d events, want 3 (two artifacts, one adopt)", seq-seq0)
	}
	_, tr := encodedTrace(t, l, alice)
	if len(tr.Artifacts) != 3 {
		t.Errorf("trace after adoption: %d artifacts, want 3", len(tr.Artifacts))
	}
	via, err := ad.AdoptedVia(ctx, []string{captured.ID, old1.ID, old2.ID, "art:none"})
	if err != nil {
		t.Fatal(err)
	}
	if len(via) != 2 || via[old1.ID] != lineage.ViaReconcile || via[old2.ID] != lineage.ViaReconcile {
		t.Errorf("adopted via %v, want the two adopted only", via)
	}
	seq1, h1 := head(t, l)
	for name, arts := range map[string][]lineage.Artifact{
		"already captured": {captured, Art(k, alice, lineage.KindSource, "notes", "n9")},
		"already adopted":  {old1},
	} {
		if err := ad.Adopt(ctx, arts, lineage.ViaReconcile); !errors.Is(err, lineage.ErrAdopted) {
			t.Errorf("%s: %v, want ErrAdopted", name, err)
		}
	}
	if err := ad.Adopt(ctx, []lineage.Artifact{Art(k, alice, lineage.KindSource, "notes", "n8")}, "guess"); err == nil {
		t.Error("an unknown method was accepted")
	}
	if seq, h := head(t, l); seq != seq1 || h != h1 {
		t.Errorf("refused adoptions changed the ledger: %d -> %d", seq1, seq)
	}
	if a, err := l.Lookup(ctx, "default", "notes", "n9"); err == nil || a != nil {
		t.Errorf("a refused adoption recorded n9: %+v, %v", a, err)
	}
}
