package pinecone_test

import (
	"context"
	"errors"
	"testing"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/pinecone/pineconefake"
)

// store.List enumerates a serverless namespace through list and fetch,
// with metadata as fields; a pod-based index, which cannot list, says so.
func TestListForCensus(t *testing.T) {
	ctx := context.Background()
	f := fake(t, pineconefake.Options{})
	s := open(t, f, "ns1", 0)
	put(t, f, s, "ns1", "k1", "hmac:aa", 1)
	put(t, f, s, "ns1", "k2", "hmac:bb", 2)
	c := store.Config{Name: "vecs", Type: "pinecone", Host: f.URL, APIKey: apiKey, Namespace: "ns1", Dimensions: dim}
	got := map[string]store.Listed{}
	if err := store.List(ctx, c, func(l store.Listed) error { got[l.Key] = l; return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["k1"].Fields["source"] != "chat" || got["k2"].Fields["subject"] != "hmac:bb" || len(got["k1"].Content) == 0 {
		t.Fatalf("listed %+v", got)
	}
	if lvl, _ := store.Proof(c); lvl != "logical" {
		t.Errorf("proof level %q, want logical", lvl)
	}
	pod := fake(t, pineconefake.Options{Pod: true})
	c.Host = pod.URL
	if err := store.List(ctx, c, func(store.Listed) error { return nil }); err == nil || errors.Is(err, store.ErrNotListable) {
		t.Errorf("a pod-based index: %v, want its list refusal", err)
	}
}
