package bench

import (
	"context"
	"io"
	"maps"
	"os"
	"path/filepath"
	"time"

	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store"
)

// runCell erases the given subjects one after another with one baseline,
// measuring each before and after.
func runCell(ctx context.Context, tg *target, c *Corpus, dir, id string, subjects []int) (*Cell, error) {
	e, err := openEnv(ctx, dir, false)
	if err != nil {
		return nil, err
	}
	defer e.close()
	if tg.drop != nil {
		defer tg.drop(ctx, e)
	}
	cell := &Cell{Baseline: id, Subjects: len(subjects)}
	if id == "B4" || id == "B5" {
		cell.Outcomes = &Outcomes{}
		e.steps = NewStepClock()
	}
	erased := map[int]bool{}
	for _, s := range subjects {
		erased[s] = true
	}
	probes := recallProbes(tg, c, erased)
	if len(probes) > 0 {
		r, err := recallAt5(ctx, tg, e, probes)
		if err != nil {
			return nil, err
		}
		cell.RecallBefore = &r
	}
	var walls []float64
	var power, residue, hidden int
	ms := make([]*measured, len(subjects))
	// The byte scans before the erasure, after it, and for the windows
	// other records hold: per subject, or, for a batch, one scan of each
	// for all its subjects (a needle set keeps each key's needles apart,
	// so each key's findings are what its own scan would find).
	var before, after, shared store.ScanReport
	scans := func(ev, sh map[string]*store.Evidence) error {
		var err error
		if after, err = scan(ctx, e, store.NewNeedleSet(ev)); err != nil {
			return err
		}
		set := store.NewNeedleSet(sh)
		if shared, err = scan(ctx, e, set); err != nil {
			return err
		}
		cell.SharedWindows += set.Len()
		cell.SharedFound += shared.NeedlesFound
		return nil
	}
	if id == "B5" {
		// One erasure window: every subject measured first, then one batch.
		ev, sh := map[string]*store.Evidence{}, map[string]*store.Evidence{}
		for i, s := range subjects {
			m, err := measure(ctx, tg, c, e, s)
			if err != nil {
				return nil, err
			}
			ms[i] = m
			maps.Copy(ev, m.ev)
			maps.Copy(sh, m.shared)
		}
		var err error
		if before, err = scan(ctx, e, store.NewNeedleSet(ev)); err != nil {
			return nil, err
		}
		start := time.Now()
		if err := batch(ctx, c, e, subjects, cell.Outcomes); err != nil {
			return nil, err
		}
		per := float64(time.Since(start).Microseconds()) / 1000 / float64(len(subjects))
		for range subjects {
			walls = append(walls, per)
		}
		cell.Note = "one batch (saga.RunBatch): each store reclaims once for all subjects; wall per erasure = batch wall / subjects"
		if err := scans(ev, sh); err != nil {
			return nil, err
		}
	}
	for i, s := range subjects {
		if id != "B5" {
			m, err := measure(ctx, tg, c, e, s)
			if err != nil {
				return nil, err
			}
			ms[i] = m
			if before, err = scan(ctx, e, store.NewNeedleSet(m.ev)); err != nil {
				return nil, err
			}
			start := time.Now()
			if err := apply(ctx, tg, c, e, id, s, m.keys, cell.Outcomes); err != nil {
				return nil, err
			}
			walls = append(walls, float64(time.Since(start).Microseconds())/1000)
			if err := scans(m.ev, m.shared); err != nil {
				return nil, err
			}
		}
		m := ms[i]
		for _, k := range m.keys {
			if before.Found[k] > 0 {
				power++
			}
			if after.Found[k] > 0 {
				residue++
			}
			vis, err := tg.visible(ctx, e, k, m.vecs[k])
			if err != nil {
				return nil, err
			}
			if !vis {
				hidden++
			}
		}
		cell.Records += len(m.keys)
	}
	if cell.Records > 0 {
		n := float64(cell.Records)
		cell.LogicalExclusion, cell.PhysicalResidue, cell.ProbePower = float64(hidden)/n, float64(residue)/n, float64(power)/n
	}
	cell.walls = walls
	cell.StepsMs = e.steps.PerErasure(len(subjects))
	cell.WallMedianMs, cell.WallP95Ms = percentile(walls, 0.5), percentile(walls, 0.95)
	for _, w := range walls {
		cell.WallTotalMs += w
	}
	if len(probes) > 0 {
		r, err := recallAt5(ctx, tg, e, probes)
		if err != nil {
			return nil, err
		}
		cell.RecallAfter = &r
	}
	return cell, nil
}

// trace returns the subject's current trace.
func trace(ctx context.Context, c *Corpus, e *env, subject int) (*lineage.Trace, error) {
	k, err := e.dir.Keyer.Key(e.dir.Config.Scope, c.Subjects[subject].ID)
	if err != nil {
		return nil, err
	}
	v, err := e.ledger.View(ctx, e.dir.Config.Scope, k)
	if err != nil {
		return nil, err
	}
	return lineage.BuildTrace(v)
}

// batch erases every subject in one erasure window, counting in out how
// each erasure ended.
func batch(ctx context.Context, c *Corpus, e *env, subjects []int, out *Outcomes) error {
	stores := map[string]store.Store{e.st.Info().Name: e.st}
	var es []*saga.Erasure
	for _, s := range subjects {
		t, err := trace(ctx, c, e, s)
		if err != nil {
			return err
		}
		es = append(es, &saga.Erasure{Dir: e.dir, Ledger: e.ledger, Stores: stores, Trace: t, Reason: "BENCH-BATCH", Log: quietLog(), Progress: e.progress()})
	}
	res, err := saga.RunBatch(ctx, es)
	if err != nil && res == nil {
		return err
	}
	// A paused erasure has no result. RunBatch returns the first pause
	// only: the erasures share one reclaim per store, so it stands for
	// each of them.
	for i, r := range res {
		var rerr error
		if r == nil {
			rerr = err
		}
		if aerr := out.add(r, rerr, len(es[i].Trace.Artifacts)); aerr != nil {
			return aerr
		}
	}
	return nil
}

// apply performs one baseline's deletion of one subject. An amnesia
// erasure (B4) that ends incomplete or paused is counted in out, not
// returned as an error.
func apply(ctx context.Context, tg *target, c *Corpus, e *env, id string, subject int, keys []string, out *Outcomes) error {
	switch id {
	case "B0":
		return tg.native(ctx, e.st, keys)
	case "B1":
		if err := tg.native(ctx, e.st, keys); err != nil {
			return err
		}
		return tg.compact(ctx, e.st, keys)
	case "B2":
		if err := tg.native(ctx, e.st, keys); err != nil {
			return err
		}
		return tg.rebuild(ctx, e.st, keys)
	}
	t, err := trace(ctx, c, e, subject)
	if err != nil {
		return err
	}
	if id == "B3" {
		ids := make([]string, len(t.Artifacts))
		for i, a := range t.Artifacts {
			ids[i] = a.ID
		}
		return e.ledger.Suppress(ctx, "bench-suppress", ids)
	}
	res, err := saga.Run(ctx, &saga.Erasure{Dir: e.dir, Ledger: e.ledger, Stores: map[string]store.Store{e.st.Info().Name: e.st}, Trace: t, Reason: "BENCH", Log: quietLog(), Progress: e.progress()})
	return out.add(res, err, len(t.Artifacts))
}

type probe struct {
	key string
	vec []float32
}

// recallProbes picks up to 50 records of subjects that stay.
func recallProbes(tg *target, c *Corpus, erased map[int]bool) []probe {
	var out []probe
	for i := 0; i < len(c.Docs) && len(out) < 50; i += 7 {
		d := c.Docs[i]
		if erased[d.Owner] {
			continue
		}
		for _, k := range tg.keys(d) {
			if v := tg.query(d, k); v != nil {
				out = append(out, probe{k, v})
				break
			}
		}
	}
	return out
}

// recallAt5 is the share of probes whose own record is among the 5 nearest
// results through the application's read path.
func recallAt5(ctx context.Context, tg *target, e *env, ps []probe) (float64, error) {
	if tg.refresh != nil {
		if err := tg.refresh(ctx, e); err != nil {
			return 0, err
		}
	}
	hit := 0
	for _, p := range ps {
		ok, err := tg.top5(ctx, e, p.key, p.vec)
		if err != nil {
			return 0, err
		}
		if ok {
			hit++
		}
	}
	return float64(hit) / float64(len(ps)), nil
}

func copyDir(src, dst string) error {
	os.RemoveAll(dst)
	return filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if fi.IsDir() {
			return os.MkdirAll(target, 0o700)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, fi.Mode())
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}
