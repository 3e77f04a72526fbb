package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/internal/bench/provenance"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/store"
)

// Options sizes a residue run.
type Options struct {
	Seed     uint64
	Subjects int // subjects in the corpus
	DocsEach int // documents per subject
	Sample   int // subjects erased one by one in B0–B4
	Work     string
	Progress io.Writer
}

// Baselines, in the order they are run.
var Baselines = []struct{ ID, What string }{
	{"B0", "native delete (plain DELETE on the application's connection)"},
	{"B1", "native delete + the store's own compaction (VACUUM)"},
	{"B2", "native delete + full rebuild of the store from its live rows"},
	{"B3", "amnesia suppression only (ledger marker; reads through capture hide the records)"},
	{"B4", "amnesia full erasure, one subject at a time (journaled saga, certificate)"},
	{"B5", "amnesia full erasure of every subject of the corpus as one batch (one reclaim per store)"},
}

// Cell is one baseline on one store.
type Cell struct {
	Baseline         string   `json:"baseline"`
	What             string   `json:"what"`
	Subjects         int      `json:"subjects"`          // subjects erased
	Records          int      `json:"records"`           // their records in this store
	LogicalExclusion float64  `json:"logical_exclusion"` // share no read path returns
	PhysicalResidue  float64  `json:"physical_residue"`  // share whose own bytes are still in the files
	ProbePower       float64  `json:"probe_power"`       // share whose bytes were findable before deletion
	SharedWindows    int      `json:"shared_windows"`    // windows other live records hold too (not counted as residue)
	SharedFound      int      `json:"shared_found"`      // of those, still found after: other subjects' bytes
	RecallBefore     *float64 `json:"recall_at_5_before,omitempty"`
	RecallAfter      *float64 `json:"recall_at_5_after,omitempty"`
	WallMedianMs     float64  `json:"wall_median_ms"` // per erasure
	WallP95Ms        float64  `json:"wall_p95_ms"`
	WallTotalMs      float64  `json:"wall_total_ms"`
	// StepsMs (B4, B5) is the time each kind of the saga's steps took per
	// erasure (summed over the cell's erasures, divided by its subjects),
	// as the saga reports it in its progress; absent from older files.
	StepsMs map[string]float64 `json:"steps_ms,omitempty"`
	// Outcomes (B4, B5) is how the erasures ended, as their certificates
	// say (outcome.go); absent from files written before it was recorded,
	// when the harness stopped at the first erasure that left an
	// artifact UNVERIFIED, RESIDUAL or OUT_OF_SCOPE.
	Outcomes *Outcomes `json:"outcomes,omitempty"`
	Note     string    `json:"note,omitempty"`

	walls []float64 // each erasure's wall time in ms, in order (the scale benchmark reports them)
}

// StoreResult is one results file: bench/results/residue-<store>.json.
type StoreResult struct {
	Kind     string `json:"kind"` // "residue"
	Store    string `json:"store"`
	Seed     uint64 `json:"seed"`
	Subjects int    `json:"corpus_subjects"`
	Docs     int    `json:"corpus_documents"`
	Records  int    `json:"corpus_records"` // records in this store
	Sample   int    `json:"sample"`
	provenance.Provenance
	Cells []Cell `json:"cells"`
}

// Residue runs every baseline for one store type.
func Residue(ctx context.Context, typ string, o Options) (*StoreResult, error) {
	b, err := openBed(ctx, typ, o)
	if err != nil {
		return nil, err
	}
	prov, err := b.provenance(ctx)
	if err != nil {
		return nil, err
	}
	res := &StoreResult{Kind: "residue", Store: typ, Seed: o.Seed, Subjects: o.Subjects, Docs: len(b.c.Docs), Records: b.records, Sample: o.Sample,
		Provenance: prov}
	for _, bl := range Baselines {
		subjects := sample(o.Subjects, o.Sample)
		if bl.ID == "B5" {
			subjects = sample(o.Subjects, o.Subjects)
		}
		logf(o, "%s %s: %d subjects", typ, bl.ID, len(subjects))
		cell, err := b.cell(ctx, bl.ID, bl.ID, subjects)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", typ, bl.ID, err)
		}
		cell.What = bl.What
		if n := b.tg.notes[bl.ID]; n != "" {
			if cell.Note != "" {
				cell.Note += "; "
			}
			cell.Note += n
		}
		res.Cells = append(res.Cells, *cell)
	}
	return res, nil
}

func logf(o Options, format string, a ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, format+"\n", a...)
	}
}

// sample picks n subjects spread evenly over the corpus.
func sample(total, n int) []int {
	if n > total {
		n = total
	}
	out := make([]int, n)
	for i := range out {
		out[i] = i * total / n
	}
	return out
}

// env is one opened copy of the template.
type env struct {
	dir    *state.Dir
	ledger *sqliteledger.Ledger
	st     store.Store
	rec    *capture.Recorder
	steps  *StepClock // the step times of the erasures run in this env (B4, B5), or nil
}

func openEnv(ctx context.Context, root string, create bool) (*env, error) {
	sd, err := state.Open(filepath.Join(root, "state"))
	if err != nil {
		return nil, err
	}
	l, err := sqliteledger.Open(ctx, sd.LedgerPath())
	if err != nil {
		return nil, err
	}
	st, err := sd.Config.OpenStore(ctx, sd.Config.Stores[0], create)
	if err != nil {
		l.Close()
		return nil, err
	}
	return &env{dir: sd, ledger: l, st: st, rec: capture.New(l, sd.Keyer, sd.Config.Scope)}, nil
}

func (e *env) close() { e.st.Close(); e.ledger.Close() }

func setup(ctx context.Context, tg *target, c *Corpus, root string) (int, error) {
	os.RemoveAll(root)
	cfg := state.DefaultConfig()
	cfg.Stores = []state.StoreConfig{tg.config(root)}
	if _, err := state.Init(filepath.Join(root, "state"), cfg); err != nil {
		return 0, err
	}
	e, err := openEnv(ctx, root, true)
	if err != nil {
		return 0, err
	}
	defer e.close()
	n := 0
	for _, d := range c.Docs {
		if err := tg.ingest(ctx, e, c, d); err != nil {
			return 0, err
		}
		n += len(tg.keys(d))
	}
	if tg.flush != nil {
		if err := tg.flush(ctx, e); err != nil {
			return 0, err
		}
	}
	// Settle the files: what a long-running application's store looks like.
	if rc, ok := e.st.(store.Reclaimer); ok {
		if _, err := rc.Reclaim(ctx); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// measured is one subject's records in one store, read before deletion.
type measured struct {
	keys   []string
	ev     map[string]*store.Evidence
	shared map[string]*store.Evidence // windows other records hold too, one per key
	vecs   map[string][]float32
}

func measure(ctx context.Context, tg *target, c *Corpus, e *env, subject int) (*measured, error) {
	m := &measured{vecs: map[string][]float32{}}
	sharedEv := map[string]*store.Evidence{}
	for _, di := range c.DocsOf(subject) {
		d := c.Docs[di]
		for _, k := range tg.keys(d) {
			m.keys = append(m.keys, k)
			if q := tg.query(d, k); q != nil {
				m.vecs[k] = q
			}
		}
	}
	ev, err := e.st.(store.EvidenceReader).ReadEvidence(ctx, m.keys)
	if err != nil {
		return nil, err
	}
	m.ev = ev
	// Windows of the content that are not the record's own needles are
	// shared with other records: found later, they are someone else's.
	for _, di := range c.DocsOf(subject) {
		d := c.Docs[di]
		for _, k := range tg.keys(d) {
			own := map[string]bool{}
			if ev[k] != nil {
				for _, n := range ev[k].Needles {
					own[string(n)] = true
				}
			}
			for _, w := range store.Windows(tg.content(d, k)) {
				if !own[string(w)] {
					sharedEv[k+"\x00"+string(w)] = &store.Evidence{Needles: [][]byte{w}}
				}
			}
		}
	}
	m.shared = sharedEv
	return m, nil
}

func scan(ctx context.Context, e *env, set *store.NeedleSet) (store.ScanReport, error) {
	return e.st.(store.PhysicalProber).ProbePhysical(ctx, set)
}

func quietLog() *slog.Logger { return slog.New(slog.DiscardHandler) }
