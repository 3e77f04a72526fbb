package queuestatus

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/lineage"
)

const digest = "8f14e45fceea167a5a36dedd4bea2543a1b2c3d4e5f60718293a4b5c6d7e8f90"

// TestViewStatesAndText: each queue state is listed as what it means now
// (a released job waits for its retry, a claim whose lease ran out is
// lease-expired), only a job with a due date can be overdue, and free text
// that looks like personal data is withheld, in the JSON fields and in the
// text.
func TestViewStatesAndText(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	job := func(state string) lineage.QueuedJob {
		return lineage.QueuedJob{Job: lineage.Job{ID: "t-" + state, Subject: digest, Scope: "default", Reason: "DSR-1", State: state,
			EnqueuedAt: now.Add(-time.Hour), Due: now.Add(time.Hour)}, AvailableAt: now.Add(-time.Hour)}
	}
	retry := job(lineage.JobPending)
	retry.AvailableAt = now.Add(time.Minute)
	expired := job(lineage.JobClaimed)
	expired.LeaseUntil, expired.Due = now.Add(-time.Second), now.Add(-time.Minute)
	running := job(lineage.JobClaimed)
	running.LeaseUntil = now.Add(time.Minute)
	legacy := job(lineage.JobPending)
	legacy.Due = time.Time{}
	failed := job(lineage.JobFailed)
	failed.Due, failed.FinishedAt = now.Add(-time.Hour), now.Add(-time.Minute)
	failed.Error = "erasure failed: mail jane.doe@example.org about it"
	failed.Reason = "call +44 7700 900123"
	for _, c := range []struct {
		q       lineage.QueuedJob
		state   string
		overdue bool
	}{
		{job(lineage.JobPending), StateWaiting, false},
		{retry, StateRetryWait, false},
		{running, StateRunning, false},
		{expired, StateLeaseExpired, true},
		{legacy, StateWaiting, false},
		{failed, StateFailed, false},
	} {
		v := view(&c.q, now)
		if v.State != c.state || v.Overdue != c.overdue {
			t.Errorf("%s: state %s overdue %v, want %s %v", c.q.ID, v.State, v.Overdue, c.state, c.overdue)
		}
		if v.Erasure != saga.ID(c.q.ID) || !strings.HasPrefix(v.SubjectRef, "hmac:8f14e45f") || strings.Contains(v.SubjectRef, digest) {
			t.Errorf("%s: erasure %s subject %s", c.q.ID, v.Erasure, v.SubjectRef)
		}
		if (v.DueInSeconds != nil) != (c.q.State != lineage.JobFailed && !c.q.Due.IsZero()) {
			t.Errorf("%s: due_in_s %v", c.q.ID, v.DueInSeconds)
		}
	}
	v := view(&failed, now)
	if v.Error != withheld || v.Reason != withheld {
		t.Errorf("personal data in free text not withheld: error %q reason %q", v.Error, v.Reason)
	}
	var b bytes.Buffer
	r := &Report{Now: now, Counts: Counts{Failed: 1, FailedUnresolved: 1}, Open: []Job{}, History: []Job{v}}
	if err := Write(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"jane.doe", "7700", digest} {
		if strings.Contains(b.String(), s) {
			t.Errorf("text holds %q:\n%s", s, b.String())
		}
	}
	if !strings.Contains(b.String(), "FAILED: 1 erasure") || !strings.Contains(b.String(), "not queued again") {
		t.Errorf("text:\n%s", b.String())
	}
	// A job released after an error waits with that error shown; one
	// whose error holds personal data shows it withheld.
	retry.Error = "delete:vectors: store not ready"
	retry.Attempts = 2
	leaky := retry
	leaky.ID, leaky.Error = "t-leaky", "store refused jane.doe@example.org"
	b.Reset()
	r = &Report{Now: now, Counts: Counts{Waiting: 2}, Open: []Job{view(&retry, now), view(&leaky, now)}}
	if err := Write(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "LAST ERROR") || !strings.Contains(b.String(), "retry-wait until") || !strings.Contains(b.String(), "delete:vectors: store not ready") ||
		strings.Contains(b.String(), "jane.doe") || !strings.Contains(b.String(), withheld) {
		t.Errorf("open jobs released after an error:\n%s", b.String())
	}
}
