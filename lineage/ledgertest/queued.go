package ledgertest

import (
	"context"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/subject"
)

// testSubjectQueued: SubjectState reports a subject's queued erasure (the
// job's trace id) while it is pending or claimed, and none once it ended,
// nor for another subject or scope; a second ledger handle sees the same.
func testSubjectQueued(t *testing.T, queues func(*testing.T) (lineage.Queue, lineage.Queue)) {
	ctx := context.Background()
	qa, qb := queues(t)
	ga, okA := qa.(lineage.SubjectGuard)
	gb, okB := qb.(lineage.SubjectGuard)
	if !okA || !okB {
		t.Fatalf("%T is not a lineage.SubjectGuard", qa)
	}
	hex := Subject(t, "queued@example.org")
	s, err := subject.ParseKey(hex)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := subject.ParseKey(Subject(t, "not-queued@example.org"))
	queued := func(g lineage.SubjectGuard, k subject.Key, scope string) string {
		t.Helper()
		st, err := g.SubjectState(ctx, scope, k)
		if err != nil {
			t.Fatal(err)
		}
		if st.Refused() {
			t.Fatalf("SubjectState = %+v: refused, never erased", st)
		}
		return st.Queued
	}
	if q := queued(ga, s, "default"); q != "" {
		t.Fatalf("before any erasure is queued: Queued = %q", q)
	}
	if err := qa.Enqueue(ctx, "trace-queued", hex, "default", "TICKET-Q"); err != nil {
		t.Fatal(err)
	}
	for _, g := range []lineage.SubjectGuard{ga, gb} {
		if q := queued(g, s, "default"); q != "trace-queued" {
			t.Fatalf("queued: Queued = %q, want trace-queued", q)
		}
		if q := queued(g, other, "default"); q != "" {
			t.Fatalf("another subject: Queued = %q", q)
		}
		if q := queued(g, s, "tenant-b"); q != "" {
			t.Fatalf("another scope: Queued = %q", q)
		}
	}
	j, err := qa.Claim(ctx, "w", time.Minute)
	if err != nil || j.ID != "trace-queued" {
		t.Fatalf("claim = %+v, %v", j, err)
	}
	if q := queued(gb, s, "default"); q != "trace-queued" {
		t.Fatalf("claimed: Queued = %q, want trace-queued", q)
	}
	if err := qa.Fail(ctx, j, "stale"); err != nil {
		t.Fatal(err)
	}
	if q := queued(gb, s, "default"); q != "" {
		t.Fatalf("after the job failed: Queued = %q, want none", q)
	}
}
