package saga

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/lineage"
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
		OutOfScope:    append([]certificate.Exclusion(nil), outOfScope...),
	}
	perStore := map[string][]certificate.Artifact{}
	var marks []lineage.ErasureMark
	for _, a := range t.Artifacts {
		c := r.outcome(a, res)
		perStore[a.Store] = append(perStore[a.Store], c)
		p.Artifacts = append(p.Artifacts, c)
		marks = append(marks, lineage.ErasureMark{Artifact: a.ID, Erasure: r.id, Outcome: c.Outcome})
	}
	for _, a := range t.Mentions {
		c := certificate.Artifact{ID: a.ID, Kind: string(a.Kind), Store: a.Store, Outcome: certificate.NeedsHuman,
			Reason: "holds data about this subject but belongs to " + a.Owner + "; a person must decide what to redact", Method: "not deleted: third-party mention"}
		p.Artifacts = append(p.Artifacts, c)
	}
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
	p.Complete = p.Counts.Unverified == 0 && p.Counts.Residual == 0 && p.Counts.OutOfScope == 0 && !unreachable
	p.Follows = r.follows
	p.Reverifiable, p.ReverifyNote = reverifiability(r.Dir.Config, r.Ledger, r.Stores, p.Artifacts) // reverify.go
	if err := r.Ledger.MarkErased(ctx, marks); err != nil {
		return nil, err
	}
	return p, nil
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
		methods = append(methods, fmt.Sprintf("physical probe: %s for %d windows of up to %d bytes", pr.Method, ev.Needles, store.WindowSize))
	}
	c.Method = strings.Join(methods, "; ")
	_, present := res.evidence[a.Store].Records[a.Key]
	switch {
	case l.Found():
		c.Outcome, c.Reason = certificate.Residual, "still returned by "+strings.Join(foundBy(l), ", ")
	case !present:
		r.absentOutcome(&c, a, res) // orphans.go
	case m.Physical != nil && m.Physical.FoundAfter > 0:
		c.Outcome, c.Reason = certificate.Residual, fmt.Sprintf("%d of %d needles still in the store's files", m.Physical.FoundAfter, m.Physical.Needles)
	case m.Physical != nil && m.Physical.FoundBefore > 0:
		c.Outcome, c.Level = certificate.Verified, certificate.LevelPhysical
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

func whyNotPhysical(pr *probeResult, ev recordEvidence, present bool, st string) string {
	switch {
	case !pr.Physical:
		return "store " + st + " has no physical probe"
	case !present:
		return "the record was already absent when the erasure began, so there were no bytes to look for"
	case ev.Needles == 0 && ev.Shared > 0:
		return fmt.Sprintf("all %d of its windows are also held by other live records, so finding them would prove nothing", ev.Shared)
	case ev.Needles == 0:
		return "the record is too short or too repetitive to yield needles"
	default:
		return fmt.Sprintf("none of its %d needles was visible in the store's files before deletion, so the scan had no power", ev.Needles)
	}
}

func (r *runner) storeState(name, typ string, arts []certificate.Artifact, res *results) certificate.StoreState {
	s := certificate.StoreState{Name: name, Type: typ, Capabilities: []string{}, Artifacts: len(arts), Touched: len(arts) > 0}
	if st, ok := r.Stores[name]; ok {
		for _, c := range st.Info().Capabilities {
			s.Capabilities = append(s.Capabilities, string(c))
		}
	}
	if rc := res.reclaim[name]; rc != nil {
		s.Reclaim = rc.Method
	}
	c := certificate.CountArtifacts(arts)
	_, open := r.Stores[name]
	openErr := r.OpenErr[name]
	switch {
	case len(arts) == 0 && !open && openErr != nil:
		s.Residue, s.Evidence = stateUnreachable, "the trace holds no artifact of this subject in this store, but the store could not be opened or reached when the erasure ran, so nothing about it was checked"
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
		s.Residue, s.Evidence = "UNVERIFIED-physical-not-measured", fmt.Sprintf("%d of %d artifacts verified by byte scan, %d logically only", c.VerifiedPhysical, c.Artifacts, c.VerifiedLogical)
	}
	if e := res.reclaimE[name]; e != "" {
		s.Evidence += "; reclaim failed: " + e
	}
	return s
}

// stateUnreachable is the residue state of a configured store that could not
// be opened or reached during the erasure.
const stateUnreachable = "UNREACHABLE"

// installationExclusions names what this installation could not cover in
// this erasure, beyond the generic categories: configured stores that could
// not be reached, and opened stores that have no physical probe (their
// records can be shown gone from every query path, never from their files).
func (r *runner) installationExclusions() []certificate.Exclusion {
	var out []certificate.Exclusion
	for _, sc := range r.Dir.Config.Stores {
		s, open := r.Stores[sc.Name]
		switch {
		case !open && r.OpenErr[sc.Name] != nil:
			why := "configured, but it could not be opened or reached when the erasure ran; nothing in it was erased or checked"
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
