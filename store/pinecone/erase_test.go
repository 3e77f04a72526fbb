package pinecone_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/internal/state"
	_ "github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/store/pinecone/pineconefake"
)

// TestErasureThroughCapture: an application writes through capture into a
// Pinecone index (the fake, eventually consistent) configured with its
// API key as $VAR; amnesia erases one subject. The certificate reports
// the subject's vectors verified at the logical level, the store's
// residue UNVERIFIED-managed citing the vendor's commitment, the other
// subject's vector stays, and the key is in no file amnesia wrote.
func TestErasureThroughCapture(t *testing.T) {
	ctx := context.Background()
	f := fake(t, pineconefake.Options{UpsertLag: 20 * time.Millisecond, DeleteLag: 200 * time.Millisecond})
	t.Setenv("PINECONE_TEST_KEY", apiKey)
	root := t.TempDir()
	cfgPath := filepath.Join(root, "amnesia.yaml")
	yaml := "version: 1\nstores:\n  - name: vecs\n    type: pinecone\n    host: " + f.URL +
		"\n    api_key: $PINECONE_TEST_KEY\n    namespace: app\n    dimensions: 16\n    consistency_wait: 3s\n"
	if err := os.WriteFile(cfgPath, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := state.LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	// amnesia check and the preflight name the store by host and namespace.
	if got := cfg.StoreTarget(cfg.Stores[0]); !strings.Contains(got, strings.TrimPrefix(f.URL, "http://")) || !strings.Contains(got, "namespace app") || strings.Contains(got, apiKey) {
		t.Errorf("StoreTarget = %q, want the index host and namespace", got)
	}
	stateDir := filepath.Join(root, ".amnesia")
	if _, err := state.Init(stateDir, cfg); err != nil {
		t.Fatal(err)
	}
	app, err := capture.Open(ctx, stateDir)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	vecs, err := app.Vectors(ctx, "vecs")
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range []struct{ id, who string }{{"alice-1", "alice@example.org"}, {"alice-2", "alice@example.org"}, {"bob-1", "bob@example.org"}} {
		if err := vecs.Put(ctx, capture.Vector{ID: w.id, Subject: w.who, Embedding: vector(i + 1), Content: "synthetic note " + w.id}); err != nil {
			t.Fatal(err)
		}
	}
	f.Settle()
	er, err := app.Erase(ctx, "alice@example.org", "TICKET-7")
	if err != nil {
		t.Fatal(err)
	}
	p := er.Statement.Predicate
	if !er.Complete || p.Counts.Verified != 2 {
		t.Fatalf("erasure: complete=%v counts=%+v artifacts=%+v", er.Complete, p.Counts, p.Artifacts)
	}
	for _, a := range p.Artifacts {
		if a.Level != "logical" || a.Measurement == nil || a.Measurement.Physical != nil || a.Measurement.Logical == nil {
			t.Errorf("artifact %s: level %q measurement %+v: want logical only", a.ID, a.Level, a.Measurement)
		}
	}
	var found bool
	for _, st := range p.DeclaredScope {
		if st.Name == "vecs" {
			found = true
			if st.Residue != "UNVERIFIED-managed" || !strings.Contains(st.Evidence+st.Reclaim, "docs.pinecone.io/guides/production/data-deletion") {
				t.Errorf("store state: %+v", st)
			}
		}
	}
	if !found {
		t.Fatalf("vecs not in the declared scope: %+v", p.DeclaredScope)
	}
	if f.Visible("app", "alice-1") || f.Visible("app", "alice-2") || !f.Visible("app", "bob-1") {
		t.Errorf("after the erasure: alice-1=%v alice-2=%v bob-1=%v", f.Visible("app", "alice-1"), f.Visible("app", "alice-2"), f.Visible("app", "bob-1"))
	}
	b, _ := json.Marshal(p)
	if strings.Contains(string(b), apiKey) {
		t.Errorf("the certificate holds the API key")
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(data), apiKey) {
			t.Errorf("%s holds the API key", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
