package ledgertest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/lineage"
)

// testWindow: due dates are kept (a job queued without one has none and
// counts as due when queued); Waiting sees what is claimable; ClaimWindow
// claims at most max jobs, earliest due first, each with its own fenced
// claim; Claim takes the job due first; a window claimed through one handle is not claimable through the
// other; a host sees only its own jobs and those bound to none.
func testWindow(t *testing.T, queues func(*testing.T) (lineage.Queue, lineage.Queue)) {
	ctx := context.Background()
	qa, qb := queues(t)
	wa, okA := qa.(lineage.WindowQueue)
	wb, okB := qb.(lineage.WindowQueue)
	if !okA || !okB {
		t.Fatalf("%T does not implement lineage.WindowQueue", qa)
	}
	if w, err := wa.Waiting(ctx, ""); err != nil || w.Count != 0 || !w.EarliestDue.IsZero() {
		t.Fatalf("Waiting on an empty queue = %+v, %v", w, err)
	}
	before := time.Now().Add(-2 * time.Second)
	base := time.Now().Truncate(time.Millisecond)
	jobs := []struct {
		id, owner string
		due       time.Time
	}{
		{"w-late", "", base.Add(72 * time.Hour)},
		{"w-soon", "", base.Add(time.Hour)},
		{"w-none", "", time.Time{}}, // no due date: due when queued
		{"w-mid", "beta", base.Add(24 * time.Hour)},
		{"w-alpha", "alpha", base.Add(2 * time.Hour)},
	}
	for _, j := range jobs {
		if err := wa.EnqueueDue(ctx, j.id, Subject(t, j.id), "default", "TICKET-9", j.owner, j.due); err != nil {
			t.Fatal(err)
		}
	}
	// Idempotent: a second enqueue keeps the first due date.
	if err := wb.EnqueueDue(ctx, "w-late", Subject(t, "w-late"), "default", "TICKET-9", "", base.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	all, err := qb.Jobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range all {
		if j.EnqueuedAt.Before(before) || j.EnqueuedAt.After(time.Now().Add(2*time.Second)) {
			t.Errorf("%s: EnqueuedAt = %v, want about now", j.ID, j.EnqueuedAt)
		}
		for _, w := range jobs {
			if w.id == j.ID && !j.Due.Equal(w.due) {
				t.Errorf("%s: Due = %v, want %v", j.ID, j.Due, w.due)
			}
		}
	}
	w, err := wb.Waiting(ctx, "beta")
	if err != nil {
		t.Fatal(err)
	}
	if w.Count != 4 { // every job but alpha's
		t.Errorf("Waiting(beta).Count = %d, want 4", w.Count)
	}
	if w.EarliestDue.After(time.Now()) || w.OldestQueued.IsZero() {
		t.Errorf("Waiting(beta) = %+v: the job without a due date is due when queued", w)
	}
	if _, err := wa.ClaimWindow(ctx, "w1", "", 0, time.Minute); err == nil {
		t.Errorf("ClaimWindow accepted a maximum of 0")
	}
	win, err := wb.ClaimWindow(ctx, "w-beta", "beta", 3, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, j := range win {
		got = append(got, j.ID)
		if j.State != lineage.JobClaimed || j.Worker != "w-beta" || j.Attempts != 1 {
			t.Errorf("%s: claimed as %+v", j.ID, j)
		}
	}
	if want := []string{"w-none", "w-soon", "w-mid"}; !equal(got, want) {
		t.Fatalf("ClaimWindow(beta, 3) = %v, want %v (earliest due first, alpha's job left alone)", got, want)
	}
	// The rest is claimable through the other handle; the window is not.
	rest, err := wa.ClaimWindow(ctx, "w-any", "", 10, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	got = got[:0]
	for _, j := range rest {
		got = append(got, j.ID)
	}
	if want := []string{"w-alpha", "w-late"}; !equal(got, want) {
		t.Fatalf("second window = %v, want %v", got, want)
	}
	if _, err := wb.ClaimWindow(ctx, "w3", "", 10, time.Minute); !errors.Is(err, lineage.ErrNoJob) {
		t.Fatalf("third window: %v, want ErrNoJob", err)
	}
	// Each job of a window keeps its own fenced claim.
	if err := qa.Complete(ctx, win[0], "sha256:aa"); err != nil {
		t.Fatal(err)
	}
	if err := qa.Release(ctx, win[1], 0, ""); err != nil {
		t.Fatal(err)
	}
	stale := *win[2]
	stale.Attempts++
	if err := qa.Renew(ctx, &stale, time.Minute); !errors.Is(err, lineage.ErrLeaseLost) {
		t.Errorf("renew of a claim that is not current = %v, want ErrLeaseLost", err)
	}
	if err := qa.Renew(ctx, win[2], time.Minute); err != nil {
		t.Errorf("renew of one claim of a window: %v", err)
	}
	again, err := wa.ClaimWindow(ctx, "w4", "", 10, time.Minute)
	if err != nil || len(again) != 1 || again[0].ID != "w-soon" || again[0].Attempts != 2 {
		t.Fatalf("after a release: %+v, %v; want w-soon alone, attempt 2", again, err)
	}
	// Claim (one job) takes the job due first too, not the oldest.
	if err := wa.EnqueueDue(ctx, "c-later", Subject(t, "c-later"), "default", "TICKET-9", "", base.Add(10*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := wa.EnqueueDue(ctx, "c-sooner", Subject(t, "c-sooner"), "default", "TICKET-9", "", base.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"c-sooner", "c-later"} {
		if j, err := qb.Claim(ctx, "w5", time.Minute); err != nil || j.ID != want {
			t.Fatalf("Claim = %+v, %v; want %s (due first)", j, err, want)
		}
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
