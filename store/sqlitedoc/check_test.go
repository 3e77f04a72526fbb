package sqlitedoc_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
	"github.com/amnesia-dev/amnesia/store/sqlitevec"
)

// snapshot returns the names and contents of the files in dir.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range es {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

func names(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func check(path string) []store.Problem {
	return store.Check(context.Background(), store.Config{Name: "docs", Type: sqlitedoc.Type, Path: path})
}

func wantError(t *testing.T, probs []store.Problem, key, substr string) {
	t.Helper()
	errs := store.Errors(probs)
	if len(errs) != 1 || errs[0].Key != key || !strings.Contains(errs[0].Message, substr) {
		t.Fatalf("problems %v: want one error on %q mentioning %q", probs, key, substr)
	}
}

// The check never creates the store, and says what is wrong with a path
// that is missing, not SQLite, or another adapter's file.
func TestCheckNotReady(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.db")
	wantError(t, check(missing), "path", "does not exist")
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("the check created %s (%v)", missing, err)
	}
	junk := filepath.Join(dir, "junk.db")
	os.WriteFile(junk, []byte(strings.Repeat("not a database ", 100)), 0o600)
	wantError(t, check(junk), "path", "does not open as a SQLite database")

	other := filepath.Join(dir, "vectors.db")
	vs, err := sqlitevec.Open(context.Background(), "v", other, 4, true)
	if err != nil {
		t.Fatal(err)
	}
	vs.Close()
	wantError(t, check(other), "path", "no documents table")
}

// A ready store passes, and the check leaves its files exactly as they were.
func TestCheckReadyIsReadOnly(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "docs.db")
	s, err := sqlitedoc.Open(ctx, "docs", path, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, sqlitedoc.Record{ID: "d1", Kind: sqlitedoc.KindDocument, Subject: "s", Text: "some text of a record"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	before := snapshot(t, dir)
	if probs := check(path); len(probs) != 0 {
		t.Fatalf("ready store: %v", probs)
	}
	after := snapshot(t, dir)
	if strings.Join(names(before), " ") != strings.Join(names(after), " ") {
		t.Fatalf("the check changed the directory: %v -> %v", names(before), names(after))
	}
	for n := range before {
		if before[n] != after[n] {
			t.Errorf("the check changed %s", n)
		}
	}
}
