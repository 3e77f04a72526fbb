package ledgertest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/lineage"
)

// RunQueue runs the checks of lineage.Queue; both handles must implement it.
func RunQueue(t *testing.T, open PairOpener) {
	queues := func(t *testing.T) (lineage.Queue, lineage.Queue) {
		a, b := open(t)
		qa, okA := a.(lineage.Queue)
		qb, okB := b.(lineage.Queue)
		if !okA || !okB {
			t.Fatalf("%T does not implement lineage.Queue", a)
		}
		return qa, qb
	}
	t.Run("EnqueueIdempotentAndFIFO", func(t *testing.T) { testEnqueue(t, queues) })
	t.Run("FencedFinish", func(t *testing.T) { testFinish(t, queues) })
	t.Run("LeaseExpiryAndRenew", func(t *testing.T) { testLease(t, queues) })
	t.Run("ConcurrentClaimsNeverShareAJob", func(t *testing.T) { testConcurrentClaims(t, queues) })
	t.Run("RoutedToOwnerHost", func(t *testing.T) { testRouted(t, queues) })
	t.Run("WindowsByDueDate", func(t *testing.T) { testWindow(t, queues) })
	t.Run("ListQueueReadOnly", func(t *testing.T) { testListQueue(t, queues) })
	t.Run("ListQueueDoneResolvesFailed", func(t *testing.T) { testListQueueDoneResolves(t, queues) })
	t.Run("SubjectStateQueued", func(t *testing.T) { testSubjectQueued(t, queues) })
	t.Run("InstallationValues", func(t *testing.T) {
		a, b := open(t)
		testInstallation(t, a, b)
	})
}

// Subject returns a valid keyed subject digest for queue tests.
func Subject(t testing.TB, raw string) string { return key(t, Keyer(t), "default", raw).String() }

func enqueue(t *testing.T, q lineage.Queue, n int) []string {
	t.Helper()
	var ids []string
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("trace-%03d", i)
		if err := q.Enqueue(context.Background(), id, Subject(t, id+"@example.org"), "default", "TICKET-1"); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

func claim(t *testing.T, q lineage.Queue, worker string, lease time.Duration) *lineage.Job {
	t.Helper()
	j, err := q.Claim(context.Background(), worker, lease)
	if err != nil {
		t.Fatalf("%s: claim: %v", worker, err)
	}
	return j
}

func noJob(t *testing.T, q lineage.Queue, why string) {
	t.Helper()
	if j, err := q.Claim(context.Background(), "w-probe", time.Minute); !errors.Is(err, lineage.ErrNoJob) {
		t.Fatalf("%s: claim = %+v, %v; want ErrNoJob", why, j, err)
	}
}

func testEnqueue(t *testing.T, queues func(*testing.T) (lineage.Queue, lineage.Queue)) {
	ctx := context.Background()
	q, other := queues(t)
	noJob(t, q, "empty queue")
	ids := enqueue(t, q, 3)
	enqueue(t, other, 3) // again, through the other handle: no-op
	if err := q.Enqueue(ctx, "trace-x", "alice@example.org", "default", "T"); err == nil {
		t.Errorf("Enqueue accepted a raw subject id")
	}
	if err := q.Enqueue(ctx, "trace-x", Subject(t, "x"), "default", ""); err == nil {
		t.Errorf("Enqueue accepted an empty reason")
	}
	jobs, err := q.Jobs(ctx)
	if err != nil || len(jobs) != 3 {
		t.Fatalf("Jobs = %d, %v; want 3 (enqueue is idempotent per trace)", len(jobs), err)
	}
	for i, id := range ids {
		j := claim(t, q, "w1", time.Minute)
		if j.ID != id || j.State != lineage.JobClaimed || j.Worker != "w1" || j.Attempts != 1 || j.Reason != "TICKET-1" || j.Scope != "default" {
			t.Errorf("claim %d = %+v, want %s claimed by w1 (oldest first)", i, j, id)
		}
		if time.Until(j.LeaseUntil) < 30*time.Second {
			t.Errorf("lease ends %v, want about a minute from now", j.LeaseUntil)
		}
	}
	noJob(t, q, "every job claimed")
}

func testFinish(t *testing.T, queues func(*testing.T) (lineage.Queue, lineage.Queue)) {
	ctx := context.Background()
	q, _ := queues(t)
	enqueue(t, q, 3)
	done, failed, released := claim(t, q, "w1", time.Minute), claim(t, q, "w1", time.Minute), claim(t, q, "w1", time.Minute)
	if err := q.Complete(ctx, done, "cert-1"); err != nil {
		t.Fatal(err)
	}
	if err := q.Complete(ctx, done, "cert-1"); err != nil {
		t.Errorf("completing again with the same certificate = %v, want nil", err)
	}
	if err := q.Complete(ctx, done, "cert-2"); !errors.Is(err, lineage.ErrLeaseLost) {
		t.Errorf("completing again with another certificate = %v, want ErrLeaseLost", err)
	}
	if err := q.Fail(ctx, failed, "stale trace"); err != nil {
		t.Fatal(err)
	}
	if err := q.Release(ctx, failed, 0, ""); !errors.Is(err, lineage.ErrLeaseLost) {
		t.Errorf("release of a failed job = %v, want ErrLeaseLost", err)
	}
	if err := q.Release(ctx, released, time.Hour, "delete:vectors: store unreachable"); err != nil {
		t.Fatal(err)
	}
	noJob(t, q, "done, failed, and released for an hour")
	jobs, err := q.Jobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []lineage.Job{
		{ID: done.ID, State: lineage.JobDone, Worker: "w1", Attempts: 1, Certificate: "cert-1"},
		{ID: failed.ID, State: lineage.JobFailed, Worker: "w1", Attempts: 1, Error: "stale trace"},
		{ID: released.ID, State: lineage.JobPending, Worker: "w1", Attempts: 1, Error: "delete:vectors: store unreachable"},
	}
	for i, j := range jobs {
		if j.ID != want[i].ID || j.State != want[i].State || j.Worker != want[i].Worker || j.Attempts != want[i].Attempts || j.Certificate != want[i].Certificate || j.Error != want[i].Error {
			t.Errorf("job %d = %+v, want %+v", i, j, want[i])
		}
	}
	// Released with no delay: claimable at once, by anyone.
	enqueue(t, q, 4)
	j := claim(t, q, "w1", time.Minute)
	if err := q.Release(ctx, j, 0, "probe:docs: timed out"); err != nil {
		t.Fatal(err)
	}
	again := claim(t, q, "w2", time.Minute)
	if again.ID != j.ID || again.Attempts != 2 {
		t.Errorf("after release: claim = %+v, want %s again (attempt 2)", again, j.ID)
	}
	// Released with no reason (the worker stopped): the error of the
	// earlier attempt stays, the job is claimable at once.
	if err := q.Release(ctx, again, 0, ""); err != nil {
		t.Fatal(err)
	}
	jobs, err = q.Jobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, job := range jobs {
		if job.ID == j.ID && (job.State != lineage.JobPending || job.Error != "probe:docs: timed out") {
			t.Errorf("released without a reason: %+v, want pending with the earlier error", job)
		}
	}
}

func testLease(t *testing.T, queues func(*testing.T) (lineage.Queue, lineage.Queue)) {
	ctx := context.Background()
	q, other := queues(t)
	enqueue(t, q, 2)
	// kept is renewed at once to a minute; crashed is never renewed. Once
	// both original leases are over, only crashed is claimable, although
	// kept is older: a renewed lease holds, an expired one does not.
	start := time.Now()
	kept := claim(t, q, "w-alive", 1500*time.Millisecond)
	if err := q.Renew(ctx, kept, time.Minute); err != nil {
		t.Fatal(err)
	}
	crashed := claim(t, q, "w-crashed", 300*time.Millisecond)
	time.Sleep(time.Until(start.Add(1800 * time.Millisecond)))
	again := claim(t, other, "w2", time.Minute)
	if again.ID != crashed.ID || again.Attempts != 2 || again.Worker != "w2" {
		t.Fatalf("claim after the leases = %+v, want %s re-claimed by w2 (attempt 2), not the renewed %s", again, crashed.ID, kept.ID)
	}
	noJob(t, other, "the renewed lease is still running")
	for name, f := range map[string]func() error{
		"Renew":    func() error { return q.Renew(ctx, crashed, time.Minute) },
		"Complete": func() error { return q.Complete(ctx, crashed, "cert") },
		"Fail":     func() error { return q.Fail(ctx, crashed, "x") },
		"Release":  func() error { return q.Release(ctx, crashed, 0, "") },
	} {
		if err := f(); !errors.Is(err, lineage.ErrLeaseLost) {
			t.Errorf("%s by the worker whose lease ran out = %v, want ErrLeaseLost", name, err)
		}
	}
	if err := other.Complete(ctx, again, "cert"); err != nil {
		t.Errorf("Complete by the current claim: %v", err)
	}
	if err := q.Complete(ctx, kept, "cert-kept"); err != nil {
		t.Errorf("Complete by the renewed claim: %v", err)
	}
}

// testConcurrentClaims: goroutines on both handles (separate connections)
// claim at once until the queue is empty; no job is handed out twice.
func testConcurrentClaims(t *testing.T, queues func(*testing.T) (lineage.Queue, lineage.Queue)) {
	ctx := context.Background()
	qa, qb := queues(t)
	ids := enqueue(t, qa, 40)
	var mu sync.Mutex
	claimedBy := map[string][]string{}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			q, name := qa, fmt.Sprintf("w%d", w)
			if w%2 == 1 {
				q = qb
			}
			for {
				j, err := q.Claim(ctx, name, time.Minute)
				if errors.Is(err, lineage.ErrNoJob) {
					return
				}
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				claimedBy[j.ID] = append(claimedBy[j.ID], name)
				mu.Unlock()
				if err := q.Complete(ctx, j, "cert-"+j.ID); err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, id := range ids {
		if len(claimedBy[id]) != 1 {
			t.Errorf("job %s claimed by %v, want exactly one worker", id, claimedBy[id])
		}
	}
	jobs, err := qb.Jobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if j.State != lineage.JobDone || j.Attempts != 1 {
			t.Errorf("job %s: %s after %d claims, want done after 1", j.ID, j.State, j.Attempts)
		}
	}
}
