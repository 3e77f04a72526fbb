package worker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/internal/pgtest"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/internal/worker"
	"github.com/amnesia-dev/amnesia/lineage"
)

// A worker that is already running (PostgreSQL ledger) when another host
// publishes a changed configuration claims nothing more: its next claim is
// refused with state.ErrConfigMismatch, Run returns it, and the erasure
// queued after the publication stays pending, never claimed. One job at a
// time and in windows.
func TestRunningWorkerStopsClaimingAfterConfigPublish(t *testing.T) {
	for _, c := range []struct {
		name   string
		window *worker.Window
	}{
		{"one at a time", nil},
		{"windows", &worker.Window{Wait: 24 * time.Hour, Max: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			f := newWindowFixture(t, pgtest.DB(t))
			claimed := 0
			w := &worker.Worker{Env: f.env, Queue: f.q, ID: "w-config", Lease: time.Minute, Poll: 50 * time.Millisecond,
				Window: c.window, Claimed: func(*lineage.Job) { claimed++ }}
			done := make(chan error, 1)
			go func() { done <- w.Run(ctx) }()
			time.Sleep(300 * time.Millisecond) // running, idle: nothing waits
			select {
			case err := <-done:
				t.Fatalf("the worker stopped before the publication: %v", err)
			default:
			}

			// Another host publishes a changed configuration.
			other := *f.env.Dir
			cfg := *other.Config
			cfg.LogOrigin = "amnesia.example/other-log"
			other.Config = &cfg
			if now, _, err := other.PublishConfig(ctx, f.env.Ledger); err != nil || now.Version != 2 {
				t.Fatalf("publish: %+v, %v", now, err)
			}
			tr := f.queue(t, "config-1", "config@example.org", time.Time{})

			var err error
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("the worker still runs 20s after the publication")
			}
			if !errors.Is(err, state.ErrConfigMismatch) {
				t.Fatalf("worker returned %v, want ErrConfigMismatch", err)
			}
			j := f.jobs(t)[tr.ID]
			if claimed != 0 || j.State != lineage.JobPending || j.Attempts != 0 {
				t.Errorf("after the publication: %d claims, job %s after %d claims; want none, pending", claimed, j.State, j.Attempts)
			}
		})
	}
}

// A window of three where the claim of one is taken away while the window
// runs (its fencing token moves on, as when its lease ran out and another
// worker claimed it): the ledger refuses that erasure's write and the
// window stops. Only that job is treated as lost; the other two are handed
// back at once (pending, no lease, claimable now), and a second worker
// completes them at once.
func TestWindowLostClaimHandsBackTheOthers(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DB(t)
	f := newWindowFixture(t, dsn)
	var ids []string
	for _, id := range []string{"lost-1", "lost-2", "lost-3"} {
		ids = append(ids, f.queue(t, id, id+"@example.org", time.Now().Add(25*24*time.Hour)).ID)
	}
	victim := ids[1]
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	w := &worker.Worker{Env: f.env, Queue: f.q, ID: "w-a", Lease: time.Minute, Poll: time.Second, Once: true,
		Window: &worker.Window{Wait: 24 * time.Hour, Max: 3},
		Claimed: func(j *lineage.Job) {
			if j.ID != victim {
				return
			}
			if _, err := conn.Exec(ctx, `UPDATE queue SET attempts = attempts + 1 WHERE id = $1`, victim); err != nil {
				t.Errorf("take the claim away: %v", err)
			}
		},
	}
	start := time.Now()
	if err := w.Run(ctx); err == nil {
		t.Fatal("the window with a lost claim reported no error")
	}
	jobs := f.jobs(t)
	for _, id := range ids {
		j := jobs[id]
		switch {
		case id == victim:
			if j.State != lineage.JobClaimed || j.Attempts != 2 {
				t.Errorf("lost job: %s after %d claims; want left claimed as it was (2)", j.State, j.Attempts)
			}
		case j.State != lineage.JobPending || j.Attempts != 1 || !j.LeaseUntil.IsZero():
			t.Errorf("job %s: %s after %d claims, lease until %v; want pending after 1, no lease", id, j.State, j.Attempts, j.LeaseUntil)
		}
	}
	// Handed back at once: a second worker claims and completes them now.
	finished := map[string]bool{}
	w2 := &worker.Worker{Env: f.env, Queue: f.q, ID: "w-b", Lease: time.Minute, Poll: time.Second, Drain: true,
		Window:   &worker.Window{Wait: 24 * time.Hour, Max: 3},
		Finished: func(j *lineage.Job, _ *saga.Result) { finished[j.ID] = true },
	}
	if err := w2.Run(ctx); err != nil {
		t.Fatalf("second worker: %v", err)
	}
	jobs = f.jobs(t)
	for _, id := range ids {
		if id == victim {
			if finished[id] || jobs[id].State != lineage.JobClaimed {
				t.Errorf("lost job run by the second worker before its claim ended: %s", jobs[id].State)
			}
			continue
		}
		if j := jobs[id]; !finished[id] || j.State != lineage.JobDone || j.Attempts != 2 {
			t.Errorf("job %s: %s after %d claims; want done by the second worker", id, j.State, j.Attempts)
		}
	}
	if time.Since(start) > 45*time.Second {
		t.Errorf("took %s: the handed-back jobs waited for a lease", time.Since(start))
	}
}
