package worker_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/internal/erasure"
	"github.com/amnesia-dev/amnesia/internal/pgtest"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/internal/worker"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
)

// Two workers on two hosts (--host alpha, --host beta) share one
// PostgreSQL ledger; each store in files has its owner. Every erasure is
// done by the worker of the host that owns its store: alpha runs first
// and drains the queue, and leaves beta's erasures to beta.
func TestWorkersOnTwoHostsEraseTheirOwnStores(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	cfg := state.DefaultConfig()
	cfg.Ledger = pgtest.DB(t)
	paths := map[string]string{"docs-a": filepath.Join(root, "a.db"), "docs-b": filepath.Join(root, "b.db")}
	cfg.Stores = []state.StoreConfig{
		{Name: "docs-a", Type: sqlitedoc.Type, Path: paths["docs-a"], Owner: "alpha"},
		{Name: "docs-b", Type: sqlitedoc.Type, Path: paths["docs-b"], Owner: "beta"},
	}
	// The two workers share one state directory here; with a PostgreSQL
	// ledger they need not (cmd/amnesia/multihost_test.go runs three).
	sd, err := state.Init(filepath.Join(root, "state"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := sd.OpenLedger(ctx, state.LedgerCreate)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	rec := capture.New(l, sd.Keyer, "")
	docs := map[string]*capture.Docs{}
	for name, p := range paths {
		s, err := sqlitedoc.Open(ctx, name, p, true)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		docs[name] = rec.Docs(s)
	}
	env := &erasure.Env{Dir: sd, Ledger: l}
	q, err := worker.QueueOf(l)
	if err != nil {
		t.Fatal(err)
	}
	put := func(store, id, owner string) {
		text := "Document " + id + " asks for a delivery of order 5521 to the depot at gate four next Monday morning."
		if err := docs[store].Put(ctx, capture.Doc{ID: id, Kind: sqlitedoc.KindDocument, Subject: owner, Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	trace := func(owner string) *lineage.Trace {
		k, err := sd.Keyer.Key(cfg.Scope, owner)
		if err != nil {
			t.Fatal(err)
		}
		tr, _, err := env.Trace(ctx, k, cfg.Scope)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	want := map[string]string{} // trace id -> host
	for i, s := range []struct{ store, subject, host string }{
		{"docs-b", "b1@example.org", "beta"},
		{"docs-a", "a1@example.org", "alpha"},
		{"docs-b", "b2@example.org", "beta"},
		{"docs-a", "a2@example.org", "alpha"},
	} {
		put(s.store, "doc-"+string(rune('0'+i)), s.subject)
		tr := trace(s.subject)
		if err := worker.Enqueue(ctx, env, tr, "TICKET-18"); err != nil {
			t.Fatal(err)
		}
		want[tr.ID] = s.host
	}
	// One subject in both hosts' stores: one erasure cannot run on two
	// hosts; refused at enqueue with what to do.
	put("docs-a", "both-a", "both@example.org")
	put("docs-b", "both-b", "both@example.org")
	if err := worker.Enqueue(ctx, env, trace("both@example.org"), "TICKET-18"); err == nil || !strings.Contains(err.Error(), "give these stores one owner") {
		t.Fatalf("a trace over two hosts' stores: %v, want a refusal", err)
	}

	// A worker without --host in an installation with owners: refused.
	plain := &worker.Worker{Env: env, Queue: q, ID: "w-plain", Lease: time.Minute, Poll: 10 * time.Millisecond, Drain: true}
	if err := plain.Run(ctx); err == nil || !strings.Contains(err.Error(), "--host") {
		t.Fatalf("worker without --host: %v, want a refusal naming --host", err)
	}

	done := map[string]int{}
	for _, h := range []string{"alpha", "beta"} {
		w := &worker.Worker{Env: env, Queue: q, ID: "w-" + h, Host: h, Lease: time.Minute, Poll: 10 * time.Millisecond, Drain: true}
		w.Claimed = func(j *lineage.Job) {
			if j.Owner != h {
				t.Errorf("worker on %s claimed %s, owned by %q", h, j.ID, j.Owner)
			}
			done[h]++
		}
		if err := w.Run(ctx); err != nil {
			t.Fatalf("worker %s: %v", h, err)
		}
	}
	jobs, err := q.Jobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if j.State != lineage.JobDone || j.Worker != "w-"+want[j.ID] || j.Owner != want[j.ID] {
			t.Errorf("job %s: %s by %s (owner %q), want done by w-%s", j.ID, j.State, j.Worker, j.Owner, want[j.ID])
		}
	}
	if len(jobs) != 4 || done["alpha"] != 2 || done["beta"] != 2 {
		t.Fatalf("%d jobs, alpha ran %d, beta %d; want 4, 2 each", len(jobs), done["alpha"], done["beta"])
	}
}
