package ledgertest

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/lineage"
)

// testListQueue: ListQueue counts every job by state, lists the open jobs
// in claim order (bounded by the limit, counts not), the finished ones
// latest first when asked, tells which failed job a later job of the same
// subject followed, and changes nothing (the jobs read the same before and
// after, and are still claimable).
func testListQueue(t *testing.T, queues func(*testing.T) (lineage.Queue, lineage.Queue)) {
	ctx := context.Background()
	qa, qb := queues(t)
	wa, okA := qa.(lineage.WindowQueue)
	lb, okB := qb.(lineage.QueueLister)
	if !okA || !okB {
		t.Fatalf("%T does not implement lineage.WindowQueue and lineage.QueueLister", qa)
	}
	if _, err := lb.ListQueue(ctx, lineage.QueueListOptions{}); err == nil {
		t.Errorf("ListQueue accepted a limit of 0")
	}
	empty, err := lb.ListQueue(ctx, lineage.QueueListOptions{Limit: 10, History: true})
	if err != nil {
		t.Fatal(err)
	}
	if empty.Pending+empty.Claimed+empty.Done+empty.Failed != 0 || len(empty.Open)+len(empty.History) != 0 {
		t.Errorf("ListQueue of an empty queue = %+v", empty)
	}
	if d := time.Since(empty.Now); d > 5*time.Second || d < -5*time.Second {
		t.Errorf("ListQueue.Now = %v, want the ledger's clock about now", empty.Now)
	}
	base := time.Now().Truncate(time.Millisecond)
	for _, j := range []struct {
		id, subject string
		due         time.Time
	}{
		{"s-a", "a", base.Add(time.Hour)},
		{"s-b", "b", base.Add(-time.Hour)}, // overdue
		{"s-c", "c", time.Time{}},          // no due date: due when queued
		{"s-d", "d", base.Add(2 * time.Hour)},
		{"s-e", "e", base.Add(3 * time.Hour)},
		{"s-f", "f", base.Add(4 * time.Hour)},
	} {
		if err := wa.EnqueueDue(ctx, j.id, Subject(t, j.subject), "default", "TICKET-7", "", j.due); err != nil {
			t.Fatal(err)
		}
	}
	tick := func() { time.Sleep(5 * time.Millisecond) } // distinct finish times
	b := claim(t, qa, "w-1", time.Hour)
	c := claim(t, qa, "w-1", time.Hour)
	a := claim(t, qa, "w-1", time.Hour)
	d := claim(t, qa, "w-1", time.Hour)
	if b.ID != "s-b" || c.ID != "s-c" || a.ID != "s-a" || d.ID != "s-d" {
		t.Fatalf("claim order %s %s %s %s, want s-b s-c s-a s-d", b.ID, c.ID, a.ID, d.ID)
	}
	if err := qa.Complete(ctx, c, "sha256:cert-c"); err != nil {
		t.Fatal(err)
	}
	tick()
	if err := qa.Fail(ctx, a, "the trace no longer matches the ledger"); err != nil {
		t.Fatal(err)
	}
	tick()
	if err := qa.Fail(ctx, d, "the trace no longer matches the ledger"); err != nil {
		t.Fatal(err)
	}
	// d's subject is queued again (a new trace): d's failure is followed.
	if err := wa.EnqueueDue(ctx, "s-g", Subject(t, "d"), "default", "TICKET-7", "", base.Add(5*time.Hour)); err != nil {
		t.Fatal(err)
	}
	// A job without a due date (queued before due dates existed) is never
	// overdue; it is claimed as due when it was queued.
	if err := wa.EnqueueDue(ctx, "s-h", Subject(t, "h"), "default", "TICKET-7", "", time.Time{}); err != nil {
		t.Fatal(err)
	}
	before, err := qb.Jobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l, err := lb.ListQueue(ctx, lineage.QueueListOptions{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if l.Pending != 4 || l.Claimed != 1 || l.Done != 1 || l.Failed != 2 || l.FailedUnresolved != 1 || l.Overdue != 1 {
		t.Errorf("counts pending %d claimed %d done %d failed %d (unresolved %d) overdue %d, want 4 1 1 2 (1) 1", l.Pending, l.Claimed, l.Done, l.Failed, l.FailedUnresolved, l.Overdue)
	}
	if got := listedIDs(l.Open); !reflect.DeepEqual(got, []string{"s-b", "s-h", "s-e", "s-f", "s-g"}) {
		t.Errorf("open jobs %v, want s-b s-h s-e s-f s-g (claim order)", got)
	}
	if len(l.History) != 0 {
		t.Errorf("history listed without History: %v", listedIDs(l.History))
	}
	for _, j := range l.Open {
		switch j.ID {
		case "s-b":
			if j.State != lineage.JobClaimed || j.Worker != "w-1" || j.Attempts != 1 || !j.LeaseUntil.After(l.Now) || !j.Overdue(l.Now) {
				t.Errorf("s-b listed as %+v (overdue %v), want claimed by w-1, attempt 1, leased, overdue", j, j.Overdue(l.Now))
			}
		default:
			if j.State != lineage.JobPending || j.Overdue(l.Now) || j.Due.IsZero() != (j.ID == "s-h") || j.AvailableAt.IsZero() || j.EnqueuedAt.IsZero() {
				t.Errorf("%s listed as %+v, want pending, due later, not overdue", j.ID, j)
			}
		}
		if j.Subject != Subject(t, map[string]string{"s-b": "b", "s-e": "e", "s-f": "f", "s-g": "d", "s-h": "h"}[j.ID]) || j.Reason != "TICKET-7" {
			t.Errorf("%s: subject %s reason %q", j.ID, j.Subject, j.Reason)
		}
	}
	short, err := lb.ListQueue(ctx, lineage.QueueListOptions{Limit: 2, History: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := listedIDs(short.Open); !reflect.DeepEqual(got, []string{"s-b", "s-h"}) || short.Pending != 4 || short.Claimed != 1 || short.Overdue != 1 {
		t.Errorf("limit 2: open %v (pending %d claimed %d overdue %d), want s-b s-h and the full counts", got, short.Pending, short.Claimed, short.Overdue)
	}
	if got := listedIDs(short.History); !reflect.DeepEqual(got, []string{"s-d", "s-a"}) {
		t.Errorf("limit 2: history %v, want s-d s-a (latest finished first)", got)
	}
	full, err := lb.ListQueue(ctx, lineage.QueueListOptions{Limit: 10, History: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := listedIDs(full.History); !reflect.DeepEqual(got, []string{"s-d", "s-a", "s-c"}) {
		t.Fatalf("history %v, want s-d s-a s-c (latest finished first)", got)
	}
	hd, ha, hc := full.History[0], full.History[1], full.History[2]
	if hd.State != lineage.JobFailed || hd.FollowedBy != "s-g" || hd.FinishedAt.IsZero() || hd.Error == "" {
		t.Errorf("s-d listed as %+v, want failed, followed by s-g", hd)
	}
	if ha.State != lineage.JobFailed || ha.FollowedBy != "" || ha.Error != "the trace no longer matches the ledger" {
		t.Errorf("s-a listed as %+v, want failed, not followed, with its error", ha)
	}
	if hc.State != lineage.JobDone || hc.Certificate != "sha256:cert-c" || hc.FollowedBy != "" || hc.Overdue(full.Now) || hc.FinishedAt.IsZero() {
		t.Errorf("s-c listed as %+v, want done with its certificate", hc)
	}
	if !hd.FinishedAt.After(ha.FinishedAt) || !ha.FinishedAt.After(hc.FinishedAt) {
		t.Errorf("finish times d %v a %v c %v not in order", hd.FinishedAt, ha.FinishedAt, hc.FinishedAt)
	}
	// Scopes restrict everything, counts included.
	if other, err := lb.ListQueue(ctx, lineage.QueueListOptions{Limit: 10, History: true, Scopes: []string{"other"}}); err != nil ||
		other.Pending+other.Claimed+other.Done+other.Failed+other.Overdue+other.FailedUnresolved != 0 || len(other.Open)+len(other.History) != 0 {
		t.Errorf("ListQueue of another scope = %+v, %v; want nothing", other, err)
	}
	if none, err := lb.ListQueue(ctx, lineage.QueueListOptions{Limit: 10, Scopes: []string{}}); err != nil || none.Pending != 0 || len(none.Open) != 0 {
		t.Errorf("ListQueue of no scope = %+v, %v; want nothing", none, err)
	}
	if def, err := lb.ListQueue(ctx, lineage.QueueListOptions{Limit: 10, History: true, Scopes: []string{"other", "default"}}); err != nil ||
		def.Pending != 4 || def.Claimed != 1 || def.Done != 1 || def.Failed != 2 || def.Overdue != 1 || def.FailedUnresolved != 1 || len(def.Open) != 5 || len(def.History) != 3 {
		t.Errorf("ListQueue of its own scope = %+v, %v; want everything", def, err)
	}
	// Listing changed nothing, and held nothing: the pending jobs are
	// still claimable, through either handle.
	after, err := qb.Jobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(before, after) {
		t.Errorf("ListQueue changed the queue:\nbefore %+v\nafter  %+v", before, after)
	}
	if j := claim(t, qb, "w-2", time.Minute); j.ID != "s-h" {
		t.Errorf("claim after listing = %s, want s-h", j.ID)
	}
}

func listedIDs(js []lineage.QueuedJob) []string {
	out := []string{}
	for _, j := range js {
		out = append(out, j.ID)
	}
	return out
}

// testListQueueDoneResolves: a failed job is resolved by a job of the same
// subject and scope done after it was queued, though queued before it (the
// earlier job's erasure went on with a later trace and erased what the
// failed one was queued for); a job done before it was queued resolves
// nothing, nor does another subject's or scope's.
func testListQueueDoneResolves(t *testing.T, queues func(*testing.T) (lineage.Queue, lineage.Queue)) {
	ctx := context.Background()
	qa, _ := queues(t)
	wa, okA := qa.(lineage.WindowQueue)
	la, okL := qa.(lineage.QueueLister)
	if !okA || !okL {
		t.Fatalf("%T does not implement lineage.WindowQueue and lineage.QueueLister", qa)
	}
	base := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	enqueue := func(id, subject, scope string, due time.Time) {
		t.Helper()
		if err := wa.EnqueueDue(ctx, id, Subject(t, subject), scope, "TICKET-8", "", due); err != nil {
			t.Fatal(err)
		}
	}
	tick := func() { time.Sleep(5 * time.Millisecond) } // distinct times
	// Subject x: old done before y-b was queued.
	enqueue("x-old", "x", "default", base)
	old := claim(t, qa, "w-1", time.Hour)
	if err := qa.Complete(ctx, old, "sha256:old"); err != nil {
		t.Fatal(err)
	}
	tick()
	enqueue("x-a", "x", "default", base.Add(time.Hour))   // done after x-b was queued
	enqueue("x-b", "x", "default", base.Add(2*time.Hour)) // fails
	enqueue("x-o", "x", "other", base.Add(3*time.Hour))   // another scope: fails
	enqueue("y-b", "y", "default", base.Add(4*time.Hour)) // another subject: fails
	a, b := claim(t, qa, "w-1", time.Hour), claim(t, qa, "w-1", time.Hour)
	o, y := claim(t, qa, "w-1", time.Hour), claim(t, qa, "w-1", time.Hour)
	if a.ID != "x-a" || b.ID != "x-b" || o.ID != "x-o" || y.ID != "y-b" {
		t.Fatalf("claim order %s %s %s %s", a.ID, b.ID, o.ID, y.ID)
	}
	for _, j := range []*lineage.Job{b, o, y} {
		if err := qa.Fail(ctx, j, "every recorded artifact of this subject is already erased"); err != nil {
			t.Fatal(err)
		}
	}
	l, err := la.ListQueue(ctx, lineage.QueueListOptions{Limit: 10, History: true})
	if err != nil {
		t.Fatal(err)
	}
	if l.Failed != 3 || l.FailedUnresolved != 3 {
		t.Fatalf("before x-a is done: failed %d, unresolved %d; want 3, 3", l.Failed, l.FailedUnresolved)
	}
	tick()
	if err := qa.Complete(ctx, a, "sha256:a"); err != nil {
		t.Fatal(err)
	}
	if l, err = la.ListQueue(ctx, lineage.QueueListOptions{Limit: 10, History: true}); err != nil {
		t.Fatal(err)
	}
	if l.Failed != 3 || l.FailedUnresolved != 2 {
		t.Errorf("after x-a is done: failed %d, unresolved %d; want 3, 2 (x-b resolved)", l.Failed, l.FailedUnresolved)
	}
	followed := map[string]string{}
	for _, j := range l.History {
		followed[j.ID] = j.FollowedBy
	}
	if want := map[string]string{"x-old": "", "x-a": "", "x-b": "x-a", "x-o": "", "y-b": ""}; !reflect.DeepEqual(followed, want) {
		t.Errorf("followed by %v, want %v", followed, want)
	}
}
