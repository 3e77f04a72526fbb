package worker_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/internal/erasure"
	"github.com/amnesia-dev/amnesia/internal/pgtest"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/internal/worker"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
)

// The schedule: a window closes when the earliest due date minus the margin
// is reached, when the oldest erasure has waited the window's length, or at
// once when the window is full.
func TestWindowCloseAt(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	p := &worker.Window{Wait: time.Hour, Max: 3}
	for _, c := range []struct {
		name string
		w    lineage.Waiting
		want time.Time
	}{
		{"nothing waiting", lineage.Waiting{}, time.Time{}},
		{"oldest waited the window", lineage.Waiting{Count: 2, OldestQueued: t0, EarliestDue: t0.Add(48 * time.Hour)}, t0.Add(time.Hour)},
		{"due soon forces it early", lineage.Waiting{Count: 2, OldestQueued: t0, EarliestDue: t0.Add(40 * time.Minute)}, t0.Add(30 * time.Minute)},
		{"already overdue", lineage.Waiting{Count: 1, OldestQueued: t0, EarliestDue: t0.Add(-time.Hour)}, t0.Add(-time.Hour - 10*time.Minute)},
		{"full", lineage.Waiting{Count: 3, OldestQueued: t0, EarliestDue: t0.Add(48 * time.Hour)}, t0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := p.CloseAt(c.w, 10*time.Minute); !got.Equal(c.want) {
				t.Errorf("CloseAt = %v, want %v", got, c.want)
			}
		})
	}
}

type windowFixture struct {
	env  *erasure.Env
	q    lineage.Queue
	docs *capture.Docs
}

func newWindowFixture(t *testing.T, ledger string) *windowFixture {
	t.Helper()
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
	l, err := sd.OpenLedger(ctx, state.LedgerCreate)
	if err != nil {
		t.Fatal(err)
	}
	d, err := sqlitedoc.Open(ctx, "docs", docPath, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(); l.Close() })
	q, err := worker.QueueOf(l)
	if err != nil {
		t.Fatal(err)
	}
	return &windowFixture{env: &erasure.Env{Dir: sd, Ledger: l}, q: q, docs: capture.New(l, sd.Keyer, "").Docs(d)}
}

// queue records a document of owner, checks that a read through capture
// returns it, queues its erasure due at due (zero: the default deadline),
// and checks that the same read hides it at once.
func (f *windowFixture) queue(t *testing.T, id, owner string, due time.Time) *lineage.Trace {
	t.Helper()
	ctx := context.Background()
	text := "Document " + id + " asks for a delivery of order 5521 to the depot at gate four next Monday morning."
	if err := f.docs.Put(ctx, capture.Doc{ID: id, Kind: sqlitedoc.KindDocument, Subject: owner, Text: text}); err != nil {
		t.Fatal(err)
	}
	if r, err := f.docs.Get(ctx, id); err != nil || r == nil {
		t.Fatalf("read of %s before its erasure is queued = %v, %v", id, r, err)
	}
	k, err := f.env.Dir.Keyer.Key(f.env.Dir.Config.Scope, owner)
	if err != nil {
		t.Fatal(err)
	}
	tr, _, err := f.env.Trace(ctx, k, f.env.Dir.Config.Scope)
	if err != nil {
		t.Fatal(err)
	}
	if err := worker.EnqueueDue(ctx, f.env, tr, "TICKET-W", due); err != nil {
		t.Fatal(err)
	}
	// Suppression is immediate: the erasure waits for its window, the read
	// path hides the subject now.
	if r, err := f.docs.Get(ctx, id); err != nil || r != nil {
		t.Fatalf("read of %s right after its erasure was queued = %+v, %v; want nothing (suppressed)", id, r, err)
	}
	return tr
}

func (f *windowFixture) jobs(t *testing.T) map[string]lineage.Job {
	t.Helper()
	js, err := f.q.Jobs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]lineage.Job{}
	for _, j := range js {
		out[j.ID] = j
	}
	return out
}

// TestWindowsMeetDueDates: erasures with different due dates are run in
// windows, on a clock the test moves (the worker's Now), so that each is
// done before its due date: a window forced early by the earliest due date
// minus the margin, and one that closes when the oldest erasure has waited
// the window's length. Each erasure has its own certificate, its job
// is done with that certificate's digest, and its delete persistence
// latency was measured on the store.
func TestWindowsMeetDueDates(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { testWindowsMeetDueDates(t, "") })
	t.Run("postgres", func(t *testing.T) { testWindowsMeetDueDates(t, pgtest.DB(t)) })
}

func testWindowsMeetDueDates(t *testing.T, ledger string) {
	ctx := context.Background()
	f := newWindowFixture(t, ledger)
	start := time.Now()
	clock := start
	dues := map[string]time.Time{}
	traces := map[string]*lineage.Trace{}
	queue := func(id string, due time.Duration) { // 0: the default deadline
		var at time.Time
		if due > 0 {
			at = clock.Add(due)
		}
		tr := f.queue(t, id, id+"@example.org", at)
		traces[id] = tr
		if dues[tr.ID] = f.jobs(t)[tr.ID].Due; dues[tr.ID].IsZero() {
			t.Fatalf("%s queued without a due date", id)
		}
	}
	var done []string
	finished := map[string]time.Time{}
	latency := map[string][]saga.StoreLatency{}
	w := &worker.Worker{Env: f.env, Queue: f.q, ID: "w-window", Lease: time.Minute, Poll: time.Second,
		Window: &worker.Window{Wait: 24 * time.Hour, Max: 10, Margin: 30 * time.Minute},
		Now:    func() time.Time { return clock },
		Finished: func(j *lineage.Job, res *saga.Result) {
			done = append(done, j.ID)
			finished[j.ID] = clock
		},
		Latency: func(j *lineage.Job, _ *saga.Result, ls []saga.StoreLatency) { latency[j.ID] = ls },
	}
	// window runs the window that must close next, at the time it must,
	// after checking that it does not a second before, and returns the ids
	// of the traces it ran, in order.
	window := func(name string, wantNext time.Time) []string {
		t.Helper()
		ran, failed, next, err := w.Tick(ctx, false)
		if err != nil || ran != 0 || failed != 0 {
			t.Fatalf("%s: tick before it is due: ran %d, failed %d, %v; want nothing run", name, ran, failed, err)
		}
		if !next.Equal(wantNext) {
			t.Fatalf("%s: closes at %v, want %v", name, next, wantNext)
		}
		clock = next.Add(-time.Second)
		if ran, _, _, err := w.Tick(ctx, false); err != nil || ran != 0 {
			t.Fatalf("%s: tick a second early: ran %d, %v", name, ran, err)
		}
		clock = next
		done = nil
		if ran, failed, _, err := w.Tick(ctx, false); err != nil || ran == 0 || failed != 0 {
			t.Fatalf("%s: ran %d, failed %d, %v", name, ran, failed, err)
		}
		return done
	}

	// A job due soon forces the window early (its due date minus the
	// margin); one due in 20 days is in the same window.
	queue("late", 20*24*time.Hour)
	queue("soon", 2*time.Hour)
	if got := window("window 1", dues[traces["soon"].ID].Add(-30*time.Minute)); len(got) != 2 || got[0] != traces["soon"].ID || got[1] != traces["late"].ID {
		t.Fatalf("window 1 ran %v, want soon then late (earliest due first)", got)
	}
	// Far due dates: the window closes when the oldest has waited 24h.
	queue("default", 0)
	queue("far", 25*24*time.Hour)
	if d := dues[traces["default"].ID]; d.Sub(start) < state.DefaultErasureDeadline-time.Minute || d.Sub(start) > state.DefaultErasureDeadline+time.Minute {
		t.Errorf("default due date %v, want about now + %s", d, state.DefaultErasureDeadline)
	}
	oldest := f.jobs(t)[traces["default"].ID].EnqueuedAt
	if got := window("window 2", oldest.Add(24*time.Hour)); len(got) != 2 {
		t.Fatalf("window 2 ran %v, want default and far", got)
	}
	if ran, _, next, err := w.Tick(ctx, false); err != nil || ran != 0 || !next.IsZero() {
		t.Fatalf("tick on an empty queue: ran %d, next %v, %v", ran, next, err)
	}

	jobs := f.jobs(t)
	certs := map[string]bool{}
	for id, j := range jobs {
		if j.State != lineage.JobDone || j.Attempts != 1 {
			t.Errorf("job %s: %s after %d claims (%s), want done after 1", id, j.State, j.Attempts, j.Error)
		}
		if at, ok := finished[id]; !ok || at.After(dues[id]) {
			t.Errorf("job %s finished at %v, due %v", id, at, dues[id])
		}
		b, err := f.env.Durable().Certificate(ctx, saga.ID(id))
		if err != nil {
			t.Fatalf("job %s: its own certificate: %v", id, err)
		}
		if j.Certificate != saga.Digest(b) || certs[j.Certificate] {
			t.Errorf("job %s completed with %q: want its own certificate's digest", id, j.Certificate)
		}
		certs[j.Certificate] = true
		ls := latency[id]
		if len(ls) != 1 || ls[0].Store != "docs" || ls[0].State != saga.LatencyClean || ls[0].Latency <= 0 || ls[0].Latency > time.Since(start) {
			t.Errorf("job %s: delete persistence latency %+v, want docs clean, measured in (0, %s]", id, ls, time.Since(start))
		}
		// Measured again later from what is kept: the same.
		again, err := saga.PersistenceLatency(ctx, f.env.Durable(), saga.ID(id), j.EnqueuedAt)
		if err != nil || len(again) != 1 || again[0] != ls[0] {
			t.Errorf("job %s: latency again = %+v, %v; want %+v", id, again, err, ls)
		}
	}
	if len(jobs) != 4 || len(certs) != 4 {
		t.Errorf("%d jobs, %d certificates; want 4 each", len(jobs), len(certs))
	}
}

// A due date in the past or more than a month away is refused, and nothing
// is queued or suppressed.
func TestEnqueueDueRange(t *testing.T) {
	ctx := context.Background()
	f := newWindowFixture(t, "")
	if err := f.docs.Put(ctx, capture.Doc{ID: "range-1", Kind: sqlitedoc.KindDocument, Subject: "range@example.org", Text: "Document range-1 about order 5521 at gate four."}); err != nil {
		t.Fatal(err)
	}
	k, err := f.env.Dir.Keyer.Key(f.env.Dir.Config.Scope, "range@example.org")
	if err != nil {
		t.Fatal(err)
	}
	tr, _, err := f.env.Trace(ctx, k, f.env.Dir.Config.Scope)
	if err != nil {
		t.Fatal(err)
	}
	for _, due := range []time.Time{time.Now().Add(-time.Minute), time.Now().Add(lineage.MaxDue + time.Hour)} {
		if err := worker.EnqueueDue(ctx, f.env, tr, "TICKET-R", due); !errors.Is(err, lineage.ErrDue) {
			t.Errorf("due %v: %v, want ErrDue", due, err)
		}
	}
	if js := f.jobs(t); len(js) != 0 {
		t.Errorf("a refused due date queued %d jobs", len(js))
	}
	if r, err := f.docs.Get(ctx, "range-1"); err != nil || r == nil {
		t.Errorf("a refused due date suppressed the subject: %v, %v", r, err)
	}
}

// --drain runs every waiting erasure now, in windows of at most Max,
// whatever their due dates.
func TestWindowDrainRunsEverythingNow(t *testing.T) {
	ctx := context.Background()
	f := newWindowFixture(t, "")
	for _, id := range []string{"drain-1", "drain-2", "drain-3"} {
		f.queue(t, id, id+"@example.org", time.Now().Add(25*24*time.Hour))
	}
	n := 0
	w := &worker.Worker{Env: f.env, Queue: f.q, ID: "w-drain", Lease: time.Minute, Poll: time.Second, Drain: true,
		Window:   &worker.Window{Wait: 24 * time.Hour, Max: 2},
		Finished: func(*lineage.Job, *saga.Result) { n++ },
	}
	if err := w.Run(ctx); err != nil || n != 3 {
		t.Fatalf("--drain: %v, %d finished; want 3", err, n)
	}
	for id, j := range f.jobs(t) {
		if j.State != lineage.JobDone {
			t.Errorf("job %s: %s", id, j.State)
		}
	}
}
