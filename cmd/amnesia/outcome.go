package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/explain"
	"github.com/amnesia-dev/amnesia/internal/saga"
)

// storeLine is one store's line of the outcome summary.
type storeLine struct {
	name, residue                                                      string
	artifacts, physical, logical, residual, unverified, outOfScope, nh int
}

// printOutcome prints the outcome of an erasure (or a re-verification): one
// line per store (its artifacts, residue state and the outcome counts that
// are not zero), the totals, what each state short of VERIFIED means and
// what to do, and the certificate's path. verbose adds one line per artifact
// and each store's evidence.
func printOutcome(w io.Writer, res *saga.Result, verbose bool) {
	p := res.Statement.Predicate
	if verbose {
		printArtifacts(w, p)
	}
	fmt.Fprintln(w)
	evidence := map[string]string{}
	for _, s := range p.DeclaredScope {
		evidence[s.Name] = s.Evidence
	}
	for _, s := range storeLines(p) {
		fmt.Fprintf(w, "store %-10s %5d artifacts  residue %-32s  %s\n", s.name, s.artifacts, s.residue, s.outcomes())
		if verbose && evidence[s.name] != "" {
			fmt.Fprintf(w, "      evidence: %s\n", evidence[s.name])
		}
	}
	c := p.Counts
	fmt.Fprintf(w, "\n%d artifacts: %d verified (%d physical, %d logical), %d residual, %d unverified, %d out of scope, %d need a person\n",
		c.Artifacts, c.Verified, c.VerifiedPhysical, c.VerifiedLogical, c.Residual, c.Unverified, c.OutOfScope, c.NeedsHuman)
	if p.Reverifies == nil {
		// A re-verification repeats no byte scan by design: the erasure's
		// explanations (and what to do) do not fit its states.
		explain.Write(w, p, "", 100)
		if !verbose && len(explain.Notes(p)) > 0 {
			fmt.Fprintln(w, "Each artifact's outcome and reason are in the certificate; --verbose prints them here.")
		}
	}
	fmt.Fprintf(w, "certificate: %s\n", res.CertificatePath)
}

// outcomes lists the line's outcome counts that are not zero.
func (l storeLine) outcomes() string {
	var parts []string
	for _, c := range []struct {
		n    int
		name string
	}{
		{l.physical, "VERIFIED(physical)"}, {l.logical, "VERIFIED(logical)"},
		{l.residual, "RESIDUAL"}, {l.unverified, "UNVERIFIED"}, {l.outOfScope, "OUT_OF_SCOPE"},
	} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.name))
		}
	}
	out := strings.Join(parts, ", ")
	if l.nh > 0 {
		if out != "" {
			out += "; "
		}
		out += fmt.Sprintf("%d NEEDS_HUMAN (other people's, not erased)", l.nh)
	}
	return out
}

// storeLines sums the artifacts per store: the configured stores in the
// certificate's order, then stores the ledger names but this installation
// does not configure (OUT_OF_SCOPE).
func storeLines(p certificate.Predicate) []storeLine {
	var lines []storeLine
	at := map[string]int{}
	for _, s := range p.DeclaredScope {
		at[s.Name] = len(lines)
		lines = append(lines, storeLine{name: s.Name, residue: s.Residue})
	}
	for _, a := range p.Artifacts {
		i, ok := at[a.Store]
		if !ok {
			at[a.Store] = len(lines)
			i = len(lines)
			lines = append(lines, storeLine{name: a.Store, residue: "NOT-CONFIGURED"})
		}
		l := &lines[i]
		switch {
		case a.Outcome == certificate.NeedsHuman:
			l.nh++
			continue
		case a.Outcome == certificate.Verified && a.Level == certificate.LevelPhysical:
			l.physical++
		case a.Outcome == certificate.Verified:
			l.logical++
		case a.Outcome == certificate.Residual:
			l.residual++
		case a.Outcome == certificate.Unverified:
			l.unverified++
		case a.Outcome == certificate.OutOfScope:
			l.outOfScope++
		}
		l.artifacts++
	}
	n := len(p.DeclaredScope)
	sort.Slice(lines[n:], func(i, j int) bool { return lines[n+i].name < lines[n+j].name })
	return lines
}

// printArtifacts prints one line per artifact (--verbose).
func printArtifacts(w io.Writer, p certificate.Predicate) {
	fmt.Fprintf(w, "\n%-26s %-10s %-10s %-22s %s\n", "ARTIFACT", "KIND", "STORE", "OUTCOME", "DETAIL")
	for _, a := range p.Artifacts {
		o := a.Outcome
		if a.Level != "" {
			o += "(" + a.Level + ")"
		}
		detail := a.Reason
		if a.Measurement != nil && a.Measurement.Physical != nil && a.Outcome == certificate.Verified && a.Level == certificate.LevelPhysical {
			ph := a.Measurement.Physical
			detail = fmt.Sprintf("%d/%d needles found before, %d after", ph.FoundBefore, ph.Needles, ph.FoundAfter)
		}
		fmt.Fprintf(w, "%-26s %-10s %-10s %-22s %s\n", a.ID, a.Kind, a.Store, o, detail)
	}
}
