package weaviate_test

import (
	"context"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/weaviate"
)

// store.List enumerates a class for amnesia scan: keys as lineage names
// them, the subject property as a field, content and vector bytes.
func TestWeaviateListForCensus(t *testing.T) {
	srv := shared(t)
	ctx := context.Background()
	s := newStore(t, srv)
	put(t, s, "rec-a", "tag-1", 1)
	put(t, s, "rec-b", "tag-2", 2)
	class := strings.TrimPrefix(s.Location(), srv.url+" class ")
	c := store.Config{Name: "m", Type: weaviate.Type, DSN: srv.url, Collection: class, Dimensions: dim, DataDir: srv.data}
	got := map[string]store.Listed{}
	if err := store.List(ctx, c, func(l store.Listed) error { got[l.Key] = l; return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["rec-b"].Fields["subject"] != "tag-2" || !strings.Contains(string(got["rec-a"].Content), content(1)) {
		t.Fatalf("listed %+v", got)
	}
	if lvl, _ := store.Proof(c); lvl != "physical" {
		t.Errorf("proof with data_dir: %q", lvl)
	}
	c.DataDir = ""
	if lvl, _ := store.Proof(c); lvl != "logical" {
		t.Errorf("proof without data_dir: %q", lvl)
	}
}
