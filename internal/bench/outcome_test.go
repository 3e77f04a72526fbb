package bench

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/saga"
)

func result(complete bool, c certificate.Counts) *saga.Result {
	return &saga.Result{Statement: &certificate.Statement{Predicate: certificate.Predicate{Complete: complete, Counts: c}}}
}

// An erasure that pauses or ends RESIDUAL is counted in the cell, the
// cell goes on, and the report says so next to the row's numbers; a
// clean cell carries no mark; an error that is neither stops the cell.
func TestOutcomesRecordedAndRendered(t *testing.T) {
	o := &Outcomes{}
	steps := []struct {
		res *saga.Result
		err error
		n   int
	}{
		{result(true, certificate.Counts{Artifacts: 5, Verified: 5, VerifiedPhysical: 5}), nil, 5},
		{result(false, certificate.Counts{Artifacts: 5, Verified: 4, VerifiedPhysical: 4, Residual: 1}), nil, 5},
		{nil, &saga.PendingError{Store: "wv", Step: "reclaim", State: "PENDING-weaviate-compaction", Cause: "segment-1.l3.s0.db: 4 needles", Waited: 34 * time.Second}, 7},
	}
	for _, s := range steps {
		if err := o.add(s.res, s.err, s.n); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.add(nil, errors.New("store gone"), 3); err == nil || o.Erasures != 3 {
		t.Fatalf("a failure that is no pause: err %v, %d erasures counted; want the error and no count", err, o.Erasures)
	}
	want := Outcomes{Erasures: 3, Complete: 1, Incomplete: 1, Pending: 1, PendingStates: map[string]int{"PENDING-weaviate-compaction": 1}, PendingWaitS: 34, PendingCause: "segment-1.l3.s0.db: 4 needles",
		Artifacts: 17, VerifiedPhysical: 9, Residual: 1, PendingArtifacts: 7}
	if got, _ := json.Marshal(o); string(got) != string(must(json.Marshal(want))) {
		t.Fatalf("outcomes %s, want %s", got, must(json.Marshal(want)))
	}
	if o.Clean() {
		t.Fatal("a cell with a PENDING and a RESIDUAL erasure is clean")
	}

	clean := &Outcomes{Erasures: 2, Complete: 2, Artifacts: 10, VerifiedPhysical: 10}
	s := &StoreResult{Kind: "residue", Store: "weaviate", Seed: 1, Subjects: 4, Docs: 8, Records: 20, Sample: 2, Cells: []Cell{
		{Baseline: "B0", Subjects: 2, Records: 10, PhysicalResidue: 1, ProbePower: 1},
		{Baseline: "B4", Subjects: 2, Records: 10, LogicalExclusion: 1, PhysicalResidue: 0, ProbePower: 1, Outcomes: o},
		{Baseline: "B5", Subjects: 4, Records: 20, LogicalExclusion: 1, ProbePower: 1, Outcomes: clean},
	}}
	r := &Results{Residue: []*StoreResult{s}, Files: []*File{{Name: "residue-weaviate.json", Kind: "residue", Store: "weaviate"}}}
	md := r.Markdown()
	flag := "**not clean: 1 of 3 erasures PENDING-weaviate-compaction after 34 s, no certificate, 1 RESIDUAL**"
	for _, w := range []string{
		"| B4 | 2 | 10 | 100.0% | 0.0% (" + flag + ") |",
		"- B4: 3 erasures: 1 certificates complete, 1 incomplete, 1 PENDING (PENDING-weaviate-compaction; paused after waiting up to 34 s, no certificate); 17 artifacts: 9 VERIFIED(physical), 0 VERIFIED(logical), 0 UNVERIFIED, 1 RESIDUAL, 0 OUT_OF_SCOPE, 0 NEEDS_HUMAN, 7 in paused erasures (no outcome)",
		"| B5 | 4 | 20 | 100.0% | 0.0% | 100.0% |",
		"- B5: 2 erasures: 2 certificates complete, 0 incomplete, 0 PENDING; 10 artifacts: 10 VERIFIED(physical)",
	} {
		if !strings.Contains(md, w) {
			t.Errorf("RESULTS.md lacks %q:\n%s", w, md)
		}
	}
	if h := r.Headline(); !strings.Contains(h, "| 100.0% | 0.0% ("+flag+") | 100.0% |") {
		t.Errorf("the README row does not flag B4 next to its residue:\n%s", h)
	}
	// B5 not clean shows in the headline row too, named.
	s.Cells[1].Outcomes, s.Cells[2].Outcomes = clean, o
	if h := r.Headline(); !strings.Contains(h, "| 0.0% (B5: "+flag+") |") {
		t.Errorf("the README row does not flag B5:\n%s", h)
	}
	// A row whose erasures all ended clean carries no mark.
	s.Cells[2].Outcomes = clean
	if h := r.Headline(); strings.Contains(h, "not clean") {
		t.Errorf("a clean row is flagged:\n%s", h)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// Which way each SQLite store's reclaim went is counted from the method in
// the certificate, and said in the cell's summary; other stores' methods
// are not counted.
func TestOutcomesCountSQLiteReclaims(t *testing.T) {
	const head = "secure_delete=ON; wal_checkpoint(TRUNCATE); "
	withScope := func(methods ...string) *saga.Result {
		r := result(true, certificate.Counts{Artifacts: 1, Verified: 1, VerifiedPhysical: 1})
		for i, m := range methods {
			r.Statement.Predicate.DeclaredScope = append(r.Statement.Predicate.DeclaredScope, certificate.StoreState{Name: string(rune('a' + i)), Reclaim: m})
		}
		return r
	}
	o := &Outcomes{}
	for _, r := range []*saga.Result{
		withScope(head+"VACUUM skipped: free-space audit of 54 pages (3 on the freelist): every unused byte is zero; the WAL is empty", "VACUUM (ANALYZE) documents"),
		withScope(head + "free-space audit of 9 pages: 20 unused bytes on 1 pages are not zero (…); those bytes zeroed in place under SQLite's write lock (…); wal_checkpoint(TRUNCATE); VACUUM skipped: …"),
		withScope(head + "free-space audit of 9 pages: 20 unused bytes on 1 pages are not zero (…); not zeroed in place: another connection committed since the audit; REINDEX of 1 indexes (i), wal_checkpoint(TRUNCATE), then VACUUM skipped: …"),
		withScope(head + "VACUUM, because free-space audit undecided: auto_vacuum is on; wal_checkpoint(TRUNCATE)"),
		withScope(""),
	} {
		if err := o.add(r, nil, 1); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]int{"nothing to clean": 1, "zeroed in place": 1, "REINDEX": 1, "VACUUM": 1}
	if string(must(json.Marshal(o.Reclaims))) != string(must(json.Marshal(want))) {
		t.Errorf("reclaims %v, want %v", o.Reclaims, want)
	}
	if s := o.Summary(); !strings.HasSuffix(s, "; SQLite reclaims: 1 REINDEX, 1 VACUUM, 1 nothing to clean, 1 zeroed in place") {
		t.Errorf("summary %q", s)
	}
}
