package capture_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/store"
)

// Stores in files with owners (owner: in amnesia.yaml): App.Erase runs an
// erasure only on the host that holds the trace's stores in files
// (EraseOptions.Host), as `amnesia forget --host` does
// (cmd/amnesia/forgethost_test.go). Without Host, or with another host's
// name, it refuses with ErrOtherHost before anything is erased, naming the
// store and its owner, not the subject; a malformed Host is refused too.
func TestEraseRunsOnlyOnTheOwnerHost(t *testing.T) {
	ctx := context.Background()
	cfg := state.DefaultConfig()
	cfg.Stores = []store.Config{{Name: "docs", Type: "sqlite-doc", Path: "docs.db", Owner: "host-b"}}
	dir := t.TempDir() + "/.amnesia"
	if _, err := state.Init(dir, cfg); err != nil {
		t.Fatal(err)
	}
	app, err := capture.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Close() })
	docs, err := app.Docs(ctx, "docs")
	if err != nil {
		t.Fatal(err)
	}
	if err := docs.Put(ctx, capture.Doc{ID: "d1", Kind: capture.KindDocument, Subject: alice, Text: "text of d1"}); err != nil {
		t.Fatal(err)
	}

	for _, host := range []string{"", "host-a"} {
		_, err := app.Erase(ctx, alice, "DSR-1", capture.EraseOptions{Host: host})
		if !errors.Is(err, capture.ErrOtherHost) {
			t.Fatalf("Erase with Host %q: %v, want ErrOtherHost", host, err)
		}
		msg := err.Error()
		if !strings.Contains(msg, `store "docs"`) || !strings.Contains(msg, "host-b") || !strings.Contains(msg, "nothing was erased") {
			t.Errorf("Erase with Host %q: %q, want the store, its owner host-b and that nothing was erased", host, msg)
		}
		if strings.Contains(msg, alice) {
			t.Errorf("Erase with Host %q: the refusal names the subject: %q", host, msg)
		}
	}
	if _, err := app.Erase(ctx, alice, "DSR-1", capture.EraseOptions{Host: "bad host"}); err == nil || errors.Is(err, capture.ErrOtherHost) || !strings.Contains(err.Error(), "EraseOptions.Host") {
		t.Fatalf("Erase with Host 'bad host': %v, want a refusal of the host name", err)
	}
	if !rawHas(t, dir, "docs", "d1") {
		t.Fatal("a refused Erase erased the record")
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "certificates")); len(ents) != 0 {
		t.Fatalf("a refused Erase wrote %d certificate(s)", len(ents))
	}

	// On the owner host the erasure runs.
	e, err := app.Erase(ctx, alice, "DSR-1", capture.EraseOptions{Host: "host-b"})
	if err != nil {
		t.Fatalf("Erase with Host host-b: %v", err)
	}
	if e.Certificate == "" {
		t.Error("Erase with Host host-b: no certificate")
	}
	if rawHas(t, dir, "docs", "d1") {
		t.Error("after Erase on the owner host the record is still in the store")
	}
}
