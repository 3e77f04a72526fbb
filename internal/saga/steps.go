package saga

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/subject"
	"github.com/amnesia-dev/amnesia/transparency"
)

func subjectKey(s string) (subject.Key, error) { return subject.ParseKey(s) }

type planResult struct {
	Erasure   string   `json:"erasure"`
	Trace     string   `json:"trace"`
	Reason    string   `json:"reason"`
	Artifacts int      `json:"artifacts"`
	Stores    []string `json:"stores"`
}

// recordEvidence is what the journal keeps of one record's evidence:
// counts, and the store keys of other records that hold its shared
// windows; never content.
type recordEvidence struct {
	Needles        int            `json:"needles"`
	Shared         int            `json:"shared"`
	FoundBefore    int            `json:"found_before"`
	SharedWith     map[string]int `json:"shared_with,omitempty"` // other record's key -> windows of this record it holds
	SharedWithMore int            `json:"shared_with_more,omitempty"`
	// SharedOwner numbers the owners of the SharedWith records, as the
	// ledger records them: 0 for a record the ledger does not know, the
	// same number n ≥ 1 for records of the same subject. Numbers, not
	// subject refs.
	SharedOwner  map[string]int `json:"shared_owner,omitempty"`
	RecordBytes  int            `json:"record_bytes,omitempty"`
	CoveredBytes int            `json:"covered_bytes,omitempty"`
	// UnsearchableBytes: of RecordBytes, those the store keeps in a form
	// the byte scan cannot match (store.Evidence.UnsearchableBytes).
	UnsearchableBytes int `json:"unsearchable_bytes,omitempty"`
}

type evidenceResult struct {
	Records  map[string]recordEvidence `json:"records"` // keys present in the store
	Physical bool                      `json:"physical"`
	// Identity names the store the evidence was read from
	// (store.Identifier), "" when the adapter names none.
	Identity string        `json:"identity,omitempty"`
	Orphans  *orphanResult `json:"orphans,omitempty"` // keys absent: orphans.go
	Near     *nearResult   `json:"near,omitempty"`    // nearby.go
}

type deleteResult struct {
	Keys int    `json:"keys"`
	Mark string `json:"mark,omitempty"` // store.DeleteMarker: what the store's reclaim needs of the delete
}

type reclaimResult struct {
	Method   string   `json:"method,omitempty"`
	Steps    []string `json:"steps,omitempty"`
	None     string   `json:"none,omitempty"`
	State    string   `json:"state,omitempty"`
	Evidence string   `json:"evidence,omitempty"`
	Unseen   bool     `json:"unseen,omitempty"` // store.ReclaimReport.Unseen
}

type probeResult struct {
	Logical  map[string]store.LogicalResult `json:"logical"`
	Found    map[string]int                 `json:"found"`
	Physical bool                           `json:"physical"`
	Method   string                         `json:"method,omitempty"`
	Files    int                            `json:"files"`
	Bytes    int64                          `json:"bytes"`
	Orphans  *orphanResult                  `json:"orphans,omitempty"` // orphans.go
	Drift    *driftResult                   `json:"drift,omitempty"`   // nearby.go
	// Partial: which of the store's files the scan could not read
	// (store.ScanReport.Partial); the physical level is then not claimed.
	Partial string `json:"partial,omitempty"`
}

type certResult struct {
	SHA256 string `json:"sha256"`
}

// results gathers every step's journaled result for decide.
type results struct {
	evidence map[string]*evidenceResult
	reclaim  map[string]*reclaimResult
	reclaimE map[string]string
	probe    map[string]*probeResult
	shred    shredResult
	models   []certificate.ModelOutcome // model.go
}

func (r *runner) run(ctx context.Context) (*certificate.Statement, error) {
	res, err := r.before(ctx)
	if err != nil {
		return nil, err
	}
	if err := r.deleteAll(ctx); err != nil {
		return nil, err
	}
	if err := r.reclaimAll(ctx, res, r.reclaim); err != nil {
		return nil, err
	}
	return r.after(ctx, res)
}

// before runs plan, suppress and evidence: every step before the first
// delete (deleteAll).
func (r *runner) before(ctx context.Context) (*results, error) {
	t := r.Trace
	r.progress("erasure %s of %s: %d artifacts in %d stores", r.id, t.SubjectRef, len(t.Artifacts), len(r.stores))
	var plan planResult
	if _, err := r.step("plan", "", &plan, func() (any, error) {
		return planResult{Erasure: r.id, Trace: t.ID, Reason: r.Reason, Artifacts: len(t.Artifacts), Stores: r.stores}, nil
	}); err != nil {
		return nil, err
	}
	r.Reason = plan.Reason // a resumed erasure keeps the reason it started with

	if _, err := r.step("suppress", "", nil, func() (any, error) {
		ids := make([]string, 0, len(t.Artifacts))
		for _, a := range t.Artifacts {
			ids = append(ids, a.ID)
		}
		// The erasure's start is an event of the transparency log.
		leaf, err := transparency.EventLeaf("erasure-started", r.id, t.ID)
		if err != nil {
			return nil, err
		}
		if ls, ok := r.Ledger.(lineage.LoggedSuppressor); ok {
			// Both in one transaction: one commit.
			idx, err := ls.SuppressLogged(ctx, r.id, ids, leaf)
			return map[string]int64{"artifacts": int64(len(ids)), "log_index": idx}, err
		}
		if err := r.Ledger.Suppress(ctx, r.id, ids); err != nil {
			return nil, err
		}
		lg, err := r.transparencyLog(ctx)
		if err != nil {
			return nil, err
		}
		idx, err := lg.Append(ctx, leaf)
		return map[string]int64{"artifacts": int64(len(ids)), "log_index": idx}, err
	}); err != nil {
		return nil, err
	}

	res := &results{evidence: map[string]*evidenceResult{}, reclaim: map[string]*reclaimResult{}, reclaimE: map[string]string{}, probe: map[string]*probeResult{}}
	for _, st := range r.stores {
		out := &evidenceResult{}
		if err := r.storeStep("evidence", st, out, func() (any, error) { return r.readEvidence(ctx, st) }); err != nil {
			return nil, err
		}
		res.evidence[st] = out
	}
	return res, nil
}

// deleteAll runs the delete step of every healthy store.
func (r *runner) deleteAll(ctx context.Context) error {
	for _, st := range r.stores {
		out := &deleteResult{}
		if err := r.storeStep("delete", st, out, func() (any, error) {
			err := r.deleteKeys(ctx, st) // batchprobe.go
			res := deleteResult{Keys: len(r.keys[st])}
			if dm, ok := r.Stores[st].(store.DeleteMarker); ok && err == nil {
				res.Mark = dm.DeleteMark()
			}
			return res, err
		}); err != nil {
			return err
		}
		if out.Mark != "" {
			r.marks[st] = out.Mark
		}
	}
	return nil
}

// reclaimAll runs the reclaim step of every healthy store with do, which is
// r.reclaim alone, or one reclaim shared by a batch. A reclaim that another
// process holds up is retried for up to ReclaimWait; if it still cannot
// finish, the store is paused (r.paused): its step stays open in the
// journal, so that running the erasure again retries it.
func (r *runner) reclaimAll(ctx context.Context, res *results, do func(context.Context, string) (any, error)) error {
	for _, st := range r.stores {
		if _, bad := r.failed[st]; bad {
			continue
		}
		if err := r.sameStore(ctx, st, res); err != nil {
			// Not a step's failure: checked again on every run.
			r.failed[st] = "reclaim: " + err.Error()
			continue
		}
		out := &reclaimResult{}
		serr, err := r.step("reclaim", st, out, func() (any, error) { return r.reclaimWaiting(ctx, st, do) })
		var pe *PendingError
		if errors.As(err, &pe) {
			if r.AllowPartial {
				// The operator chose to go on: the store ends UNVERIFIED.
				r.failed[st] = "reclaim: " + pe.State + ": " + pe.Cause
				if jerr := r.j.append("reclaim:"+st, phaseFailed, nil, errors.New(pe.State+": "+pe.Cause)); jerr != nil {
					return jerr
				}
				continue
			}
			r.paused[st] = pe
			continue
		}
		if err != nil {
			return err
		}
		if serr != nil {
			res.reclaimE[st] = serr.Err.Error() // a failed reclaim is measured by the probe, not assumed
		}
		res.reclaim[st] = out
	}
	return nil
}

// sameStore returns an error when the store st reaches now is not the one
// its evidence was read from (store.Identifier; a resumed erasure on
// another host, or after the configured path or server changed): the
// scan's power was measured in that one, so absence in this one proves
// nothing about it. A store that names no identity, or cannot be asked now,
// is not checked here (its steps meet the error).
func (r *runner) sameStore(ctx context.Context, st string, res *results) error {
	ev := res.evidence[st]
	if ev == nil || ev.Identity == "" {
		return nil
	}
	id, ok := r.Stores[st].(store.Identifier)
	if !ok {
		return nil
	}
	now, err := id.Identity(ctx)
	if err != nil || now == ev.Identity {
		return nil
	}
	return fmt.Errorf("the store reached now is not the one its evidence was read from (%s then, %s now: another host's copy, or the configured path or server changed), so its records cannot be shown gone from that one", ev.Identity, now)
}

// reclaimWaiting runs do until it is no longer held up by another process,
// for up to ReclaimWait, showing progress, and returns a *PendingError when
// the wait runs out.
func (r *runner) reclaimWaiting(ctx context.Context, st string, do func(context.Context, string) (any, error)) (any, error) {
	start := r.Now()
	for {
		out, err := do(ctx, st)
		state, cause := holdUp(out, err)
		if state == "" {
			return out, err
		}
		waited := r.Now().Sub(start)
		if waited >= r.ReclaimWait || ctx.Err() != nil {
			return nil, &PendingError{Erasure: r.id, Store: st, Step: "reclaim", State: state, Cause: cause, Waited: waited}
		}
		r.progress("  %-28s waiting: %s (%s); %s of %s", "reclaim:"+st, state, cause, waited.Round(time.Second), r.ReclaimWait)
		r.log().Info("reclaim waiting", "store", st, "state", state, "waited", waited.String())
		pause := min(2*time.Second, r.ReclaimWait-waited)
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		}
	}
}

// holdUp tells whether a reclaim's outcome means another process holds the
// store up, so that a later try can finish: the store is busy or cannot be
// reached (an error wrapping store.ErrBusy or store.ErrUnavailable), or the
// adapter reports a PENDING state other than the configured
// PENDING-reclaim-deferred (a lock or statement timeout, a long or
// prepared transaction, a replication slot). It returns the state and a
// one-line cause, or "" when the outcome is final.
func holdUp(out any, err error) (state, cause string) {
	switch {
	case err != nil && errors.Is(err, store.ErrBusy):
		return "PENDING-store-busy", err.Error()
	case err != nil && errors.Is(err, store.ErrUnavailable):
		return "PENDING-store-unreachable", err.Error()
	case err != nil:
		return "", ""
	}
	if rr, ok := out.(reclaimResult); ok && strings.HasPrefix(rr.State, "PENDING-") && rr.State != stateDeferred {
		return rr.State, rr.Evidence
	}
	return "", ""
}

// stateDeferred is the residue state of a store configured not to reclaim:
// it is the operator's choice, not something a later run can finish.
const stateDeferred = "PENDING-reclaim-deferred"

// after runs probe, decide, certificate and publish.
func (r *runner) after(ctx context.Context, res *results) (*certificate.Statement, error) {
	t := r.Trace
	for _, st := range r.stores {
		if r.paused[st] != nil {
			continue
		}
		out := &probeResult{}
		err := r.storeStep("probe", st, out, func() (any, error) { return r.probeAndDrift(ctx, st, res) })
		var pe *PendingError
		if errors.As(err, &pe) {
			if !r.AllowPartial {
				r.paused[st] = pe
				continue
			}
			r.failed[st] = "probe: " + pe.State + ": " + pe.Cause
			if jerr := r.j.append("probe:"+st, phaseFailed, nil, errors.New(pe.State+": "+pe.Cause)); jerr != nil {
				return nil, jerr
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		res.probe[st] = out
	}
	if err := r.pausedError(); err != nil {
		return nil, err
	}
	if err := r.modelLeg(ctx, res); err != nil { // model.go
		return nil, err
	}

	// Crypto-shredding: the subject's data key, if any, is destroyed once
	// every store is done with (paused stores returned above).
	if _, err := r.step("shred", "", &res.shred, func() (any, error) { return r.shredKey(ctx) }); err != nil {
		return nil, err
	}
	pred := &certificate.Predicate{}
	if _, err := r.step("decide", "", pred, func() (any, error) { return r.decide(ctx, res) }); err != nil {
		return nil, err
	}
	head, steps := r.j.head("decide")
	pred.Journal = certificate.JournalRef{Head: head, Steps: steps}
	st := certificate.NewStatement(*pred, t.ID)
	// The certificate step signs and journals only the envelope's digest;
	// publish uses the envelope signed there, or, when the certificate step
	// was replayed from the journal, signs again (Ed25519 is deterministic),
	// checks the digest and writes the file. No certificate file exists
	// before every step is done.
	var signed *certificate.Signed // the envelope the certificate step signed in this run
	sign := func() (*certificate.Signed, error) {
		if signed != nil {
			return signed, nil
		}
		return certificate.SignStatement(ctx, st, r.Dir.Key)
	}
	var cr certResult
	if _, err := r.step("certificate", "", &cr, func() (any, error) {
		s, err := sign()
		if err != nil {
			return nil, err
		}
		signed = s
		sum := sha256.Sum256(s.Envelope)
		return certResult{SHA256: hex.EncodeToString(sum[:])}, nil
	}); err != nil {
		return nil, err
	}
	if _, err := r.step("publish", "", nil, func() (any, error) {
		s, err := sign()
		if err != nil {
			return nil, err
		}
		return nil, r.publish(ctx, st.Predicate.CertificateID, s, cr.SHA256)
	}); err != nil {
		return nil, err
	}
	return st, nil
}

// evidenceName is the name of st's sealed evidence (Durable).
func evidenceName(st string) string { return "evidence-" + st + ".sealed" }

func (r *runner) readEvidence(ctx context.Context, st string) (any, error) {
	s, ok := r.Stores[st]
	if !ok || s == nil {
		return nil, fmt.Errorf("open store: %s", notOpenReason(r.OpenErr[st]))
	}
	out := evidenceResult{Records: map[string]recordEvidence{}}
	er, ok := s.(store.EvidenceReader)
	if !ok {
		return out, nil
	}
	// The step ran before and sealed its evidence with its result, but a
	// power loss took its journal entries (the journal is not fsynced
	// before the first delete: durableBefore): the result sealed is the
	// one it journaled, read before any delete.
	// Sealed evidence that cannot be read is an error, not a reason to
	// read a store whose records may be gone.
	if ev, res, ok, err := r.getEvidenceResult(ctx, evidenceName(st), sealKey(r.Dir.Keyer, r.id, st)); err != nil {
		return nil, err
	} else if ok && res != nil {
		r.ev[st] = ev
		return res, nil
	}
	ev, err := r.readStoreEvidence(ctx, st, er) // batchprobe.go
	if err != nil {
		return nil, err
	}
	if id, ok := s.(store.Identifier); ok {
		if out.Identity, err = id.Identity(ctx); err != nil {
			return nil, err
		}
	}
	var found map[string]int
	if pp, ok := physical(s); ok {
		rep, err := r.scanPhysical(ctx, st, pp, ev, "evidence")
		if errors.Is(err, store.ErrBusy) {
			// Files still appearing (compaction, WAL recycling): nothing
			// is deleted yet, a later run reads the evidence again.
			return nil, &PendingError{Erasure: r.id, Store: st, Step: "evidence", State: "PENDING-store-busy", Cause: err.Error()}
		}
		if err != nil {
			return nil, err
		}
		found, out.Physical = rep.Found, true
	}
	looked := map[string]string{} // key -> owner, "" when the ledger does not know it: one lookup per key
	if err := r.lookUpOwners(ctx, st, ev, looked); err != nil {
		return nil, err
	}
	for k, e := range ev {
		owners, err := r.sharedOwners(ctx, st, e.SharedWith, looked)
		if err != nil {
			return nil, err
		}
		out.Records[k] = recordEvidence{Needles: len(e.Needles), Shared: e.Shared, FoundBefore: found[k],
			SharedWith: e.SharedWith, SharedWithMore: e.SharedWithMore, SharedOwner: owners, RecordBytes: e.RecordBytes, CoveredBytes: e.CoveredBytes, UnsearchableBytes: e.UnsearchableBytes}
	}
	if out.Orphans, err = r.probeOrphans(ctx, st, s, ev, "evidence"); err != nil {
		return nil, err
	}
	if out.Near, err = r.nearby(ctx, st, s, ev, out.Records); err != nil {
		return nil, err
	}
	// Sealed last, with the result the step journals: sealed evidence with
	// a result means the step finished (the orphans' evidence is sealed
	// before it), and its fsync makes the result durable before any
	// delete, as the journal's fsync did.
	res, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	if err := r.putEvidenceResult(ctx, evidenceName(st), sealKey(r.Dir.Keyer, r.id, st), ev, res); err != nil {
		return nil, err
	}
	r.ev[st] = ev
	// The encoding sealed is the result: the step decodes and journals it
	// as it is, instead of encoding out again (as a rerun returns the
	// sealed result above).
	return json.RawMessage(res), nil
}

// sharedOwners numbers the owners of the records in with (see
// recordEvidence.SharedOwner), looking each up in the ledger once per
// erasure step: looked keeps the owners already looked up ("" for a record
// the ledger does not know).
func (r *runner) sharedOwners(ctx context.Context, st string, with map[string]int, looked map[string]string) (map[string]int, error) {
	if len(with) == 0 {
		return nil, nil
	}
	keys := make([]string, 0, len(with))
	for k := range with {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	num := map[string]int{}
	out := map[string]int{}
	for _, k := range keys {
		owner, ok := looked[k]
		if !ok {
			a, err := r.Ledger.Lookup(ctx, r.Trace.Scope, st, k)
			switch {
			case errors.Is(err, lineage.ErrNotFound):
			case err != nil:
				return nil, fmt.Errorf("look up the records that share windows: %w", err)
			default:
				owner = a.Subject.String()
			}
			looked[k] = owner
		}
		if owner == "" {
			out[k] = 0
			continue
		}
		if _, ok := num[owner]; !ok {
			num[owner] = len(num) + 1
		}
		out[k] = num[owner]
	}
	return out, nil
}

// lookUpOwners fills looked (sharedOwners) with the owner of every record
// that ev's SharedWith name, in one read, when the ledger looks up many
// keys at once (lineage.BatchLookup): sharedOwners then asks the ledger
// nothing more. A key that is not UTF-8 (a JSON array of keys would not
// carry it unchanged) is left to sharedOwners' own lookup.
func (r *runner) lookUpOwners(ctx context.Context, st string, ev map[string]*store.Evidence, looked map[string]string) error {
	bl, ok := r.Ledger.(lineage.BatchLookup)
	if !ok {
		return nil
	}
	b := batchOf(ctx)
	var keys []string
	for _, e := range ev {
		for k := range e.SharedWith {
			if _, dup := looked[k]; dup || !utf8.ValidString(k) {
				continue
			}
			if owner, ok := b.owner(r.Trace.Scope, st, k); ok {
				looked[k] = owner // looked up by another erasure of the batch
				continue
			}
			looked[k] = "" // until found below
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	arts, err := bl.LookupKeys(ctx, r.Trace.Scope, st, keys)
	if err != nil {
		return fmt.Errorf("look up the records that share windows: %w", err)
	}
	for _, k := range keys {
		if a := arts[k]; a != nil {
			looked[k] = a.Subject.String()
		}
	}
	b.setOwners(r.Trace.Scope, st, keys, looked)
	return nil
}

// evidence returns the store's evidence: in memory, or unsealed after a resume.
func (r *runner) evidence(ctx context.Context, st string) (map[string]*store.Evidence, error) {
	if ev, ok := r.ev[st]; ok {
		return ev, nil
	}
	ev, ok, err := r.getEvidence(ctx, evidenceName(st), sealKey(r.Dir.Keyer, r.id, st))
	if err != nil {
		return nil, err
	}
	if !ok {
		if _, reads := r.Stores[st].(store.EvidenceReader); reads {
			// Its evidence step sealed what it read (readEvidence), and
			// publish has not destroyed it: the sealed file or row is gone
			// (a partial restore, a cleanup). Probing without it would drop
			// the filter, similarity and byte probes and say the adapter
			// has none.
			return nil, fmt.Errorf("the sealed evidence of store %s is missing (a partial restore of the state directory or ledger it was kept in?): its records cannot be probed", st)
		}
		return map[string]*store.Evidence{}, nil // the store has no evidence reader
	}
	r.ev[st] = ev
	return ev, nil
}

func (r *runner) reclaim(ctx context.Context, st string) (any, error) {
	s, ok := r.Stores[st]
	if !ok || s == nil {
		// Never journal a reclaim that did not run: the records are
		// deleted, so the store must come back to finish the erasure.
		return nil, fmt.Errorf("open store: %w", unreachable(r.OpenErr[st]))
	}
	// An adapter configured not to reclaim (delete-only) still answers
	// Reclaim, with its residue state and no physical work.
	rc, ok := s.(store.Reclaimer)
	if !ok {
		return reclaimResult{None: "the adapter cannot force physical reclamation"}, nil
	}
	if w, ok := s.(store.ReclaimWatcher); ok {
		// What to wait for: this process read it, or (a resumed erasure)
		// it is unsealed now.
		ev, err := r.evidence(ctx, st)
		if err != nil {
			return nil, err
		}
		w.WatchDeleted(ev)
	}
	if dm, ok := s.(store.DeleteMarker); ok && r.marks[st] != "" {
		// A resumed erasure: this process's store did not see the delete.
		if err := dm.SetDeleteMark(r.marks[st]); err != nil {
			return nil, err
		}
	}
	rep, err := rc.Reclaim(ctx)
	if err != nil {
		return nil, err
	}
	return reclaimResult{Method: rep.Method, Steps: rep.Steps, State: rep.State, Evidence: rep.Evidence, Unseen: rep.Unseen}, nil
}

func (r *runner) probe(ctx context.Context, st string) (any, error) {
	s, ok := r.Stores[st]
	if !ok || s == nil {
		return nil, &PendingError{Erasure: r.id, Store: st, Step: "probe", State: "PENDING-store-unreachable", Cause: unreachable(r.OpenErr[st]).Error()}
	}
	ev, err := r.evidence(ctx, st)
	if err != nil {
		return nil, err
	}
	lr, err := s.ProbeLogical(ctx, r.keys[st], ev)
	if errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrBusy) {
		return nil, &PendingError{Erasure: r.id, Store: st, Step: "probe", State: "PENDING-store-unreachable", Cause: err.Error()}
	}
	if err != nil {
		return nil, err
	}
	out := probeResult{Logical: map[string]store.LogicalResult{}, Found: map[string]int{}}
	for _, l := range lr {
		out.Logical[l.Key] = l
	}
	if pp, ok := physical(s); ok && len(ev) > 0 {
		rep, err := r.scanPhysical(ctx, st, pp, ev, "probe")
		switch {
		case errors.Is(err, store.ErrBusy):
			// As for the logical probe: a later run can scan the files.
			return nil, &PendingError{Erasure: r.id, Store: st, Step: "probe", State: "PENDING-store-busy", Cause: err.Error()}
		case errors.Is(err, store.ErrUnavailable):
			return nil, &PendingError{Erasure: r.id, Store: st, Step: "probe", State: "PENDING-store-unreachable", Cause: err.Error()}
		case err != nil:
			return nil, err
		}
		out.Physical, out.Method, out.Files, out.Bytes, out.Found, out.Partial = true, rep.Method, rep.Files, rep.Bytes, rep.Found, rep.Partial
	}
	if _, ok := s.(store.EvidenceReader); ok {
		if out.Orphans, err = r.probeOrphans(ctx, st, s, ev, "probe"); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// publish appends the certificate to the transparency log (idempotently: a
// resumed publish finds its leaf), signs a checkpoint, proves the leaf in it
// and writes the bundle (certificates/, or the ledger: Durable), and
// destroys the sealed evidence. Idempotent.
//
// No step left needs the sealed evidence: the steps that read it
// (evidence, reclaim, probe) are done, and their entries were fsynced
// before publish began (durableBefore). So with the state directory its
// files are destroyed while the certificate is logged and written, their
// fsyncs overlapping; a crash between the two leaves publish open, and its
// rerun needs no evidence (a missing file is not an error). With the
// ledger (PostgreSQL) the evidence is destroyed after the certificate is
// stored, as before.
func (r *runner) publish(ctx context.Context, certID string, env *certificate.Signed, sum string) error {
	got := sha256.Sum256(env.Envelope)
	if hex.EncodeToString(got[:]) != sum {
		return fmt.Errorf("publish: certificate does not match the digest journaled when it was signed")
	}
	var names []string
	for _, st := range r.stores {
		names = append(names, evidenceName(st), orphanName(st))
	}
	var shredDone chan shredOutcome
	if !InLedger(r.dur) {
		shredDone = make(chan shredOutcome, 1)
		go func(d Durable, id string) {
			how, err := d.shredSealed(ctx, id, names)
			shredDone <- shredOutcome{how: how, err: err}
		}(r.dur, r.id)
	}
	err := r.putCertificate(ctx, certID, env)
	var sh shredOutcome
	switch {
	case shredDone != nil:
		sh = <-shredDone // always waited for: nothing outlives the step
	case err == nil:
		sh.how, sh.err = r.dur.shredSealed(ctx, r.id, names)
	}
	if err != nil {
		return err
	}
	// The evidence was only ever ciphertext (seal.go).
	if sh.err != nil {
		return fmt.Errorf("publish: destroy evidence: %w", sh.err)
	}
	r.log().Info("sealed evidence destroyed", "how", sh.how)
	return nil
}

// shredOutcome is what Durable.shredSealed returned.
type shredOutcome struct {
	how string
	err error
}

// putCertificate logs the certificate env, whose id is certID, and stores
// its bundle (Durable.PutCertificate).
func (r *runner) putCertificate(ctx context.Context, certID string, env *certificate.Signed) error {
	bundle, err := r.logCertificate(ctx, certID, env)
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	if err := r.dur.PutCertificate(ctx, r.id, bundle); err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	return nil
}

// physical returns the store's physical prober when it has one and declares
// the capability (a role without read access to the files does not).
func physical(s store.Store) (store.PhysicalProber, bool) {
	pp, ok := s.(store.PhysicalProber)
	return pp, ok && s.Info().Has(store.CapProbePhysical)
}

// unreachable describes why a store is not open, wrapping store.ErrUnavailable.
func unreachable(openErr error) error {
	if openErr == nil {
		return fmt.Errorf("%w: the store is not open in this run", store.ErrUnavailable)
	}
	if errors.Is(openErr, store.ErrUnavailable) {
		return openErr
	}
	return fmt.Errorf("%w: %v", store.ErrUnavailable, openErr)
}

// pausedError returns the PendingError of the first paused store (in store
// order), or nil when no store is paused.
func (r *runner) pausedError() error {
	for _, st := range r.stores {
		if pe := r.paused[st]; pe != nil {
			return pe
		}
	}
	return nil
}
