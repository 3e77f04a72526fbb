package ledgertest

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/shred"
)

// testKeys: a subject's wrapped data key is stored once (the first one
// wins), read back, destroyed once (then reads and puts say destroyed),
// and only for that subject and scope; sealed marks read back.
func testKeys(t *testing.T, l lineage.Ledger) {
	kk, ok := l.(lineage.KeyKeeper)
	if !ok {
		t.Skip("the ledger keeps no data keys")
	}
	ctx := context.Background()
	k := Keyer(t)
	alice, bob := key(t, k, "default", "alice@example.org"), key(t, k, "default", "bob@example.org")
	if _, err := kk.DataKey(ctx, "default", alice); !errors.Is(err, shred.ErrNoKey) {
		t.Fatalf("no key yet: %v, want ErrNoKey", err)
	}
	w1, w2 := bytes.Repeat([]byte{1}, 60), bytes.Repeat([]byte{2}, 60)
	got, err := kk.PutDataKey(ctx, "default", alice, w1)
	if err != nil || !bytes.Equal(got, w1) {
		t.Fatalf("first put: %x, %v", got, err)
	}
	if got, err := kk.PutDataKey(ctx, "default", alice, w2); err != nil || !bytes.Equal(got, w1) {
		t.Fatalf("a second put must keep the first key: %x, %v", got, err)
	}
	if _, err := kk.PutDataKey(ctx, "default", bob, w2); err != nil {
		t.Fatal(err)
	}
	if _, err := kk.PutDataKey(ctx, "other", alice, w2); err != nil {
		t.Fatal(err)
	}
	seq0, _ := head(t, l)
	done, err := kk.DestroyDataKey(ctx, "default", alice, "er-1")
	if err != nil || !done {
		t.Fatalf("destroy: %v, %v", done, err)
	}
	if seq, _ := head(t, l); seq != seq0+1 {
		t.Errorf("destroy appended %d events, want 1", seq-seq0)
	}
	if _, err := kk.DataKey(ctx, "default", alice); !errors.Is(err, shred.ErrDestroyed) {
		t.Errorf("after destroy: %v, want ErrDestroyed", err)
	}
	if _, err := kk.PutDataKey(ctx, "default", alice, w2); !errors.Is(err, shred.ErrDestroyed) {
		t.Errorf("put after destroy: %v, want ErrDestroyed", err)
	}
	if done, err := kk.DestroyDataKey(ctx, "default", alice, "er-2"); err != nil || done {
		t.Errorf("destroy again: %v, %v; want nothing destroyed", done, err)
	}
	for _, c := range []struct {
		scope string
		who   string
		want  []byte
	}{{"default", "bob", w2}, {"other", "alice", w2}} {
		s := bob
		if c.who == "alice" {
			s = alice
		}
		if got, err := kk.DataKey(ctx, c.scope, s); err != nil || !bytes.Equal(got, c.want) {
			t.Errorf("%s/%s after alice's destroy: %x, %v", c.scope, c.who, got, err)
		}
	}
	if err := kk.MarkSealed(ctx, []string{"art:1", "art:2"}); err != nil {
		t.Fatal(err)
	}
	seq1, _ := head(t, l)
	if err := kk.MarkSealed(ctx, []string{"art:2", "art:1"}); err != nil {
		t.Fatal(err)
	}
	if seq, _ := head(t, l); seq != seq1 {
		t.Errorf("marking sealed artifacts again appended %d events", seq-seq1)
	}
	m, err := kk.Sealed(ctx, []string{"art:1", "art:3"})
	if err != nil || len(m) != 1 || !m["art:1"] {
		t.Errorf("sealed: %v, %v", m, err)
	}
}

// testKeysAfterConsent: after a destroyed key, new consent lets a new key
// be created (a ledger that records consents); the old one stays gone.
func testKeysAfterConsent(t *testing.T, l lineage.Ledger) {
	kk, ok := l.(lineage.KeyKeeper)
	g, ok2 := l.(lineage.SubjectGuard)
	if !ok || !ok2 {
		t.Skip("the ledger keeps no data keys or consents")
	}
	ctx := context.Background()
	k := Keyer(t)
	alice := key(t, k, "default", "alice@example.org")
	w1, w2 := bytes.Repeat([]byte{1}, 60), bytes.Repeat([]byte{2}, 60)
	if _, err := kk.PutDataKey(ctx, "default", alice, w1); err != nil {
		t.Fatal(err)
	}
	if _, err := kk.DestroyDataKey(ctx, "default", alice, "er-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := kk.PutDataKey(ctx, "default", alice, w2); !errors.Is(err, shred.ErrDestroyed) {
		t.Fatalf("put after destroy, no consent: %v", err)
	}
	if _, err := g.RecordConsent(ctx, lineage.Consent{Scope: "default", Subject: alice, At: time.Now(), By: "support-desk"}); err != nil {
		t.Fatal(err)
	}
	got, err := kk.PutDataKey(ctx, "default", alice, w2)
	if err != nil || !bytes.Equal(got, w2) {
		t.Fatalf("put after new consent: %x, %v; want the new key", got, err)
	}
	if got, err := kk.DataKey(ctx, "default", alice); err != nil || !bytes.Equal(got, w2) {
		t.Errorf("data key after new consent: %x, %v", got, err)
	}
}
