package bench

// Peers' published figures, quoted from their READMEs. Every number below is
// parsed out of the quoted line itself, so nothing is typed twice and
// nothing is ours: the peer measured it, on its own hardware and corpus.
//
// Of the three peers whose READMEs were read (Lethe, Tombstone,
// vector-forget), only Tombstone publishes measured figures. Lethe's README
// states no timing or residue figure; vector-forget's states none either
// (it lists residue states, not measurements). Tombstone's "Results" table
// runs the same five baselines as ours (B0 native delete … B4 full erasure)
// on chroma, faiss, qdrant and pgvector; pgvector is the only store both of
// us measure, so only its rows are kept here.

import (
	"fmt"
	"strconv"
	"strings"
)

// PeerSource is where a quoted line comes from.
type PeerSource struct {
	Peer    string // project name
	Repo    string // as the peer's README names it
	File    string // the copy of the README that was read
	Section string // section of the README
	Header  string // the table's header line, verbatim (tab-separated)
}

// PeerFigure is one quoted row of a peer's results table.
type PeerFigure struct {
	Source *PeerSource
	Line   string // verbatim, tab-separated as in the source
}

var tombstoneResults = &PeerSource{
	Peer:    "Tombstone",
	Repo:    "github.com/Poojan6216/tombstone",
	File:    "tombstone.txt (Tombstone's README)",
	Section: "Results",
	Header:  "backend\tmethod\tlogical exclusion\tphysical residue\tRecall@5 before → after\twall/erasure",
}

// PeerFigures are the quoted rows.
var PeerFigures = []PeerFigure{
	{tombstoneResults, "pgvector\tB0 native delete()\t100.0%\t94.9%\t82.0% → 99.0%\t0.00s"},
	{tombstoneResults, "pgvector\tB1 delete + vendor compact\t100.0%\t93.2%\t89.5% → 99.0%\t0.04s"},
	{tombstoneResults, "pgvector\tB2 delete + full rebuild\t100.0%\t92.7%\t85.5% → 99.0%\t0.78s"},
	{tombstoneResults, "pgvector\tB3 Tombstone suppress only\t100.0%\t100.0%\t86.5% → 86.5%\t7.96s"},
	{tombstoneResults, "pgvector\tB4 Tombstone full\t100.0%\t0.0%\t88.5% → 99.0%\t10.81s"},
}

// PeerRow is a quoted row, parsed.
type PeerRow struct {
	Fig             PeerFigure
	Store           string  // backend column
	Baseline        string  // "B0" … "B4", the first word of the method column
	PhysicalResidue float64 // share, from the physical residue column
	WallMs          float64 // from the wall/erasure column
	WallText        string  // the wall/erasure column as published ("10.81s")
}

// Parse reads the columns of the quoted line.
func (f PeerFigure) Parse() (PeerRow, error) {
	cols := strings.Split(f.Line, "\t")
	if len(cols) != len(strings.Split(f.Source.Header, "\t")) {
		return PeerRow{}, fmt.Errorf("peer figure %q: %d columns, the header has %d", f.Line, len(cols), len(strings.Split(f.Source.Header, "\t")))
	}
	r := PeerRow{Fig: f, Store: cols[0], WallText: cols[5]}
	r.Baseline, _, _ = strings.Cut(cols[1], " ")
	res, err := strconv.ParseFloat(strings.TrimSuffix(cols[3], "%"), 64)
	if err != nil || !strings.HasSuffix(cols[3], "%") {
		return PeerRow{}, fmt.Errorf("peer figure %q: physical residue %q is not a percentage", f.Line, cols[3])
	}
	r.PhysicalResidue = res / 100
	sec, err := strconv.ParseFloat(strings.TrimSuffix(cols[5], "s"), 64)
	if err != nil || !strings.HasSuffix(cols[5], "s") {
		return PeerRow{}, fmt.Errorf("peer figure %q: wall/erasure %q is not in seconds", f.Line, cols[5])
	}
	r.WallMs = sec * 1000
	return r, nil
}

// BestPeer is the lowest published wall time per erasure for store and
// baseline, or false when no peer published one.
func BestPeer(store, baseline string) (PeerRow, bool) {
	var best PeerRow
	found := false
	for _, f := range PeerFigures {
		r, err := f.Parse()
		if err != nil || r.Store != store || r.Baseline != baseline {
			continue
		}
		if !found || r.WallMs < best.WallMs {
			best, found = r, true
		}
	}
	return best, found
}

// cite names the source of a peer row.
func (r PeerRow) cite() string {
	return fmt.Sprintf("%s's README (%s), %s table", r.Fig.Source.Peer, r.Fig.Source.Repo, r.Fig.Source.Section)
}

// quote renders the verbatim line for Markdown: columns, tab-separated in
// the source, are shown separated by " ⇥ " inside a code span (a "|" would end a table cell).
func (f PeerFigure) quote() string {
	return "`" + strings.ReplaceAll(f.Line, "\t", " ⇥ ") + "`"
}

// ratio is a/b to three significant digits, or "" when b is zero.
func ratio(a, b float64) string {
	if b == 0 {
		return ""
	}
	return strconv.FormatFloat(a/b, 'g', 3, 64)
}
