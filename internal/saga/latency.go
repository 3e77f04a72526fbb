package saga

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/amnesia-dev/amnesia/certificate"
)

// Delete persistence latency: for each store of an erasure, the time from
// the request (the erasure was queued, or run at once) to the physical probe
// that found none of the subject's bytes in the store's files, for a store
// whose every artifact the erasure's decided outcome verifies at the
// physical level (a probe that finds nothing proves nothing for a record
// whose needles had no power, or that a logical probe still finds). It is
// measured, not estimated: the probe's time is the "done" entry of the
// store's probe step in the erasure's journal (hash-chained, written when
// the probe ended), the request's time is the queue's enqueued_at; the
// decided outcome is the "done" entry of the decide step (the certificate's
// predicate). All are kept, so the latency can be computed again later.

// Latency states of a store.
const (
	// LatencyClean: the physical probe found none of the subject's bytes
	// and the decided outcome verifies every artifact of the store at the
	// physical level.
	LatencyClean = "clean"
	// LatencyFound: the physical probe found some: no latency (the bytes
	// persist).
	LatencyFound = "found"
	// LatencyNoPhysical: the store has no physical probe (or nothing to
	// look for): its probe was logical only, so no physical latency.
	LatencyNoPhysical = "no-physical-probe"
	// LatencyNoProbe: the store's probe did not finish.
	LatencyNoProbe = "not-probed"
	// LatencyNotPhysical: the physical probe found none of the subject's
	// bytes, but the decided outcome does not verify every artifact of the
	// store at the physical level (needles without power, a record a
	// logical probe still finds, partial coverage, copies, mentions), or
	// the erasure has no decided outcome yet: no latency.
	LatencyNotPhysical = "not-physical"
)

// StoreLatency is the delete persistence latency of one store.
type StoreLatency struct {
	Store string
	State string // LatencyClean, LatencyFound, LatencyNotPhysical, LatencyNoPhysical or LatencyNoProbe
	// ProbedAt is when the store's probe ended (zero for LatencyNoProbe);
	// Latency is ProbedAt minus the request time, set for LatencyClean only.
	ProbedAt time.Time
	Latency  time.Duration
}

// PersistenceLatency reads erasure's journal and returns, per store in the
// order the journal probed them, its delete persistence latency from
// requested. Only a store whose physical probe found no bytes and whose
// every artifact the decide step verified at the physical level has a
// latency.
func PersistenceLatency(ctx context.Context, d Durable, erasure string, requested time.Time) ([]StoreLatency, error) {
	es, err := ReadJournal(ctx, d, erasure)
	if err != nil {
		return nil, fmt.Errorf("delete persistence latency: %w", err)
	}
	var out []StoreLatency
	seen := map[string]int{}
	var decided *certificate.Predicate
	for _, e := range es {
		if e.Step == "decide" && e.Phase == phaseDone {
			var p certificate.Predicate
			if err := json.Unmarshal(e.Result, &p); err != nil {
				return nil, fmt.Errorf("delete persistence latency: journal of %s: entry %d: %w", erasure, e.Seq, err)
			}
			decided = &p
		}
		st, ok := strings.CutPrefix(e.Step, "probe:")
		if !ok {
			continue
		}
		i, ok := seen[st]
		if !ok {
			i = len(out)
			seen[st] = i
			out = append(out, StoreLatency{Store: st, State: LatencyNoProbe})
		}
		if e.Phase != phaseDone {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, e.At)
		if err != nil {
			return nil, fmt.Errorf("delete persistence latency: journal of %s: entry %d: time %q: %w", erasure, e.Seq, e.At, err)
		}
		var pr probeResult
		if err := json.Unmarshal(e.Result, &pr); err != nil {
			return nil, fmt.Errorf("delete persistence latency: journal of %s: entry %d: %w", erasure, e.Seq, err)
		}
		l := StoreLatency{Store: st, State: LatencyNoPhysical, ProbedAt: at}
		if pr.Physical {
			l.State = LatencyClean
			for _, n := range pr.Found {
				if n > 0 {
					l.State = LatencyFound
				}
			}
		}
		out[i] = l
	}
	for i := range out {
		if out[i].State != LatencyClean {
			continue
		}
		if !allPhysical(decided, out[i].Store) {
			out[i].State = LatencyNotPhysical
			continue
		}
		out[i].Latency = out[i].ProbedAt.Sub(requested)
	}
	return out, nil
}

// allPhysical reports whether p (nil: no decided outcome) holds at least
// one artifact of store st and verifies every one at the physical level.
func allPhysical(p *certificate.Predicate, st string) bool {
	if p == nil {
		return false
	}
	n := 0
	for _, a := range p.Artifacts {
		if a.Store != st {
			continue
		}
		if a.Outcome != certificate.Verified || a.Level != certificate.LevelPhysical {
			return false
		}
		n++
	}
	return n > 0
}
