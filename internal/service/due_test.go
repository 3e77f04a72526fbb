package service

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
)

// A request's due date is at most one month away; confirming it queues the
// erasure with that due date and suppresses the subject's artifacts at once,
// before any worker runs.
func TestConfirmQueuesWithDueDateAndSuppresses(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	cfg := state.DefaultConfig()
	cfg.Stores = []state.StoreConfig{{Name: "docs", Type: "sqlite-doc", Path: filepath.Join(root, "docs.db")}}
	sd, err := state.Init(filepath.Join(root, "state"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, sd.Path, Options{NoWorker: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	capture := &Principal{Role: RoleCapture, Scopes: []string{"default"}}
	op := &Principal{Role: RoleOperator, Scopes: []string{"default"}}
	text := "a note"
	if _, err := s.Record(ctx, capture, "", []LineageRecord{{Store: "docs", Key: "n1", Kind: "source", Subject: "dana@example.org", Content: &text}}); err != nil {
		t.Fatal(err)
	}
	far := time.Now().Add(lineage.MaxDue + time.Hour)
	var inv *InvalidError
	if _, err := s.CreateRequest(ctx, op, NewRequest{Subject: "dana@example.org", Reason: "T-6", Due: &far}); !errors.As(err, &inv) {
		t.Fatalf("due beyond one month: %v, want an InvalidError", err)
	}
	due := time.Now().Add(72 * time.Hour).UTC().Truncate(time.Second)
	r, err := s.CreateRequest(ctx, op, NewRequest{Subject: "dana@example.org", Reason: "T-6", Due: &due})
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Preview(ctx, op, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Confirm(ctx, op, r.ID, p.Confirmation); err != nil {
		t.Fatal(err)
	}
	jobs, err := s.queue.Jobs(ctx)
	if err != nil || len(jobs) != 1 || !jobs[0].Due.Equal(due) {
		t.Fatalf("jobs = %+v, %v; want one due %v", jobs, err, due)
	}
	tr, err := s.env.LoadTrace(ctx, jobs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range tr.Artifacts {
		if sup, err := s.ledger.Suppressed(ctx, a.ID); err != nil || !sup {
			t.Errorf("artifact %s right after the confirmation: suppressed %v, %v; want suppressed", a.ID, sup, err)
		}
	}
}
