package sqlitevec_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/sqlitevec"
)

// The check compares the vec0 table's dimensions with the configuration,
// and never creates a missing store.
func TestCheckDimensions(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "vectors.db")
	s, err := sqlitevec.Open(ctx, "vectors", path, 16, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, sqlitevec.Record{ID: "v1", Subject: "s", Embedding: make([]float32, 16)}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	check := func(path string, dim int) []store.Problem {
		return store.Check(ctx, store.Config{Name: "vectors", Type: sqlitevec.Type, Path: path, Dimensions: dim})
	}
	if probs := check(path, 16); len(probs) != 0 {
		t.Fatalf("matching dimensions: %v", probs)
	}
	probs := store.Errors(check(path, 8))
	if len(probs) != 1 || probs[0].Key != "dimensions" || !strings.Contains(probs[0].Message, "have 16 dimensions, the configuration says 8") {
		t.Fatalf("wrong dimensions: %v", probs)
	}
	missing := filepath.Join(dir, "none.db")
	probs = store.Errors(check(missing, 16))
	if len(probs) != 1 || probs[0].Key != "path" || !strings.Contains(probs[0].Message, "does not exist") {
		t.Fatalf("missing file: %v", probs)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("the check created %s", missing)
	}
}
