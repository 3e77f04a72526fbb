package capture_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/subject"
)

// TestPutRecordsMentionsWithItsArtifact: Put writes the artifact and its
// mentions in one ledger transaction, with the chain of Record then
// Mention one at a time; a mention that does not key refuses the write
// before anything reaches the ledger or the store.
func TestPutRecordsMentionsWithItsArtifact(t *testing.T) {
	ctx := context.Background()
	e, ref := newBatchEnv(t), newBatchEnv(t)
	const alice, bob, carol = "alice@example.org", "bob@example.org", "carol@example.org"
	doc := capture.Doc{ID: "d1", Kind: capture.KindDocument, Subject: alice, Text: "about bob and carol", Mentions: []string{bob, carol}}
	if err := e.docs.Put(ctx, doc); err != nil {
		t.Fatal(err)
	}
	ak, _ := ref.rec.SubjectKey(alice)
	k := func(raw string) lineage.Mention {
		s, _ := ref.rec.SubjectKey(raw)
		return lineage.Mention{Artifact: lineage.ArtifactID(keyer(t), "default", "docs", "d1"), Subject: s}
	}
	a := lineage.Artifact{ID: lineage.ArtifactID(keyer(t), "default", "docs", "d1"), Scope: "default", Subject: ak, Kind: lineage.KindSource, Store: "docs", Key: "d1", Digest: lineage.ContentDigest(keyer(t), []byte(doc.Text))}
	if err := ref.l.Record(ctx, a); err != nil {
		t.Fatal(err)
	}
	for _, m := range []lineage.Mention{k(bob), k(carol)} {
		if err := ref.l.Mention(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	s1, h1, _ := e.l.Head(ctx)
	s2, h2, _ := ref.l.Head(ctx)
	if s1 != 3 || s1 != s2 || h1 != h2 {
		t.Fatalf("chain head after Put = %d %s, after Record and Mention one by one = %d %s (want 3 events)", s1, h1, s2, h2)
	}

	bad := capture.Doc{ID: "d2", Kind: capture.KindDocument, Subject: alice, Text: "about someone", Mentions: []string{bob, " "}}
	if err := e.docs.Put(ctx, bad); err == nil {
		t.Fatal("Put took a mention that is no id")
	}
	if s, h, _ := e.l.Head(ctx); s != s1 || h != h1 {
		t.Errorf("the refused Put appended to the ledger (%d -> %d events)", s1, s)
	}
	if _, err := e.l.Lookup(ctx, "default", "docs", "d2"); err == nil {
		t.Error("the refused Put recorded its artifact")
	}
	if r, _ := e.ds.CaptureGet(ctx, "d2"); r != nil {
		t.Error("the refused Put wrote to the store")
	}
}

// keyer is the keyer of newBatchEnv.
func keyer(t testing.TB) *subject.Keyer {
	k, err := subject.NewKeyer(bytes.Repeat([]byte{9}, subject.PepperSize))
	if err != nil {
		t.Fatal(err)
	}
	return k
}
