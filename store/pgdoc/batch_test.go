package pgdoc_test

import (
	"context"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/store/pgdoc"
)

// PutBatch writes every record in one transaction: the last of a repeated
// id wins, and a record the server refuses midway (a NUL byte in text)
// leaves none of the batch written.
func TestPutBatch(t *testing.T) {
	ctx := context.Background()
	s := open(t, config(t))
	batch := []pgdoc.Record{
		{ID: "d1", Subject: "hmac:aa", Kind: "document", Content: "first", Metadata: map[string]any{"n": 1}},
		{ID: "c1", Subject: "hmac:aa", Kind: "chunk", Content: "chunk one"},
		{ID: "d1", Subject: "hmac:aa", Kind: "document", Content: "first, rewritten"},
	}
	if err := s.PutBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "d1")
	if err != nil || got == nil || got.Content != "first, rewritten" {
		t.Fatalf("d1 = %+v, %v; want the batch's last write", got, err)
	}
	if got, err := s.Get(ctx, "c1"); err != nil || got == nil || got.Kind != "chunk" || got.Content != "chunk one" {
		t.Fatalf("c1 = %+v, %v", got, err)
	}

	bad := []pgdoc.Record{
		{ID: "d2", Subject: "hmac:bb", Content: "written before the refused one"},
		{ID: "d1", Subject: "hmac:bb", Content: "would overwrite d1"},
		{ID: "d3", Subject: "hmac:bb", Content: "a NUL \x00 byte"},
	}
	err = s.PutBatch(ctx, bad)
	if err == nil || !strings.Contains(err.Error(), "put documents") {
		t.Fatalf("batch with a refused record: %v; want an error", err)
	}
	if got, err := s.Get(ctx, "d2"); err != nil || got != nil {
		t.Errorf("d2 after a failed batch = %+v, %v; want nothing written", got, err)
	}
	if got, err := s.Get(ctx, "d1"); err != nil || got == nil || got.Content != "first, rewritten" {
		t.Errorf("d1 after a failed batch = %+v, %v; want it unchanged", got, err)
	}
	if err := s.PutBatch(ctx, []pgdoc.Record{{ID: "ok", Content: "x"}, {Content: "no id"}}); err == nil || !strings.Contains(err.Error(), "empty id") {
		t.Errorf("a record without an id: %v", err)
	}
	if got, _ := s.Get(ctx, "ok"); got != nil {
		t.Errorf("a batch refused before writing wrote %+v", got)
	}
	if err := s.PutBatch(ctx, nil); err != nil {
		t.Errorf("empty batch: %v", err)
	}
}
