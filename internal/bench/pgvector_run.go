package bench

// The pgvector benchmark's baselines: the native deletions and the amnesia
// runs, each measured with the adapter before and after its deletion path.

import (
	"context"
	"fmt"
	"os"
	pathpkg "path"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/pgvector"
)

// --- baselines ----------------------------------------------------------------

// pgvMeasured is one group of erased records, read before deletion.
type pgvMeasured struct {
	keys   []string
	set    *store.NeedleSet
	before store.ScanReport
}

func (r *pgvRun) measure(ctx context.Context, st *pgvector.Store, keys []string) (*pgvMeasured, error) {
	ev, err := r.evidence(ctx, st, keys)
	if err != nil {
		return nil, err
	}
	return r.before(ctx, st, ev, keys)
}

// evidence reads the evidence of keys with the adapter (one pass over the
// table for its shared-window check, however many keys).
func (r *pgvRun) evidence(ctx context.Context, st *pgvector.Store, keys []string) (map[string]*store.Evidence, error) {
	ev, err := st.ReadEvidence(ctx, keys)
	if err != nil {
		return nil, err
	}
	if len(ev) != len(keys) {
		return nil, fmt.Errorf("evidence for %d of %d keys", len(ev), len(keys))
	}
	return ev, nil
}

// before probes for keys' needles (from ev) before their deletion.
func (r *pgvRun) before(ctx context.Context, st *pgvector.Store, ev map[string]*store.Evidence, keys []string) (*pgvMeasured, error) {
	sub := make(map[string]*store.Evidence, len(keys))
	for _, k := range keys {
		sub[k] = ev[k]
	}
	m := &pgvMeasured{keys: keys, set: store.NewNeedleSet(sub)}
	var err error
	m.before, err = st.ProbePhysical(ctx, m.set)
	return m, err
}

// sampleEvidence reads the evidence of every sampled subject's vectors in
// one call, before any of them is deleted.
func (r *pgvRun) sampleEvidence(ctx context.Context, st *pgvector.Store) ([]int, map[string]*store.Evidence, error) {
	subjects := sample(r.o.Subjects, r.o.Sample)
	var keys []string
	for _, s := range subjects {
		keys = append(keys, r.keysOf(s)...)
	}
	ev, err := r.evidence(ctx, st, keys)
	return subjects, ev, err
}

// after probes after the deletion path and adds the measurement to the cell.
// With data_dir it also scans pg_wal alone, to say where the residue is.
func (r *pgvRun) after(ctx context.Context, st *pgvector.Store, c *PGVectorCell, m *pgvMeasured) (store.ScanReport, error) {
	after, err := st.ProbePhysical(ctx, m.set)
	if err != nil {
		return after, err
	}
	if r.res.Probe == "" {
		r.res.Probe = after.Method
	}
	var rel, wal store.ScanReport
	if r.o.DataDir != "" {
		// The probe has just CHECKPOINTed; the server writes nothing
		// meanwhile (this benchmark holds its only connection).
		var files, segs []string
		err := filepath.WalkDir(filepath.Join(r.o.DataDir, "base"), func(p string, e os.DirEntry, err error) error {
			if err == nil && e.Type().IsRegular() {
				files = append(files, p)
			}
			return err
		})
		if err != nil {
			return after, err
		}
		found := map[string]bool{} // key -> found in some relation file
		for _, f := range files {
			one, err := store.ScanFiles(ctx, m.set, "base", f)
			if err != nil {
				return after, err
			}
			if len(one.Found) == 0 {
				continue
			}
			if c.relFiles == nil {
				c.relFiles = map[string]int{}
			}
			rp, _ := filepath.Rel(filepath.Join(r.o.DataDir, "base"), f)
			c.relFiles[filepath.ToSlash(rp)] += len(one.Found)
			for k := range one.Found {
				found[k] = true
			}
		}
		rel.Found = map[string]int{}
		for k := range found {
			rel.Found[k] = 1
		}
		ents, err := os.ReadDir(filepath.Join(r.o.DataDir, "pg_wal"))
		if err != nil {
			return after, err
		}
		for _, e := range ents {
			if n := e.Name(); len(n) == 24 && strings.Trim(n, "0123456789ABCDEF") == "" && e.Type().IsRegular() {
				segs = append(segs, filepath.Join(r.o.DataDir, "pg_wal", n))
			}
		}
		if wal, err = store.ScanFiles(ctx, m.set, "pg_wal", segs...); err != nil {
			return after, err
		}
		if c.FoundAfterWAL == nil {
			c.FoundAfterWAL, c.FoundAfterRelation = new(int), new(int)
		}
	}
	c.Vectors += len(m.keys)
	c.Needles += m.set.Len()
	for _, k := range m.keys {
		if m.before.Found[k] > 0 {
			c.FoundBefore++
		}
		if after.Found[k] > 0 {
			c.FoundAfter++
		}
		if c.FoundAfterWAL != nil {
			if rel.Found[k] > 0 {
				*c.FoundAfterRelation++
			}
			if wal.Found[k] > 0 {
				*c.FoundAfterWAL++
			}
		}
	}
	c.NeedlesAfter += after.NeedlesFound
	return after, nil
}

func (c *PGVectorCell) finish(walls []float64, scanBytes []float64) {
	c.WallMs = walls
	c.WallMedianMs = percentile(walls, 0.5)
	for _, w := range walls {
		c.WallTotalMs += w
	}
	c.WallPerSubjectMs = c.WallTotalMs / float64(c.Subjects)
	if len(walls) > 1 {
		c.WallPerSubjectMs = c.WallMedianMs
	}
	if c.Vectors > 0 {
		c.ProbePower = float64(c.FoundBefore) / float64(c.Vectors)
		c.Residue = float64(c.FoundAfter) / float64(c.Vectors)
	}
	c.ScanBytes = int64(percentile(scanBytes, 0.5))
}

func (r *pgvRun) baseline(ctx context.Context, i int) (*PGVectorCell, error) {
	b := PGVectorBaselines[i]
	table := r.o.Tables + strings.ReplaceAll(b.ID, "-", "_")
	su, err := r.load(ctx, table, r.index, r.o.Vectors)
	if err != nil {
		return nil, err
	}
	r.logf("%s: insert %.1fs, vacuum %.1fs, %s index %.1fs", b.ID, su.InsertSeconds, su.VacuumSeconds, r.index, su.IndexSeconds)
	if i == 0 {
		if r.res.Index.Sizes, err = r.sizes(ctx, table); err != nil {
			return nil, err
		}
		r.res.Index.Method = r.index
		r.withConn(ctx, func(c *pgx.Conn) error {
			return c.QueryRow(ctx, `SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
				WHERE i.indrelid = $1::text::regclass AND a.amname IN ('hnsw', 'ivfflat')`, pgx.Identifier{table}.Sanitize()).Scan(&r.res.Index.Definition)
		})
	}
	cell := &PGVectorCell{Baseline: b.ID, Setup: su}
	switch b.ID {
	case "amnesia-delete-only":
		err = r.amnesia(ctx, cell, table, "delete-only", false)
	case "amnesia-full":
		err = r.amnesia(ctx, cell, table, "full", false)
	case "amnesia-full-batch":
		err = r.amnesia(ctx, cell, table, "full", true)
	default:
		err = r.native(ctx, cell, table)
	}
	if err != nil {
		return nil, err
	}
	if err := r.resolve(ctx, cell); err != nil {
		return nil, err
	}
	return cell, r.drop(ctx, table)
}

// resolve names the relations of the files under base/ where residue was
// found. A file whose relation is gone (rewritten or dropped since) is named
// by its path.
func (r *pgvRun) resolve(ctx context.Context, c *PGVectorCell) error {
	if len(c.relFiles) == 0 {
		return nil
	}
	c.ResidueByRelation = map[string]int{}
	return r.withConn(ctx, func(conn *pgx.Conn) error {
		var db string
		if err := conn.QueryRow(ctx, `SELECT oid::text FROM pg_database WHERE datname = current_database()`).Scan(&db); err != nil {
			return err
		}
		for f, n := range c.relFiles {
			name := "base/" + f + " (relation gone)"
			dir, file := pathpkg.Split(f)
			node, fork, _ := strings.Cut(strings.SplitN(file, ".", 2)[0], "_")
			if strings.TrimSuffix(dir, "/") == db {
				var rel *string
				if err := conn.QueryRow(ctx, `SELECT (SELECT oid::regclass::text FROM pg_class WHERE pg_relation_filenode(oid) = $1::oid LIMIT 1)`, node).Scan(&rel); err != nil {
					return err
				}
				if rel != nil {
					name = *rel
					if fork != "" {
						name += " (" + fork + ")"
					}
				}
			}
			c.ResidueByRelation[name] += n
		}
		return nil
	})
}

// native runs a baseline without amnesia on the adapter's connection (the
// adapter is used only to read evidence and probe).
func (r *pgvRun) native(ctx context.Context, cell *PGVectorCell, table string) error {
	st, err := r.open(ctx, nil, r.storeConfig(table, ""))
	if err != nil {
		return err
	}
	defer st.Close()
	t := st.Table()
	stmts := []string{}
	switch cell.Baseline {
	case "delete-vacuum":
		stmts = append(stmts, `VACUUM `+t)
	case "delete-vacuum-full":
		stmts = append(stmts, `VACUUM FULL `+t)
	}
	var walls, scanned []float64
	subjects, ev, err := r.sampleEvidence(ctx, st)
	if err != nil {
		return err
	}
	for _, s := range subjects {
		m, err := r.before(ctx, st, ev, r.keysOf(s))
		if err != nil {
			return err
		}
		start := time.Now()
		if err := st.Exec(ctx, `DELETE FROM `+t+` WHERE metadata->>'subject' = $1`, r.tags[s]); err != nil {
			return err
		}
		for _, q := range stmts {
			if err := st.Exec(ctx, q); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		walls = append(walls, float64(time.Since(start).Microseconds())/1000)
		after, err := r.after(ctx, st, cell, m)
		if err != nil {
			return err
		}
		scanned = append(scanned, float64(after.Bytes))
		cell.Subjects++
	}
	cell.finish(walls, scanned)
	return nil
}

// amnesia runs saga.Run per subject, or saga.RunBatch over the batch.
func (r *pgvRun) amnesia(ctx context.Context, cell *PGVectorCell, table, mode string, batch bool) error {
	d, l, err := r.stateFor(ctx, cell.Baseline, table, mode)
	if err != nil {
		return err
	}
	defer l.Close()
	sc, _ := d.Config.Store(pgvStore)
	st, err := r.open(ctx, d, sc)
	if err != nil {
		return err
	}
	defer st.Close()
	stores := map[string]store.Store{pgvStore: st}
	trace := func(s int) (*lineage.Trace, error) {
		k, err := d.Keyer.Key(d.Config.Scope, pgvSubjectID(s))
		if err != nil {
			return nil, err
		}
		v, err := l.View(ctx, d.Config.Scope, k)
		if err != nil {
			return nil, err
		}
		return lineage.BuildTrace(v)
	}
	var results []*saga.Result
	var walls, scanned []float64
	if !batch {
		subjects, ev, err := r.sampleEvidence(ctx, st)
		if err != nil {
			return err
		}
		for _, s := range subjects {
			m, err := r.before(ctx, st, ev, r.keysOf(s))
			if err != nil {
				return err
			}
			t, err := trace(s)
			if err != nil {
				return err
			}
			start := time.Now()
			res, err := saga.Run(ctx, &saga.Erasure{Dir: d, Ledger: l, Stores: stores, Trace: t, Reason: "BENCH-PGVECTOR", Log: quietLog()})
			if err != nil {
				return err
			}
			walls = append(walls, float64(time.Since(start).Microseconds())/1000)
			after, err := r.after(ctx, st, cell, m)
			if err != nil {
				return err
			}
			scanned = append(scanned, float64(after.Bytes))
			cell.Subjects++
			results = append(results, res)
			r.logf("%s: subject %d: %.1fs", cell.Baseline, s, walls[len(walls)-1]/1000)
		}
	} else {
		subjects := sample(r.o.Subjects, r.o.Batch)
		var keys []string
		var es []*saga.Erasure
		for _, s := range subjects {
			keys = append(keys, r.keysOf(s)...)
			t, err := trace(s)
			if err != nil {
				return err
			}
			es = append(es, &saga.Erasure{Dir: d, Ledger: l, Stores: stores, Trace: t, Reason: "BENCH-PGVECTOR-BATCH", Log: quietLog()})
		}
		m, err := r.measure(ctx, st, keys)
		if err != nil {
			return err
		}
		r.logf("%s: %d subjects, %d vectors in one window", cell.Baseline, len(subjects), len(keys))
		start := time.Now()
		if results, err = saga.RunBatch(ctx, es); err != nil {
			return err
		}
		walls = append(walls, float64(time.Since(start).Microseconds())/1000)
		after, err := r.after(ctx, st, cell, m)
		if err != nil {
			return err
		}
		scanned = append(scanned, float64(after.Bytes))
		cell.Subjects = len(subjects)
		cell.Note = "one saga.RunBatch over every subject of the batch; wall_per_subject_ms = batch wall / subjects"
	}
	cell.finish(walls, scanned)
	certs, err := r.certificates(d, results, batch)
	if err != nil {
		return err
	}
	cell.Certificates = certs
	if batch {
		ev, pr := certs.Steps["evidence"], certs.Steps["probe"]
		cell.Note += fmt.Sprintf("; the batch's one evidence read and byte scan before deletion: %.1fs (the first erasure's evidence step; median per erasure %.3fs); "+
			"the one shared reclaim %.1fs; probe: %.1fs in the first erasure's step (its logical probes and the batch's one byte scan after reclaim), "+
			"median %.1fs per erasure (its own logical probes: by id, by subject tag, exact and index k=10 searches per vector), %.1fs summed over the erasures (saga.RunBatch runs several at once: the sum is not wall time)",
			certs.FirstSteps["evidence"]/1000, ev.MedianMs/1000, certs.Steps["reclaim"].TotalMs/1000, certs.FirstSteps["probe"]/1000, pr.MedianMs/1000, pr.TotalMs/1000)
	}
	return nil
}
