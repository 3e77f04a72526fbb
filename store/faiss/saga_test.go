//go:build faiss

package faiss_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/faiss"
	_ "github.com/amnesia-dev/amnesia/store/sqlitedoc" // the docstore of TestDocstoreConfig
)

// TestErasureCertificate runs a whole erasure on an index file a Python
// application wrote (IDMap2,Flat, its texts in index.pkl beside it): the
// lineage holds the subject's two vectors under their FAISS ids; the
// certificate reports them VERIFIED by byte scan and names, in the store's
// reclaim method, the pickle docstore it does not cover.
func TestErasureCertificate(t *testing.T) {
	var py string
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(p, "-c", "import faiss, numpy").Run() == nil {
			py = p
			break
		}
	}
	if py == "" {
		t.Skip("python3-faiss is not importable: apt-get install -y python3-faiss python3-numpy")
	}
	ctx := context.Background()
	root := t.TempDir()
	index := filepath.Join(root, "app", "index.faiss")
	if err := os.MkdirAll(filepath.Dir(index), 0o700); err != nil {
		t.Fatal(err)
	}
	script := `
import sys, pickle, numpy as np, faiss
x = np.random.default_rng(11).standard_normal((20, 32)).astype('float32')
idx = faiss.index_factory(32, "IDMap2,Flat")
idx.add_with_ids(x, np.arange(100, 120).astype('int64'))
faiss.write_index(idx, sys.argv[1])
pickle.dump({i: 'synthetic text %d' % i for i in range(100, 120)}, open(sys.argv[1][:-6] + '.pkl', 'wb'))
`
	if out, err := exec.Command(py, "-c", script, index).CombinedOutput(); err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}

	cfg := state.DefaultConfig()
	cfg.Stores = []state.StoreConfig{{Name: "vectors", Type: faiss.Type, Path: index, Dimensions: 32}}
	dir, err := state.Init(filepath.Join(root, "state"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := sqliteledger.Open(ctx, dir.LedgerPath())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	owner, err := dir.Keyer.Key(dir.Config.Scope, "subject-under-test")
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"103", "111"} {
		a := lineage.Artifact{
			ID: lineage.ArtifactID(dir.Keyer, dir.Config.Scope, "vectors", key), Scope: dir.Config.Scope,
			Subject: owner, Kind: lineage.KindEmbedding, Store: "vectors", Key: key,
		}
		if err := l.Record(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	v, err := l.View(ctx, dir.Config.Scope, owner)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := lineage.BuildTrace(v)
	if err != nil {
		t.Fatal(err)
	}
	s, err := dir.Config.OpenStore(ctx, cfg.Stores[0], false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := saga.Run(ctx, &saga.Erasure{Dir: dir, Ledger: l, Stores: map[string]store.Store{"vectors": s}, Trace: tr, Reason: "TICKET-9"})
	if err != nil {
		t.Fatal(err)
	}
	p := res.Statement.Predicate
	if !p.Complete || p.Counts.Verified != 2 {
		t.Fatalf("erasure: complete=%v counts=%+v", p.Complete, p.Counts)
	}
	var st *struct{ residue, reclaim string }
	for _, x := range p.DeclaredScope {
		if x.Name == "vectors" {
			st = &struct{ residue, reclaim string }{x.Residue, x.Reclaim}
		}
	}
	t.Logf("declared scope: %+v; artifact: %+v", p.DeclaredScope, p.Artifacts[0])
	if st == nil || st.residue != "VERIFIED" {
		t.Fatalf("store state: %+v", p.DeclaredScope)
	}
	if !strings.Contains(st.reclaim, "vectors only") || !strings.Contains(st.reclaim, "index.pkl") || !strings.Contains(st.reclaim, "NOT covered") {
		t.Errorf("the certificate does not say the pickle docstore is not covered: %q", st.reclaim)
	}
	res2, err := s.ProbeLogical(ctx, []string{"103", "111", "104"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res2[0].ByID || res2[1].ByID || !res2[2].ByID {
		t.Errorf("after the erasure by id: %+v", res2)
	}
}

// TestDocstoreConfig: docstore: names the configured store holding the
// texts; the reclaim method (and so the certificate) says so, and a name
// that is not another configured store is refused.
func TestDocstoreConfig(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	index := filepath.Join(root, "vectors.faiss")
	if err := faiss.Create(index, "IDMap2,Flat", 8, nil); err != nil {
		t.Fatal(err)
	}
	cfg := state.DefaultConfig()
	cfg.Stores = []state.StoreConfig{{Name: "vectors", Type: faiss.Type, Path: index, Dimensions: 8, Docstore: "nope"}}
	if _, err := state.Init(filepath.Join(root, "bad"), cfg); err == nil || !strings.Contains(err.Error(), `docstore "nope" is not another configured store`) {
		t.Fatalf("Init with a docstore that is not configured: %v", err)
	}
	cfg.Stores = append(cfg.Stores, state.StoreConfig{Name: "docs", Type: "sqlite-doc", Path: filepath.Join(root, "docs.db")})
	cfg.Stores[0].Docstore = "docs"
	dir, err := state.Init(filepath.Join(root, "state"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := dir.Config.OpenStore(ctx, cfg.Stores[0], false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rr, err := s.(store.Reclaimer).Reclaim(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rr.Method, `texts are in configured store "docs"`) || strings.Contains(rr.Method, "not covered") {
		t.Errorf("method = %q", rr.Method)
	}
}
