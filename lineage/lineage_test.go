package lineage_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/subject"
)

func setup(t *testing.T) (*lineage.SQLite, *subject.Keyer) {
	t.Helper()
	l, err := lineage.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	k, err := subject.NewKeyer(bytes.Repeat([]byte{7}, subject.PepperSize))
	if err != nil {
		t.Fatal(err)
	}
	return l, k
}

func art(k *subject.Keyer, owner subject.Key, kind lineage.Kind, store, key string, parents ...string) lineage.Artifact {
	return lineage.Artifact{ID: lineage.ArtifactID(k, "default", store, key), Scope: "default", Subject: owner, Kind: kind, Store: store, Key: key, Digest: "d-" + key, Parents: parents}
}

func TestTrace(t *testing.T) {
	ctx := context.Background()
	l, k := setup(t)
	alice, _ := k.Key("default", "alice@example.org")
	bob, _ := k.Key("default", "bob@example.org")
	doc := art(k, alice, lineage.KindSource, "docs", "d1")
	chunk := art(k, alice, lineage.KindChunk, "docs", "d1#0", doc.ID)
	emb := art(k, alice, lineage.KindEmbedding, "vectors", "d1#0", chunk.ID)
	other := art(k, bob, lineage.KindSource, "docs", "d2")
	for _, a := range []lineage.Artifact{doc, chunk, emb, other} {
		if err := l.Record(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	// Recording the same artifact again is a no-op.
	seq0, _, _ := l.Head(ctx)
	if err := l.Record(ctx, chunk); err != nil {
		t.Fatal(err)
	}
	if seq, _, _ := l.Head(ctx); seq != seq0 {
		t.Errorf("identical re-record appended an event: %d -> %d", seq0, seq)
	}
	if err := l.Mention(ctx, lineage.Mention{Artifact: other.ID, Subject: alice}); err != nil {
		t.Fatal(err)
	}

	trace := func() []byte {
		v, err := l.View(ctx, "default", alice)
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
		return b
	}
	first := trace()
	if second := trace(); !bytes.Equal(first, second) {
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

	// A tampered trace is refused.
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
	v, _ := l.View(ctx, "default", alice)
	if _, err := lineage.BuildTrace(v); !errors.Is(err, lineage.ErrAlreadyErased) {
		t.Errorf("trace after erasure = %v, want ErrAlreadyErased", err)
	}
	// No resurrection.
	if err := l.Record(ctx, doc); !errors.Is(err, lineage.ErrErased) {
		t.Errorf("re-ingest of an erased artifact = %v, want ErrErased", err)
	}
}

func TestTraceErrors(t *testing.T) {
	ctx := context.Background()
	l, k := setup(t)
	nobody, _ := k.Key("default", "nobody@example.org")
	v, err := l.View(ctx, "default", nobody)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lineage.BuildTrace(v); !errors.Is(err, lineage.ErrNoLineage) {
		t.Errorf("trace of an unknown subject = %v, want ErrNoLineage", err)
	}
	alice, _ := k.Key("default", "alice@example.org")
	bob, _ := k.Key("default", "bob@example.org")
	a := art(k, alice, lineage.KindSource, "docs", "d1")
	if err := l.Record(ctx, a); err != nil {
		t.Fatal(err)
	}
	a.Subject = bob
	if err := l.Record(ctx, a); !errors.Is(err, lineage.ErrOwnerConflict) {
		t.Errorf("re-record under another owner = %v, want ErrOwnerConflict", err)
	}
	// Scopes isolate: the same id in another scope has no lineage.
	other, _ := k.Key("tenant-b", "alice@example.org")
	v, _ = l.View(ctx, "tenant-b", other)
	if _, err := lineage.BuildTrace(v); !errors.Is(err, lineage.ErrNoLineage) {
		t.Errorf("trace in another scope = %v, want ErrNoLineage", err)
	}
	if err := l.Record(ctx, art(k, alice, lineage.KindChunk, "docs", "c1", "art:missing")); !errors.Is(err, lineage.ErrNotFound) {
		t.Errorf("edge to a missing parent = %v, want ErrNotFound", err)
	}
}
