package capture_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
	"github.com/amnesia-dev/amnesia/store/sqlitevec"
	"github.com/amnesia-dev/amnesia/subject"
)

type batchEnv struct {
	l    *sqliteledger.Ledger
	ds   *sqlitedoc.Store
	vs   *sqlitevec.Store
	rec  *capture.Recorder
	docs *capture.Docs
	vecs *capture.Vectors
}

func newBatchEnv(t testing.TB) *batchEnv {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	l, err := sqliteledger.Open(ctx, filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	ds, err := sqlitedoc.Open(ctx, "docs", filepath.Join(dir, "docs.db"), true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ds.Close() })
	vs, err := sqlitevec.Open(ctx, "vectors", filepath.Join(dir, "vec.db"), 4, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vs.Close() })
	k, _ := subject.NewKeyer(bytes.Repeat([]byte{9}, subject.PepperSize))
	rec := capture.New(l, k, "")
	return &batchEnv{l: l, ds: ds, vs: vs, rec: rec, docs: rec.Docs(ds), vecs: rec.Vectors(vs)}
}

// ingestion is one document of n chunks, each with its embedding.
func ingestion(doc, raw string, n int) ([]capture.Doc, []capture.Vector) {
	docs := []capture.Doc{{ID: doc, Kind: capture.KindDocument, Subject: raw, Text: "text of " + doc}}
	var vecs []capture.Vector
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("%s#%d", doc, i)
		docs = append(docs, capture.Doc{ID: id, Kind: capture.KindChunk, Parent: doc, Text: fmt.Sprintf("chunk %d of %s", i, doc)})
		vecs = append(vecs, capture.Vector{ID: id, Embedding: []float32{float32(i), 1, 0, 0}})
	}
	return docs, vecs
}

func TestPutBatchMatchesPutOneByOne(t *testing.T) {
	ctx := context.Background()
	one, batched := newBatchEnv(t), newBatchEnv(t)
	const alice = "alice@example.org"
	docs, vecs := ingestion("doc-1", alice, 20)
	for _, d := range docs {
		if err := one.docs.Put(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range vecs {
		if err := one.vecs.Put(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := batched.docs.PutBatch(ctx, docs, batched.vecs, vecs); err != nil {
		t.Fatal(err)
	}
	s1, h1, _ := one.l.Head(ctx)
	s2, h2, _ := batched.l.Head(ctx)
	if s2 != 41 || s1 != s2 || h1 != h2 {
		t.Fatalf("chain head after PutBatch = %d %s, after Put one by one = %d %s (want 41 events)", s2, h2, s1, h1)
	}
	ak, _ := batched.rec.SubjectKey(alice)
	v, err := batched.l.View(ctx, "default", ak)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := lineage.BuildTrace(v)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Artifacts) != 41 {
		t.Errorf("trace after PutBatch has %d artifacts, want 41", len(tr.Artifacts))
	}
	emb, err := batched.l.Lookup(ctx, "default", "vectors", "doc-1#7")
	if err != nil {
		t.Fatal(err)
	}
	chunk, _ := batched.l.Lookup(ctx, "default", "docs", "doc-1#7")
	if len(v.Artifacts[emb.ID].Parents) != 1 || v.Artifacts[emb.ID].Parents[0] != chunk.ID {
		t.Errorf("embedding's parents = %v, want its chunk %s", v.Artifacts[emb.ID].Parents, chunk.ID)
	}
	r, err := batched.ds.CaptureGet(ctx, "doc-1#19")
	if err != nil || r == nil || r.Subject != ak.String() || r.Text != "chunk 19 of doc-1" {
		t.Fatalf("stored chunk = %+v, %v; want the chunk tagged %s", r, err, ak)
	}
	if vr, err := batched.vs.CaptureGet(ctx, "doc-1#19"); err != nil || vr == nil || vr.Subject != ak.String() {
		t.Fatalf("stored vector = %+v, %v", vr, err)
	}
}

// stored reports whether any record of the ingestion reached a store.
func (e *batchEnv) stored(t testing.TB, docs []capture.Doc, vecs []capture.Vector) bool {
	ctx := context.Background()
	for _, d := range docs {
		if r, err := e.ds.CaptureGet(ctx, d.ID); err != nil || r != nil {
			return true
		}
	}
	for _, v := range vecs {
		if r, err := e.vs.CaptureGet(ctx, v.ID); err != nil || r != nil {
			return true
		}
	}
	return false
}

func TestPutBatchRefusesBeforeWriting(t *testing.T) {
	ctx := context.Background()
	e := newBatchEnv(t)
	const alice, bob = "alice@example.org", "bob@example.org"
	// Alice's old document, whose chunk 3 is then erased.
	old, oldVecs := ingestion("old", alice, 4)
	if err := e.docs.PutBatch(ctx, old, e.vecs, oldVecs); err != nil {
		t.Fatal(err)
	}
	gone, _ := e.l.Lookup(ctx, "default", "docs", "old#3")
	if err := e.l.MarkErased(ctx, []lineage.ErasureMark{{Artifact: gone.ID, Erasure: "er-1", Outcome: "VERIFIED"}}); err != nil {
		t.Fatal(err)
	}
	// Alice gave new consent since (without it every batch of hers is
	// refused first: TestNothingComesBack*).
	if _, err := e.rec.RecordConsent(ctx, alice, "test"); err != nil {
		t.Fatal(err)
	}
	seq0, h0, _ := e.l.Head(ctx)

	for _, c := range []struct {
		name string
		edit func(docs []capture.Doc, vecs []capture.Vector) ([]capture.Doc, []capture.Vector)
		want error
	}{
		{"erased chunk re-ingested", func(d []capture.Doc, v []capture.Vector) ([]capture.Doc, []capture.Vector) {
			return append(d, capture.Doc{ID: "old#3", Kind: capture.KindChunk, Parent: "old", Text: "again"}), v
		}, lineage.ErrErased},
		{"document owned by another subject", func(d []capture.Doc, v []capture.Vector) ([]capture.Doc, []capture.Vector) {
			return append(d, capture.Doc{ID: "old", Kind: capture.KindDocument, Subject: bob, Text: "bob's now"}), v
		}, lineage.ErrOwnerConflict},
		{"chunk under another subject than its batch document", func(d []capture.Doc, v []capture.Vector) ([]capture.Doc, []capture.Vector) {
			return append(d, capture.Doc{ID: "new#x", Kind: capture.KindChunk, Subject: bob, Parent: "new", Text: "x"}), v
		}, lineage.ErrOwnerConflict},
		{"personal key", func(d []capture.Doc, v []capture.Vector) ([]capture.Doc, []capture.Vector) {
			return d, append(v, capture.Vector{ID: "new-" + alice, Of: "new#0", Embedding: []float32{1, 1, 1, 1}})
		}, capture.ErrKeyIsPersonal},
		{"embedding of nothing", func(d []capture.Doc, v []capture.Vector) ([]capture.Doc, []capture.Vector) {
			return d, append(v, capture.Vector{ID: "orphan", Embedding: []float32{1, 1, 1, 1}})
		}, capture.ErrNoOwner},
	} {
		docs, vecs := ingestion("new", alice, 5)
		docs, vecs = c.edit(docs, vecs)
		err := e.docs.PutBatch(ctx, docs, e.vecs, vecs)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: PutBatch = %v, want %v", c.name, err, c.want)
		}
		if seq, h, _ := e.l.Head(ctx); seq != seq0 || h != h0 {
			t.Errorf("%s: the refused batch appended to the ledger (%d -> %d events)", c.name, seq0, seq)
		}
		fresh, freshVecs := ingestion("new", alice, 5)
		if e.stored(t, fresh, freshVecs) {
			t.Errorf("%s: the refused batch wrote to a store", c.name)
		}
		if r, _ := e.ds.CaptureGet(ctx, "old"); r == nil || r.Text != "text of old" {
			t.Errorf("%s: the refused batch changed an existing record: %+v", c.name, r)
		}
	}
	if err := e.docs.PutBatch(ctx, nil, nil, []capture.Vector{{ID: "v"}}); err == nil {
		t.Error("PutBatch took embeddings without a vector store")
	}
}

// A store that writes batches gets a batch's records in one transaction:
// when it refuses one of them after the ledger's commit, none of the
// batch's documents is left in it (and the embeddings, written after the
// documents, are not written), as PutBatch documents.
func TestPutBatchStoreFailureWritesNoneOfItsRecords(t *testing.T) {
	ctx := context.Background()
	e := newBatchEnv(t)
	db, err := sql.Open("sqlite3", "file:"+e.ds.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TRIGGER refuse BEFORE INSERT ON documents WHEN NEW.id = 'doc#3' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`); err != nil {
		t.Fatal(err)
	}
	docs, vecs := ingestion("doc", "carol@example.org", 5)
	if err := e.docs.PutBatch(ctx, docs, e.vecs, vecs); err == nil || !strings.Contains(err.Error(), "refused by the test") {
		t.Fatalf("PutBatch = %v, want the store's refusal", err)
	}
	for _, d := range docs {
		if r, err := e.ds.CaptureGet(ctx, d.ID); err != nil || r != nil {
			t.Errorf("document %s after the refused batch: %+v, %v", d.ID, r, err)
		}
	}
	for _, v := range vecs {
		if r, err := e.vs.CaptureGet(ctx, v.ID); err != nil || r != nil {
			t.Errorf("embedding %s after the refused batch: %+v, %v", v.ID, r, err)
		}
	}
}
