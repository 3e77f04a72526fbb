package erasure_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/internal/demo"
	"github.com/amnesia-dev/amnesia/internal/erasure"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
	"github.com/amnesia-dev/amnesia/store/sqlitevec"
	"github.com/amnesia-dev/amnesia/subject"
)

const owner = "erasure.owner@example.org"

// install makes a state directory with a document and a vector store
// holding two documents of owner, recorded in a SQLite ledger.
func install(t *testing.T) (*erasure.Env, subject.Key, string) {
	t.Helper()
	ctx := context.Background()
	root := t.TempDir()
	cfg := state.DefaultConfig()
	vecPath := filepath.Join(root, "vectors.db")
	cfg.Stores = []state.StoreConfig{
		{Name: "docs", Type: sqlitedoc.Type, Path: filepath.Join(root, "docs.db")},
		{Name: "vectors", Type: sqlitevec.Type, Path: vecPath, Dimensions: demo.Dim},
	}
	sd, err := state.Init(filepath.Join(root, "state"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := sqliteledger.Open(ctx, sd.LedgerPath())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	d, err := sqlitedoc.Open(ctx, "docs", cfg.Stores[0].Path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	v, err := sqlitevec.Open(ctx, "vectors", vecPath, demo.Dim, true)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	rec := capture.New(l, sd.Keyer, "")
	docs, vecs := rec.Docs(d), rec.Vectors(v)
	for _, id := range []string{"e-1", "e-2"} {
		text := "The owner of " + id + " asked for a delivery of order 4471 to the depot at gate nine on Friday."
		if err := docs.Put(ctx, capture.Doc{ID: id, Kind: sqlitedoc.KindDocument, Subject: owner, Text: text}); err != nil {
			t.Fatal(err)
		}
		if err := docs.Put(ctx, capture.Doc{ID: id + "#0", Kind: sqlitedoc.KindChunk, Parent: id, Text: text}); err != nil {
			t.Fatal(err)
		}
		if err := vecs.Put(ctx, capture.Vector{ID: id + "#0", Embedding: demo.Embed(text, demo.Dim)}); err != nil {
			t.Fatal(err)
		}
	}
	k, err := sd.Keyer.Key(cfg.Scope, owner)
	if err != nil {
		t.Fatal(err)
	}
	return &erasure.Env{Dir: sd, Ledger: l}, k, vecPath
}

// The flow every entry point shares: a new trace is saved; a store that is
// not ready is refused with a NotReadyError, or left alone with
// allowPartial; the erasure without it is a result whose Err is
// saga.ErrIncomplete; once the store is back, the same flow traces and
// erases what was left, and the subject is then erased.
func TestFlowNotReadyPartialThenComplete(t *testing.T) {
	ctx := context.Background()
	env, k, vecPath := install(t)
	scope := env.Dir.Config.Scope

	tr, resumed, err := env.Begin(ctx, k, scope)
	if err != nil || resumed {
		t.Fatalf("Begin: %v, resumed %v", err, resumed)
	}
	if saved, err := env.LoadTrace(ctx, tr.ID); err != nil || saved.ID != tr.ID {
		t.Fatalf("the trace was not saved: %v", err)
	}
	if env.Started(ctx, tr) {
		t.Fatalf("an erasure that never ran is reported started")
	}

	if err := os.Rename(vecPath, vecPath+".away"); err != nil {
		t.Fatal(err)
	}
	var w bytes.Buffer
	_, err = env.Preflight(ctx, &w, tr, false)
	var nr *erasure.NotReadyError
	if !errors.Is(err, erasure.ErrNotReady) || !errors.As(err, &nr) || len(nr.Stores) != 1 || nr.Stores[0] != "vectors" {
		t.Fatalf("preflight with the vector store gone: %v; want a NotReadyError of vectors", err)
	}
	if !strings.Contains(w.String(), "store vectors (sqlite-vec") || !strings.Contains(w.String(), "NOT READY") {
		t.Errorf("preflight lines: %q", w.String())
	}
	skip, err := env.Preflight(ctx, &w, tr, true)
	if err != nil || !errors.Is(skip["vectors"], store.ErrUnavailable) || len(skip) != 1 {
		t.Fatalf("preflight with allowPartial: %v, skip %v", err, skip)
	}
	res, err := env.Run(ctx, tr, "TICKET-1", erasure.Options{AllowPartial: true, Skip: skip})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res.Err(), saga.ErrIncomplete) {
		t.Fatalf("erasure without a store: Err %v, want ErrIncomplete", res.Err())
	}
	if _, err := os.Stat(vecPath); err == nil {
		t.Fatalf("a store the preflight skipped was opened (and created)")
	}

	if err := os.Rename(vecPath+".away", vecPath); err != nil {
		t.Fatal(err)
	}
	tr2, resumed, err := env.Begin(ctx, k, scope)
	if err != nil || resumed || len(tr2.Artifacts) == 0 {
		t.Fatalf("Begin after the partial erasure: %v, resumed %v", err, resumed)
	}
	for _, a := range tr2.Artifacts {
		if a.Store != "vectors" {
			t.Errorf("the second trace lists %s of %s, erased before", a.ID, a.Store)
		}
	}
	if skip, err := env.Preflight(ctx, nil, tr2, false); err != nil || skip != nil {
		t.Fatalf("preflight with every store back: %v %v", err, skip)
	}
	res2, err := env.Run(ctx, tr2, "TICKET-1", erasure.Options{})
	if err != nil || res2.Err() != nil {
		t.Fatalf("second erasure: %v / %v", err, res2.Err())
	}
	if _, _, err := env.Trace(ctx, k, scope); !errors.Is(err, lineage.ErrAlreadyErased) {
		t.Errorf("trace after both erasures: %v, want ErrAlreadyErased", err)
	}
}
