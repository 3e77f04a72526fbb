package saga

import (
	"context"
	"fmt"
	"strings"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store"
)

// Records the application deleted itself before the erasure began leave no
// evidence: there is nothing left to read by key, so the byte scan has no
// needles for them. Their bytes may still be in the store (an invalidated
// vec0 slot, a dead tuple, a free page). Where the adapter can read what no
// query reaches (store.OrphanProber), the evidence step compares the keyed
// content digest the ledger holds for each such record with the digest of
// every unreachable record: a match gives the probe power, and the matched
// bytes become needles (sealed like other evidence), for which the store's
// files are byte-scanned at once: the unreachable record was read as the
// store decodes it (a PostgreSQL value decompressed, say), which need not be
// how its bytes lie in the files. After reclaim the probe step compares
// again and byte-scans the store's files for those needles. Such a record
// is VERIFIED(physical) only when both its digest and its bytes were found
// before, and neither after; otherwise it is UNVERIFIED, or RESIDUAL when
// its bytes are found after reclaim.

// orphanResult is what the journal keeps of an orphan probe: keys and counts.
type orphanResult struct {
	Absent   int            `json:"absent"`   // keys of the plan the store no longer returned when the erasure began
	Measured bool           `json:"measured"` // the unreachable records were read and compared
	Method   string         `json:"method,omitempty"`
	Scanned  int            `json:"scanned"`           // unreachable records compared
	Found    map[string]int `json:"found,omitempty"`   // key -> 1: its digest matched an unreachable record
	Needles  map[string]int `json:"needles,omitempty"` // evidence step: windows taken from the matched bytes
	// Evidence step: the byte scan of the store's files for those windows
	// before reclaim (the scan's power); nil in journals written before it.
	ScanFoundBefore map[string]int `json:"scan_found_before,omitempty"`
	// Probe step: the byte scan of the store's files for the needles of the
	// records found before reclaim.
	ScanMethod string         `json:"scan_method,omitempty"`
	ScanFound  map[string]int `json:"scan_found,omitempty"`
	Files      int            `json:"files,omitempty"`
	Bytes      int64          `json:"bytes,omitempty"`
	// ScanPartial: which of the store's files the scan after reclaim could
	// not read (store.ScanReport.Partial).
	ScanPartial string `json:"scan_partial,omitempty"`
}

// orphanName is the name of the sealed evidence of st's orphans (Durable).
func orphanName(st string) string { return evidenceName(st + ".orphans") }

// absentDigests returns, for the keys of st that the evidence ev does not
// hold, the ledger's content digest of each.
func (r *runner) absentDigests(st string, ev map[string]*store.Evidence) map[string]string {
	want := map[string]string{}
	for _, a := range r.Trace.Artifacts {
		if a.Store != st {
			continue
		}
		if _, ok := ev[a.Key]; !ok {
			want[a.Key] = a.Digest
		}
	}
	return want
}

func (r *runner) contentDigest(b []byte) string { return lineage.ContentDigest(r.Dir.Keyer, b) }

// probeOrphans runs the orphan probe of st for the keys absent from ev. At
// step "evidence" it seals the matched records' evidence; at step "probe"
// it also byte-scans the store's files for the needles sealed before.
// It returns nil when no key of st was absent.
func (r *runner) probeOrphans(ctx context.Context, st string, s store.Store, ev map[string]*store.Evidence, step string) (*orphanResult, error) {
	want := r.absentDigests(st, ev)
	if len(want) == 0 {
		return nil, nil
	}
	out := &orphanResult{Absent: len(want), Found: map[string]int{}}
	op, ok := s.(store.OrphanProber)
	if !ok {
		out.Method = "the " + s.Info().Type + " adapter cannot read records deleted before the erasure"
		return out, nil
	}
	rep, err := op.ProbeOrphans(ctx, r.contentDigest, want)
	if err != nil {
		return nil, err
	}
	out.Measured, out.Method, out.Scanned = rep.Measured, rep.Method, rep.Scanned
	for k := range rep.Found {
		out.Found[k] = 1
	}
	switch step {
	case "evidence":
		out.Needles = map[string]int{}
		for k, e := range rep.Found {
			out.Needles[k] = len(e.Needles)
		}
		if len(rep.Found) > 0 {
			if err := r.putEvidence(ctx, orphanName(st), sealKey(r.Dir.Keyer, r.id, st+"\x00orphans"), rep.Found); err != nil {
				return nil, err
			}
			if pp, ok := physical(s); ok {
				sc, err := pp.ProbePhysical(ctx, store.NewNeedleSet(rep.Found))
				if err != nil {
					return nil, err
				}
				out.ScanFoundBefore = sc.Found
			}
		}
	case "probe":
		before, err := r.orphanEvidence(ctx, st)
		if err != nil {
			return nil, err
		}
		if pp, ok := physical(s); ok && len(before) > 0 {
			sc, err := pp.ProbePhysical(ctx, store.NewNeedleSet(before))
			if err != nil {
				return nil, err
			}
			out.ScanMethod, out.ScanFound, out.Files, out.Bytes, out.ScanPartial = sc.Method, sc.Found, sc.Files, sc.Bytes, sc.Partial
		}
	}
	return out, nil
}

// orphanEvidence unseals the evidence of the records the orphan probe found
// before reclaim (none when the file does not exist).
func (r *runner) orphanEvidence(ctx context.Context, st string) (map[string]*store.Evidence, error) {
	ev, ok, err := r.getEvidence(ctx, orphanName(st), sealKey(r.Dir.Keyer, r.id, st+"\x00orphans"))
	if err != nil || !ok {
		return map[string]*store.Evidence{}, err
	}
	return ev, nil
}

// absentReasonPrefix opens the reason of every outcome of a record that was
// already deleted when the erasure began.
const absentReasonPrefix = "the record was already deleted when the erasure began"

// absentOutcome decides the outcome of an artifact whose record the store
// no longer returned when the erasure began (no evidence), from the orphan
// probe before and after reclaim. c carries the logical measurement and
// the method so far.
func (r *runner) absentOutcome(c *certificate.Artifact, a lineage.TraceArtifact, res *results) {
	if c.Measurement != nil {
		c.Measurement.Physical = nil // the byte scan had no needles of this record: see absentFound
	}
	if _, ok := r.Stores[a.Store].(store.EvidenceReader); !ok {
		// The adapter reads no evidence: whether the record existed when
		// the erasure began is not known, and nothing was there to scan for.
		c.Outcome, c.Level = certificate.Verified, certificate.LevelLogical
		c.Reason = "no query path returns it; physical level not reached: the " + a.Store + " adapter reads no evidence, so there were no bytes to look for"
		return
	}
	methods := []string{"DELETE by key (already absent)"}
	if rc := res.reclaim[a.Store]; rc != nil && rc.Method != "" {
		if rc.State == "PENDING-reclaim-deferred" {
			methods = append(methods, "reclaim deferred: "+rc.Method)
		} else {
			methods = append(methods, "reclaim ran: "+rc.Method)
		}
	}
	if c.Measurement != nil && c.Measurement.Logical != nil {
		methods = append(methods, "logical probe: "+strings.Join(c.Measurement.Logical.Methods, ", "))
	}
	var before, after *orphanResult
	if e := res.evidence[a.Store]; e != nil {
		before = e.Orphans
	}
	if p := res.probe[a.Store]; p != nil {
		after = p.Orphans
	}
	unmeasured := absentReasonPrefix + "; its bytes could remain in the store's free space and could not be measured without its content"
	switch {
	case before == nil:
		// A journal from before orphan probes existed, or an adapter that
		// reads no evidence: nothing was measured for this record.
		c.Outcome, c.Reason = certificate.Unverified, unmeasured
	case !before.Measured:
		c.Outcome, c.Reason = certificate.Unverified, unmeasured+" ("+before.Method+")"
		methods = append(methods, "orphan probe: not run: "+before.Method)
	case before.Found[a.Key] == 0:
		methods = append(methods, "orphan probe before reclaim: "+before.Method)
		c.Outcome, c.Reason = certificate.Unverified, fmt.Sprintf("%s; the orphan probe compared the ledger's keyed content digest with %d unreachable records and matched none, so it had no power: its bytes may be gone, or remain where the probe does not look (free pages, logs)", absentReasonPrefix, before.Scanned)
	default:
		methods = append(methods, "orphan probe before reclaim: "+before.Method)
		r.absentFound(c, a, before, after, res.reclaim[a.Store], &methods)
	}
	c.Method = strings.Join(methods, "; ")
}

// absentFound decides for a record the orphan probe found before reclaim.
func (r *runner) absentFound(c *certificate.Artifact, a lineage.TraceArtifact, before, after *orphanResult, rc *reclaimResult, methods *[]string) {
	needles := before.Needles[a.Key]
	if after == nil {
		c.Outcome, c.Reason = certificate.Unverified, absentReasonPrefix+"; its bytes were found by keyed content digest in an unreachable record before reclaim, and the probe after reclaim did not run"
		return
	}
	*methods = append(*methods, "orphan probe after reclaim: "+after.Method)
	// The scan's power: the matched record's windows found in the store's
	// files before reclaim (none known in a journal from before that scan).
	power := before.ScanFoundBefore[a.Key]
	ph := &certificate.Physical{Needles: needles, FoundBefore: power, FoundAfter: after.ScanFound[a.Key], FilesScanned: after.Files, BytesScanned: after.Bytes}
	if after.ScanMethod != "" {
		*methods = append(*methods, fmt.Sprintf("physical probe: %s for %d windows of up to %d bytes of the bytes found before reclaim", after.ScanMethod, needles, store.WindowSize))
		if c.Measurement != nil {
			c.Measurement.Physical = ph
		}
	}
	switch {
	case !after.Measured:
		c.Outcome, c.Reason = certificate.Unverified, absentReasonPrefix+"; its bytes were found by keyed content digest in an unreachable record before reclaim, and could not be looked for after it ("+after.Method+")"
	case after.Found[a.Key] > 0:
		c.Outcome, c.Reason = certificate.Residual, absentReasonPrefix+"; its bytes are still in an unreachable record after reclaim (keyed content digest match)"
	case ph.FoundAfter > 0:
		c.Outcome, c.Reason = certificate.Residual, fmt.Sprintf("%s; %d of %d windows of its bytes still in the store's files after reclaim", absentReasonPrefix, ph.FoundAfter, needles)
	case after.ScanMethod == "" || needles == 0:
		c.Outcome, c.Reason = certificate.Unverified, absentReasonPrefix+"; its bytes were found by keyed content digest in an unreachable record before reclaim and not after, but the store's files could not be byte-scanned for them (no physical probe, or every window is also held by a live record)"
	case power == 0:
		c.Outcome, c.Reason = certificate.Unverified, fmt.Sprintf("%s; its bytes were found by keyed content digest in an unreachable record before reclaim and not after, but none of its %d windows was visible in the store's files before reclaim (kept compressed, or in a form the scan cannot match), so the byte scan had no power", absentReasonPrefix, needles)
	case unseen(rc):
		c.Outcome, c.Reason = certificate.Unverified, absentReasonPrefix+"; its bytes were found by keyed content digest in an unreachable record before reclaim and not after, but the store's reclaim reports bytes the byte scan cannot see ("+rc.State+": "+rc.Evidence+")"
	case after.ScanPartial != "":
		c.Outcome, c.Reason = certificate.Unverified, absentReasonPrefix+"; its bytes were found by keyed content digest in an unreachable record before reclaim and not after, but the byte scan after reclaim did not read all of the store's files ("+after.ScanPartial+")"
	default:
		c.Outcome, c.Level = certificate.Verified, certificate.LevelPhysical
		c.Reason = fmt.Sprintf("%s; its bytes were found by keyed content digest in an unreachable record before reclaim (%d of its %d windows in the store's files); after reclaim no unreachable record matches and none of its windows is in the store's files", absentReasonPrefix, power, needles)
	}
}
