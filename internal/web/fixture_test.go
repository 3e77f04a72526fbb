package web_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/internal/demo"
	"github.com/amnesia-dev/amnesia/internal/service"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	_ "github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
	"github.com/amnesia-dev/amnesia/store/sqlitevec"
)

const (
	fixtureDim   = 16
	fixtureChunk = 120
	// subjectA is the subject the tests erase; it must never appear in a
	// log, an address or a stored request.
	subjectA = "alice.canary-7f3a@example.org"
	subjectB = "bob.other-19c2@example.org"
)

type fixtureDoc struct{ id, owner, text string }

var fixtureDocs = []fixtureDoc{
	{"doc-a1", subjectA, "Alice Canary's notes on the quarterly migration plan: the ledger moves to the new cluster in March, and the runbook lists every step with its owner and rollback."},
	{"doc-a2", subjectA, "Alice Canary asked support to change the shipping address of order 4411 and to stop the marketing emails; the agent confirmed both by phone."},
	{"doc-b1", subjectB, "Bob Other wrote the onboarding guide for new analysts: how to request access, where the dashboards live and whom to ask about the metrics."},
}

// installation creates a state directory with two SQLite stores (documents
// and vectors) and ingests fixtureDocs through capture, then closes all.
func installation(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	root := t.TempDir()
	stateDir := filepath.Join(root, "state")
	cfg := state.DefaultConfig()
	cfg.Stores = []state.StoreConfig{
		{Name: "docs", Type: sqlitedoc.Type, Path: "../docs.db"},
		{Name: "vectors", Type: sqlitevec.Type, Path: "../vectors.db", Dimensions: fixtureDim},
	}
	sd, err := state.Init(stateDir, cfg)
	if err != nil {
		t.Fatalf("init state: %v", err)
	}
	ledger, err := lineage.Open(ctx, sd.LedgerSpec())
	if err != nil {
		t.Fatalf("open ledger: %v", err)
	}
	ds, err := sqlitedoc.Open(ctx, "docs", filepath.Join(root, "docs.db"), true)
	if err != nil {
		t.Fatalf("open docs: %v", err)
	}
	vs, err := sqlitevec.Open(ctx, "vectors", filepath.Join(root, "vectors.db"), fixtureDim, true)
	if err != nil {
		t.Fatalf("open vectors: %v", err)
	}
	rec := capture.New(ledger, sd.Keyer, sd.Config.Scope)
	cd, cv := rec.Docs(ds), rec.Vectors(vs)
	for _, d := range fixtureDocs {
		if err := cd.Put(ctx, capture.Doc{ID: d.id, Kind: sqlitedoc.KindDocument, Subject: d.owner, Text: d.text}); err != nil {
			t.Fatalf("ingest %s: %v", d.id, err)
		}
		for i, text := range demo.Chunk(d.text, fixtureChunk) {
			id := fmt.Sprintf("%s#%d", d.id, i)
			if err := cd.Put(ctx, capture.Doc{ID: id, Kind: sqlitedoc.KindChunk, Parent: d.id, Text: text}); err != nil {
				t.Fatalf("ingest %s: %v", id, err)
			}
			if err := cv.Put(ctx, capture.Vector{ID: id, Embedding: demo.Embed(text, fixtureDim)}); err != nil {
				t.Fatalf("ingest vector %s: %v", id, err)
			}
		}
	}
	for _, c := range []io.Closer{vs, ds, ledger} {
		if err := c.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
	}
	return stateDir
}

// syncBuffer is a log sink the server's goroutines write to concurrently.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// openService opens the installation with its structured log in logs.
func openService(t *testing.T, stateDir string, logs io.Writer) *service.Service {
	t.Helper()
	svc, err := service.Open(context.Background(), stateDir, service.Options{
		Log:          slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		PollInterval: 100 * time.Millisecond,
	})
	if err != nil {
		t.Fatalf("open service: %v", err)
	}
	t.Cleanup(func() { svc.Close() })
	return svc
}

// token creates a token of role for the installation's default scope.
func token(t *testing.T, stateDir string, role service.Role, scopes ...string) (secret, id string) {
	t.Helper()
	if len(scopes) == 0 {
		sd, err := state.Open(stateDir)
		if err != nil {
			t.Fatal(err)
		}
		scopes = []string{sd.Config.Scope}
	}
	secret, info, err := service.CreateToken(stateDir, "web test "+string(role), role, scopes, time.Now())
	if err != nil {
		t.Fatalf("create token: %v", err)
	}
	return secret, info.ID
}
