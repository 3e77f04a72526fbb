package saga

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/state"
)

// The delete persistence latency is read from the probe steps of the
// journal and the decide step's outcome: a clean physical probe of a store
// whose every artifact was decided VERIFIED at the physical level gives
// probe time minus request time; a clean physical probe of a store with an
// artifact verified at the logical level only (its needles had no power),
// bytes found, a logical-only probe and an unfinished probe give none, each
// with its state; without a decided outcome no store is clean.
func TestPersistenceLatency(t *testing.T) {
	ctx := context.Background()
	sd, err := state.Init(filepath.Join(t.TempDir(), "state"), state.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	d := FileDurable(sd)
	requested := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	now := requested
	j, err := d.openJournal(ctx, "er-latency", mainJournal, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	defer j.close()
	steps := []struct {
		step  string
		phase string
		res   any
		after time.Duration
	}{
		{"plan", phaseBegin, nil, 0},
		{"plan", phaseDone, map[string]int{}, 0},
		{"probe:clean", phaseBegin, nil, 90 * time.Second},
		{"probe:clean", phaseDone, probeResult{Physical: true, Found: map[string]int{"a": 0}}, 2 * time.Minute},
		{"probe:found", phaseBegin, nil, 2 * time.Minute},
		{"probe:found", phaseDone, probeResult{Physical: true, Found: map[string]int{"a": 0, "b": 3}}, 3 * time.Minute},
		{"probe:managed", phaseBegin, nil, 3 * time.Minute},
		{"probe:managed", phaseDone, probeResult{}, 4 * time.Minute},
		{"probe:nopower", phaseBegin, nil, 5 * time.Minute},
		{"probe:nopower", phaseDone, probeResult{Physical: true, Found: map[string]int{"a": 0, "b": 0}}, 6 * time.Minute},
		{"probe:cut", phaseBegin, nil, 6 * time.Minute},
		{"decide", phaseBegin, nil, 7 * time.Minute},
		{"decide", phaseDone, certificate.Predicate{Artifacts: []certificate.Artifact{
			{ID: "c1", Store: "clean", Outcome: certificate.Verified, Level: certificate.LevelPhysical},
			{ID: "f1", Store: "found", Outcome: certificate.Residual},
			{ID: "m1", Store: "managed", Outcome: certificate.Verified, Level: certificate.LevelLogical},
			{ID: "n1", Store: "nopower", Outcome: certificate.Verified, Level: certificate.LevelPhysical},
			{ID: "n2", Store: "nopower", Outcome: certificate.Verified, Level: certificate.LevelLogical},
		}}, 7 * time.Minute},
	}
	for _, s := range steps {
		now = requested.Add(s.after)
		if err := j.append(s.step, s.phase, s.res, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.sync(); err != nil {
		t.Fatal(err)
	}
	got, err := PersistenceLatency(ctx, d, "er-latency", requested)
	if err != nil {
		t.Fatal(err)
	}
	want := []StoreLatency{
		{Store: "clean", State: LatencyClean, ProbedAt: requested.Add(2 * time.Minute), Latency: 2 * time.Minute},
		{Store: "found", State: LatencyFound, ProbedAt: requested.Add(3 * time.Minute)},
		{Store: "managed", State: LatencyNoPhysical, ProbedAt: requested.Add(4 * time.Minute)},
		{Store: "nopower", State: LatencyNotPhysical, ProbedAt: requested.Add(6 * time.Minute)},
		{Store: "cut", State: LatencyNoProbe},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].Store != want[i].Store || got[i].State != want[i].State || !got[i].ProbedAt.Equal(want[i].ProbedAt) || got[i].Latency != want[i].Latency {
			t.Errorf("store %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	// The same clean probe without a decided outcome: not clean.
	j2, err := d.openJournal(ctx, "er-undecided", mainJournal, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	defer j2.close()
	for _, ph := range []string{phaseBegin, phaseDone} {
		if err := j2.append("probe:clean", ph, probeResult{Physical: true, Found: map[string]int{"a": 0}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := j2.sync(); err != nil {
		t.Fatal(err)
	}
	if got, err := PersistenceLatency(ctx, d, "er-undecided", requested); err != nil || len(got) != 1 || got[0].State != LatencyNotPhysical || got[0].Latency != 0 {
		t.Errorf("a clean probe without a decided outcome: %+v, %v; want %s", got, err, LatencyNotPhysical)
	}
	if _, err := PersistenceLatency(ctx, d, "er-none", requested); err == nil {
		t.Errorf("an erasure without a journal has a latency")
	}
}
