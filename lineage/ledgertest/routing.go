package ledgertest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/lineage"
)

// testRouted: a job bound to a host is claimed only by a worker on that
// host (ClaimOn), a job bound to none by any; plain Claim (a single-host
// installation) still claims every job; the owner survives the claim.
func testRouted(t *testing.T, queues func(*testing.T) (lineage.Queue, lineage.Queue)) {
	ctx := context.Background()
	qa, qb := queues(t)
	ra, okA := qa.(lineage.RoutedQueue)
	rb, okB := qb.(lineage.RoutedQueue)
	if !okA || !okB {
		t.Fatalf("%T does not implement lineage.RoutedQueue", qa)
	}
	for _, j := range []struct{ id, owner string }{{"t-alpha", "alpha"}, {"t-any", ""}, {"t-beta", "beta"}, {"t-alpha-2", "alpha"}} {
		if err := ra.EnqueueFor(ctx, j.id, Subject(t, j.id), "default", "TICKET-7", j.owner); err != nil {
			t.Fatal(err)
		}
	}
	// Enqueue again with another owner: idempotent, the first stays.
	if err := ra.EnqueueFor(ctx, "t-beta", Subject(t, "t-beta"), "default", "TICKET-7", "alpha"); err != nil {
		t.Fatal(err)
	}
	if _, err := rb.ClaimOn(ctx, "w", "", time.Minute); err == nil || errors.Is(err, lineage.ErrNoJob) {
		t.Fatalf("ClaimOn without a host = %v, want a refusal", err)
	}
	got := map[string]string{}
	for {
		j, err := rb.ClaimOn(ctx, "w-beta", "beta", time.Minute)
		if errors.Is(err, lineage.ErrNoJob) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got[j.ID] = j.Owner
		if err := qb.Complete(ctx, j, "sha256:x"); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 2 || got["t-beta"] != "beta" || got["t-any"] != "" {
		t.Fatalf("host beta claimed %v, want t-beta (owner beta) and t-any (no owner)", got)
	}
	j, err := ra.ClaimOn(ctx, "w-alpha", "alpha", time.Minute)
	if err != nil || j.ID != "t-alpha" || j.Owner != "alpha" {
		t.Fatalf("host alpha claim = %+v, %v; want t-alpha", j, err)
	}
	if _, err := rb.ClaimOn(ctx, "w-gamma", "gamma", time.Minute); !errors.Is(err, lineage.ErrNoJob) {
		t.Fatalf("host gamma claim: %v, want ErrNoJob (only alpha's jobs are left)", err)
	}
	// A single-host worker (Claim) takes any job.
	j, err = qb.Claim(ctx, "w-any", time.Minute)
	if err != nil || j.ID != "t-alpha-2" {
		t.Fatalf("plain claim = %+v, %v; want t-alpha-2", j, err)
	}
	jobs, err := qa.Jobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if j.ID == "t-beta" && j.Owner != "beta" {
			t.Errorf("t-beta listed with owner %q, want beta", j.Owner)
		}
	}
}

// testInstallation: installation values are recorded once (the first
// writer wins, seen by every handle), replaced only on request.
func testInstallation(t *testing.T, a, b lineage.Ledger) {
	ctx := context.Background()
	ma, okA := a.(lineage.InstallationMeta)
	mb, okB := b.(lineage.InstallationMeta)
	if !okA || !okB {
		t.Fatalf("%T does not implement lineage.InstallationMeta", a)
	}
	if _, ok, err := ma.InstallationValue(ctx, "pepper_check"); err != nil || ok {
		t.Fatalf("fresh ledger: value recorded (%v, %v)", ok, err)
	}
	if v, err := ma.RecordInstallationValue(ctx, "pepper_check", "c1", false); err != nil || v != "c1" {
		t.Fatalf("record: %q, %v", v, err)
	}
	if v, err := mb.RecordInstallationValue(ctx, "pepper_check", "c2", false); err != nil || v != "c1" {
		t.Fatalf("second record from another handle = %q, %v; want the first, c1", v, err)
	}
	if v, err := mb.RecordInstallationValue(ctx, "pepper_check", "c3", true); err != nil || v != "c3" {
		t.Fatalf("replace = %q, %v", v, err)
	}
	if v, ok, err := ma.InstallationValue(ctx, "pepper_check"); err != nil || !ok || v != "c3" {
		t.Fatalf("after replace: %q %v %v", v, ok, err)
	}
	if _, _, err := ma.InstallationValue(ctx, ""); err == nil {
		t.Fatal("empty key accepted")
	}
}
