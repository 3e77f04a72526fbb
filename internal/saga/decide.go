package saga

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/model"
	"github.com/amnesia-dev/amnesia/store"
)

// outOfScope is what no amnesia certificate covers, whatever was configured.
var outOfScope = []certificate.Exclusion{
	{What: "backups and snapshots", Reason: "copies made by backup tools, volume snapshots or database dumps are outside the configured stores; expire or erase them under your retention policy"},
	{What: "replicas and read caches of the configured stores", Reason: "only the configured store files and connections were erased and probed"},
	{What: "provider-side copies", Reason: "hosted services (embedding APIs, managed databases, log processors) keep their own copies under their own terms"},
	{What: "model weights and fine-tuned adapters", Reason: "no training set or model store is configured; data already learned by a model is not removed by deleting records"},
	{What: "freed file-system blocks and SSD remapped cells", Reason: "the physical probe reads the store's files as the file system presents them; blocks the file system or the drive released earlier are not visible to it"},
	{What: "application memory and process logs outside amnesia", Reason: "amnesia cannot see what a running process holds or what other programs logged"},
}

// modelExclusion is the index in outOfScope of the entry about models,
// which outOfScopeFor words by the installation's models: section.
const modelExclusion = 3

// outOfScopeFor returns outOfScope as it holds for an installation whose
// models: section names models (none: outOfScope as it is). An erasure's
// model leg checks the configured models' recorded training runs, nothing
// else (model.go); a re-verification looks at no model at all.
func outOfScopeFor(models []string, reverification bool) []certificate.Exclusion {
	out := append([]certificate.Exclusion(nil), outOfScope...)
	if len(models) == 0 {
		return out
	}
	names := strings.Join(models, ", ")
	if reverification {
		out[modelExclusion] = certificate.Exclusion{What: "model weights and fine-tuned adapters",
			Reason: "a re-verification looks records up by id and does not check models; the erasure certificate's models section says what was checked for the configured models (" + names + ")"}
		return out
	}
	out[modelExclusion] = certificate.Exclusion{What: "model weights and fine-tuned adapters other than the configured models' recorded training runs",
		Reason: "only the models configured in the models: section (" + names + ") and the training runs recorded for them were checked (see models, when the subject's rows were in their datasets); other models, copies of their artifacts, and models merged or distilled from them are not"}
	return out
}

// modelNames are the names of the configured models.
func modelNames(cfgs []model.Config) []string {
	names := make([]string, 0, len(cfgs))
	for _, c := range cfgs {
		names = append(names, c.Name)
	}
	return names
}

func (r *runner) decide(ctx context.Context, res *results) (*certificate.Predicate, error) {
	t := r.Trace
	now := r.Now().UTC().Truncate(time.Second)
	p := &certificate.Predicate{
		SchemaVersion: certificate.SchemaVersion,
		CertificateID: r.id,
		SubjectRef:    t.SubjectRef,
		Scope:         t.Scope,
		Reason:        r.Reason,
		IssuedAt:      now.Format(time.RFC3339),
		ValidUntil:    now.Add(r.Dir.Config.ValidityDuration()).Format(time.RFC3339),
		Trace:         certificate.TraceRef{ID: t.ID, Artifacts: len(t.Artifacts) + len(t.Mentions)},
		Artifacts:     []certificate.Artifact{},
		OutOfScope:    outOfScopeFor(modelNames(r.Dir.Config.Models), false),
	}
	perStore := map[string][]certificate.Artifact{}
	var marks []lineage.ErasureMark
	for _, a := range t.Artifacts {
		c := r.outcome(a, res)
		perStore[a.Store] = append(perStore[a.Store], c)
		p.Artifacts = append(p.Artifacts, c)
		marks = append(marks, lineage.ErasureMark{Artifact: a.ID, Erasure: r.id, Outcome: c.Outcome})
	}
	if err := r.markAdopted(ctx, p.Artifacts); err != nil {
		return nil, err
	}
	sh, err := r.shredding(ctx, res.shred, p.Artifacts)
	if err != nil {
		return nil, err
	}
	p.CryptoShredding = sh
	for _, a := range t.Mentions {
		c := certificate.Artifact{ID: a.ID, Kind: string(a.Kind), Store: a.Store, Outcome: certificate.NeedsHuman,
			Reason: "holds data about this subject but belongs to " + a.Owner + "; a person must decide what to redact", Method: "not deleted: third-party mention"}
		p.Artifacts = append(p.Artifacts, c)
	}
	p.Artifacts = append(p.Artifacts, r.nearArtifacts(res, p.Artifacts)...) // nearby.go
	p.Semantic = r.semantic(res, p.Artifacts)
	unconfigured := map[string]bool{}
	for _, a := range p.Artifacts {
		if a.Outcome == certificate.OutOfScope {
			unconfigured[a.Store] = true
		}
	}
	for st := range unconfigured {
		p.OutOfScope = append(p.OutOfScope, certificate.Exclusion{What: "store " + st, Reason: "the ledger records artifacts in it, but it is not configured here; amnesia did not act on it"})
	}
	p.OutOfScope = append(p.OutOfScope, r.installationExclusions()...)
	sort.Slice(p.OutOfScope[len(outOfScope):], func(i, j int) bool {
		return p.OutOfScope[len(outOfScope)+i].What < p.OutOfScope[len(outOfScope)+j].What
	})
	unreachable := false
	for _, sc := range r.Dir.Config.Stores {
		ss := r.storeState(sc.Name, sc.Type, perStore[sc.Name], res)
		if ss.Residue == stateUnreachable && !sc.OutOfScope {
			unreachable = true
		}
		p.DeclaredScope = append(p.DeclaredScope, ss)
	}
	p.Counts = certificate.CountArtifacts(p.Artifacts)
	// A configured store that could not be reached may hold data of the
	// subject that the ledger does not know of: the certificate is not
	// complete unless the operator declared the store out of scope.
	p.Complete = p.Counts.Unverified == 0 && p.Counts.Residual == 0 && p.Counts.OutOfScope == 0 && !unreachable && noneNeedsHuman(p.Artifacts[:len(t.Artifacts)])
	p.Models = res.models // model.go: a model not VERIFIED leaves the certificate incomplete
	p.Complete = p.Complete && modelsVerified(p.Models)
	p.Follows = r.follows
	p.Reverifiable, p.ReverifyNote = reverifiability(r.Dir.Config, r.Ledger, r.Stores, p.Artifacts) // reverify.go
	if err := r.Ledger.MarkErased(ctx, marks); err != nil {
		return nil, err
	}
	return p, nil
}

// markAdopted sets Via on the artifacts that lineage adopted rather than
// captured (amnesia reconcile), when the ledger keeps adoptions.
func (r *runner) markAdopted(ctx context.Context, arts []certificate.Artifact) error {
	ad, ok := r.Ledger.(lineage.Adopter)
	if !ok || len(arts) == 0 {
		return nil
	}
	ids := make([]string, len(arts))
	for i, a := range arts {
		ids[i] = a.ID
	}
	via, err := ad.AdoptedVia(ctx, ids)
	if err != nil {
		return fmt.Errorf("read adoptions: %w", err)
	}
	for i := range arts {
		if v := via[arts[i].ID]; v == lineage.ViaReconcile {
			arts[i].Via = certificate.ViaReconcile
		}
	}
	return nil
}

func (r *runner) outcome(a lineage.TraceArtifact, res *results) certificate.Artifact {
	c := certificate.Artifact{ID: a.ID, Kind: string(a.Kind), Store: a.Store}
	if _, err := r.Dir.Config.Store(a.Store); err != nil {
		c.Outcome, c.Reason, c.Method = certificate.OutOfScope, "store "+a.Store+" is not configured in this installation", "none"
		return c
	}
	if f, bad := r.failed[a.Store]; bad {
		c.Outcome, c.Reason, c.Method = certificate.Unverified, "store failed at "+f, "erasure did not complete in this store"
		return c
	}
	ev := res.evidence[a.Store].Records[a.Key]
	pr := res.probe[a.Store]
	l := pr.Logical[a.Key]
	m := &certificate.Measurement{Deleted: true, Logical: &certificate.Logical{ByID: l.ByID, ByFilter: l.ByFilter, BySimilarity: l.BySimilarity, Methods: l.Methods}}
	c.Measurement = m
	methods := []string{"DELETE by key"}
	if rc := res.reclaim[a.Store]; rc != nil && rc.Method != "" {
		methods = append(methods, "reclaim: "+rc.Method)
	}
	methods = append(methods, "logical probe: "+strings.Join(l.Methods, ", "))
	if pr.Physical {
		m.Physical = &certificate.Physical{Needles: ev.Needles, Shared: ev.Shared, FoundBefore: ev.FoundBefore, FoundAfter: pr.Found[a.Key], FilesScanned: pr.Files, BytesScanned: pr.Bytes}
		if ev.RecordBytes > 0 {
			m.Physical.Coverage = &certificate.Coverage{RecordBytes: int64(ev.RecordBytes), CoveredBytes: int64(ev.CoveredBytes), WindowBytes: store.WindowSize, FragmentBytes: store.FragmentBytes}
		}
		methods = append(methods, fmt.Sprintf("physical probe: %s for %d windows of up to %d bytes every %d bytes", pr.Method, ev.Needles, store.WindowSize, store.WindowStride))
	}
	m.Copies, m.CopiesUnlisted = r.copiesOutside(a, ev)
	c.Method = strings.Join(methods, "; ")
	_, present := res.evidence[a.Store].Records[a.Key]
	switch {
	case l.Found():
		c.Outcome, c.Reason = certificate.Residual, "still returned by "+strings.Join(foundBy(l), ", ")+copiesNote(a.Store, ev, m)
	case !present:
		r.absentOutcome(&c, a, res) // orphans.go
	case m.Physical != nil && m.Physical.FoundAfter > 0:
		c.Outcome, c.Reason = certificate.Residual, fmt.Sprintf("%d of %d needles still in the store's files", m.Physical.FoundAfter, m.Physical.Needles)+copiesNote(a.Store, ev, m)
	case len(m.Copies) > 0 || m.CopiesUnlisted > 0:
		c.Outcome, c.Reason = certificate.NeedsHuman, copiesReason(a.Store, ev, m)
	case m.Physical != nil && m.Physical.FoundBefore > 0 && m.Physical.Coverage != nil && m.Physical.Coverage.Complete() && pr.Partial == "" && !unseen(res.reclaim[a.Store]):
		c.Outcome, c.Level = certificate.Verified, certificate.LevelPhysical
	case unseen(res.reclaim[a.Store]) && m.Physical != nil && m.Physical.FoundBefore > 0:
		rc := res.reclaim[a.Store]
		c.Outcome, c.Level = certificate.Verified, certificate.LevelLogical
		c.Reason = "no query path returns it and the byte scan finds none of its windows; physical level not reached: the store's reclaim reports what the byte scan cannot see (" + rc.State + ": " + rc.Evidence + ")"
	default:
		c.Outcome, c.Level = certificate.Verified, certificate.LevelLogical
		c.Reason = "no query path returns it; physical level not reached: " + whyNotPhysical(pr, ev, present, a.Store)
	}
	return c
}

func foundBy(l store.LogicalResult) []string {
	var out []string
	if l.ByID {
		out = append(out, "lookup by id")
	}
	if l.ByFilter {
		out = append(out, "metadata filter")
	}
	if l.BySimilarity {
		out = append(out, "similarity search")
	}
	return out
}

// unseen reports whether a store's reclaim says bytes of its deleted
// records remain where the byte scan cannot see them.
func unseen(rc *reclaimResult) bool { return rc != nil && rc.Unseen }

func whyNotPhysical(pr *probeResult, ev recordEvidence, present bool, st string) string {
	switch {
	case !pr.Physical:
		return "store " + st + " has no physical probe"
	case pr.Partial != "":
		return "the byte scan after deletion did not read all of the store's files (" + pr.Partial + "), so bytes of the record there would not have been found"
	case !present:
		return "the record was already absent when the erasure began, so there were no bytes to look for"
	case ev.Needles == 0 && ev.Shared > 0:
		return fmt.Sprintf("all %d of its windows are also held by other live records, so finding them would prove nothing", ev.Shared)
	case ev.Needles == 0:
		return "the record is too short or too repetitive to yield needles"
	case ev.FoundBefore == 0:
		return fmt.Sprintf("none of its %d needles was visible in the store's files before deletion, so the scan had no power", ev.Needles)
	case ev.RecordBytes == 0:
		return "the evidence does not say how much of the record its needles cover (an adapter that does not count it, or an erasure begun by an earlier version)"
	case ev.UnsearchableBytes > 0:
		return fmt.Sprintf("%d of the record's %d bytes are kept by the store in a form the byte scan cannot match (compressed), so a surviving copy of them would not have been found, whatever the scan found of its other fields",
			ev.UnsearchableBytes, ev.RecordBytes)
	default:
		return fmt.Sprintf("the physical probe covered %d of %d bytes of the record (fields shorter than %d bytes are not searched; a longer field is tiled up to %d windows), so a fragment of the rest would not have been found",
			ev.CoveredBytes, ev.RecordBytes, store.MinNeedle, store.MaxWindows)
	}
}

// A record outside the subject's lineage is reported as a possible copy of
// an erased record when it holds at least copyMinWindows of the erased
// record's windows and at least copyShareNum/copyShareDen of them, unless
// records of two or more owners (subjects in the ledger, or records the
// ledger does not know, counted as one owner) hold that much of it: text
// that several people's records contain whole (a template sentence that
// became a chunk of its own, a boilerplate footer) is not a copy of this
// subject's data. Holders under the threshold (shared phrases, which put a
// few windows of a record into dozens of others) stay counted in
// measurement.physical.shared only. With copyMinWindows 1, copyShareNum 0
// and no owner rule, every holder outside the lineage would be reported.
const (
	copyMinWindows = 8
	copyShareNum   = 9
	copyShareDen   = 10
)

// copiesOutside returns the records of a's store, outside the trace (not
// erased by this erasure), that may be copies of it (see copyShareNum), by
// keyed id, those holding the most first, and how many more the evidence
// step counted without naming that may be copies too.
func (r *runner) copiesOutside(a lineage.TraceArtifact, ev recordEvidence) ([]certificate.Copy, int) {
	if len(ev.SharedWith) == 0 {
		return nil, 0
	}
	total := ev.Needles + ev.Shared
	isCopy := func(n int) bool { return n >= copyMinWindows && n*copyShareDen >= total*copyShareNum }
	inTrace := map[string]bool{}
	for _, o := range r.Trace.Artifacts {
		if o.Store == a.Store {
			inTrace[o.Key] = true
		}
	}
	var out []certificate.Copy
	owners := map[int]bool{}
	least := -1 // fewest windows a named holder holds
	for k, n := range ev.SharedWith {
		if least < 0 || n < least {
			least = n
		}
		if isCopy(n) && !inTrace[k] {
			owners[ev.SharedOwner[k]] = true
			out = append(out, certificate.Copy{Store: a.Store, Record: lineage.ArtifactID(r.Dir.Keyer, r.Trace.Scope, a.Store, k), Windows: n})
		}
	}
	if len(owners) > 1 {
		return nil, 0 // text several people's records hold whole
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Windows != out[j].Windows {
			return out[i].Windows > out[j].Windows
		}
		return out[i].Record < out[j].Record
	})
	// Holders the evidence step did not name hold at most as many windows
	// as the least of those it named: when that many make a copy, the
	// unnamed ones may be copies too, and their owners are not known, so
	// they are counted.
	unlisted := 0
	if len(out) > 0 && ev.SharedWithMore > 0 && isCopy(least) {
		unlisted = ev.SharedWithMore
	}
	return out, unlisted
}

// copiesReason says which records outside the lineage hold a's windows.
func copiesReason(st string, ev recordEvidence, m *certificate.Measurement) string {
	total := ev.Needles + ev.Shared
	if len(m.Copies) == 1 && m.CopiesUnlisted == 0 {
		return fmt.Sprintf("%d of %d windows are also held by record %s/%s outside this subject's lineage; a person must decide whether it is a copy of this subject's data",
			m.Copies[0].Windows, total, st, m.Copies[0].Record)
	}
	names := make([]string, 0, len(m.Copies)+1)
	for _, c := range m.Copies {
		names = append(names, fmt.Sprintf("%s/%s (%d of %d windows)", st, c.Record, c.Windows, total))
	}
	if m.CopiesUnlisted > 0 {
		names = append(names, fmt.Sprintf("%d more records", m.CopiesUnlisted))
	}
	return "its windows are also held by records outside this subject's lineage: " + strings.Join(names, ", ") + "; a person must decide whether they are copies of this subject's data"
}

func copiesNote(st string, ev recordEvidence, m *certificate.Measurement) string {
	if len(m.Copies) == 0 && m.CopiesUnlisted == 0 {
		return ""
	}
	return "; also " + copiesReason(st, ev, m)
}

// noneNeedsHuman reports whether no erased artifact is left to a person.
func noneNeedsHuman(arts []certificate.Artifact) bool {
	for _, a := range arts {
		if a.Outcome == certificate.NeedsHuman {
			return false
		}
	}
	return true
}

func (r *runner) storeState(name, typ string, arts []certificate.Artifact, res *results) certificate.StoreState {
	s := certificate.StoreState{Name: name, Type: typ, Capabilities: []string{}, Artifacts: len(arts), Touched: len(arts) > 0}
	open := r.opened(name)
	if open {
		for _, c := range r.Stores[name].Info().Capabilities {
			s.Capabilities = append(s.Capabilities, string(c))
		}
	}
	if rc := res.reclaim[name]; rc != nil {
		s.Reclaim = rc.Method
	}
	c := certificate.CountArtifacts(arts)
	switch {
	case len(arts) == 0 && !open:
		// Not open in this run, whatever the reason: an open error, or a
		// caller that left the store out of Stores (or gave it a nil open
		// error). Nothing in it was checked either way.
		s.Residue, s.Evidence = stateUnreachable, "the trace holds no artifact of this subject in this store, but the store could not be opened or reached when the erasure ran, so nothing about it was checked"
		if r.OpenErr[name] == nil {
			s.Evidence = "the trace holds no artifact of this subject in this store, but the store was not open when the erasure ran (no open error was given for it), so nothing about it was checked"
		}
		if sc, err := r.Dir.Config.Store(name); err == nil && sc.OutOfScope {
			s.Evidence += "; the store is declared out of scope (out_of_scope: true)"
		}
	case len(arts) == 0:
		s.Residue, s.Evidence = "NOT-TOUCHED", "the trace holds no artifact of this subject in this store"
	case r.failed[name] != "":
		s.Residue, s.Evidence = "UNVERIFIED-store-failed", "failed at "+r.failed[name]
	case res.reclaim[name] != nil && res.reclaim[name].State != "" && res.reclaim[name].State != "VERIFIED":
		// The adapter knows why bytes may remain (a pinned snapshot, a
		// deferred reclaim, a lock timeout): its state explains residue.
		rc := res.reclaim[name]
		s.Residue, s.Evidence = rc.State, rc.Evidence
		if c.Residual > 0 {
			s.Evidence += fmt.Sprintf("; %d of %d artifacts still found", c.Residual, c.Artifacts)
		}
	case c.Residual > 0:
		s.Residue, s.Evidence = "RESIDUAL", fmt.Sprintf("%d of %d artifacts still found", c.Residual, c.Artifacts)
	case c.VerifiedPhysical == c.Artifacts:
		s.Residue, s.Evidence = "VERIFIED", fmt.Sprintf("%d of %d artifacts verified by byte scan after reclaim", c.VerifiedPhysical, c.Artifacts)
	default:
		s.Residue = "UNVERIFIED-physical-not-measured"
		parts := []string{fmt.Sprintf("%d of %d artifacts verified by byte scan", c.VerifiedPhysical, c.Artifacts)}
		if c.VerifiedLogical > 0 {
			parts = append(parts, fmt.Sprintf("%d logically only", c.VerifiedLogical))
		}
		if c.Unverified > 0 {
			parts = append(parts, fmt.Sprintf("%d not measured (see each artifact's reason)", c.Unverified))
		}
		if c.NeedsHuman > 0 {
			parts = append(parts, fmt.Sprintf("%d left to a person (a possible copy outside the subject's lineage)", c.NeedsHuman))
		}
		s.Evidence = strings.Join(parts, ", ")
	}
	if e := res.reclaimE[name]; e != "" {
		s.Evidence += "; reclaim failed: " + e
	}
	return s
}

// stateUnreachable is the residue state of a configured store that could not
// be opened or reached during the erasure, or was not open in it.
const stateUnreachable = "UNREACHABLE"

// opened reports whether the configured store name is open in this run: in
// Stores, and not nil (the steps treat a nil entry as not open too). A
// configured store that is not open is unreachable, whether or not OpenErr
// holds an error for it: a caller of Run may leave it out of Stores, and a
// preflight's Skip may hold a nil error (state.Config.OpenStoresExcept).
func (r *runner) opened(name string) bool {
	s, ok := r.Stores[name]
	return ok && s != nil
}

// notOpenReason says why a configured store is not open in this run: its
// open error, or, when none was given, that it was not opened.
func notOpenReason(openErr error) string {
	if openErr == nil {
		return "the store is not open in this run (no open error was given)"
	}
	return openErr.Error()
}

// installationExclusions names what this installation could not cover in
// this erasure, beyond the generic categories: configured stores that could
// not be reached, and opened stores that have no physical probe (their
// records can be shown gone from every query path, never from their files).
func (r *runner) installationExclusions() []certificate.Exclusion {
	var out []certificate.Exclusion
	if InLedger(r.dur) {
		out = append(out, certificate.Exclusion{What: "this erasure's sealed evidence in the ledger's write-ahead log, replicas and backups",
			Reason: "while the erasure ran, the evidence read from the stores (text windows, vector bytes) was kept in the PostgreSQL ledger's erasure_sealed table, sealed with AES-256-GCM under a key derived from the installation pepper and the erasure id; when this certificate is published its rows are deleted and the table rewritten (VACUUM FULL), but pg_wal keeps the ciphertext until the server recycles it, and replicas and backups of the ledger keep their copies"})
	}
	for _, sc := range r.Dir.Config.Stores {
		s, open := r.Stores[sc.Name], r.opened(sc.Name)
		switch {
		case !open:
			why := "configured, but it could not be opened or reached when the erasure ran; nothing in it was erased or checked"
			if r.OpenErr[sc.Name] == nil {
				why = "configured, but it was not open when the erasure ran (no open error was given for it); nothing in it was erased or checked"
			}
			if sc.OutOfScope {
				why += " (declared out of scope: out_of_scope: true)"
			}
			out = append(out, certificate.Exclusion{What: "store " + sc.Name + " (unreachable)", Reason: why})
		case open:
			if _, ok := physical(s); !ok {
				out = append(out, certificate.Exclusion{What: "files of store " + sc.Name, Reason: "the adapter (" + sc.Type + ") has no physical probe with this configuration: deleted bytes left in its files, WAL or indexes were not measured"})
			}
		}
	}
	return out
}
