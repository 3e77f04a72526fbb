package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every peer figure parses from its quoted line, and the README table shows
// a peer only for the same store and baseline, with the ratio.
func TestPeerFigures(t *testing.T) {
	for _, f := range PeerFigures {
		r, err := f.Parse()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(r.Baseline, "B") || r.Store == "" {
			t.Errorf("%q: store %q baseline %q", f.Line, r.Store, r.Baseline)
		}
	}
	p, ok := BestPeer("pgvector", "B4")
	if !ok || p.WallMs != 10810 || p.WallText != "10.81s" || p.PhysicalResidue != 0 || p.Fig.Source.Peer != "Tombstone" {
		t.Fatalf("BestPeer(pgvector, B4) = %+v, %v; want Tombstone's 10.81s", p, ok)
	}
	if _, ok := BestPeer("sqlite-doc", "B4"); ok {
		t.Errorf("a peer figure for sqlite-doc, which no peer published")
	}
	r := &Results{Residue: []*StoreResult{
		{Kind: "residue", Store: "pgvector", Cells: []Cell{{Baseline: "B0"}, {Baseline: "B4", WallMedianMs: 5405}}},
		{Kind: "residue", Store: "sqlite-doc", Cells: []Cell{{Baseline: "B0"}, {Baseline: "B4", WallMedianMs: 100}}},
	}}
	lines := strings.Split(r.Headline(), "\n")
	var pg, sq string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "| pgvector |"):
			pg = l
		case strings.HasPrefix(l, "| sqlite-doc |"):
			sq = l
		}
	}
	if !strings.Contains(pg, "Tombstone: 10.81s") || !strings.Contains(pg, "| 0.5 |") || !strings.Contains(pg, "measured by them") {
		t.Errorf("pgvector row lacks the peer figure, its source or the ratio 5405/10810 = 0.5: %s", pg)
	}
	if !strings.Contains(sq, "no published figure") || strings.Contains(sq, "Tombstone") {
		t.Errorf("sqlite-doc row should say no published figure: %s", sq)
	}
	if md := r.Markdown(); !strings.Contains(md, "`pgvector ⇥ B4 Tombstone full ⇥ 100.0% ⇥ 0.0% ⇥ 88.5% → 99.0% ⇥ 10.81s`") {
		t.Errorf("RESULTS.md does not quote the peer's line")
	}
}

// With AMNESIA_BENCH_PEER_SOURCES naming the directory of the peers'
// README copies (tombstone.txt …), every quoted line and header is found
// there verbatim.
func TestPeerQuotesVerbatim(t *testing.T) {
	dir := os.Getenv("AMNESIA_BENCH_PEER_SOURCES")
	if dir == "" {
		t.Skip("AMNESIA_BENCH_PEER_SOURCES not set")
	}
	for _, f := range PeerFigures {
		name, _, _ := strings.Cut(f.Source.File, " ")
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range []string{f.Line, f.Source.Header, f.Source.Repo} {
			if !strings.Contains(string(b), l) {
				t.Errorf("%s does not contain %q", name, l)
			}
		}
	}
}
