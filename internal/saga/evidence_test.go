package saga_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
)

// longText is seeded text of about n bytes in sentences of random words.
func longText(seed uint64, n int) string {
	rng := rand.New(rand.NewPCG(seed, 99))
	words := []string{"ledger", "harbour", "violet", "quarry", "anchor", "muslin", "pylon", "tundra", "saffron", "gravel", "lantern", "orbit", "thimble", "walnut", "zephyr", "cobalt"}
	var b strings.Builder
	for b.Len() < n {
		for i := 0; i < 6+rng.IntN(6); i++ {
			fmt.Fprintf(&b, "%s%d ", words[rng.IntN(len(words))], rng.IntN(1000))
		}
		b.WriteString("end. ")
	}
	return b.String()
}

func artifactOf(t *testing.T, f *fixture, p *certificate.Predicate, st, key string) certificate.Artifact {
	t.Helper()
	id := lineage.ArtifactID(f.dir.Keyer, f.dir.Config.Scope, st, key)
	for _, a := range p.Artifacts {
		if a.ID == id {
			return a
		}
	}
	t.Fatalf("no artifact for %s/%s in the certificate", st, key)
	return certificate.Artifact{}
}

// A 40-byte fragment from the middle of a record of several KB that
// survives in another table of the same database file is found: the
// windows tile every byte, so any fragment of store.FragmentBytes holds a
// whole one. (With 64 windows of 32 bytes sampled from the record, the
// fragment fell between them and the record passed as VERIFIED(physical).)
func TestLongRecordFragmentIsResidual(t *testing.T) {
	f := newFixture(t, 2, 1)
	text := longText(1, 6000)
	f.put(t, "long-1", f.corpus.People[0].ID, text, nil)
	frag := text[3013 : 3013+40]

	db, err := sql.Open("sqlite3", "file:"+f.dir.Config.Stores[0].Path+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE app_notes (id INTEGER PRIMARY KEY, body TEXT)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO app_notes (body) VALUES (?)`, "copied: "+frag+" :end"); err != nil {
		t.Fatal(err)
	}

	res, err := f.erase(t, f.trace(t, 0), map[string]store.Store{"docs": f.rawD, "vectors": f.rawV}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := res.Statement.Predicate
	a := artifactOf(t, f, &p, "docs", "long-1")
	if a.Outcome != certificate.Residual {
		t.Fatalf("long record with a surviving 40-byte fragment: %s %s (%s), want RESIDUAL", a.Outcome, a.Level, a.Reason)
	}
	ph := a.Measurement.Physical
	if ph.FoundAfter == 0 || ph.Coverage == nil || ph.Coverage.RecordBytes != int64(len(text)) || !ph.Coverage.Complete() || ph.Coverage.FragmentBytes > 40 {
		t.Errorf("measurement %+v coverage %+v", ph, ph.Coverage)
	}
	if p.Complete {
		t.Errorf("certificate complete with a residual artifact")
	}
	if strings.Contains(a.Reason, frag) {
		t.Errorf("reason holds record content")
	}
}

// A record whose text another record holds, outside the subject's lineage
// (not recorded in the ledger, or owned by someone else), is not passed:
// NEEDS_HUMAN, naming that record by keyed id, and the certificate is not
// complete. Records of the subject's own trace that share text (a document
// and its chunks) stay verified.
func TestCopyOutsideLineageNeedsHuman(t *testing.T) {
	t.Run("unrecorded", func(t *testing.T) { testCopyOutsideLineage(t, false) })
	t.Run("another subject's", func(t *testing.T) { testCopyOutsideLineage(t, true) })
}

func testCopyOutsideLineage(t *testing.T, owned bool) {
	ctx := context.Background()
	f := newFixture(t, 2, 1)
	text := longText(2, 900)
	f.put(t, "orig-1", f.corpus.People[0].ID, text, nil)
	if owned {
		// Another subject's record, recorded in the ledger, holds the text.
		if err := f.docs.Put(ctx, capture.Doc{ID: "copy-xyz", Kind: sqlitedoc.KindDocument, Subject: f.corpus.People[1].ID, Text: "Forwarded: " + text}); err != nil {
			t.Fatal(err)
		}
	} else if err := f.rawD.Put(ctx, sqlitedoc.Record{ID: "copy-xyz", Kind: sqlitedoc.KindDocument, Subject: "someone", Text: "Forwarded: " + text}); err != nil {
		// An application copied the text into a record amnesia was never told about.
		t.Fatal(err)
	}
	res, err := f.erase(t, f.trace(t, 0), map[string]store.Store{"docs": f.rawD, "vectors": f.rawV}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := res.Statement.Predicate
	a := artifactOf(t, f, &p, "docs", "orig-1")
	copyID := lineage.ArtifactID(f.dir.Keyer, f.dir.Config.Scope, "docs", "copy-xyz")
	if a.Outcome != certificate.NeedsHuman {
		t.Fatalf("copied record: %s %s (%s), want NEEDS_HUMAN", a.Outcome, a.Level, a.Reason)
	}
	m := a.Measurement
	if len(m.Copies) != 1 || m.Copies[0].Record != copyID || m.Copies[0].Store != "docs" || m.Copies[0].Windows != m.Physical.Shared || m.Physical.Needles != 0 {
		t.Errorf("copies %+v, physical %+v", m.Copies, m.Physical)
	}
	if !strings.Contains(a.Reason, "docs/"+copyID) || !strings.Contains(a.Reason, "outside this subject's lineage") || strings.Contains(a.Reason, "copy-xyz") {
		t.Errorf("reason %q", a.Reason)
	}
	if p.Complete {
		t.Errorf("certificate complete with a copy left to a person")
	}
	// Another subject's documents do not hold the subject's text, and its
	// own chunks are in its trace: its other artifacts are verified.
	other := artifactOf(t, f, &p, "docs", f.corpus.Docs[0].ID)
	if other.Outcome != certificate.Verified || other.Measurement.Copies != nil {
		t.Errorf("the subject's own record next to the copy: %s (%s) copies %v", other.Outcome, other.Reason, other.Measurement.Copies)
	}
	// The certificate verifies: NEEDS_HUMAN with copies is a valid outcome.
	if _, err := certificate.Encode(res.Statement); err != nil {
		t.Errorf("encode: %v", err)
	}
}

// A record too long to tile in full (more than store.MaxWindows windows)
// is searched in evenly spaced blocks; the certificate states the covered
// share and does not claim the physical level.
func TestPartialCoverageIsNotPhysical(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 2, 1)
	text := longText(3, store.MaxWindows*store.WindowStride*5/4)
	if err := f.docs.Put(ctx, capture.Doc{ID: "huge-1", Kind: sqlitedoc.KindDocument, Subject: f.corpus.People[0].ID, Text: text}); err != nil {
		t.Fatal(err)
	}
	res, err := f.erase(t, f.trace(t, 0), map[string]store.Store{"docs": f.rawD, "vectors": f.rawV}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := res.Statement.Predicate
	a := artifactOf(t, f, &p, "docs", "huge-1")
	cov := a.Measurement.Physical.Coverage
	if cov == nil || cov.RecordBytes != int64(len(text)) || cov.CoveredBytes >= cov.RecordBytes || cov.CoveredBytes < cov.RecordBytes/2 {
		t.Fatalf("coverage %+v of a %d-byte record", cov, len(text))
	}
	if a.Outcome != certificate.Verified || a.Level != certificate.LevelLogical || a.Measurement.Physical.FoundBefore == 0 {
		t.Errorf("partly covered record: %s %s, found before %d", a.Outcome, a.Level, a.Measurement.Physical.FoundBefore)
	}
	if want := fmt.Sprintf("covered %d of %d bytes", cov.CoveredBytes, cov.RecordBytes); !strings.Contains(a.Reason, want) {
		t.Errorf("reason %q does not say %q", a.Reason, want)
	}
	if small := artifactOf(t, f, &p, "docs", f.corpus.Docs[0].ID); small.Level != certificate.LevelPhysical {
		t.Errorf("a fully covered record next to it: %s %s (%s)", small.Outcome, small.Level, small.Reason)
	}
}

// Text that records of several owners hold whole (here: a record the
// ledger does not know and another subject's record) is taken for shared
// text, not a copy: counted in physical.shared, as before.
func TestTextHeldBySeveralOwnersIsShared(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 2, 1)
	text := longText(4, 900)
	f.put(t, "orig-2", f.corpus.People[0].ID, text, nil)
	if err := f.rawD.Put(ctx, sqlitedoc.Record{ID: "copy-a", Kind: sqlitedoc.KindDocument, Subject: "someone", Text: text}); err != nil {
		t.Fatal(err)
	}
	f.put(t, "copy-b", f.corpus.People[1].ID, "Fwd: "+text, nil)
	res, err := f.erase(t, f.trace(t, 0), map[string]store.Store{"docs": f.rawD, "vectors": f.rawV}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := res.Statement.Predicate
	a := artifactOf(t, f, &p, "docs", "orig-2")
	if a.Outcome != certificate.Verified || a.Level != certificate.LevelLogical || a.Measurement.Copies != nil || !strings.Contains(a.Reason, "also held by other live records") {
		t.Errorf("text held by two owners: %s %s (%s) copies %v", a.Outcome, a.Level, a.Reason, a.Measurement.Copies)
	}
}
