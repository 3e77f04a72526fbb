// Package ledgertest is the conformance suite of lineage.Ledger: every
// implementation runs it against its real backend, so that they all keep the
// same semantics and compute the same hash chain.
package ledgertest

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/subject"
)

// Opener opens a new, empty ledger for one test. Closing is the opener's
// business (t.Cleanup).
type Opener func(t *testing.T) lineage.Ledger

// Golden values of the fixed operation sequence of the "Chain" test (taken
// from the SQLite ledger as it was before PostgreSQL existed): any
// implementation MUST reach exactly this head and trace.
const (
	GoldenHeadSeq = 7
	GoldenHead    = "255a78dd8d765b2134967d5f5e288ff573865fe4cbd2099b70dd2d84b90b93d5"
	GoldenTraceID = "55b0b13c50a6274296a1fc9dc8b5615c67fb3f120a70a0a7f33436e69f091089"
)

// Run runs every check of the Ledger contract on ledgers from open.
func Run(t *testing.T, open Opener) {
	t.Run("Trace", func(t *testing.T) { testTrace(t, open(t)) })
	t.Run("TraceErrors", func(t *testing.T) { testTraceErrors(t, open(t)) })
	t.Run("LookupAndVersions", func(t *testing.T) { testVersions(t, open(t)) })
	t.Run("SuppressAndMarkIdempotent", func(t *testing.T) { testIdempotent(t, open(t)) })
	t.Run("FailedWriteAppendsNothing", func(t *testing.T) { testAtomic(t, open(t)) })
	t.Run("SuppressLogged", func(t *testing.T) { testSuppressLogged(t, open(t)) })
	t.Run("Chain", func(t *testing.T) { testChain(t, open(t)) })
	t.Run("ConcurrentWriters", func(t *testing.T) { testConcurrent(t, open(t)) })
	t.Run("ViewIsOneSnapshot", func(t *testing.T) { testSnapshot(t, open(t), nil) })
	t.Run("ErasedBy", func(t *testing.T) { testErasedBy(t, open(t)) })
	t.Run("SubjectGuard", func(t *testing.T) { testSubjectGuard(t, open(t)) })
	t.Run("ViewMatchesNaiveReference", func(t *testing.T) { testViewNaive(t, open(t)) })
	t.Run("ViewMatchesNaiveReferenceRandom", func(t *testing.T) { testViewRandom(t, open) })
	t.Run("RecordBatch", func(t *testing.T) { testBatch(t, open) })
	t.Run("Adopt", func(t *testing.T) { testAdopt(t, open(t)) })
	t.Run("DataKeys", func(t *testing.T) { testKeys(t, open(t)) })
	t.Run("DataKeysAfterConsent", func(t *testing.T) { testKeysAfterConsent(t, open(t)) })
}

// Keyer returns the suite's keyer (a fixed pepper: golden values depend on it).
func Keyer(t testing.TB) *subject.Keyer {
	k, err := subject.NewKeyer(bytes.Repeat([]byte{7}, subject.PepperSize))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func key(t testing.TB, k *subject.Keyer, scope, raw string) subject.Key {
	s, err := k.Key(scope, raw)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Art returns an artifact in scope "default" with digest "d-"+key.
func Art(k *subject.Keyer, owner subject.Key, kind lineage.Kind, store, key string, parents ...string) lineage.Artifact {
	return lineage.Artifact{ID: lineage.ArtifactID(k, "default", store, key), Scope: "default", Subject: owner, Kind: kind, Store: store, Key: key, Digest: "d-" + key, Parents: parents}
}

func head(t *testing.T, l lineage.Ledger) (int64, string) {
	t.Helper()
	seq, h, err := l.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return seq, h
}

func encodedTrace(t *testing.T, l lineage.Ledger, s subject.Key) ([]byte, *lineage.Trace) {
	t.Helper()
	v, err := l.View(context.Background(), "default", s)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := lineage.BuildTrace(v)
	if err != nil {
		t.Fatal(err)
	}
	b, err := tr.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b, tr
}

func testTrace(t *testing.T, l lineage.Ledger) {
	ctx := context.Background()
	k := Keyer(t)
	alice, bob := key(t, k, "default", "alice@example.org"), key(t, k, "default", "bob@example.org")
	doc := Art(k, alice, lineage.KindSource, "docs", "d1")
	chunk := Art(k, alice, lineage.KindChunk, "docs", "d1#0", doc.ID)
	emb := Art(k, alice, lineage.KindEmbedding, "vectors", "d1#0", chunk.ID)
	other := Art(k, bob, lineage.KindSource, "docs", "d2")
	for _, a := range []lineage.Artifact{doc, chunk, emb, other} {
		if err := l.Record(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	seq0, _ := head(t, l)
	if err := l.Record(ctx, chunk); err != nil {
		t.Fatal(err)
	}
	if seq, _ := head(t, l); seq != seq0 {
		t.Errorf("identical re-record appended an event: %d -> %d", seq0, seq)
	}
	if err := l.Mention(ctx, lineage.Mention{Artifact: other.ID, Subject: alice}); err != nil {
		t.Fatal(err)
	}
	first, _ := encodedTrace(t, l, alice)
	if second, _ := encodedTrace(t, l, alice); !bytes.Equal(first, second) {
		t.Fatalf("trace is not byte-identical on the same ledger state")
	}
	tr, err := lineage.DecodeTrace(first)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Artifacts) != 3 {
		t.Errorf("trace has %d artifacts, want 3 (document, chunk, embedding)", len(tr.Artifacts))
	}
	if len(tr.Mentions) != 1 || tr.Mentions[0].ID != other.ID || tr.Mentions[0].Owner != bob.Ref() {
		t.Errorf("mentions = %+v, want bob's document owned by %s", tr.Mentions, bob.Ref())
	}
	if len(tr.Plan) != 2 || tr.Plan[0].Store != "docs" || len(tr.Plan[0].Delete) != 2 || tr.Plan[1].Store != "vectors" {
		t.Errorf("plan = %+v", tr.Plan)
	}
	if bytes.Contains(first, []byte("alice@example.org")) {
		t.Errorf("trace contains the raw subject id")
	}
	bad := bytes.Replace(first, []byte(`"d1#0"`), []byte(`"d9#0"`), 1)
	if _, err := lineage.DecodeTrace(bad); err == nil {
		t.Errorf("DecodeTrace accepted a trace whose content no longer matches its id")
	}
	// Erased artifacts leave the trace; once all are erased the trace says so.
	var marks []lineage.ErasureMark
	for _, a := range tr.Artifacts {
		marks = append(marks, lineage.ErasureMark{Artifact: a.ID, Erasure: "er-1", Outcome: "VERIFIED"})
	}
	if err := l.MarkErased(ctx, marks); err != nil {
		t.Fatal(err)
	}
	v, err := l.View(ctx, "default", alice)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lineage.BuildTrace(v); !errors.Is(err, lineage.ErrAlreadyErased) {
		t.Errorf("trace after erasure = %v, want ErrAlreadyErased", err)
	}
	if err := l.Record(ctx, doc); !errors.Is(err, lineage.ErrErased) {
		t.Errorf("re-ingest of an erased artifact = %v, want ErrErased", err)
	}
	if sup, err := l.Suppressed(ctx, doc.ID); err != nil || !sup {
		t.Errorf("Suppressed(erased artifact) = %v, %v; want true", sup, err)
	}
}

func testTraceErrors(t *testing.T, l lineage.Ledger) {
	ctx := context.Background()
	k := Keyer(t)
	v, err := l.View(ctx, "default", key(t, k, "default", "nobody@example.org"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lineage.BuildTrace(v); !errors.Is(err, lineage.ErrNoLineage) {
		t.Errorf("trace of an unknown subject = %v, want ErrNoLineage", err)
	}
	alice, bob := key(t, k, "default", "alice@example.org"), key(t, k, "default", "bob@example.org")
	a := Art(k, alice, lineage.KindSource, "docs", "d1")
	if err := l.Record(ctx, a); err != nil {
		t.Fatal(err)
	}
	a.Subject = bob
	if err := l.Record(ctx, a); !errors.Is(err, lineage.ErrOwnerConflict) {
		t.Errorf("re-record under another owner = %v, want ErrOwnerConflict", err)
	}
	v, _ = l.View(ctx, "tenant-b", key(t, k, "tenant-b", "alice@example.org"))
	if _, err := lineage.BuildTrace(v); !errors.Is(err, lineage.ErrNoLineage) {
		t.Errorf("trace in another scope = %v, want ErrNoLineage", err)
	}
	if err := l.Record(ctx, Art(k, alice, lineage.KindChunk, "docs", "c1", "art:missing")); !errors.Is(err, lineage.ErrNotFound) {
		t.Errorf("edge to a missing parent = %v, want ErrNotFound", err)
	}
	if err := l.Record(ctx, lineage.Artifact{ID: "art:x", Store: "docs", Key: "x", Kind: "nonsense", Subject: alice}); err == nil {
		t.Errorf("an artifact of an unknown kind was recorded")
	}
}

func testVersions(t *testing.T, l lineage.Ledger) {
	ctx := context.Background()
	k := Keyer(t)
	alice := key(t, k, "default", "alice@example.org")
	if _, err := l.Lookup(ctx, "default", "docs", "d1"); !errors.Is(err, lineage.ErrNotFound) {
		t.Errorf("Lookup of nothing = %v, want ErrNotFound", err)
	}
	doc := Art(k, alice, lineage.KindSource, "docs", "d1")
	other := Art(k, alice, lineage.KindSource, "docs", "d2")
	for _, a := range []lineage.Artifact{doc, other} {
		if err := l.Record(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	got, err := l.Lookup(ctx, "default", "docs", "d1")
	if err != nil || got.ID != doc.ID || got.Subject != alice || got.Kind != lineage.KindSource || got.Digest != doc.Digest {
		t.Fatalf("Lookup = %+v, %v; want %+v", got, err, doc)
	}
	seq0, _ := head(t, l)
	doc.Digest = "d-changed"
	if err := l.Record(ctx, doc); err != nil {
		t.Fatal(err)
	}
	if seq, _ := head(t, l); seq != seq0+1 {
		t.Errorf("a changed digest appended %d events, want 1", seq-seq0)
	}
	if got, _ := l.Lookup(ctx, "default", "docs", "d1"); got == nil || got.Digest != "d-changed" {
		t.Errorf("Lookup after a new version = %+v, want digest d-changed", got)
	}
	chunk := Art(k, alice, lineage.KindChunk, "docs", "c1", doc.ID)
	if err := l.Record(ctx, chunk); err != nil {
		t.Fatal(err)
	}
	chunk.Parents = []string{other.ID, doc.ID} // a new parent, same digest
	if err := l.Record(ctx, chunk); err != nil {
		t.Fatal(err)
	}
	v, err := l.View(ctx, "default", alice)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{doc.ID, other.ID}
	if doc.ID > other.ID {
		want = []string{other.ID, doc.ID}
	}
	if p := v.Artifacts[chunk.ID].Parents; len(p) != 2 || p[0] != want[0] || p[1] != want[1] {
		t.Errorf("parents after a new edge = %v, want %v (sorted)", p, want)
	}
	if c := v.Children[other.ID]; len(c) != 1 || c[0] != chunk.ID {
		t.Errorf("children of the new parent = %v, want [%s]", c, chunk.ID)
	}
}

func testIdempotent(t *testing.T, l lineage.Ledger) {
	ctx := context.Background()
	k := Keyer(t)
	alice := key(t, k, "default", "alice@example.org")
	a, b := Art(k, alice, lineage.KindSource, "docs", "d1"), Art(k, alice, lineage.KindSource, "docs", "d2")
	for _, x := range []lineage.Artifact{a, b} {
		if err := l.Record(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	if sup, err := l.Suppressed(ctx, a.ID); err != nil || sup {
		t.Fatalf("Suppressed before Suppress = %v, %v", sup, err)
	}
	if err := l.Suppress(ctx, "er-1", []string{a.ID, a.ID}); err != nil {
		t.Fatalf("Suppress with a repeated id: %v", err)
	}
	seq0, _ := head(t, l)
	if err := l.Suppress(ctx, "er-1", []string{a.ID}); err != nil {
		t.Fatal(err)
	}
	if seq, _ := head(t, l); seq != seq0 {
		t.Errorf("a repeated Suppress appended %d events", seq-seq0)
	}
	if sup, _ := l.Suppressed(ctx, a.ID); !sup {
		t.Errorf("Suppressed after Suppress = false")
	}
	if sup, _ := l.Suppressed(ctx, b.ID); sup {
		t.Errorf("an artifact that was not suppressed reads as suppressed")
	}
	m := lineage.ErasureMark{Artifact: a.ID, Erasure: "er-1", Outcome: "UNVERIFIED"}
	if err := l.MarkErased(ctx, []lineage.ErasureMark{m, m}); err != nil {
		t.Fatalf("MarkErased with a repeated mark: %v", err)
	}
	seq0, _ = head(t, l)
	if err := l.MarkErased(ctx, []lineage.ErasureMark{m}); err != nil {
		t.Fatal(err)
	}
	if seq, _ := head(t, l); seq != seq0 {
		t.Errorf("a repeated MarkErased appended %d events", seq-seq0)
	}
	// A later erasure's outcome is the one a view reports.
	if err := l.MarkErased(ctx, []lineage.ErasureMark{{Artifact: a.ID, Erasure: "er-2", Outcome: "VERIFIED"}}); err != nil {
		t.Fatal(err)
	}
	v, err := l.View(ctx, "default", alice)
	if err != nil {
		t.Fatal(err)
	}
	if v.Erased[a.ID] != "VERIFIED" || v.Erased[b.ID] != "" {
		t.Errorf("view erased = %v, want %s VERIFIED only", v.Erased, a.ID)
	}
	if v.ErasedBy[a.ID] != "er-2" || v.ErasedBy[b.ID] != "" {
		t.Errorf("view erased by = %v, want %s by er-2 only (the latest erasure)", v.ErasedBy, a.ID)
	}
}

func testAtomic(t *testing.T, l lineage.Ledger) {
	ctx := context.Background()
	k := Keyer(t)
	alice, bob := key(t, k, "default", "alice@example.org"), key(t, k, "default", "bob@example.org")
	doc := Art(k, alice, lineage.KindSource, "docs", "d1")
	if err := l.Record(ctx, doc); err != nil {
		t.Fatal(err)
	}
	seq0, h0 := head(t, l)
	bad := Art(k, alice, lineage.KindChunk, "docs", "c1", doc.ID, "art:missing")
	if err := l.Record(ctx, bad); !errors.Is(err, lineage.ErrNotFound) {
		t.Fatalf("record with one missing parent = %v, want ErrNotFound", err)
	}
	stolen := doc
	stolen.Subject, stolen.Digest = bob, "d-other"
	if err := l.Record(ctx, stolen); !errors.Is(err, lineage.ErrOwnerConflict) {
		t.Fatalf("record under another owner = %v, want ErrOwnerConflict", err)
	}
	if seq, h := head(t, l); seq != seq0 || h != h0 {
		t.Errorf("failed writes moved the head from %d to %d", seq0, seq)
	}
	if _, err := l.Lookup(ctx, "default", "docs", "c1"); !errors.Is(err, lineage.ErrNotFound) {
		t.Errorf("a failed record left its artifact behind: %v", err)
	}
	v, _ := l.View(ctx, "default", alice)
	if len(v.Children[doc.ID]) != 0 {
		t.Errorf("a failed record left an edge behind: %v", v.Children[doc.ID])
	}
}

// logSizer is the part of transparency.Store the test reads (the ledger
// keeps the log).
type logSizer interface {
	LogSize(ctx context.Context) (int64, error)
	LogLeaves(ctx context.Context, from, to int64) ([][]byte, error)
}

// testSuppressLogged: SuppressLogged suppresses as Suppress does and
// appends the leaf to the ledger's transparency log, both idempotently.
func testSuppressLogged(t *testing.T, l lineage.Ledger) {
	ls, ok := l.(lineage.LoggedSuppressor)
	lg, ok2 := l.(logSizer)
	if !ok || !ok2 {
		t.Skipf("%T keeps no transparency log", l)
	}
	ctx := context.Background()
	k := Keyer(t)
	alice := key(t, k, "default", "alice@example.org")
	a, b := Art(k, alice, lineage.KindSource, "docs", "d1"), Art(k, alice, lineage.KindSource, "docs", "d2")
	for _, x := range []lineage.Artifact{a, b} {
		if err := l.Record(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	leaf := []byte("amnesia/event/v1\nerasure-started\ner-1\nx\n")
	seq0, _ := head(t, l)
	idx, err := ls.SuppressLogged(ctx, "er-1", []string{a.ID, a.ID}, leaf)
	if err != nil || idx != 0 {
		t.Fatalf("SuppressLogged = %d, %v; want index 0", idx, err)
	}
	if seq, _ := head(t, l); seq != seq0+1 {
		t.Errorf("SuppressLogged appended %d events, want 1 (the suppression)", seq-seq0)
	}
	if sup, _ := l.Suppressed(ctx, a.ID); !sup {
		t.Error("Suppressed after SuppressLogged = false")
	}
	if sup, _ := l.Suppressed(ctx, b.ID); sup {
		t.Error("an artifact that was not suppressed reads as suppressed")
	}
	if n, err := lg.LogSize(ctx); err != nil || n != 1 {
		t.Fatalf("log size = %d, %v; want 1", n, err)
	}
	if got, err := lg.LogLeaves(ctx, 0, 1); err != nil || !bytes.Equal(got[0], leaf) {
		t.Errorf("leaf 0 = %q, %v", got, err)
	}
	// Again (a resumed suppress step): nothing more in the chain or the log.
	seq0, _ = head(t, l)
	if idx, err := ls.SuppressLogged(ctx, "er-1", []string{a.ID}, leaf); err != nil || idx != 0 {
		t.Fatalf("SuppressLogged again = %d, %v; want index 0", idx, err)
	}
	if seq, _ := head(t, l); seq != seq0 {
		t.Errorf("a repeated SuppressLogged appended %d events", seq-seq0)
	}
	if n, _ := lg.LogSize(ctx); n != 1 {
		t.Errorf("a repeated SuppressLogged grew the log to %d leaves", n)
	}
}
