package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/amnesia-dev/amnesia/internal/bench/provenance"
)

// WindowSizes are the window sizes of issue #13, point 7: B5 per subject
// should stay flat as a window grows from 1 to 1,000 subjects.
var WindowSizes = []int{1, 10, 100, 1000}

// WindowSubjects is the corpus `amnesia-bench window` erases from by
// default: enough subjects for a window of 1,000 (15 documents each, as the
// default corpus).
const WindowSubjects = 1000

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
	tg, ok := targets[typ]
	if !ok {
		return nil, fmt.Errorf("bench: no residue target for store type %q", typ)
	}
	for i, n := range sizes {
		if n < 1 || n > o.Subjects || (i > 0 && n <= sizes[i-1]) {
			return nil, fmt.Errorf("bench: window sizes %v: want ascending sizes from 1 to the corpus's %d subjects", sizes, o.Subjects)
		}
	}
	c := NewCorpus(o.Seed, o.Subjects, o.DocsEach)
	records := 0
	for _, d := range c.Docs {
		records += len(tg.keys(d))
	}
	tmpl := filepath.Join(o.Work, typ, "template")
	if !tg.fresh {
		logf(o, "%s: ingesting %d documents of %d subjects", typ, len(c.Docs), len(c.Subjects))
		if _, err := setup(ctx, tg, c, tmpl); err != nil {
			return nil, err
		}
	}
	res := &WindowResult{Kind: "window", Store: typ, Seed: o.Seed, Subjects: o.Subjects, Docs: len(c.Docs), Records: records,
		Provenance: provenance.Capture(provenance.ResiduePaths)}
	if tg.server != nil {
		set, err := provenance.PostgresSettings(ctx, tg.server())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", typ, err)
		}
		res.ServerSettings = set
	}
	for _, n := range sizes {
		dir := filepath.Join(o.Work, typ, fmt.Sprintf("window-%d", n))
		if tg.fresh {
			if _, err := setup(ctx, tg, c, dir); err != nil {
				return nil, err
			}
		} else if err := copyDir(tmpl, dir); err != nil {
			return nil, err
		}
		logf(o, "%s B5: a window of %d subject%s", typ, n, plural(n))
		cell, err := runCell(ctx, tg, c, dir, "B5", sample(o.Subjects, n))
		if err != nil {
			return nil, fmt.Errorf("%s window of %d: %w", typ, n, err)
		}
		cell.What = fmt.Sprintf("amnesia full erasure of %d subject%s as one batch", n, plural(n))
		res.Cells = append(res.Cells, *cell)
		os.RemoveAll(dir)
	}
	return res, nil
}
