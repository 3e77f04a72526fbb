package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/internal/erasure"
	"github.com/amnesia-dev/amnesia/internal/pgtest"
	"github.com/amnesia-dev/amnesia/internal/queuestatus"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/worker"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
)

// requeueRun runs the worker over everything queued, one erasure at a time
// (--once) or in a window (--drain), and returns what it reported.
type requeueRun struct {
	continued []*worker.Continued
	finished  map[string]*saga.Result // by job (queued trace) id
	failed    error
}

func runQueued(t *testing.T, f *windowFixture, windowed bool) *requeueRun {
	t.Helper()
	r := &requeueRun{finished: map[string]*saga.Result{}}
	w := &worker.Worker{Env: f.env, Queue: f.q, ID: "w-requeue", Lease: time.Minute, Poll: time.Second,
		Continued: func(_ *lineage.Job, c *worker.Continued) { r.continued = append(r.continued, c) },
		Finished:  func(j *lineage.Job, res *saga.Result) { r.finished[j.ID] = res },
	}
	if windowed {
		w.Drain = true
		w.Window = &worker.Window{Wait: 24 * time.Hour, Max: 10}
	} else {
		w.Once = true
	}
	r.failed = w.Run(context.Background())
	return r
}

func (f *windowFixture) put(t *testing.T, id, owner, text string) {
	t.Helper()
	if err := f.docs.Put(context.Background(), capture.Doc{ID: id, Kind: sqlitedoc.KindDocument, Subject: owner, Text: text}); err != nil {
		t.Fatal(err)
	}
}

// A capture for a subject after its erasure was queued (and suppressed)
// makes the queued trace stale. At the claim, or the start of the window,
// the worker traces the subject again: the later trace only adds an
// artifact, so the erasure goes on with it, says so, and its certificate
// is complete and lists the later artifact too. The job is done with that
// certificate's digest, and both documents are gone from the store.
func TestQueuedErasureTakesLaterCaptures(t *testing.T) {
	for _, c := range []struct {
		name, ledger string
		windowed     bool
	}{
		{"sqlite/one", "", false}, {"sqlite/window", "", true},
		{"postgres/one", "pg", false}, {"postgres/window", "pg", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ledger := ""
			if c.ledger == "pg" {
				ledger = pgtest.DB(t)
			}
			testQueuedErasureTakesLaterCaptures(t, ledger, c.windowed)
		})
	}
}

func testQueuedErasureTakesLaterCaptures(t *testing.T, ledger string, windowed bool) {
	ctx := context.Background()
	f := newWindowFixture(t, ledger)
	owner := "later@example.org"
	queued := f.queue(t, "later-1", owner, time.Time{})
	// Captured after the request: hidden at once (capture suppresses what
	// it records for a subject with a queued erasure), and the queued
	// trace no longer matches the ledger.
	f.put(t, "later-2", owner, "Document later-2 was written after the erasure request, about parcel 7731 at dock nine.")
	if rec, err := f.docs.Get(ctx, "later-2"); err != nil || rec != nil {
		t.Fatalf("read of a document captured after the request = %+v, %v; want nothing (suppressed)", rec, err)
	}
	// Another subject's capture is not touched.
	f.put(t, "bystander-1", "bystander@example.org", "Document bystander-1 about parcel 7732 at dock ten.")
	if rec, err := f.docs.Get(ctx, "bystander-1"); err != nil || rec == nil {
		t.Fatalf("read of another subject's document = %v, %v; want it", rec, err)
	}
	if err := saga.CheckFresh(ctx, f.env.Ledger, queued); !errors.Is(err, saga.ErrStaleTrace) {
		t.Fatalf("queued trace after a later capture: %v, want ErrStaleTrace", err)
	}
	r := runQueued(t, f, windowed)
	if r.failed != nil {
		t.Fatalf("worker: %v", r.failed)
	}
	if len(r.continued) != 1 || r.continued[0].Queued.ID != queued.ID || r.continued[0].Added != 1 || r.continued[0].Resumed {
		t.Fatalf("continued = %+v, want one, of the queued trace, adding 1 artifact", r.continued)
	}
	later := r.continued[0].Now
	res := r.finished[queued.ID]
	if res == nil || res.ID != saga.ID(later.ID) || !res.Complete() {
		t.Fatalf("result = %+v, want the complete erasure %s of the later trace", res, saga.ID(later.ID))
	}
	inCert := map[string]string{}
	for _, a := range res.Statement.Predicate.Artifacts {
		inCert[a.ID] = a.Outcome
	}
	queuedIDs := map[string]bool{}
	for _, a := range queued.Artifacts {
		queuedIDs[a.ID] = true
	}
	newOnes := 0
	for _, a := range later.Artifacts {
		if inCert[a.ID] != "VERIFIED" {
			t.Errorf("artifact %s of the later trace: certificate outcome %q, want VERIFIED", a.ID, inCert[a.ID])
		}
		if !queuedIDs[a.ID] {
			newOnes++
		}
	}
	for id := range queuedIDs {
		if inCert[id] != "VERIFIED" {
			t.Errorf("artifact %s of the queued trace: certificate outcome %q, want VERIFIED", id, inCert[id])
		}
	}
	if newOnes != 1 {
		t.Errorf("the certificate covers %d artifacts captured after the request, want 1", newOnes)
	}
	j := f.jobs(t)[queued.ID]
	b, err := f.env.Durable().Certificate(ctx, res.ID)
	if err != nil {
		t.Fatal(err)
	}
	if j.State != lineage.JobDone || j.Certificate != saga.Digest(b) {
		t.Errorf("job: %s, certificate %q; want done with the later erasure's certificate %s", j.State, j.Certificate, saga.Digest(b))
	}
	for _, id := range []string{"later-1", "later-2"} {
		if rec, err := f.docs.Get(ctx, id); err != nil || rec != nil {
			t.Errorf("read of %s after the erasure = %+v, %v; want nothing", id, rec, err)
		}
	}
	if rec, err := f.docs.Get(ctx, "bystander-1"); err != nil || rec == nil {
		t.Errorf("read of another subject's document after the erasure = %v, %v; want it", rec, err)
	}
	// The next claim of the job (had the worker crashed) finds the
	// erasure that began with the later trace.
	if got, err := worker.ContinuedTrace(ctx, f.env, queued.ID); err != nil || got == nil || got.ID != later.ID {
		t.Errorf("ContinuedTrace = %v, %v; want the later trace", got, err)
	}
	// Status lists the job under its queued erasure id, continued as the
	// erasure whose certificate it has, and reads that one's journal for
	// the latency.
	st, err := queuestatus.Read(ctx, f.env.Ledger, queuestatus.Options{All: true, Durable: f.env.Durable()})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.History) != 1 || st.History[0].Erasure != saga.ID(queued.ID) || st.History[0].ContinuedAs != res.ID {
		t.Errorf("status history = %+v; want the job, continued as %s", st.History, res.ID)
	}
	if st.LatencyUnread != 0 || len(st.Latency) == 0 || st.Latency[0].Erasure != res.ID {
		t.Errorf("status latency = %+v (unread %d); want that of erasure %s", st.Latency, st.LatencyUnread, res.ID)
	}
	var text bytes.Buffer
	if err := queuestatus.Write(&text, st); err != nil || !strings.Contains(text.String(), saga.ID(queued.ID)+" (as "+res.ID+")") {
		t.Errorf("status text (%v):\n%s", err, text.String())
	}
}

// Anything else than artifacts added since the request still fails the
// queued erasure as stale, with a message that says what changed: an
// artifact of the queued trace recorded again with other content, one of
// them erased by another erasure, or all of them.
func TestQueuedErasureFailsWhenTraceChanged(t *testing.T) {
	for _, c := range []struct {
		name, ledger string
		windowed     bool
	}{
		{"sqlite/one", "", false}, {"sqlite/window", "", true},
		{"postgres/one", "pg", false}, {"postgres/window", "pg", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ledger := ""
			if c.ledger == "pg" {
				ledger = pgtest.DB(t)
			}
			testQueuedErasureFailsWhenTraceChanged(t, ledger, c.windowed)
		})
	}
}

func testQueuedErasureFailsWhenTraceChanged(t *testing.T, ledger string, windowed bool) {
	ctx := context.Background()
	f := newWindowFixture(t, ledger)
	// Changed: a document of the queued trace is written again with other
	// content (and a new one added).
	changed := f.queue(t, "chg-1", "changed@example.org", time.Time{})
	f.put(t, "chg-1", "changed@example.org", "Document chg-1 rewritten after the request, now about crate 4410 at bay two.")
	f.put(t, "chg-2", "changed@example.org", "Document chg-2 added after the request, about crate 4411 at bay three.")
	// Removed: one artifact of the queued trace marked erased by another
	// erasure (as a partial erasure elsewhere would), the other still there.
	f.put(t, "part-2", "part@example.org", "Document part-2 about crate 4413 at bay five.")
	removed := f.queue(t, "part-1", "part@example.org", time.Time{})
	if len(removed.Artifacts) != 2 {
		t.Fatalf("trace of part@: %d artifacts, want 2", len(removed.Artifacts))
	}
	if err := f.env.Ledger.MarkErased(ctx, []lineage.ErasureMark{{Artifact: removed.Artifacts[0].ID, Erasure: "er-elsewhere", Outcome: "VERIFIED"}}); err != nil {
		t.Fatal(err)
	}
	// Erased by another erasure: the subject erased directly while its
	// queued erasure waits.
	erased := f.queue(t, "gone-1", "gone@example.org", time.Time{})
	f.put(t, "gone-2", "gone@example.org", "Document gone-2 added after the request, about crate 4412 at bay four.")
	k, err := f.env.Dir.Keyer.Key(f.env.Dir.Config.Scope, "gone@example.org")
	if err != nil {
		t.Fatal(err)
	}
	tr, _, err := f.env.Begin(ctx, k, f.env.Dir.Config.Scope)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := f.env.Run(ctx, tr, "TICKET-DIRECT", erasure.Options{}); err != nil || !res.Complete() {
		t.Fatalf("direct erasure: %v, %v", res, err)
	}
	runs := 3 // --once: one job a run
	if windowed {
		runs = 1 // --drain: all in one window
	}
	for i := 0; i < runs; i++ {
		r := runQueued(t, f, windowed)
		if r.failed == nil || len(r.continued) != 0 || len(r.finished) != 0 {
			t.Fatalf("windowed %v: worker: %v, continued %d, finished %d; want a failure, nothing continued or finished", windowed, r.failed, len(r.continued), len(r.finished))
		}
	}
	jobs := f.jobs(t)
	for _, c := range []struct {
		tr   *lineage.Trace
		want string
	}{
		{changed, "1 artifacts of the queued trace changed"},
		{removed, "1 artifacts of the queued trace are no longer in the subject's trace"},
		{erased, "already erased"},
	} {
		j := jobs[c.tr.ID]
		if j.State != lineage.JobFailed || !strings.Contains(j.Error, "trace no longer matches the ledger") || !strings.Contains(j.Error, c.want) {
			t.Errorf("windowed %v: job %s: %s, %q; want failed as stale, saying %q", windowed, c.tr.ID, j.State, j.Error, c.want)
		}
		if strings.Contains(j.Error, "@example.org") || strings.Contains(j.Error, "chg-") || strings.Contains(j.Error, "gone-") || strings.Contains(j.Error, "part-") {
			t.Errorf("job error names the subject or a key: %q", j.Error)
		}
	}
}

// The operator queues a subject's erasure, the application captures more,
// and the operator queues the subject's new trace too: two jobs, one
// subject. The first goes on with the later trace, which is the second's:
// one erasure runs (in a window, once for both), and both jobs are done
// with its certificate.
func TestQueuedTwiceForOneSubject(t *testing.T) {
	for _, c := range []struct {
		name, ledger string
		windowed     bool
	}{
		{"sqlite/one", "", false}, {"sqlite/window", "", true},
		{"postgres/one", "pg", false}, {"postgres/window", "pg", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ledger := ""
			if c.ledger == "pg" {
				ledger = pgtest.DB(t)
			}
			testQueuedTwice(t, ledger, c.windowed)
		})
	}
}

func testQueuedTwice(t *testing.T, ledger string, windowed bool) {
	ctx := context.Background()
	f := newWindowFixture(t, ledger)
	owner := "twice@example.org"
	first := f.queue(t, "twice-1", owner, time.Time{})
	f.put(t, "twice-2", owner, "Document twice-2 was written after the first request, about parcel 7741 at dock eleven.")
	k, err := f.env.Dir.Keyer.Key(f.env.Dir.Config.Scope, owner)
	if err != nil {
		t.Fatal(err)
	}
	second, _, err := f.env.Trace(ctx, k, f.env.Dir.Config.Scope)
	if err != nil {
		t.Fatal(err)
	}
	if err := worker.EnqueueDue(ctx, f.env, second, "TICKET-W2", time.Time{}); err != nil {
		t.Fatal(err)
	}
	runs := 2
	if windowed {
		runs = 1
	}
	for i := 0; i < runs; i++ {
		if r := runQueued(t, f, windowed); r.failed != nil {
			t.Fatalf("worker: %v", r.failed)
		}
	}
	jobs := f.jobs(t)
	b, err := f.env.Durable().Certificate(ctx, saga.ID(second.ID))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{first.ID, second.ID} {
		if j := jobs[id]; j.State != lineage.JobDone || j.Certificate != saga.Digest(b) {
			t.Errorf("job %s: %s (%s), certificate %q; want done with erasure %s's certificate", id, j.State, j.Error, j.Certificate, saga.ID(second.ID))
		}
	}
	if ids, err := f.env.Durable().Certificates(ctx); err != nil || len(ids) != 1 {
		t.Errorf("certificates = %v, %v; want one", ids, err)
	}
}

// A capture for the subject after the worker traced it (traceToRun) and
// before the erasure's own freshness check (after the preflight and the
// file-store lock) makes the trace stale before its erasure starts. The
// worker traces the subject again and the erasure goes on with the new
// trace: the job is done and the capture of the gap erased too. A subject
// that gets a capture at each try is released for a retry, never failed.
func TestQueuedErasureCaptureBeforeStart(t *testing.T) {
	for _, c := range []struct {
		name, ledger string
		windowed     bool
	}{
		{"sqlite/one", "", false}, {"sqlite/window", "", true},
		{"postgres/one", "pg", false}, {"postgres/window", "pg", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ledger := ""
			if c.ledger == "pg" {
				ledger = pgtest.DB(t)
			}
			testCaptureBeforeStart(t, ledger, c.windowed)
		})
	}
}

func testCaptureBeforeStart(t *testing.T, ledger string, windowed bool) {
	ctx := context.Background()
	f := newWindowFixture(t, ledger)
	owner := "gap@example.org"
	queued := f.queue(t, "gap-1", owner, time.Time{})
	calls := 0
	worker.TestBeforeRun = func(string) {
		if calls++; calls == 1 {
			f.put(t, "gap-2", owner, "Document gap-2 was written as the erasure was about to start, about parcel 7751 at dock twelve.")
		}
	}
	defer func() { worker.TestBeforeRun = nil }()
	r := runQueued(t, f, windowed)
	if r.failed != nil {
		t.Fatalf("worker: %v", r.failed)
	}
	res := r.finished[queued.ID]
	if res == nil || !res.Complete() || len(res.Statement.Predicate.Artifacts) != 2 {
		t.Fatalf("result = %+v, want a complete erasure of both documents", res)
	}
	if j := f.jobs(t)[queued.ID]; j.State != lineage.JobDone {
		t.Fatalf("job: %s (%s), want done", j.State, j.Error)
	}
	for _, id := range []string{"gap-1", "gap-2"} {
		if rec, err := f.docs.Get(ctx, id); err != nil || rec != nil {
			t.Errorf("read of %s after the erasure = %+v, %v; want nothing", id, rec, err)
		}
	}

	// A capture at every try: released for a retry, not failed.
	again := f.queue(t, "gap-3", "gap2@example.org", time.Time{})
	n := 0
	worker.TestBeforeRun = func(string) {
		n++
		f.put(t, "gap-4-"+string(rune('a'+n)), "gap2@example.org", "Document gap-4 written again and again as the erasure was about to start, about parcel 7752.")
	}
	r = runQueued(t, f, windowed)
	if r.failed == nil || len(r.finished) != 0 {
		t.Fatalf("worker: %v, finished %d; want an error and nothing finished", r.failed, len(r.finished))
	}
	j := f.jobs(t)[again.ID]
	if j.State != lineage.JobPending || n != 3 {
		t.Errorf("job: %s (%q), %d tries; want pending (released for a retry) after 3 tries", j.State, j.Error, n)
	}
	if c, err := f.q.Claim(ctx, "w-probe", time.Minute); !errors.Is(err, lineage.ErrNoJob) {
		t.Errorf("claim right after the release = %+v, %v; want none (released with the retry delay)", c, err)
	}
	if !windowed && !strings.Contains(r.failed.Error(), "each time its erasure was about to start (3 tries)") {
		t.Errorf("worker: %v; want it to say why", r.failed)
	}
}

// Job A is queued, the subject gets a capture, job B is queued with the
// new trace, and the subject gets another capture. A goes on with the
// latest trace and erases everything; B then finds nothing left: it fails,
// saying so, and status counts it resolved (A was done after B was
// queued), so that `amnesia status` does not exit 25 for it forever.
func TestQueuedErasureAllErasedByAnEarlierJob(t *testing.T) {
	for _, c := range []struct{ name, ledger string }{{"sqlite", ""}, {"postgres", "pg"}} {
		t.Run(c.name, func(t *testing.T) {
			ledger := ""
			if c.ledger == "pg" {
				ledger = pgtest.DB(t)
			}
			ctx := context.Background()
			f := newWindowFixture(t, ledger)
			owner := "thrice@example.org"
			a := f.queue(t, "thrice-1", owner, time.Time{})
			f.put(t, "thrice-2", owner, "Document thrice-2 was written after the first request, about parcel 7761 at dock fourteen.")
			k, err := f.env.Dir.Keyer.Key(f.env.Dir.Config.Scope, owner)
			if err != nil {
				t.Fatal(err)
			}
			b, _, err := f.env.Trace(ctx, k, f.env.Dir.Config.Scope)
			if err != nil {
				t.Fatal(err)
			}
			if err := worker.EnqueueDue(ctx, f.env, b, "TICKET-W3", time.Time{}); err != nil {
				t.Fatal(err)
			}
			f.put(t, "thrice-3", owner, "Document thrice-3 was written after the second request, about parcel 7762 at dock fifteen.")
			if r := runQueued(t, f, false); r.failed != nil || r.finished[a.ID] == nil {
				t.Fatalf("first run: %v, finished %v; want job A done", r.failed, r.finished)
			}
			if r := runQueued(t, f, false); r.failed == nil {
				t.Fatalf("second run: no error; want job B failed")
			}
			jb := f.jobs(t)[b.ID]
			if jb.State != lineage.JobFailed || !strings.Contains(jb.Error, "nothing is left for this one to erase") {
				t.Fatalf("job B: %s (%q); want failed, saying nothing is left", jb.State, jb.Error)
			}
			st, err := queuestatus.Read(ctx, f.env.Ledger, queuestatus.Options{All: true, Durable: f.env.Durable()})
			if err != nil {
				t.Fatal(err)
			}
			if st.Counts.Failed != 1 || st.Counts.FailedUnresolved != 0 || st.Attention {
				t.Errorf("status counts %+v, attention %v; want B failed but resolved", st.Counts, st.Attention)
			}
			for _, j := range st.History {
				if j.Trace == b.ID && j.FollowedBy != saga.ID(a.ID) {
					t.Errorf("job B followed by %q, want %s", j.FollowedBy, saga.ID(a.ID))
				}
			}
		})
	}
}

// The later trace and its continued ref are written under the claim
// (saga.Fenced): in the ledger, a worker whose claim was lost (its lease
// ran out and another worker claimed the job) cannot write them; the
// current claim can.
func TestContinuedRefFencedByClaim(t *testing.T) {
	ctx := context.Background()
	f := newWindowFixture(t, pgtest.DB(t))
	queued := f.queue(t, "fence-1", "fence@example.org", time.Time{})
	old, err := f.q.Claim(ctx, "w-old", 200*time.Millisecond)
	if err != nil || old.ID != queued.ID {
		t.Fatalf("claim = %+v, %v", old, err)
	}
	time.Sleep(300 * time.Millisecond)
	cur, err := f.q.Claim(ctx, "w-new", time.Minute)
	if err != nil || cur.ID != queued.ID {
		t.Fatalf("claim after the lease ran out = %+v, %v", cur, err)
	}
	b, err := queued.Encode()
	if err != nil {
		t.Fatal(err)
	}
	ref := queued.ID + ".continued"
	if err := saga.Fenced(f.env.Durable(), old).SaveTrace(ctx, ref, b); !errors.Is(err, lineage.ErrLeaseLost) {
		t.Fatalf("save under a lost claim: %v, want ErrLeaseLost", err)
	}
	if got, err := worker.ContinuedTrace(ctx, f.env, queued.ID); err != nil || got != nil {
		t.Fatalf("ref after a refused save = %v, %v; want none", got, err)
	}
	if err := saga.Fenced(f.env.Durable(), cur).SaveTrace(ctx, ref, b); err != nil {
		t.Fatalf("save under the current claim: %v", err)
	}
}

// A window whose start finds one erasure's trace stale (a capture for its
// subject after the worker traced it) stops on that erasure's error, which
// names it (saga.BatchError): it runs alone, traced again, and the other
// erasures run again as one window, not one by one. All end done.
func TestWindowStoppedByOneErasureRebatchesTheOthers(t *testing.T) {
	f := newWindowFixture(t, "")
	var logs bytes.Buffer
	f.env.Log = slog.New(slog.NewJSONHandler(&logs, nil))
	var queued []*lineage.Trace
	for i := range 4 {
		queued = append(queued, f.queue(t, fmt.Sprintf("rb-%d", i), fmt.Sprintf("rb%d@example.org", i), time.Time{}))
	}
	stale := queued[2]
	done := false
	worker.TestBeforeRun = func(id string) {
		if id == stale.ID && !done {
			done = true
			f.put(t, "rb-2-late", "rb2@example.org", "Document rb-2-late was written as its window was about to start, about parcel 9120.")
		}
	}
	defer func() { worker.TestBeforeRun = nil }()
	r := runQueued(t, f, true)
	if r.failed != nil {
		t.Fatalf("worker: %v", r.failed)
	}
	jobs := f.jobs(t)
	for i, q := range queued {
		if j := jobs[q.ID]; j.State != lineage.JobDone {
			t.Errorf("job %d: %s (%s), want done", i, j.State, j.Error)
		}
		res := r.finished[q.ID]
		want := 1
		if q == stale {
			want = 2 // with the later capture
		}
		if res == nil || !res.Complete() || len(res.Statement.Predicate.Artifacts) != want {
			t.Errorf("job %d: result %+v, want a complete erasure of %d documents", i, res, want)
		}
	}
	var rebatched, oneByOne int
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil {
			continue
		}
		switch msg, _ := rec["msg"].(string); {
		case strings.Contains(msg, "the others again as one window"):
			rebatched++
			if rec["erasure"] != saga.ID(stale.ID) {
				t.Errorf("the window stopped on erasure %v, want the stale one %s", rec["erasure"], saga.ID(stale.ID))
			}
		case strings.Contains(msg, "one by one"):
			oneByOne++
		}
	}
	if rebatched != 1 || oneByOne != 0 {
		t.Errorf("log: %d re-batched windows, %d one-by-one runs; want 1 and 0\n%s", rebatched, oneByOne, logs.String())
	}
}
