package saga

// Re-verification: probing the stores of a published certificate again, and
// issuing a new certificate linked to it.
//
// Nothing is kept for it beyond what amnesia keeps anyway. The needles (byte
// windows of the erased records) are personal data and are destroyed when a
// certificate is published, so the byte scan can never be repeated. What is
// left is the ledger, which is append-only: an erased artifact keeps its
// scope, store and key there, and ErasedBy lists the artifacts of an
// erasure by its id. A re-verification looks each one up again by id in its
// store, asks the adapter what it can measure without needles
// (store.ResidueMeter), and says VERIFIED(logical) or RESIDUAL: never
// physical.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store"
)

// ErrNotReverifiable: the certificate says it is not re-verifiable.
var ErrNotReverifiable = errors.New("the certificate is not re-verifiable")

// MethodReverifyByID is the method of every artifact a re-verification
// looked up again.
const MethodReverifyByID = "reverify: by id"

// noNeedles is why no re-verification reaches the physical level.
const noNeedles = "amnesia keeps no needles once a certificate is published, so the byte scan cannot be repeated"

// reverifyNote is the reverify_note of a re-verifiable certificate.
const reverifyNote = "re-verifiable: amnesia reverify looks each erased record up again by id in its store, with the store keys the ledger already holds (nothing else is kept for it), and reports what the stores can measure without needles (dead tuples, when their files were last written); " +
	noNeedles + ", so a re-verification reaches the logical level only"

// reverifiability says whether a certificate with these artifacts can be
// re-verified later, and what a re-verification can check or why not: it
// can when the ledger lists an erasure's artifacts and every erased
// artifact's store is configured, open and declares a lookup by id.
func reverifiability(cfg *state.Config, ledger lineage.Ledger, stores map[string]store.Store, arts []certificate.Artifact) (bool, string) {
	if _, ok := ledger.(lineage.ErasureReader); !ok {
		return false, "not re-verifiable: the ledger cannot list an erasure's artifacts; " + noNeedles
	}
	var why []string
	n, seen := 0, map[string]bool{}
	for _, a := range arts {
		if a.Outcome == certificate.NeedsHuman {
			continue // third-party mentions: never erased, never probed
		}
		n++
		if seen[a.Store] {
			continue
		}
		seen[a.Store] = true
		if _, err := cfg.Store(a.Store); err != nil {
			why = append(why, "store "+a.Store+" is not configured")
		} else if s, ok := stores[a.Store]; !ok {
			why = append(why, "store "+a.Store+" could not be opened")
		} else if !s.Info().Has(store.CapProbeByID) {
			why = append(why, "store "+a.Store+" has no lookup by id")
		}
	}
	switch {
	case n == 0:
		return false, "not re-verifiable: nothing was erased (third-party mentions only); " + noNeedles
	case len(why) > 0:
		return false, "not re-verifiable: " + strings.Join(why, "; ") + "; " + noNeedles
	}
	return true, reverifyNote
}

// Original is a published certificate that verified and says it is
// re-verifiable.
type Original struct {
	Statement *certificate.Statement
	// PayloadSHA256 is the hex SHA-256 of its signed DSSE payload.
	PayloadSHA256 string
	// LogIndex is its leaf in the transparency log.
	LogIndex int64
	// ErasureID is the erasure it certifies (ID of its trace).
	ErasureID string
}

// CheckReverify verifies a published certificate (a bundle) with keys
// (default: the installation's own keys, from its keyring, each with its
// retirement time) and checks that it may be re-verified. It touches no
// store. A re-verification's chain of links is followed through dur (the
// installation's certificates; nil: only a link to the erasure certificate
// itself is followed) to the erasure it certifies again. Errors wrap the
// certificate package's verification errors, or ErrNotReverifiable.
func CheckReverify(ctx context.Context, dir *state.Dir, dur Durable, bundle []byte, keys []certificate.TrustedKey) (*Original, error) {
	if len(keys) == 0 {
		ks, err := dir.Keyring()
		if err != nil {
			return nil, err
		}
		for _, k := range ks {
			keys = append(keys, certificate.TrustedKey{Public: k.Public, Retired: k.Retired})
		}
	}
	chk, err := certificate.VerifyBundle(ctx, bundle, certificate.VerifyOptions{Keys: keys})
	if err != nil {
		return nil, err
	}
	p := chk.Statement.Predicate
	if !p.Reverifiable {
		return nil, fmt.Errorf("certificate %s: %w: %s", p.CertificateID, ErrNotReverifiable, p.ReverifyNote)
	}
	erasure := ID(p.Trace.ID)
	switch {
	case p.Reverifies != nil:
		// A re-verification (or replay) certifies its chain's erasure
		// again, which may be a follow-up (AttemptID): not ID(trace).
		if erasure, err = erasureOf(ctx, dur, p.CertificateID, p.Reverifies); err != nil {
			return nil, err
		}
	case p.Follows != nil:
		erasure = AttemptID(p.Trace.ID, p.Follows.CertificateID)
	}
	if p.Reverifies == nil && p.CertificateID != erasure {
		return nil, fmt.Errorf("certificate %s: its id is not the erasure id of its trace: not an erasure certificate amnesia issued", p.CertificateID)
	}
	b, err := certificate.DecodeBundle(bundle)
	if err != nil {
		return nil, err
	}
	payload, err := certificate.Payload(b.DSSEEnvelope)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(payload)
	return &Original{Statement: chk.Statement, PayloadSHA256: hex.EncodeToString(sum[:]), LogIndex: chk.LogIndex, ErasureID: erasure}, nil
}

// erasureOf returns the erasure that certificate id (a re-verification or
// a replay, linking to the certificate it re-verified) certifies again: the
// id of the erasure certificate its chain of links leads to, which is the
// erasure's id (CheckReverify refuses an erasure certificate whose id is
// not). A link to another re-verification is followed through dur, each
// certificate found there checked against the payload digest the link
// (signed, in the certificate that holds it) names.
func erasureOf(ctx context.Context, dur Durable, id string, link *certificate.ReverifyLink) (string, error) {
	for hops := 0; ; hops++ {
		if strings.HasPrefix(link.CertificateID, "er-") {
			return link.CertificateID, nil
		}
		if dur == nil || hops == 64 {
			return "", fmt.Errorf("certificate %s re-verifies %s, which is not an erasure certificate: re-verify the erasure certificate its links lead to", id, link.CertificateID)
		}
		b, err := dur.Certificate(ctx, link.CertificateID)
		if err != nil {
			return "", fmt.Errorf("certificate %s re-verifies %s: read it from %s: %w", id, link.CertificateID, dur.Where(), err)
		}
		bd, err := certificate.DecodeBundle(b)
		if err != nil {
			return "", fmt.Errorf("certificate %s re-verifies %s: %w", id, link.CertificateID, err)
		}
		payload, err := certificate.Payload(bd.DSSEEnvelope)
		if err != nil {
			return "", fmt.Errorf("certificate %s re-verifies %s: %w", id, link.CertificateID, err)
		}
		if sum := sha256.Sum256(payload); hex.EncodeToString(sum[:]) != link.PayloadSHA256 {
			return "", fmt.Errorf("certificate %s re-verifies %s, but the certificate %s holds under that id is another (its payload digest differs)", id, link.CertificateID, dur.Where())
		}
		st, err := certificate.Parse(bd.DSSEEnvelope)
		if err != nil {
			return "", fmt.Errorf("certificate %s re-verifies %s: %w", id, link.CertificateID, err)
		}
		if st.Predicate.Reverifies == nil {
			return "", fmt.Errorf("certificate %s re-verifies %s, which links to no erasure certificate", id, link.CertificateID)
		}
		id, link = link.CertificateID, st.Predicate.Reverifies
	}
}

// Reverification is one re-verification of a checked certificate.
type Reverification struct {
	Dir      *state.Dir
	Ledger   lineage.Ledger
	Stores   map[string]store.Store // opened configured stores
	OpenErr  map[string]error       // configured stores that failed to open
	Original *Original              // from CheckReverify
	Now      func() time.Time
	Log      *slog.Logger
	Progress io.Writer // human progress lines; may be nil
	// Replay: the stores were restored from a backup taken before the
	// erasure; before probing, every erased record found again by id is
	// deleted again by id (and the store reclaimed when the adapter can),
	// and the certificate says so (measurement.deleted, method
	// MethodReplayByID). See docs/backup.md.
	Replay bool
}

// MethodReplayByID is the method of every artifact a replay deleted again
// (or found absent) and then looked up by id.
const MethodReplayByID = "replay: delete by id, then lookup by id"

// Reverify probes the stores of rv.Original again and issues a new
// certificate linked to it (predicate.reverifies), logged in the
// transparency log like any certificate and kept with the others
// (Durable: certificates/, or the ledger). It changes no store. The journal
// of the run is the erasure's journal reverify-<id> (a state directory:
// erasures/<erasure>/reverify-<id>.jsonl).
func Reverify(ctx context.Context, rv *Reverification) (*Result, error) {
	if rv.Original == nil {
		return nil, errors.New("reverify: no checked certificate")
	}
	if rv.Now == nil {
		rv.Now = time.Now
	}
	if rv.Log == nil {
		rv.Log = slog.New(slog.DiscardHandler)
	}
	o, op := rv.Original, &rv.Original.Statement.Predicate
	er, ok := rv.Ledger.(lineage.ErasureReader)
	if !ok {
		return nil, fmt.Errorf("reverify: the ledger %T cannot list an erasure's artifacts", rv.Ledger)
	}
	started := rv.Now()
	kind, prefix := "reverify", "rv-"
	if rv.Replay {
		kind, prefix = "replay", "rp-"
	}
	sum := sha256.Sum256([]byte("amnesia." + kind + "/v1\x00" + op.CertificateID + "\x00" + started.UTC().Format(time.RFC3339Nano)))
	id := prefix + hex.EncodeToString(sum[:12])
	log := rv.Log.With(kind, id, "certificate", op.CertificateID, "subject", op.SubjectRef)
	log.Info(kind + " start")
	progress := func(format string, a ...any) {
		if rv.Progress != nil {
			fmt.Fprintf(rv.Progress, format+"\n", a...)
		}
	}
	progress("%s %s of certificate %s (%s)", map[bool]string{false: "re-verification", true: "replay"}[rv.Replay], id, op.CertificateID, op.SubjectRef)

	dur := DurableFor(rv.Dir, rv.Ledger)
	j, err := dur.openJournal(ctx, o.ErasureID, kind+"-"+id, rv.Now)
	if err != nil {
		return nil, fmt.Errorf("reverify: %w", err)
	}
	defer j.close()
	done := func(step string, result any) error {
		if err := j.append(step, phaseBegin, nil, nil); err != nil {
			return err
		}
		return j.append(step, phaseDone, result, nil)
	}
	link := &certificate.ReverifyLink{CertificateID: op.CertificateID, PayloadSHA256: o.PayloadSHA256, LogIndex: o.LogIndex}
	if err := done("verify", link); err != nil {
		return nil, err
	}

	// The erased artifacts and their store keys, from the ledger. A key is
	// used only if it still gives the artifact id the certificate names.
	marked, err := er.ErasedBy(ctx, o.ErasureID)
	if err != nil {
		return nil, fmt.Errorf("reverify: %w", err)
	}
	loc := map[string]lineage.ErasedArtifact{}
	for _, a := range marked {
		if a.Scope == op.Scope && lineage.ArtifactID(rv.Dir.Keyer, a.Scope, a.Store, a.Key) == a.ID {
			loc[a.ID] = a
		}
	}
	if len(loc) == 0 {
		return nil, fmt.Errorf("reverify: the ledger holds no artifact erased by %s: is this the installation that issued the certificate?", o.ErasureID)
	}

	// Per store: measure, then look every key up by id.
	keys := map[string][]string{}
	for _, a := range op.Artifacts {
		if l, ok := loc[a.ID]; ok && a.Outcome != certificate.NeedsHuman && a.Store == l.Store {
			keys[l.Store] = append(keys[l.Store], l.Key)
		}
	}
	names := make([]string, 0, len(keys))
	for st := range keys {
		names = append(names, st)
	}
	sort.Strings(names)
	found := map[string]map[string]store.LogicalResult{}
	failed := map[string]string{}
	meter := map[string]store.ResidueReport{}
	deleted := map[string]map[string]bool{} // replay: store -> keys found again and deleted
	reclaimed := map[string]string{}        // replay: store -> reclaim evidence
	for _, st := range names {
		if _, err := rv.Dir.Config.Store(st); err != nil {
			continue // OUT_OF_SCOPE
		}
		s, ok := rv.Stores[st]
		switch {
		case !ok || s == nil:
			failed[st] = "open: " + notOpenReason(rv.OpenErr[st])
		case !s.Info().Has(store.CapProbeByID):
			failed[st] = "the adapter has no lookup by id"
		}
		if failed[st] != "" {
			if err := done("probe:"+st, map[string]string{"failed": failed[st]}); err != nil {
				return nil, err
			}
			continue
		}
		if rv.Replay {
			n, ev, err := replayStore(ctx, s, keys[st])
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				failed[st] = err.Error()
				if err := done("delete:"+st, map[string]string{"failed": failed[st]}); err != nil {
					return nil, err
				}
				continue
			}
			deleted[st], reclaimed[st] = n, ev
			if err := done("delete:"+st, map[string]any{"keys": len(keys[st]), "found_and_deleted": len(n), "reclaim": ev}); err != nil {
				return nil, err
			}
			progress("  %-28s %d of %d records found again and deleted by id", "delete:"+st, len(n), len(keys[st]))
		}
		if m, ok := s.(store.ResidueMeter); ok {
			rep, err := m.MeasureResidue(ctx, mustTime(op.IssuedAt))
			if err != nil {
				rep = store.ResidueReport{Evidence: "residue not measured: " + err.Error()}
			}
			meter[st] = rep
			if err := done("measure:"+st, rep); err != nil {
				return nil, err
			}
		}
		lr, err := s.ProbeLogical(ctx, keys[st], nil) // no evidence: by id only
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			failed[st] = "probe: " + err.Error()
			if err := done("probe:"+st, map[string]string{"failed": failed[st]}); err != nil {
				return nil, err
			}
			continue
		}
		found[st] = map[string]store.LogicalResult{}
		n := 0
		for _, l := range lr {
			found[st][l.Key] = l
			if l.ByID {
				n++
			}
		}
		if err := done("probe:"+st, map[string]int{"keys": len(keys[st]), "found_by_id": n}); err != nil {
			return nil, err
		}
		progress("  %-28s %d of %d records found by id", "probe:"+st, n, len(keys[st]))
	}

	// Decide.
	now := started.UTC().Truncate(time.Second)
	p := &certificate.Predicate{
		SchemaVersion: certificate.SchemaVersion,
		CertificateID: id,
		SubjectRef:    op.SubjectRef,
		Scope:         op.Scope,
		Reason:        op.Reason,
		IssuedAt:      now.Format(time.RFC3339),
		ValidUntil:    now.Add(rv.Dir.Config.ValidityDuration()).Format(time.RFC3339),
		Trace:         op.Trace,
		Artifacts:     []certificate.Artifact{},
		OutOfScope:    outOfScopeFor(modelNames(rv.Dir.Config.Models), true),
		Reverifies:    link,
	}
	perStore := map[string][]certificate.Artifact{}
	unconfigured := map[string]bool{}
	for _, a := range op.Artifacts {
		c := reverifyOutcome(rv.Dir.Config, a, loc, found, failed, o.ErasureID)
		if rv.Replay {
			replayOutcome(&c, deleted[c.Store][loc[a.ID].Key])
		}
		if c.Outcome == certificate.OutOfScope {
			unconfigured[c.Store] = true
		}
		if c.Outcome != certificate.NeedsHuman {
			perStore[c.Store] = append(perStore[c.Store], c)
		}
		p.Artifacts = append(p.Artifacts, c)
	}
	for st := range unconfigured {
		p.OutOfScope = append(p.OutOfScope, certificate.Exclusion{What: "store " + st, Reason: "the re-verified certificate names artifacts in it, but it is not configured here; amnesia did not probe it"})
	}
	p.OutOfScope = append(p.OutOfScope, certificate.Exclusion{What: "bytes of the erased records in the stores' files (the physical level)", Reason: noNeedles + "; this re-verification looked the records up by id only"})
	if rv.Replay {
		p.OutOfScope = append(p.OutOfScope, certificate.Exclusion{What: "copies restored under other keys, and stores or backups not restored from", Reason: "a replay deletes again, by id, the records the ledger says this erasure erased, in the configured stores only"})
	}
	sort.Slice(p.OutOfScope[len(outOfScope):], func(i, k int) bool {
		return p.OutOfScope[len(outOfScope)+i].What < p.OutOfScope[len(outOfScope)+k].What
	})
	for _, sc := range rv.Dir.Config.Stores {
		ss := reverifyStoreState(sc.Name, sc.Type, rv.Stores[sc.Name], perStore[sc.Name], failed[sc.Name], meter[sc.Name])
		if rv.Replay && len(perStore[sc.Name]) > 0 && failed[sc.Name] == "" {
			ss.Evidence = fmt.Sprintf("replay: %d of %d records found again by id and deleted again; ", len(deleted[sc.Name]), len(perStore[sc.Name])) + ss.Evidence
			if reclaimed[sc.Name] != "" {
				ss.Reclaim = reclaimed[sc.Name]
			}
		}
		p.DeclaredScope = append(p.DeclaredScope, ss)
	}
	p.Counts = certificate.CountArtifacts(p.Artifacts)
	p.Complete = p.Counts.Unverified == 0 && p.Counts.Residual == 0 && p.Counts.OutOfScope == 0
	p.Reverifiable, p.ReverifyNote = reverifiability(rv.Dir.Config, rv.Ledger, rv.Stores, p.Artifacts)
	if err := done("decide", p); err != nil {
		return nil, err
	}
	head, steps := j.head("decide")
	p.Journal = certificate.JournalRef{Head: head, Steps: steps}

	// Sign, log, publish: the path of every certificate.
	st := certificate.NewStatement(*p, op.Trace.ID)
	env, err := certificate.SignStatement(ctx, st, rv.Dir.Key)
	if err != nil {
		return nil, fmt.Errorf("reverify: %w", err)
	}
	envSum := sha256.Sum256(env.Envelope)
	if err := done("certificate", certResult{SHA256: hex.EncodeToString(envSum[:])}); err != nil {
		return nil, err
	}
	pub := &runner{Erasure: &Erasure{Dir: rv.Dir, Ledger: rv.Ledger}}
	bundle, err := pub.logCertificate(ctx, st.Predicate.CertificateID, env)
	if err != nil {
		return nil, fmt.Errorf("reverify: publish: %w", err)
	}
	path := dur.CertificateRef(id)
	if err := dur.PutCertificate(ctx, id, bundle); err != nil {
		return nil, fmt.Errorf("reverify: publish: %w", err)
	}
	if err := done("publish", nil); err != nil {
		return nil, err
	}
	log.Info(kind+" done", "complete", p.Complete, "residual", p.Counts.Residual, "path", path)
	return &Result{ID: id, CertificatePath: path, Statement: st}, nil
}

// reverifyOutcome is the outcome of one artifact of the re-verified
// certificate.
func reverifyOutcome(cfg *state.Config, a certificate.Artifact, loc map[string]lineage.ErasedArtifact, found map[string]map[string]store.LogicalResult, failed map[string]string, erasure string) certificate.Artifact {
	c := certificate.Artifact{ID: a.ID, Kind: a.Kind, Store: a.Store}
	l, known := loc[a.ID]
	switch {
	case a.Outcome == certificate.NeedsHuman:
		c.Outcome, c.Reason, c.Method = a.Outcome, a.Reason, a.Method+"; not probed by reverify"
		return c
	case !known || l.Store != a.Store:
		c.Outcome, c.Method = certificate.Unverified, "none"
		c.Reason = "the ledger holds no mark of erasure " + erasure + " for it whose store key gives its id, so reverify cannot look it up"
		return c
	}
	if _, err := cfg.Store(a.Store); err != nil {
		c.Outcome, c.Reason, c.Method = certificate.OutOfScope, "store "+a.Store+" is not configured in this installation", "none"
		return c
	}
	if f := failed[a.Store]; f != "" {
		c.Outcome, c.Reason, c.Method = certificate.Unverified, "store failed at reverify "+f, MethodReverifyByID
		return c
	}
	r := found[a.Store][l.Key]
	methods := r.Methods
	if methods == nil {
		methods = []string{}
	}
	c.Method = MethodReverifyByID
	c.Measurement = &certificate.Measurement{Logical: &certificate.Logical{ByID: r.ByID, ByFilter: r.ByFilter, BySimilarity: r.BySimilarity, Methods: methods}}
	if r.Found() {
		c.Outcome, c.Reason = certificate.Residual, "returned again by "+strings.Join(foundBy(r), ", ")+" (re-ingested, or restored from a backup)"
		return c
	}
	c.Outcome, c.Level = certificate.Verified, certificate.LevelLogical
	c.Reason = "no lookup by id returns it; physical level not re-measured: " + noNeedles
	return c
}

// reverifyStoreState is one configured store's state in a re-verification.
func reverifyStoreState(name, typ string, s store.Store, arts []certificate.Artifact, failed string, m store.ResidueReport) certificate.StoreState {
	st := certificate.StoreState{Name: name, Type: typ, Capabilities: []string{}, Artifacts: len(arts), Touched: len(arts) > 0}
	if s != nil {
		for _, c := range s.Info().Capabilities {
			st.Capabilities = append(st.Capabilities, string(c))
		}
	}
	c := certificate.CountArtifacts(arts)
	switch {
	case len(arts) == 0:
		st.Residue, st.Evidence = "NOT-TOUCHED", "the re-verified certificate holds no erased artifact in this store"
		return st
	case failed != "":
		st.Residue, st.Evidence = "UNVERIFIED-store-failed", "failed at reverify "+failed
		return st
	case c.Residual > 0:
		st.Residue, st.Evidence = "RESIDUAL", fmt.Sprintf("reverify: %d of %d artifacts returned again by lookup by id", c.Residual, c.Artifacts)
	case m.State != "":
		st.Residue, st.Evidence = m.State, fmt.Sprintf("reverify: %d of %d artifacts absent by id", c.VerifiedLogical, c.Artifacts)
	default:
		st.Residue, st.Evidence = "UNVERIFIED-physical-not-measured", fmt.Sprintf("reverify: %d of %d artifacts absent by id; the byte scan was not repeated (amnesia keeps no needles after publication)", c.VerifiedLogical, c.Artifacts)
	}
	if m.Evidence != "" {
		st.Evidence += "; " + m.Evidence
	}
	return st
}

// mustTime parses an RFC 3339 time that Verify already checked.
func mustTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339, s)
	return t
}

// replayStore looks keys up by id, deletes those found (they came back with
// a restore) and, when something was deleted and the adapter can, reclaims
// the store. It returns the keys deleted and the reclaim's evidence.
func replayStore(ctx context.Context, s store.Store, keys []string) (map[string]bool, string, error) {
	lr, err := s.ProbeLogical(ctx, keys, nil)
	if err != nil {
		return nil, "", fmt.Errorf("probe before delete: %w", err)
	}
	out := map[string]bool{}
	var del []string
	for _, l := range lr {
		if l.Found() {
			out[l.Key] = true
			del = append(del, l.Key)
		}
	}
	if len(del) == 0 {
		return out, "", nil
	}
	sort.Strings(del)
	if err := s.Delete(ctx, del); err != nil {
		return nil, "", fmt.Errorf("delete: %w", err)
	}
	r, ok := s.(store.Reclaimer)
	if !ok || !s.Info().Has(store.CapReclaim) {
		return out, "", nil
	}
	rep, err := r.Reclaim(ctx)
	if err != nil {
		return out, "reclaim failed: " + err.Error(), nil
	}
	return out, strings.TrimSpace(rep.State + " " + rep.Evidence), nil
}

// replayOutcome turns a re-verification outcome into a replay's: the record
// was deleted again when the replay found it.
func replayOutcome(c *certificate.Artifact, wasDeleted bool) {
	if c.Method != MethodReverifyByID {
		return // not probed: unchanged
	}
	c.Method = MethodReplayByID
	if c.Measurement != nil {
		c.Measurement.Deleted = wasDeleted
	}
	if c.Outcome != certificate.Verified {
		if wasDeleted {
			c.Reason = "found again after the restore and deleted again by id, but " + c.Reason
		}
		return
	}
	if wasDeleted {
		c.Reason = "found again by id after the restore (the backup predates the erasure), deleted again by id; no lookup by id returns it now; physical level not measured: " + noNeedles
	} else {
		c.Reason = "not found by id after the restore, nothing to delete; no lookup by id returns it; physical level not measured: " + noNeedles
	}
}
