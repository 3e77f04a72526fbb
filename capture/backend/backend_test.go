package backend_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/capture/backend"
	"github.com/amnesia-dev/amnesia/internal/state"
)

// This test binary links capture and no store adapter (nor ledger
// backend): capture registers none itself, and an installation whose
// amnesia.yaml names a store type the program did not import is refused
// with the import to add.
func TestCaptureLinksNoAdapter(t *testing.T) {
	for _, typ := range []string{"sqlite-doc", "postgres", "sqlite-vec", "pgvector"} {
		_, d := backend.Docs(typ)
		_, v := backend.Vectors(typ)
		if d || v {
			t.Errorf("a %s wrapper is registered in a program that did not import its adapter", typ)
		}
	}
	dir := filepath.Join(t.TempDir(), ".amnesia")
	if _, err := state.Init(dir, nil); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "amnesia.yaml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	withStore := strings.Replace(string(b), "stores: []\n", "stores:\n  - name: docs\n    type: sqlite-doc\n    path: docs.db\n", 1)
	if withStore == string(b) {
		t.Fatalf("default amnesia.yaml has no empty stores list to fill:\n%s", b)
	}
	b = []byte(withStore)
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = capture.Open(context.Background(), dir)
	if err == nil || !strings.Contains(err.Error(), `add import _ "github.com/amnesia-dev/amnesia/store/sqlitedoc"`) {
		t.Errorf("Open with an unlinked sqlite-doc store: %v, want the import to add", err)
	}
}

func TestRegisterTwicePanics(t *testing.T) {
	typ := "backend-test-twice"
	backend.RegisterVectorStore(typ, nil)
	for _, reg := range []func(){
		func() { backend.RegisterVectorStore(typ, nil) },
		func() { backend.RegisterDocStore(typ, nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("registering %s again did not panic", typ)
				}
			}()
			reg()
		}()
	}
	if _, ok := backend.Docs(typ); ok {
		t.Errorf("%s is registered as a document store too", typ)
	}
}
