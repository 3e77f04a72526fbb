package ledgertest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/amnesia-dev/amnesia/lineage"
)

// PairOpener opens a new, empty ledger and returns two handles on it, as two
// processes would hold (separate connections or separate opens of a file).
type PairOpener func(t *testing.T) (first, second lineage.Ledger)

// RunShared runs the checks that need several handles on one ledger.
func RunShared(t *testing.T, open PairOpener) {
	t.Run("WritesVisibleToTheOther", func(t *testing.T) {
		a, b := open(t)
		k := Keyer(t)
		doc := Art(k, key(t, k, "default", "alice@example.org"), lineage.KindSource, "docs", "d1")
		if err := a.Record(context.Background(), doc); err != nil {
			t.Fatal(err)
		}
		if got, err := b.Lookup(context.Background(), "default", "docs", "d1"); err != nil || got.ID != doc.ID {
			t.Errorf("the other handle does not see the write: %+v, %v", got, err)
		}
		sa, ha := head(t, a)
		if sb, hb := head(t, b); sa != sb || ha != hb {
			t.Errorf("heads differ between handles: %d %s / %d %s", sa, ha, sb, hb)
		}
	})
	t.Run("ConcurrentWritersOneChain", func(t *testing.T) {
		a, b := open(t)
		testConcurrent(t, a, b)
	})
	t.Run("ViewIsOneSnapshotAcrossHandles", func(t *testing.T) {
		a, b := open(t)
		testSnapshot(t, a, b)
	})
}

func events(t *testing.T, l lineage.Ledger) []lineage.Event {
	t.Helper()
	el, ok := l.(lineage.EventLog)
	if !ok {
		t.Skipf("%T does not implement lineage.EventLog", l)
	}
	evs, err := el.Events(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// testChain runs a fixed sequence of operations and checks the chain against
// golden values: every implementation hashes the same events the same way.
func testChain(t *testing.T, l lineage.Ledger) {
	ctx := context.Background()
	if seq, h := head(t, l); seq != 0 || h != "" {
		t.Fatalf("empty ledger head = %d %q, want 0 \"\"", seq, h)
	}
	k := Keyer(t)
	alice, bob := key(t, k, "default", "alice@example.org"), key(t, k, "default", "bob@example.org")
	doc := Art(k, alice, lineage.KindSource, "docs", "d1")
	chunk := Art(k, alice, lineage.KindChunk, "docs", "d1#0", doc.ID)
	emb := Art(k, alice, lineage.KindEmbedding, "vectors", "d1#0", chunk.ID)
	other := Art(k, bob, lineage.KindSource, "docs", "d2")
	steps := []func() error{
		func() error { return l.Record(ctx, doc) },
		func() error { return l.Record(ctx, chunk) },
		func() error { return l.Record(ctx, emb) },
		func() error { return l.Record(ctx, other) },
		func() error { return l.Mention(ctx, lineage.Mention{Artifact: other.ID, Subject: alice}) },
		func() error { return l.Suppress(ctx, "er-1", []string{doc.ID, chunk.ID, emb.ID}) },
		func() error {
			return l.MarkErased(ctx, []lineage.ErasureMark{{Artifact: emb.ID, Erasure: "er-1", Outcome: "VERIFIED"}})
		},
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i+1, err)
		}
	}
	seq, h := head(t, l)
	if seq != GoldenHeadSeq || h != GoldenHead {
		t.Errorf("head = %d %s, want the golden %d %s: the chain is not computed like every other ledger's", seq, h, GoldenHeadSeq, GoldenHead)
	}
	if _, tr := encodedTrace(t, l, alice); tr.ID != GoldenTraceID {
		t.Errorf("trace id = %s, want the golden %s", tr.ID, GoldenTraceID)
	}
	evs := events(t, l)
	got, err := lineage.VerifyChain(evs)
	if err != nil || got != h {
		t.Fatalf("VerifyChain = %s, %v; want the head %s", got, err, h)
	}
	kinds := make([]string, len(evs))
	for i, e := range evs {
		kinds[i] = e.Kind
		if strings.Contains(e.Body, "alice@") || strings.Contains(e.Body, "bob@") {
			t.Errorf("event %d holds a raw subject id: %s", e.Seq, e.Body)
		}
	}
	if want := "artifact artifact artifact artifact mention suppress erased"; strings.Join(kinds, " ") != want {
		t.Errorf("event kinds = %v, want %s", kinds, want)
	}
	// Append-only: later writes leave every earlier event as it was.
	if err := l.Record(ctx, Art(k, bob, lineage.KindChunk, "docs", "d2#0", other.ID)); err != nil {
		t.Fatal(err)
	}
	after := events(t, l)
	if len(after) != len(evs)+1 {
		t.Fatalf("one record appended %d events", len(after)-len(evs))
	}
	for i := range evs {
		if after[i] != evs[i] {
			t.Errorf("event %d changed after a later write", evs[i].Seq)
		}
	}
	if _, err := lineage.VerifyChain(after); err != nil {
		t.Error(err)
	}
}

// testConcurrent writes from several goroutines spread over handles (which
// may all be one) and checks that every event made it into one chain.
func testConcurrent(t *testing.T, handles ...lineage.Ledger) {
	ctx := context.Background()
	k := Keyer(t)
	const writers, per = 6, 8
	seq0, _ := head(t, handles[0])
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			l := handles[w%len(handles)]
			owner, err := k.Key("default", fmt.Sprintf("user-%d@example.org", w))
			if err != nil {
				errs <- err
				return
			}
			var ids, parents []string
			for i := 0; i < per; i++ {
				a := Art(k, owner, lineage.KindChunk, "docs", fmt.Sprintf("w%d-%d", w, i), parents...)
				if err := l.Record(ctx, a); err != nil {
					errs <- err
					return
				}
				ids, parents = append(ids, a.ID), []string{a.ID}
			}
			if err := l.Suppress(ctx, fmt.Sprintf("er-%d", w), ids); err != nil {
				errs <- err
				return
			}
			var marks []lineage.ErasureMark
			for _, id := range ids {
				marks = append(marks, lineage.ErasureMark{Artifact: id, Erasure: fmt.Sprintf("er-%d", w), Outcome: "VERIFIED"})
			}
			errs <- l.MarkErased(ctx, marks)
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent write: %v", err)
		}
	}
	want := seq0 + writers*(per+2)
	for i, l := range handles {
		if seq, _ := head(t, l); seq != want {
			t.Errorf("handle %d: head seq %d, want %d (every write one event)", i, seq, want)
		}
	}
	evs := events(t, handles[len(handles)-1])
	if int64(len(evs)) != want {
		t.Fatalf("%d events, want %d", len(evs), want)
	}
	if _, err := lineage.VerifyChain(evs); err != nil {
		t.Errorf("concurrent writers broke the chain: %v", err)
	}
}

// testSnapshot checks that a view never sees half of a MarkErased: the
// writer marks all of a subject's artifacts in one call, round after round,
// while the reader takes views (through the other handle when there is one).
func testSnapshot(t *testing.T, writer, reader lineage.Ledger) {
	if reader == nil {
		reader = writer
	}
	ctx := context.Background()
	k := Keyer(t)
	alice := key(t, k, "default", "alice@example.org")
	var ids []string
	for i := 0; i < 12; i++ {
		a := Art(k, alice, lineage.KindSource, "docs", fmt.Sprintf("s%02d", i))
		if err := writer.Record(ctx, a); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, a.ID)
	}
	done := make(chan error, 1)
	go func() {
		for r := 1; r <= 40; r++ {
			var marks []lineage.ErasureMark
			for _, id := range ids {
				marks = append(marks, lineage.ErasureMark{Artifact: id, Erasure: fmt.Sprintf("er-%d", r), Outcome: fmt.Sprintf("O-%d", r)})
			}
			if err := writer.MarkErased(ctx, marks); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	views := 0
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			if views == 0 {
				t.Log("no view overlapped the writes")
			}
			return
		default:
		}
		v, err := reader.View(ctx, "default", alice)
		if err != nil {
			t.Fatal(err)
		}
		views++
		seen := map[string]bool{}
		for _, id := range ids {
			seen[v.Erased[id]] = true
		}
		if len(seen) != 1 {
			t.Fatalf("a view saw part of one MarkErased: outcomes %v", seen)
		}
	}
}
