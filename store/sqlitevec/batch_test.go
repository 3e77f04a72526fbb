package sqlitevec_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/store/sqlitevec"
)

// PutBatch writes every vector in one transaction, the last of a repeated
// id winning; a batch with a vector of the wrong size writes none.
func TestPutBatch(t *testing.T) {
	ctx := context.Background()
	s, err := sqlitevec.Open(ctx, "vectors", filepath.Join(t.TempDir(), "vec.db"), dim, true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.PutBatch(ctx, []sqlitevec.Record{
		{ID: "a", Subject: "hmac:aa", Embedding: vector(1)},
		{ID: "b", Subject: "hmac:aa", Embedding: vector(2)},
		{ID: "a", Subject: "hmac:bb", Embedding: vector(3)},
	}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, "a"); err != nil || got == nil || got.Subject != "hmac:bb" || !slices.Equal(got.Embedding, vector(3)) {
		t.Fatalf("a = %+v, %v; want the batch's last write", got, err)
	}
	if got, err := s.Get(ctx, "b"); err != nil || got == nil || !slices.Equal(got.Embedding, vector(2)) {
		t.Fatalf("b = %+v, %v", got, err)
	}
	err = s.PutBatch(ctx, []sqlitevec.Record{{ID: "c", Embedding: vector(4)}, {ID: "d", Embedding: vector(5)[:dim-1]}})
	if err == nil || !strings.Contains(err.Error(), "dimensions") {
		t.Fatalf("a vector of the wrong size: %v", err)
	}
	if got, _ := s.Get(ctx, "c"); got != nil {
		t.Errorf("a refused batch wrote %+v", got)
	}
}
