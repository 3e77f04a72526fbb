package service

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/internal/pgtest"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/internal/worker"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
)

// A confirmed request's erasure is queued; the application then records
// one more artifact of the subject through the lineage API. It is
// suppressed at once, and a worker (another process: `amnesia worker`)
// erases it with the queued ones. serve's Sync finds the erasure's
// certificate (the later trace's erasure, not the queued trace's) and the
// request is done, complete.
func TestConfirmedRequestTakesLaterCaptures(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { testConfirmedRequestTakesLaterCaptures(t, "") })
	t.Run("postgres", func(t *testing.T) { testConfirmedRequestTakesLaterCaptures(t, pgtest.DB(t)) })
}

func testConfirmedRequestTakesLaterCaptures(t *testing.T, ledger string) {
	ctx := context.Background()
	root := t.TempDir()
	cfg := state.DefaultConfig()
	cfg.Ledger = ledger
	docPath := filepath.Join(root, "docs.db")
	cfg.Stores = []state.StoreConfig{{Name: "docs", Type: sqlitedoc.Type, Path: docPath}}
	sd, err := state.Init(filepath.Join(root, "state"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := sqlitedoc.Open(ctx, "docs", docPath, true)
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	s, err := Open(ctx, sd.Path, Options{NoWorker: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	capture := &Principal{Role: RoleCapture, Scopes: []string{"default"}}
	op := &Principal{Role: RoleOperator, Scopes: []string{"default"}}
	const who = "erin@example.org"
	record := func(key, text string) {
		t.Helper()
		if err := ds.Put(ctx, sqlitedoc.Record{ID: key, Kind: sqlitedoc.KindDocument, Subject: "app", Text: text}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Record(ctx, capture, "", []LineageRecord{{Store: "docs", Key: key, Kind: "source", Subject: who, Content: &text}}); err != nil {
			t.Fatal(err)
		}
	}
	record("n1", "Note n1: the delivery of order 5521 moves to gate four on Monday.")
	r, err := s.CreateRequest(ctx, op, NewRequest{Subject: who, Reason: "T-8"})
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
	record("n2", "Note n2, after the request: order 5522 waits at gate five until Thursday.")
	late := lineage.ArtifactID(sd.Keyer, "default", "docs", "n2")
	if sup, err := s.ledger.Suppressed(ctx, late); err != nil || !sup {
		t.Fatalf("artifact recorded after the request: suppressed %v, %v; want suppressed at once", sup, err)
	}

	var continued *worker.Continued
	w := &worker.Worker{Env: s.env, Queue: s.queue, ID: "w-other", Lease: time.Minute, Poll: time.Second, Once: true,
		Continued: func(_ *lineage.Job, c *worker.Continued) { continued = c }}
	if err := w.Run(ctx); err != nil {
		t.Fatalf("worker: %v", err)
	}
	if continued == nil || continued.Added != 1 || continued.Queued.ID != p.TraceID {
		t.Fatalf("continued = %+v; want the queued trace %s continued with 1 more artifact", continued, p.TraceID)
	}
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := s.Request(ctx, op, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := saga.ID(continued.Now.ID)
	if got.State != StateDone || got.CertificateID != want || got.Complete == nil || !*got.Complete || got.TraceID != p.TraceID {
		t.Fatalf("request = %+v; want done, complete, with erasure %s's certificate", got, want)
	}
	if rec, err := ds.Get(ctx, "n2"); err != nil || rec != nil {
		t.Errorf("n2 in the store after the erasure: %+v, %v", rec, err)
	}
}
