package certificate

import (
	"errors"
	"fmt"
	"time"
)

// checkStatement makes steps 5 to 11 of the schema checks, in order, on a
// decoded statement that keyID signed. Errors name the field, never its value.
func checkStatement(st *Statement, keyID string) error {
	p := &st.Predicate
	switch {
	case st.Type != StatementType:
		return fmt.Errorf("_type is not %s", StatementType)
	case st.PredicateType != PredicateType:
		return fmt.Errorf("predicateType is not %s", PredicateType)
	case p.SchemaVersion != SchemaVersion:
		return fmt.Errorf("predicate.schema_version is not %s", SchemaVersion)
	case p.KeyID != keyID:
		return errors.New("predicate.key_id does not match the signing key")
	case p.CertificateID == "":
		return errors.New("predicate.certificate_id is empty")
	case len(st.Subject) != 1:
		return errors.New("subject does not hold exactly one entry")
	case st.Subject[0].Name != SubjectPrefix+p.CertificateID:
		return fmt.Errorf("subject[0].name is not %s followed by predicate.certificate_id", SubjectPrefix)
	case !isSHA256Hex(st.Subject[0].Digest["sha256"]):
		return errors.New("subject[0].digest.sha256 is not 64 lowercase hex digits")
	case p.Trace.ID != st.Subject[0].Digest["sha256"]:
		return errors.New("predicate.trace.id does not equal subject[0].digest.sha256")
	}

	issued, err := time.Parse(time.RFC3339, p.IssuedAt)
	if err != nil {
		return errors.New("predicate.issued_at is not an RFC 3339 time")
	}
	until, err := time.Parse(time.RFC3339, p.ValidUntil)
	if err != nil {
		return errors.New("predicate.valid_until is not an RFC 3339 time")
	}
	if !until.After(issued) {
		return errors.New("predicate.valid_until is not after predicate.issued_at")
	}

	for i, a := range p.Artifacts {
		if a.Via != "" && a.Via != ViaReconcile {
			return fmt.Errorf("predicate.artifacts[%d].via is not %q", i, ViaReconcile)
		}
		if err := checkNear(i, a); err != nil {
			return err
		}
		switch a.Outcome {
		case Verified:
			if a.Level != LevelPhysical && a.Level != LevelLogical {
				return fmt.Errorf("predicate.artifacts[%d].level is not %s or %s", i, LevelPhysical, LevelLogical)
			}
			if a.Measurement != nil && (len(a.Measurement.Copies) > 0 || a.Measurement.CopiesUnlisted > 0) {
				return fmt.Errorf("predicate.artifacts[%d] is %s but measurement.copies lists records outside the lineage", i, Verified)
			}
			if err := checkVerified(i, a); err != nil {
				return err
			}
		case Unverified, Residual, OutOfScope, NeedsHuman:
			if a.Reason == "" {
				return fmt.Errorf("predicate.artifacts[%d].reason is empty", i)
			}
		default:
			return fmt.Errorf("predicate.artifacts[%d].outcome is not a known outcome", i)
		}
	}

	if sh := p.CryptoShredding; sh != nil {
		if sh.Level != LevelPhysical && sh.Level != LevelLogical {
			return fmt.Errorf("predicate.crypto_shredding.level is not %s or %s", LevelPhysical, LevelLogical)
		}
		if sh.Evidence == "" || sh.Covers == "" || sh.DoesNotCover == "" {
			return errors.New("predicate.crypto_shredding needs evidence, covers and does_not_cover")
		}
		if !sh.KeyDestroyed && sh.Level == LevelPhysical {
			return errors.New("predicate.crypto_shredding.level is physical but key_destroyed is false")
		}
	}

	if err := checkSemantic(p.Semantic); err != nil {
		return err
	}

	if len(p.OutOfScope) == 0 {
		return errors.New("predicate.out_of_scope is empty")
	}
	for i, x := range p.OutOfScope {
		if x.What == "" {
			return fmt.Errorf("predicate.out_of_scope[%d].what is empty", i)
		}
	}

	want := CountArtifacts(p.Artifacts)
	if p.Counts != want {
		return fmt.Errorf("predicate.counts.%s does not match the artifacts", countsDiff(p.Counts, want))
	}
	if p.Complete && want.Unverified+want.Residual+want.OutOfScope > 0 {
		return fmt.Errorf("predicate.complete is true but an artifact is %s, %s or %s", Unverified, Residual, OutOfScope)
	}
	if err := checkDeclaredScope(p); err != nil {
		return err
	}
	if err := checkLink("follows", p.Follows, p.CertificateID); err != nil {
		return err
	}
	if err := checkModels(p); err != nil {
		return err
	}
	return checkReverifies(p)
}

// Residue states of a declared store (StoreState.Residue) that
// checkDeclaredScope reads. Adapters report states of their own
// (PENDING-reclaim-deferred, UNVERIFIED-managed, …): they say why a
// store's records did not reach the physical level, which complete does
// not claim, and are not read here.
const (
	residueResidual    = "RESIDUAL"                // something was still found in the store
	residueStoreFailed = "UNVERIFIED-store-failed" // the store failed while its records were erased or probed
	residueUnreachable = "UNREACHABLE"             // the store could not be opened: nothing in it was checked
)

// checkDeclaredScope refuses complete: true next to a configured store that
// was not erased or not checked: one that is RESIDUAL or
// UNVERIFIED-store-failed, or one that is UNREACHABLE while no out_of_scope
// entry names it. amnesia names every store it could not reach in
// out_of_scope ("store NAME (unreachable)") and writes complete: true next
// to one only when the store is configured out_of_scope: true; a store
// that is RESIDUAL or UNVERIFIED-store-failed holds an artifact that is
// RESIDUAL or UNVERIFIED, so amnesia never writes complete: true next to
// one. Errors name the field, never the store.
func checkDeclaredScope(p *Predicate) error {
	if !p.Complete {
		return nil
	}
	for i, s := range p.DeclaredScope {
		switch s.Residue {
		case residueResidual, residueStoreFailed:
			return fmt.Errorf("predicate.complete is true but predicate.declared_scope[%d].residue is %s", i, s.Residue)
		case residueUnreachable:
			if !excludesStore(p.OutOfScope, s.Name) {
				return fmt.Errorf("predicate.complete is true but predicate.declared_scope[%d].residue is %s and no predicate.out_of_scope entry names that store", i, residueUnreachable)
			}
		}
	}
	return nil
}

// excludesStore reports whether an out_of_scope entry excludes the whole
// store name, in the words amnesia writes: "store NAME" (a store it does not
// have configured) or "store NAME (unreachable)" (a configured store it could
// not reach). "files of store NAME" excludes only the store's files, not
// the store.
func excludesStore(xs []Exclusion, name string) bool {
	for _, x := range xs {
		if x.What == "store "+name || x.What == "store "+name+" (unreachable)" {
			return true
		}
	}
	return false
}

// checkLink checks the shape of a link to an earlier certificate.
func checkLink(field string, l *ReverifyLink, own string) error {
	switch {
	case l == nil:
		return nil
	case l.CertificateID == "":
		return fmt.Errorf("predicate.%s.certificate_id is empty", field)
	case l.CertificateID == own:
		return fmt.Errorf("predicate.%s.certificate_id is the certificate's own id", field)
	case !isSHA256Hex(l.PayloadSHA256):
		return fmt.Errorf("predicate.%s.payload_sha256 is not 64 lowercase hex digits", field)
	case l.LogIndex < 0:
		return fmt.Errorf("predicate.%s.log_index is negative", field)
	}
	return nil
}

// checkReverifies makes step 11: a re-verification names the certificate it
// re-verified, and claims no physical verification: amnesia keeps no
// needles once a certificate is published, so the byte scan cannot be
// repeated and a re-verification never measured the physical level.
func checkReverifies(p *Predicate) error {
	if p.Reverifies == nil {
		return nil
	}
	if p.Follows != nil {
		return errors.New("predicate.follows is set on a re-verification: only erasure certificates continue an earlier erasure")
	}
	if err := checkLink("reverifies", p.Reverifies, p.CertificateID); err != nil {
		return err
	}
	for i, a := range p.Artifacts {
		if a.Level == LevelPhysical {
			return fmt.Errorf("predicate.artifacts[%d].level is %s in a re-verification", i, LevelPhysical)
		}
		if a.Measurement != nil && a.Measurement.Physical != nil {
			return fmt.Errorf("predicate.artifacts[%d].measurement.physical is present in a re-verification", i)
		}
	}
	return nil
}

// CountArtifacts returns the Counts that a list of artifacts must carry.
func CountArtifacts(arts []Artifact) Counts {
	c := Counts{Artifacts: len(arts)}
	for _, a := range arts {
		switch a.Outcome {
		case Verified:
			c.Verified++
			switch a.Level {
			case LevelPhysical:
				c.VerifiedPhysical++
			case LevelLogical:
				c.VerifiedLogical++
			}
		case Unverified:
			c.Unverified++
		case Residual:
			c.Residual++
		case OutOfScope:
			c.OutOfScope++
		case NeedsHuman:
			c.NeedsHuman++
		}
	}
	return c
}

// countsDiff names the first field in which got differs from want.
func countsDiff(got, want Counts) string {
	switch {
	case got.Artifacts != want.Artifacts:
		return "artifacts"
	case got.Verified != want.Verified:
		return "verified"
	case got.VerifiedPhysical != want.VerifiedPhysical:
		return "verified_physical"
	case got.VerifiedLogical != want.VerifiedLogical:
		return "verified_logical"
	case got.Unverified != want.Unverified:
		return "unverified"
	case got.Residual != want.Residual:
		return "residual"
	case got.OutOfScope != want.OutOfScope:
		return "out_of_scope"
	default:
		return "needs_human"
	}
}

func isSHA256Hex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// checkVerified checks that a VERIFIED artifact's measurement does not
// contradict it: no query path still returned the record, no needle was
// found after the erasure, and the physical level rests on a byte scan
// that found the record's needles before deletion (the probe's power) and
// covered all of its bytes where coverage is recorded.
func checkVerified(i int, a Artifact) error {
	if m := a.Measurement; m != nil && m.Logical != nil && (m.Logical.ByID || m.Logical.ByFilter || m.Logical.BySimilarity) {
		return fmt.Errorf("predicate.artifacts[%d] is %s but measurement.logical says a query still returns it", i, Verified)
	}
	ph := physicalOf(a)
	if ph != nil && ph.FoundAfter != 0 {
		return fmt.Errorf("predicate.artifacts[%d] is %s but measurement.physical.found_after is not 0", i, Verified)
	}
	if a.Level != LevelPhysical {
		return nil
	}
	switch {
	case ph == nil:
		return fmt.Errorf("predicate.artifacts[%d].level is %s but it has no measurement.physical", i, LevelPhysical)
	case ph.Needles <= 0 || ph.FoundBefore <= 0:
		return fmt.Errorf("predicate.artifacts[%d].level is %s but measurement.physical found none of its needles before deletion (the probe had no power)", i, LevelPhysical)
	case ph.Coverage != nil && !ph.Coverage.Complete():
		return fmt.Errorf("predicate.artifacts[%d].level is %s but measurement.physical.coverage.covered_bytes is less than record_bytes", i, LevelPhysical)
	}
	return nil
}

func physicalOf(a Artifact) *Physical {
	if a.Measurement == nil {
		return nil
	}
	return a.Measurement.Physical
}

// checkNear checks a near-duplicate candidate: it is left to a person,
// never deleted, and its similarity is a fraction.
func checkNear(i int, a Artifact) error {
	var n *Near
	if a.Measurement != nil {
		n = a.Measurement.Near
	}
	switch {
	case n == nil && a.Kind != KindNearDuplicate:
		return nil
	case n == nil:
		return fmt.Errorf("predicate.artifacts[%d] is a %s without measurement.near", i, KindNearDuplicate)
	case a.Kind != KindNearDuplicate:
		return fmt.Errorf("predicate.artifacts[%d].measurement.near is set but kind is not %s", i, KindNearDuplicate)
	case a.Outcome != NeedsHuman:
		return fmt.Errorf("predicate.artifacts[%d] is a %s but its outcome is not %s", i, KindNearDuplicate, NeedsHuman)
	case a.Measurement.Deleted:
		return fmt.Errorf("predicate.artifacts[%d] is a %s but measurement.deleted is true", i, KindNearDuplicate)
	case n.Method != NearQuote && n.Method != NearParaphrase:
		return fmt.Errorf("predicate.artifacts[%d].measurement.near.method is not %s or %s", i, NearQuote, NearParaphrase)
	case n.Of == "":
		return fmt.Errorf("predicate.artifacts[%d].measurement.near.of is empty", i)
	case !(n.Similarity > 0 && n.Similarity <= 1):
		return fmt.Errorf("predicate.artifacts[%d].measurement.near.similarity is not more than 0 and at most 1", i)
	}
	return nil
}

// checkSemantic checks the semantic section: its level, and drift figures
// that are fractions.
func checkSemantic(s *Semantic) error {
	if s == nil {
		return nil
	}
	if s.Level != LevelSemantic {
		return fmt.Errorf("predicate.semantic.level is not %s", LevelSemantic)
	}
	for i, d := range s.Drift {
		switch {
		case d.K < 1 || d.Queries < 0:
			return fmt.Errorf("predicate.semantic.drift[%d] needs k of at least 1 and queries of at least 0", i)
		case d.OverlapAtK < 0 || d.OverlapAtK > 1 || d.MinOverlapAtK < 0 || d.MinOverlapAtK > d.OverlapAtK:
			return fmt.Errorf("predicate.semantic.drift[%d].overlap_at_k is not a fraction at least min_overlap_at_k", i)
		case d.OverlapUnerasedAtK < 0 || d.OverlapUnerasedAtK > 1:
			return fmt.Errorf("predicate.semantic.drift[%d].overlap_unerased_at_k is not a fraction", i)
		}
	}
	return nil
}
