package worker_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/internal/erasure"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/internal/worker"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
)

type fixture struct {
	env     *erasure.Env
	q       lineage.Queue
	docs    *capture.Docs // the configured store "docs"
	archive *capture.Docs // a store the installation does not configure
	docPath string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	root := t.TempDir()
	cfg := state.DefaultConfig()
	docPath := filepath.Join(root, "docs.db")
	cfg.Stores = []state.StoreConfig{{Name: "docs", Type: sqlitedoc.Type, Path: docPath}}
	sd, err := state.Init(filepath.Join(root, "state"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := sqliteledger.Open(ctx, sd.LedgerPath())
	if err != nil {
		t.Fatal(err)
	}
	d, err := sqlitedoc.Open(ctx, "docs", docPath, true)
	if err != nil {
		t.Fatal(err)
	}
	a, err := sqlitedoc.Open(ctx, "archive", filepath.Join(root, "archive.db"), true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(); a.Close(); l.Close() })
	q, err := worker.QueueOf(l)
	if err != nil {
		t.Fatal(err)
	}
	rec := capture.New(l, sd.Keyer, "")
	return &fixture{env: &erasure.Env{Dir: sd, Ledger: l}, q: q, docs: rec.Docs(d), archive: rec.Docs(a), docPath: docPath}
}

func (f *fixture) put(t *testing.T, to *capture.Docs, id, owner string) {
	t.Helper()
	text := "Document " + id + " asks for a delivery of order 5521 to the depot at gate four next Monday morning."
	if err := to.Put(context.Background(), capture.Doc{ID: id, Kind: sqlitedoc.KindDocument, Subject: owner, Text: text}); err != nil {
		t.Fatal(err)
	}
}

// queue traces owner and queues its erasure.
func (f *fixture) queue(t *testing.T, owner string) *lineage.Trace {
	t.Helper()
	ctx := context.Background()
	k, err := f.env.Dir.Keyer.Key(f.env.Dir.Config.Scope, owner)
	if err != nil {
		t.Fatal(err)
	}
	tr, _, err := f.env.Trace(ctx, k, f.env.Dir.Config.Scope)
	if err != nil {
		t.Fatal(err)
	}
	if err := worker.Enqueue(ctx, f.env, tr, "TICKET-9"); err != nil {
		t.Fatal(err)
	}
	return tr
}

func (f *fixture) job(t *testing.T, traceID string) lineage.Job {
	t.Helper()
	jobs, err := f.q.Jobs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if j.ID == traceID {
			return j
		}
	}
	t.Fatalf("job %s not queued", traceID)
	return lineage.Job{}
}

func (f *fixture) worker(once bool) *worker.Worker {
	return &worker.Worker{Env: f.env, Queue: f.q, ID: "w-test", Lease: time.Minute, Poll: 10 * time.Millisecond, Once: once, Drain: !once}
}

// How a claim ends is decided on the result and typed errors: an erasure
// that finished is done with its certificate's digest, incomplete or not;
// one whose trace is gone or stale fails; one whose store is not ready is
// released for a retry.
func TestWorkerEndsClaimsOnResultAndTypedErrors(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.put(t, f.docs, "w-1", "one@example.org")
	f.put(t, f.docs, "w-2", "two@example.org")
	f.put(t, f.docs, "w-3", "three@example.org")
	f.put(t, f.docs, "w-4", "four@example.org")
	f.put(t, f.archive, "w-4-archived", "four@example.org")

	// Incomplete (a store the installation does not configure): done.
	tr := f.queue(t, "four@example.org")
	var finished *saga.Result
	w := f.worker(true)
	w.Finished = func(_ *lineage.Job, res *saga.Result) { finished = res }
	err := w.Run(ctx)
	var ie *saga.IncompleteError
	if !errors.As(err, &ie) || finished == nil || ie.Erasure != finished.ID {
		t.Fatalf("--once on an incomplete erasure: %v (result %v), want its IncompleteError", err, finished)
	}
	b, err := os.ReadFile(finished.CertificatePath)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if j := f.job(t, tr.ID); j.State != lineage.JobDone || j.Certificate != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Errorf("incomplete erasure: job %s with %q, want done with the certificate's digest", j.State, j.Certificate)
	}

	// A missing trace and a stale one: failed, and Drain reports them.
	gone := f.queue(t, "one@example.org")
	if err := os.Remove(f.env.Dir.TracePath(gone.ID)); err != nil {
		t.Fatal(err)
	}
	// Stale: a document of the queued trace written again with other
	// content (a capture that only adds artifacts would not make the job
	// fail: requeue_test.go).
	stale := f.queue(t, "two@example.org")
	if err := f.docs.Put(ctx, capture.Doc{ID: "w-2", Kind: sqlitedoc.KindDocument, Subject: "two@example.org", Text: "Document w-2 rewritten after the request."}); err != nil {
		t.Fatal(err)
	}
	var failed []error
	w = f.worker(false)
	w.Failed = func(_ *lineage.Job, err error) { failed = append(failed, err) }
	idle := 0
	w.Idle = func() { idle++ }
	if err := w.Run(ctx); err == nil || len(failed) != 2 || idle != 1 {
		t.Fatalf("--drain: %v, %d failed, idle %d; want an error, 2 failed, idle once", err, len(failed), idle)
	}
	if !errors.Is(failed[1], saga.ErrStaleTrace) {
		t.Errorf("stale trace: %v", failed[1])
	}
	for _, tr := range []*lineage.Trace{gone, stale} {
		if j := f.job(t, tr.ID); j.State != lineage.JobFailed || j.Error == "" {
			t.Errorf("job %s: %s (%q), want failed with its reason", tr.ID, j.State, j.Error)
		}
	}

	// A store not ready: released for a retry, nothing erased.
	ready := f.queue(t, "three@example.org")
	if err := os.Rename(f.docPath, f.docPath+".away"); err != nil {
		t.Fatal(err)
	}
	if err := f.worker(true).Run(ctx); !errors.Is(err, erasure.ErrNotReady) {
		t.Fatalf("store not ready: %v, want ErrNotReady", err)
	}
	// The reason is recorded with the job (status shows why it waits),
	// value-free: the store's name and kind of failure, no subject.
	if j := f.job(t, ready.ID); j.State != lineage.JobPending || j.Attempts != 1 || !strings.Contains(j.Error, "not ready") || strings.Contains(j.Error, "three@example.org") {
		t.Errorf("store not ready: job %s after %d attempts (%q), want pending (released) with the reason", j.State, j.Attempts, j.Error)
	}
	if f.env.Started(context.Background(), ready) {
		t.Errorf("an erasure refused by the preflight was started")
	}
}
