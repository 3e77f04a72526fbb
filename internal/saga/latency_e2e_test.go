package saga_test

import (
	"context"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store"
)

// A store is clean for the delete persistence latency only when the
// decided outcome verifies every artifact of it at the physical level: a
// record too short to yield needles is found by no physical probe whether
// its bytes are there or not, so its store is not-physical, not clean; a
// normal erasure verified physically is clean, with a positive latency.
func TestPersistenceLatencyNeedsPhysicalVerification(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 3, 2)
	f.put(t, "short-doc", "p-short", "ok", nil)
	k, err := f.dir.Keyer.Key(f.dir.Config.Scope, "p-short")
	if err != nil {
		t.Fatal(err)
	}
	v, err := f.ledger.View(ctx, f.dir.Config.Scope, k)
	if err != nil {
		t.Fatal(err)
	}
	short, err := lineage.BuildTrace(v)
	if err != nil {
		t.Fatal(err)
	}
	stores := map[string]store.Store{"docs": f.rawD, "vectors": f.rawV}
	d := saga.DurableFor(f.dir, f.ledger)

	check := func(tr *lineage.Trace) map[string]saga.StoreLatency {
		t.Helper()
		requested := time.Now()
		res, err := f.erase(t, tr, stores, nil)
		if err != nil {
			t.Fatal(err)
		}
		physical := map[string]bool{}
		for _, a := range res.Statement.Predicate.Artifacts {
			if _, ok := physical[a.Store]; !ok {
				physical[a.Store] = true
			}
			if a.Outcome != certificate.Verified || a.Level != certificate.LevelPhysical {
				physical[a.Store] = false
			}
		}
		ls, err := saga.PersistenceLatency(ctx, d, res.ID, requested)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]saga.StoreLatency{}
		for _, l := range ls {
			out[l.Store] = l
			if (l.State == saga.LatencyClean) != physical[l.Store] {
				t.Errorf("store %s: state %s, every artifact verified physically: %v", l.Store, l.State, physical[l.Store])
			}
			if l.State == saga.LatencyClean && l.Latency <= 0 || l.State != saga.LatencyClean && l.Latency != 0 {
				t.Errorf("store %s: state %s with latency %v", l.Store, l.State, l.Latency)
			}
		}
		return out
	}

	// The short record: the docs store's probe is physical and finds
	// nothing, but the record had no needles.
	got := check(short)
	if l := got["docs"]; l.State != saga.LatencyNotPhysical {
		t.Errorf("docs store of a record without needles: %+v, want %s", l, saga.LatencyNotPhysical)
	}

	// A normal subject: some store verified physically, clean.
	got = check(f.trace(t, 1))
	clean := 0
	for _, l := range got {
		if l.State == saga.LatencyClean {
			clean++
		}
	}
	if clean == 0 {
		t.Errorf("no store clean after a normal erasure: %+v", got)
	}
}
