package capture_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
	"github.com/amnesia-dev/amnesia/store/sqlitevec"
	"github.com/amnesia-dev/amnesia/subject"
)

func TestCaptureRecordsLineage(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l, err := sqliteledger.Open(ctx, filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	k, _ := subject.NewKeyer(bytes.Repeat([]byte{9}, subject.PepperSize))
	ds, err := sqlitedoc.Open(ctx, "docs", filepath.Join(dir, "docs.db"), true)
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	vs, err := sqlitevec.Open(ctx, "vectors", filepath.Join(dir, "vec.db"), 4, true)
	if err != nil {
		t.Fatal(err)
	}
	defer vs.Close()
	rec := capture.New(l, k, "")
	docs, vecs := rec.Docs(ds), rec.Vectors(vs)

	const alice = "alice@example.org"
	if err := docs.Put(ctx, capture.Doc{ID: "d1", Kind: sqlitedoc.KindDocument, Subject: alice, Text: "Alice's file", Mentions: []string{"bob@example.org"}}); err != nil {
		t.Fatal(err)
	}
	if err := docs.Put(ctx, capture.Doc{ID: "d1#0", Kind: sqlitedoc.KindChunk, Parent: "d1", Text: "Alice's"}); err != nil {
		t.Fatal(err)
	}
	// No subject, no parent named: the embedding finds its chunk by id.
	if err := vecs.Put(ctx, capture.Vector{ID: "d1#0", Embedding: []float32{1, 0, 0, 0}}); err != nil {
		t.Fatal(err)
	}
	ak, _ := rec.SubjectKey(alice)
	v, err := l.View(ctx, "default", ak)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := lineage.BuildTrace(v)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[lineage.Kind]lineage.TraceArtifact{}
	for _, a := range tr.Artifacts {
		kinds[a.Kind] = a
	}
	emb, chunk, src := kinds[lineage.KindEmbedding], kinds[lineage.KindChunk], kinds[lineage.KindSource]
	if len(tr.Artifacts) != 3 || len(emb.DerivedFrom) != 1 || emb.DerivedFrom[0] != chunk.ID || chunk.DerivedFrom[0] != src.ID {
		t.Fatalf("lineage: %+v", tr.Artifacts)
	}
	// The store's subject tag is the keyed digest, never the raw id.
	r, _ := ds.Get(ctx, "d1")
	if r.Subject != ak.String() {
		t.Errorf("subject tag = %q, want the keyed digest", r.Subject)
	}
	// Bob is mentioned in the document: it and what derives from it are
	// his NEEDS_HUMAN set, and nothing is his to erase.
	bk, _ := rec.SubjectKey("bob@example.org")
	v, _ = l.View(ctx, "default", bk)
	if tb, err := lineage.BuildTrace(v); err != nil || len(tb.Mentions) != 3 || len(tb.Artifacts) != 0 {
		t.Errorf("bob's trace: %v %+v", err, tb)
	}

	for name, tc := range map[string]struct {
		put  func() error
		want error
	}{
		"key holds the subject id": {func() error {
			return docs.Put(ctx, capture.Doc{ID: "notes-alice@example.org", Kind: sqlitedoc.KindDocument, Subject: alice, Text: "x"})
		}, capture.ErrKeyIsPersonal},
		"embedding of nothing known": {func() error {
			return vecs.Put(ctx, capture.Vector{ID: "orphan", Embedding: []float32{0, 1, 0, 0}})
		}, capture.ErrNoOwner},
		"chunk of another subject's document": {func() error {
			return docs.Put(ctx, capture.Doc{ID: "d1#1", Kind: sqlitedoc.KindChunk, Parent: "d1", Subject: "mallory@example.org", Text: "x"})
		}, lineage.ErrOwnerConflict},
	} {
		if err := tc.put(); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
	if r, _ := ds.Get(ctx, "notes-alice@example.org"); r != nil {
		t.Errorf("a refused write reached the store")
	}
}
