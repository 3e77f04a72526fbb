package service

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/internal/state"
	_ "github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	_ "github.com/amnesia-dev/amnesia/store/sqlitedoc"
)

// A request confirmed by a process that stopped before it queued the
// erasure (the request says queued, the queue has no job) is queued again by
// the request sync.
func TestSyncRequeuesAConfirmedRequestWithoutJob(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	cfg := state.DefaultConfig()
	cfg.Stores = []state.StoreConfig{{Name: "docs", Type: "sqlite-doc", Path: filepath.Join(root, "docs.db")}}
	sd, err := state.Init(filepath.Join(root, "state"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	s, err := Open(ctx, sd.Path, Options{Now: func() time.Time { return now }, NoWorker: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	capture := &Principal{Role: RoleCapture, Scopes: []string{"default"}}
	op := &Principal{Role: RoleOperator, Scopes: []string{"default"}}
	text := "a note"
	if _, err := s.Record(ctx, capture, "", []LineageRecord{{Store: "docs", Key: "n1", Kind: "source", Subject: "carol@example.org", Content: &text}}); err != nil {
		t.Fatal(err)
	}
	r, err := s.CreateRequest(ctx, op, NewRequest{Subject: "carol@example.org", Reason: "T-5"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Preview(ctx, op, r.ID); err != nil {
		t.Fatal(err)
	}
	// What Confirm writes first, without the enqueue that follows it.
	d, err := s.getDoc(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	d.Confirm.Used, d.State = true, StateQueued
	if err := s.update(ctx, d); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if jobs, _ := s.queue.Jobs(ctx); len(jobs) != 0 {
		t.Fatalf("requeued at once: %d jobs; want to wait 30s for the confirming process", len(jobs))
	}
	now = now.Add(31 * time.Second)
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	jobs, err := s.queue.Jobs(ctx)
	if err != nil || len(jobs) != 1 || jobs[0].ID != d.TraceID {
		t.Fatalf("jobs after the sync = %+v, %v; want the request's trace queued", jobs, err)
	}
}
