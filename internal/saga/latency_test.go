package saga

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/internal/state"
)

// The delete persistence latency is read from the probe steps of the
// journal: a clean physical probe gives probe time minus request time; bytes
// found, a logical-only probe and an unfinished probe give none, each with
// its state.
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
		{"probe:cut", phaseBegin, nil, 5 * time.Minute},
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
	if _, err := PersistenceLatency(ctx, d, "er-none", requested); err == nil {
		t.Errorf("an erasure without a journal has a latency")
	}
}
