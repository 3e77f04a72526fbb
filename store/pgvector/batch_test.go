package pgvector_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/store/pgvector"
)

// PutBatch writes every vector in one transaction: the last of a repeated
// id wins, and a record the server refuses midway (a NUL byte in content)
// leaves none of the batch written.
func TestPutBatch(t *testing.T) {
	ctx := context.Background()
	s := open(t, config(t))
	if err := s.PutBatch(ctx, []pgvector.Record{
		{ID: "a", Subject: "hmac:aa", Embedding: vector(1), Content: text(1)},
		{ID: "b", Subject: "hmac:aa", Embedding: vector(2), Content: text(2)},
		{ID: "a", Subject: "hmac:bb", Embedding: vector(3), Content: text(3)},
	}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "a")
	if err != nil || got == nil || got.Subject != "hmac:bb" || got.Content != text(3) || !slices.Equal(got.Embedding, vector(3)) {
		t.Fatalf("a = %+v, %v; want the batch's last write", got, err)
	}
	if got, err := s.Get(ctx, "b"); err != nil || got == nil || got.Content != text(2) {
		t.Fatalf("b = %+v, %v", got, err)
	}
	err = s.PutBatch(ctx, []pgvector.Record{
		{ID: "c", Subject: "hmac:cc", Embedding: vector(4), Content: "written before the refused one"},
		{ID: "a", Subject: "hmac:cc", Embedding: vector(5), Content: "would replace a"},
		{ID: "d", Subject: "hmac:cc", Embedding: vector(6), Content: "a NUL \x00 byte"},
	})
	if err == nil || !strings.Contains(err.Error(), "put vectors") {
		t.Fatalf("batch with a refused record: %v; want an error", err)
	}
	if got, err := s.Get(ctx, "c"); err != nil || got != nil {
		t.Errorf("c after a failed batch = %+v, %v; want nothing written", got, err)
	}
	if got, err := s.Get(ctx, "a"); err != nil || got == nil || got.Content != text(3) {
		t.Errorf("a after a failed batch = %+v, %v; want it unchanged", got, err)
	}
	if err := s.PutBatch(ctx, []pgvector.Record{{ID: "e", Embedding: vector(7)}, {ID: "f", Embedding: vector(8)[:dim-1]}}); err == nil || !strings.Contains(err.Error(), "dimensions") {
		t.Errorf("a vector of the wrong size: %v", err)
	}
	if got, _ := s.Get(ctx, "e"); got != nil {
		t.Errorf("a batch refused before writing wrote %+v", got)
	}
}
