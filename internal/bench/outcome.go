package bench

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/saga"
)

// Outcomes is what the amnesia erasures of a cell (B4, B5) ended with, as
// their certificates say. An erasure that does not end complete is
// counted here and the cell goes on: the cell's physical residue is
// measured by the harness's own probe either way, and the report shows
// these counts next to the row's numbers, so that a row with a PENDING or
// RESIDUAL erasure never reads as a clean one.
type Outcomes struct {
	Erasures   int `json:"erasures"`
	Complete   int `json:"complete"`   // certificate published, complete
	Incomplete int `json:"incomplete"` // certificate published, not complete
	// Pending erasures paused before a certificate (saga.PendingError): a
	// store could not finish reclaim or its probe within the erasure's
	// reclaim wait. They are left paused; their artifacts have no outcome.
	Pending       int            `json:"pending"`
	PendingStates map[string]int `json:"pending_states,omitempty"` // residue state (e.g. PENDING-weaviate-compaction) -> erasures
	PendingWaitS  float64        `json:"pending_waited_s,omitempty"`
	// PendingCause is what held up the first paused erasure, as the
	// store said it (saga.PendingError.Cause: one line, no personal
	// data; for Weaviate, the files that still held needles).
	PendingCause string `json:"pending_cause,omitempty"`
	// Artifact outcomes, summed over the published certificates
	// (certificate.Counts), and the artifacts of the paused erasures.
	Artifacts        int `json:"artifacts"`
	VerifiedPhysical int `json:"verified_physical"`
	VerifiedLogical  int `json:"verified_logical"`
	Unverified       int `json:"unverified"`
	Residual         int `json:"residual"`
	OutOfScope       int `json:"out_of_scope"`
	NeedsHuman       int `json:"needs_human"`
	PendingArtifacts int `json:"pending_artifacts"`
	// Reclaims counts, over the published certificates, which way each
	// SQLite store's reclaim went (sqliteReclaim): what a timing row
	// cannot show, e.g. whether an erasure rebuilt a whole index or file.
	Reclaims map[string]int `json:"reclaims,omitempty"`
}

// sqliteReclaim names which way a SQLite store's reclaim went, from the
// method its certificate carries (store/internal/sqlitex Reclaim); "" for
// another store's method.
func sqliteReclaim(method string) string {
	switch {
	case !strings.HasPrefix(method, "secure_delete=ON; "):
		return ""
	case strings.Contains(method, "VACUUM, because"):
		return "VACUUM"
	case strings.Contains(method, "; REINDEX of "):
		return "REINDEX"
	case strings.Contains(method, "those bytes zeroed in place"):
		return "zeroed in place"
	case strings.Contains(method, "VACUUM skipped"):
		return "nothing to clean"
	}
	return "other"
}

// add records one erasure: its result, or the error it paused with
// (artifacts: how many its trace held). Any other error is returned.
func (o *Outcomes) add(res *saga.Result, err error, artifacts int) error {
	var pe *saga.PendingError
	switch {
	case errors.As(err, &pe):
		o.Erasures++
		o.Pending++
		if o.PendingStates == nil {
			o.PendingStates = map[string]int{}
		}
		o.PendingStates[pe.State]++
		if o.PendingCause == "" {
			o.PendingCause = pe.Cause
		}
		o.PendingWaitS = max(o.PendingWaitS, pe.Waited.Round(time.Second).Seconds())
		o.PendingArtifacts += artifacts
		o.Artifacts += artifacts
		return nil
	case err != nil:
		return err
	case res == nil:
		return errors.New("erasure ended without a result or an error")
	}
	o.Erasures++
	p := res.Statement.Predicate
	if p.Complete {
		o.Complete++
	} else {
		o.Incomplete++
	}
	c := p.Counts
	o.Artifacts += c.Artifacts
	o.VerifiedPhysical += c.VerifiedPhysical
	o.VerifiedLogical += c.VerifiedLogical
	o.Unverified += c.Unverified
	o.Residual += c.Residual
	o.OutOfScope += c.OutOfScope
	o.NeedsHuman += c.NeedsHuman
	for _, st := range p.DeclaredScope {
		if way := sqliteReclaim(st.Reclaim); way != "" {
			if o.Reclaims == nil {
				o.Reclaims = map[string]int{}
			}
			o.Reclaims[way]++
		}
	}
	return nil
}

// Clean reports whether every erasure published a certificate and no
// artifact ended UNVERIFIED, RESIDUAL, OUT_OF_SCOPE or NEEDS_HUMAN.
func (o *Outcomes) Clean() bool {
	return o.Pending == 0 && o.Unverified == 0 && o.Residual == 0 && o.OutOfScope == 0 && o.NeedsHuman == 0
}

// Flag is the short mark shown next to a row's numbers when the erasures
// did not all end clean ("" when they did): how many erasures paused and
// in which state, and the artifacts that were not verified.
func (o *Outcomes) Flag() string {
	if o == nil || o.Clean() {
		return ""
	}
	var parts []string
	if o.Pending > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d erasures %s after %.0f s, no certificate", o.Pending, o.Erasures, o.states(), o.PendingWaitS))
	}
	for _, x := range []struct {
		n    int
		what string
	}{{o.Residual, certificate.Residual}, {o.Unverified, certificate.Unverified}, {o.OutOfScope, certificate.OutOfScope}, {o.NeedsHuman, certificate.NeedsHuman}} {
		if x.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", x.n, x.what))
		}
	}
	return "**not clean: " + strings.Join(parts, ", ") + "**"
}

// Summary is the full line: erasures by how they ended, artifacts by
// outcome.
func (o *Outcomes) Summary() string {
	s := fmt.Sprintf("%d erasures: %d certificates complete, %d incomplete, %d PENDING", o.Erasures, o.Complete, o.Incomplete, o.Pending)
	if o.Pending > 0 {
		s += fmt.Sprintf(" (%s; paused after waiting up to %.0f s, no certificate)", o.states(), o.PendingWaitS)
	}
	s += fmt.Sprintf("; %d artifacts: %d VERIFIED(physical), %d VERIFIED(logical), %d UNVERIFIED, %d RESIDUAL, %d OUT_OF_SCOPE, %d NEEDS_HUMAN",
		o.Artifacts, o.VerifiedPhysical, o.VerifiedLogical, o.Unverified, o.Residual, o.OutOfScope, o.NeedsHuman)
	if o.PendingArtifacts > 0 {
		s += fmt.Sprintf(", %d in paused erasures (no outcome)", o.PendingArtifacts)
	}
	if len(o.Reclaims) > 0 {
		ways := make([]string, 0, len(o.Reclaims))
		for way, n := range o.Reclaims {
			ways = append(ways, fmt.Sprintf("%d %s", n, way))
		}
		sort.Strings(ways)
		s += "; SQLite reclaims: " + strings.Join(ways, ", ")
	}
	return s
}

func (o *Outcomes) states() string {
	names := make([]string, 0, len(o.PendingStates))
	for st := range o.PendingStates {
		names = append(names, st)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
