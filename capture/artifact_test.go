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
	"github.com/amnesia-dev/amnesia/subject"
)

func TestRecordArtifact(t *testing.T) {
	ctx := context.Background()
	l, err := sqliteledger.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	k, _ := subject.NewKeyer(bytes.Repeat([]byte{7}, subject.PepperSize))
	rec := capture.New(l, k, "")
	const alice = "alice@example.org"

	_, changed, err := rec.RecordArtifact(ctx, capture.Artifact{Store: "kb", Key: "doc-1", Kind: lineage.KindSource, Subject: alice, Content: []byte("Alice's file"), Mentions: []string{"bob@example.org"}})
	if err != nil || !changed {
		t.Fatalf("first record: changed %v, %v", changed, err)
	}
	if _, changed, err = rec.RecordArtifact(ctx, capture.Artifact{Store: "kb", Key: "doc-1", Kind: lineage.KindSource, Subject: alice, Content: []byte("Alice's file")}); err != nil || changed {
		t.Fatalf("same artifact again: changed %v, %v; want unchanged", changed, err)
	}
	// A derived cache entry in another store: the owner comes from the parent.
	if _, changed, err = rec.RecordArtifact(ctx, capture.Artifact{Store: "cache", Key: "c-9", Kind: lineage.KindCache, ParentStore: "kb", ParentKey: "doc-1", Content: []byte("answer")}); err != nil || !changed {
		t.Fatalf("derived: changed %v, %v", changed, err)
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
	if len(tr.Artifacts) != 2 || tr.Artifacts[0].Store != "cache" || len(tr.Artifacts[0].DerivedFrom) != 1 {
		t.Fatalf("trace artifacts = %+v", tr.Artifacts)
	}
	bk, _ := rec.SubjectKey("bob@example.org")
	if bv, _ := l.View(ctx, "default", bk); len(bv.Mentions) != 1 {
		t.Fatalf("bob's mentions = %v", bv.Mentions)
	}

	for name, a := range map[string]capture.Artifact{
		"no owner":       {Store: "kb", Key: "x", Kind: lineage.KindChunk},
		"bad kind":       {Store: "kb", Key: "x", Kind: "blob", Subject: alice},
		"missing parent": {Store: "kb", Key: "x", Kind: lineage.KindChunk, ParentStore: "kb", ParentKey: "nope"},
		"personal key":   {Store: "kb", Key: "alice@example.org/1", Kind: lineage.KindSource, Subject: alice},
	} {
		if _, _, err := rec.RecordArtifact(ctx, a); err == nil {
			t.Errorf("%s: recorded, want refused", name)
		} else if bytes.Contains([]byte(err.Error()), []byte(alice)) {
			t.Errorf("%s: the error echoes the subject: %v", name, err)
		}
	}
	if _, _, err := rec.RecordArtifact(ctx, capture.Artifact{Store: "kb", Key: "alice@example.org/1", Kind: lineage.KindSource, Subject: alice}); !errors.Is(err, capture.ErrKeyIsPersonal) {
		t.Fatalf("personal key: %v, want ErrKeyIsPersonal", err)
	}
}
