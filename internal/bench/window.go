package bench

import (
	"context"
	"fmt"

	"github.com/amnesia-dev/amnesia/internal/bench/provenance"
)

// WindowSizes are the window sizes of issue #13, point 7: B5 per subject
// should stay flat as a window grows from 1 to 1,000 subjects.
var WindowSizes = []int{1, 10, 100, 1000}

// WindowResult is one results file: bench/results/window-<store>.json, B5
// (one batch: saga.RunBatch, each store reclaiming once) at several window
// sizes, each on a fresh copy of one corpus.
type WindowResult struct {
	Kind     string `json:"kind"` // "window"
	Store    string `json:"store"`
	Seed     uint64 `json:"seed"`
	Subjects int    `json:"corpus_subjects"`
	Docs     int    `json:"corpus_documents"`
	Records  int    `json:"corpus_records"` // records in this store
	provenance.Provenance
	// Cells is one B5 cell per window size, in the order run (the sizes
	// asked for, ascending); WallMedianMs is the batch's wall time divided
	// by its subjects.
	Cells []Cell `json:"cells"`
}

// Windows runs B5 at each window size on a fresh copy of one corpus of
// o.Subjects × o.DocsEach: the subjects of a window are spread evenly over
// the corpus, so every window erases from a store of the same size.
func Windows(ctx context.Context, typ string, o Options, sizes []int) (*WindowResult, error) {
	if _, ok := targets[typ]; !ok {
		return nil, fmt.Errorf("bench: no residue target for store type %q", typ)
	}
	for i, n := range sizes {
		if n < 1 || n > o.Subjects || (i > 0 && n <= sizes[i-1]) {
			return nil, fmt.Errorf("bench: window sizes %v: want ascending sizes from 1 to the corpus's %d subjects", sizes, o.Subjects)
		}
	}
	b, err := openBed(ctx, typ, o)
	if err != nil {
		return nil, err
	}
	prov, err := b.provenance(ctx)
	if err != nil {
		return nil, err
	}
	res := &WindowResult{Kind: "window", Store: typ, Seed: o.Seed, Subjects: o.Subjects, Docs: len(b.c.Docs), Records: b.records, Provenance: prov}
	for _, n := range sizes {
		logf(o, "%s B5: a window of %d subject%s", typ, n, plural(n))
		cell, err := b.cell(ctx, fmt.Sprintf("window-%d", n), "B5", sample(o.Subjects, n))
		if err != nil {
			return nil, fmt.Errorf("%s window of %d: %w", typ, n, err)
		}
		cell.What = fmt.Sprintf("amnesia full erasure of %d subject%s as one batch", n, plural(n))
		res.Cells = append(res.Cells, *cell)
	}
	return res, nil
}
