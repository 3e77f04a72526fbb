package bench

// The trace and capture benchmarks of issue #13 (points 5 and 6):
// bench/results/trace.json and bench/results/capture.json.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/internal/bench/provenance"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/lineage/pgledger"
	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
	"github.com/amnesia-dev/amnesia/store/sqlitevec"
	"github.com/amnesia-dev/amnesia/subject"
)

// PerfOptions sizes the trace and capture benchmarks.
type PerfOptions struct {
	Edges   []int    // ledger sizes for trace latency, ascending; the ledger grows from one to the next
	Traces  int      // traces timed at each size (warm); a tenth of them cold on SQLite
	Batches int      // 1+20+20 ingestions timed, with and without capture
	Singles int      // single document writes timed, with and without capture
	Ledgers []string // "sqlite", "postgres"
	PG      string   // PostgreSQL server URL (a database is created on it); needed for "postgres"
	PGData  string   // that server's data directory: cold traces on PostgreSQL drop its files from the page cache (empty: no cold figure)
	Work    string
	Name    string // of the trace ledger (file, database amnesia_bench_<name>); default "trace"
	// TxSubjects is the subjects a RecordBatch transaction of the trace
	// ledger's growth holds (0: 20).
	TxSubjects int
	// Keep, when set, is a directory where the trace ledger is built
	// (SQLite: Keep/trace.db; PostgreSQL: the database stays on the
	// server) and kept, with its manifest, for Reuse.
	Keep string
	// Reuse, when set, is a directory of an earlier Keep: its ledgers are
	// measured again (and grown first where Edges asks for more).
	Reuse    string
	Progress io.Writer
}

// TraceResult is bench/results/trace.json.
type TraceResult struct {
	Kind string `json:"kind"` // "trace"
	provenance.Provenance
	Shape string     `json:"shape"`
	Runs  []TraceRun `json:"runs"`
	Note  string     `json:"note"`
}

// TraceRun is trace latency on one ledger at one size.
type TraceRun struct {
	Ledger       string   `json:"ledger"`
	Edges        int      `json:"edges"`
	Artifacts    int      `json:"artifacts"`
	Events       int64    `json:"events"`
	BuildSeconds float64  `json:"build_seconds"` // growing the ledger to this size from the previous one
	BuildPerS    float64  `json:"build_artifacts_per_s"`
	Traces       int      `json:"traces"`
	WarmP50Ms    float64  `json:"warm_p50_ms"`
	WarmP99Ms    float64  `json:"warm_p99_ms"`
	ColdTraces   int      `json:"cold_traces,omitempty"`
	ColdP50Ms    *float64 `json:"cold_p50_ms,omitempty"`
	ColdP99Ms    *float64 `json:"cold_p99_ms,omitempty"`
	ColdMethod   string   `json:"cold_method,omitempty"` // how the ledger was put out of the cache
	WarmMethod   string   `json:"warm_method,omitempty"` // how the ledger was put in the cache before the warm traces
	// WarmCachedPercent is the share of the ledger's files (ledgerFiles)
	// the page cache held right after the timed warm traces: below 100,
	// some warm traces may have read from disk. Nil: not known (no
	// files to look at, or not Linux).
	WarmCachedPercent *float64 `json:"warm_cached_percent,omitempty"`
	TxSubjects        int      `json:"tx_subjects,omitempty"` // subjects a RecordBatch transaction of the build held
	// A kept ledger (--keep, --reuse): the commits that built it (one per
	// growth step), where it is kept, and whether this run measured a
	// ledger an earlier run built. BuildSeconds is then this run's growth
	// alone (0 when it grew nothing); the manifest in KeptIn has every step.
	BuiltBy []string `json:"built_by,omitempty"`
	KeptIn  string   `json:"kept_in,omitempty"`
	Reused  bool     `json:"reused,omitempty"`
}

// CaptureResult is bench/results/capture.json.
type CaptureResult struct {
	Kind string `json:"kind"` // "capture"
	provenance.Provenance
	Runs []CaptureRun `json:"runs"`
	Note string       `json:"note"`
}

// CaptureRun is capture overhead on one ledger.
type CaptureRun struct {
	Ledger  string `json:"ledger"`
	Batched struct {
		Ingestions    int     `json:"ingestions"`
		Records       int     `json:"records_each"`
		PlainP50Ms    float64 `json:"plain_p50_ms"`
		CapturedP50Ms float64 `json:"captured_p50_ms"`
		OverheadPc    float64 `json:"overhead_p50_percent"`
		RecordsPerS   float64 `json:"put_batch_records_per_s"` // PutBatch, ledger and store writes
		LedgerPerS    float64 `json:"record_batch_records_per_s"`
	} `json:"batched"`
	Single struct {
		Writes        int     `json:"writes"`
		PlainP50Us    float64 `json:"plain_p50_us"`
		CapturedP50Us float64 `json:"captured_p50_us"`
		OverheadPc    float64 `json:"overhead_p50_percent"`
	} `json:"single"`
}

// openLedger opens a fresh ledger of kind in work (SQLite) or in a new
// database on the server o.PG (PostgreSQL); its spec reopens it.
func openLedger(ctx context.Context, o PerfOptions, kind, name string) (lineage.Ledger, string, error) {
	switch kind {
	case "sqlite":
		dir := o.Work
		if o.Keep != "" {
			dir = o.Keep
		}
		path := filepath.Join(dir, name+".db")
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			os.Remove(p)
		}
		l, err := sqliteledger.Open(ctx, path)
		return l, path, err
	case "postgres":
		if o.PG == "" {
			return nil, "", fmt.Errorf("the postgres ledger needs --pg, a PostgreSQL server URL")
		}
		c, err := pgx.Connect(ctx, o.PG)
		if err != nil {
			return nil, "", err
		}
		defer c.Close(ctx)
		db := "amnesia_bench_" + name
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+db); err != nil {
			return nil, "", err
		}
		if _, err := c.Exec(ctx, "CREATE DATABASE "+db); err != nil {
			return nil, "", err
		}
		dsn, err := databaseDSN(o.PG, db)
		if err != nil {
			return nil, "", err
		}
		l, err := pgledger.Open(ctx, dsn)
		return l, dsn, err
	}
	return nil, "", fmt.Errorf("unknown ledger %q (want sqlite or postgres)", kind)
}

// subjectBatch is the artifacts of subject s in the synthetic ledger's
// shape (docsPer documents of chunksPer chunks, each with an embedding),
// parents first.
func subjectBatch(k *subject.Keyer, s int) []lineage.Artifact {
	key, _ := k.Key("default", fmt.Sprintf("subject-%d", s))
	arts := make([]lineage.Artifact, 0, docsPer*(1+2*chunksPer))
	art := func(kind lineage.Kind, store, skey string, parents ...string) string {
		id := lineage.ArtifactID(k, "default", store, skey)
		arts = append(arts, lineage.Artifact{ID: id, Scope: "default", Subject: key, Kind: kind, Store: store, Key: skey, Digest: lineage.ContentDigest(k, []byte(skey)), Parents: parents})
		return id
	}
	for d := 0; d < docsPer; d++ {
		doc := fmt.Sprintf("s%d-d%d", s, d)
		docID := art(lineage.KindSource, "docs", doc)
		for c := 0; c < chunksPer; c++ {
			ck := fmt.Sprintf("%s#%d", doc, c)
			art(lineage.KindEmbedding, "vectors", ck, art(lineage.KindChunk, "docs", ck, docID))
		}
	}
	return arts
}

// txSubjects is the subjects a transaction of grow holds.
func (o PerfOptions) txSubjects() int {
	if o.TxSubjects > 0 {
		return o.TxSubjects
	}
	return 20
}

// grow records subjects [from, to) through RecordBatch, the ledger's real
// write path (events, hash chain, edges), o.txSubjects() subjects a
// transaction.
func grow(ctx context.Context, o PerfOptions, l lineage.Ledger, k *subject.Keyer, from, to int) error {
	b, ok := l.(lineage.BatchRecorder)
	if !ok {
		return fmt.Errorf("ledger has no RecordBatch")
	}
	per := o.txSubjects()
	last := time.Now()
	for s := from; s < to; s += per {
		var arts []lineage.Artifact
		for i := s; i < s+per && i < to; i++ {
			arts = append(arts, subjectBatch(k, i)...)
		}
		if err := b.RecordBatch(ctx, arts, nil); err != nil {
			return err
		}
		if time.Since(last) > 30*time.Second {
			progressf(o.Progress, "  %d/%d subjects", s+per, to)
			last = time.Now()
		}
	}
	return nil
}

// TracePerf measures View + BuildTrace latency on ledgers grown through
// the real write path.
func TracePerf(ctx context.Context, o PerfOptions) (*TraceResult, error) {
	r := &TraceResult{Kind: "trace", Provenance: provenance.Capture(provenance.TracePaths),
		Shape: fmt.Sprintf("each subject: %d documents of %d chunks, each chunk one embedding: %d artifacts, %d edges; a trace reads one subject", docsPer, chunksPer, docsPer*(1+2*chunksPer), edgesPer)}
	if err := os.MkdirAll(o.Work, 0o700); err != nil {
		return nil, err
	}
	keyer, _ := subject.NewKeyer(make([]byte, subject.PepperSize))
	if o.Keep != "" && o.Reuse != "" {
		return nil, errors.New("--keep and --reuse: give one (--reuse keeps what it grows)")
	}
	if o.Keep != "" {
		if err := os.MkdirAll(o.Keep, 0o700); err != nil {
			return nil, err
		}
	}
	for _, kind := range o.Ledgers {
		name := "trace"
		if o.Name != "" {
			name = o.Name
		}
		var l lineage.Ledger
		var spec string
		var kept *keptLedger
		keepDir := o.Keep
		subjects := 0
		if o.Reuse != "" {
			var err error
			if l, spec, kept, err = reopenKept(ctx, o, o.Reuse, kind); err != nil {
				return nil, err
			}
			keepDir, subjects = o.Reuse, kept.Subjects
			progressf(o.Progress, "trace %s: reusing the ledger kept in %s (%d edges, built by %s)", kind, o.Reuse, kept.Edges, kept.Builds[0].Commit)
		} else {
			var err error
			if l, spec, err = openLedger(ctx, o, kind, name); err != nil {
				return nil, err
			}
			if keepDir != "" {
				kept = &keptLedger{Ledger: kind}
				if kind == "postgres" {
					kept.Database = "amnesia_bench_" + name
				} else {
					kept.File = filepath.Base(spec)
				}
			}
		}
		for _, edges := range o.Edges {
			want := (edges + edgesPer - 1) / edgesPer
			if want < subjects {
				l.Close()
				return nil, fmt.Errorf("trace %s: the reused ledger holds %d edges, more than --edges %d asks for", kind, subjects*edgesPer, edges)
			}
			run := TraceRun{Ledger: kind, Edges: want * edgesPer, Artifacts: want * docsPer * (1 + 2*chunksPer), Traces: o.Traces}
			if want > subjects {
				progressf(o.Progress, "trace %s: growing the ledger to %d edges (%d subjects) through RecordBatch, %d subjects a transaction", kind, want*edgesPer, want, o.txSubjects())
				start := time.Now()
				if err := grow(ctx, o, l, keyer, subjects, want); err != nil {
					l.Close()
					return nil, err
				}
				built := time.Since(start)
				run.BuildSeconds = built.Seconds()
				run.BuildPerS = float64((want-subjects)*docsPer*(1+2*chunksPer)) / built.Seconds()
				run.TxSubjects = o.txSubjects()
				if kept != nil {
					kept.Builds = append(kept.Builds, newBuild(r.Commit, subjects, want, o.txSubjects(), built))
					kept.Subjects, kept.Edges = want, want*edgesPer
					if err := writeKept(ctx, keepDir, l, kept); err != nil {
						l.Close()
						return nil, err
					}
				}
			}
			if kept != nil {
				run.BuiltBy = kept.builtBy()
				run.KeptIn = keepDir
				run.Reused = o.Reuse != ""
			}
			subjects = want
			run.Events, _, _ = l.Head(ctx)
			rng := rand.New(rand.NewPCG(uint64(edges), 13))
			trace := func(l lineage.Ledger) (float64, error) {
				k, _ := keyer.Key("default", fmt.Sprintf("subject-%d", rng.IntN(subjects)))
				t0 := time.Now()
				v, err := l.View(ctx, "default", k)
				if err != nil {
					return 0, err
				}
				t, err := lineage.BuildTrace(v)
				if err != nil {
					return 0, err
				}
				ms := float64(time.Since(t0).Nanoseconds()) / 1e6
				if len(t.Artifacts) != docsPer*(1+2*chunksPer) {
					return 0, fmt.Errorf("trace has %d artifacts, want %d", len(t.Artifacts), docsPer*(1+2*chunksPer))
				}
				return ms, nil
			}
			var err error
			// Warm: the ledger's files read whole into the page cache first
			// (a reused ledger, or one whose pages an earlier cold run
			// dropped, is otherwise partly on disk), then a warm-up.
			if run.WarmMethod, err = prewarm(ctx, kind, spec, o.PGData); err != nil {
				l.Close()
				return nil, err
			}
			for i := 0; i < o.Traces/10+10; i++ { // warm up: connections, statements
				if _, err := trace(l); err != nil {
					l.Close()
					return nil, err
				}
			}
			var lat []float64
			for i := 0; i < o.Traces; i++ {
				ms, err := trace(l)
				if err != nil {
					l.Close()
					return nil, err
				}
				lat = append(lat, ms)
			}
			run.WarmP50Ms, run.WarmP99Ms = percentile(lat, 0.5), percentile(lat, 0.99)
			if files, err := ledgerFiles(ctx, kind, spec, o.PGData); err == nil {
				run.WarmCachedPercent = cachedPercent(files)
			}
			var cold []float64
			switch {
			case kind == "sqlite":
				// The open ledger is closed first: the pages its
				// connections hold mapped (PRAGMA mmap_size) stay in the
				// page cache whatever posix_fadvise says (seen: cold
				// traces right after a build, whose writer had mapped most
				// of the file, as fast as warm ones).
				run.ColdMethod = "the ledger closed, then before each trace reopened with its files dropped from the page cache (posix_fadvise DONTNEED)"
				if err := l.Close(); err != nil {
					return nil, err
				}
				for i := 0; i < o.Traces/10; i++ {
					ms, err := coldTrace(ctx, spec, trace)
					if err != nil {
						break // not supported here: no cold figure
					}
					cold = append(cold, ms)
				}
				if l, err = sqliteledger.OpenExisting(ctx, spec); err != nil {
					return nil, err
				}
			case kind == "postgres" && o.PGData != "":
				var sb string
				var err error
				if cold, sb, err = pgColdTraces(ctx, l, spec, o.PGData, o.Traces/10, trace); err != nil {
					l.Close()
					return nil, fmt.Errorf("cold traces on postgres: %w", err)
				}
				run.ColdMethod = "the database's files (" + o.PGData + "/base/OID) dropped from the page cache (posix_fadvise DONTNEED) before each trace, on an open ledger; the server's own buffer cache (shared_buffers " + sb + ") cannot be dropped without a restart and keeps what earlier traces read (such as the indexes' upper levels)"
			}
			if len(cold) > 0 {
				p50, p99 := percentile(cold, 0.5), percentile(cold, 0.99)
				run.ColdTraces, run.ColdP50Ms, run.ColdP99Ms = len(cold), &p50, &p99
			} else {
				run.ColdMethod = ""
			}
			progressf(o.Progress, "trace %s %d edges: p50 %.2f ms, p99 %.2f ms warm; %d cold", kind, run.Edges, run.WarmP50Ms, run.WarmP99Ms, len(cold))
			r.Runs = append(r.Runs, run)
		}
		l.Close()
	}
	r.Note = "Ledgers grown through lineage.BatchRecorder.RecordBatch (every event hashed into the chain; tx_subjects of each run: subjects a transaction), no side loader; a reused ledger (--reuse) was built by the commits of its built_by, and measured by this file's commit. Warm: after a warm-up of a tenth as many traces, each timed trace is View + BuildTrace of a random subject on an open ledger. Cold: a tenth as many traces, each after the ledger's files were dropped from the page cache (cold_method of each run says how; PostgreSQL only with --pg-datadir)."
	return r, nil
}

// coldTrace reopens the SQLite ledger at path, drops its files from the
// page cache, and times one trace.
func coldTrace(ctx context.Context, path string, trace func(lineage.Ledger) (float64, error)) (float64, error) {
	l, err := sqliteledger.OpenExisting(ctx, path)
	if err != nil {
		return 0, err
	}
	defer l.Close()
	for _, p := range []string{path, path + "-wal"} {
		if err := dropCache(p); err != nil {
			return 0, err
		}
	}
	return trace(l)
}

// pgColdTraces times n traces on the open PostgreSQL ledger l (whose
// database spec names), each after every file of that database under
// datadir was dropped from the page cache. It also returns the server's
// shared_buffers, which stay warm.
func pgColdTraces(ctx context.Context, l lineage.Ledger, spec, datadir string, n int, trace func(lineage.Ledger) (float64, error)) ([]float64, string, error) {
	c, err := pgx.Connect(ctx, spec)
	if err != nil {
		return nil, "", err
	}
	var oid uint32
	var sb string
	err = c.QueryRow(ctx, `SELECT oid FROM pg_database WHERE datname = current_database()`).Scan(&oid)
	if err == nil {
		err = c.QueryRow(ctx, `SHOW shared_buffers`).Scan(&sb)
	}
	c.Close(ctx)
	if err != nil {
		return nil, "", err
	}
	dir := filepath.Join(datadir, "base", fmt.Sprint(oid))
	var out []float64
	for i := 0; i < n; i++ {
		files, err := os.ReadDir(dir)
		if err != nil {
			return nil, "", err
		}
		for _, f := range files {
			if f.Type().IsRegular() {
				if err := dropCache(filepath.Join(dir, f.Name())); err != nil {
					return nil, "", err
				}
			}
		}
		ms, err := trace(l)
		if err != nil {
			return nil, "", err
		}
		out = append(out, ms)
	}
	return out, sb, nil
}

// CapturePerf measures capture's overhead against the plain store writes
// and the batch API's throughput.
func CapturePerf(ctx context.Context, o PerfOptions) (*CaptureResult, error) {
	r := &CaptureResult{Kind: "capture", Provenance: provenance.Capture(provenance.ResiduePaths)}
	keyer, _ := subject.NewKeyer(make([]byte, subject.PepperSize))
	for _, kind := range o.Ledgers {
		run, err := captureRun(ctx, o, keyer, kind)
		if err != nil {
			return nil, fmt.Errorf("capture %s: %w", kind, err)
		}
		progressf(o.Progress, "capture %s: batched %+v single %+v", kind, run.Batched, run.Single)
		r.Runs = append(r.Runs, *run)
	}
	r.Note = "Stores: sqlite-doc and sqlite-vec (dim 4), synchronous=FULL; plain = the same store writes without capture, with the same subject tag (the keyed digest capture writes, computed outside the timing). Batched: 1 document + 20 chunks + 20 embeddings, plain = the stores' batch writes (CapturePutBatch: one transaction in the document store for the 21 documents, one in the vector store for the 20 embeddings), captured = Docs.PutBatch (checks, one ledger transaction, then the same two store transactions). Single: one document, plain = 1 store write (CapturePut, one transaction), captured = Docs.Put (one ledger transaction, then the store write). Plain and captured alternate; overhead = captured p50 / plain p50 - 1. put_batch_records_per_s: records through PutBatch, store writes included; record_batch_records_per_s: the ledger alone (RecordBatch of the same 41 artifacts, fresh keys). Other work shared the machine."
	return r, nil
}

func captureRun(ctx context.Context, o PerfOptions, keyer *subject.Keyer, kind string) (*CaptureRun, error) {
	dir := filepath.Join(o.Work, "capture-"+kind)
	os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	l, _, err := openLedger(ctx, o, kind, "capture")
	if err != nil {
		return nil, err
	}
	defer l.Close()
	pd, err := sqlitedoc.Open(ctx, "plain", filepath.Join(dir, "plain-docs.db"), true)
	if err != nil {
		return nil, err
	}
	defer pd.Close()
	pv, err := sqlitevec.Open(ctx, "plain-vectors", filepath.Join(dir, "plain-vec.db"), 4, true)
	if err != nil {
		return nil, err
	}
	defer pv.Close()
	cd, err := sqlitedoc.Open(ctx, "docs", filepath.Join(dir, "docs.db"), true)
	if err != nil {
		return nil, err
	}
	defer cd.Close()
	cv, err := sqlitevec.Open(ctx, "vectors", filepath.Join(dir, "vec.db"), 4, true)
	if err != nil {
		return nil, err
	}
	defer cv.Close()
	rec := capture.New(l, keyer, "")
	docs, vecs := rec.Docs(cd), rec.Vectors(cv)
	run := &CaptureRun{Ledger: kind}

	ingestion := func(i int) ([]capture.Doc, []capture.Vector) {
		id := fmt.Sprintf("doc-%d", i)
		ds := []capture.Doc{{ID: id, Kind: capture.KindDocument, Subject: fmt.Sprintf("person-%d", i%97), Text: "document " + id + strings.Repeat(" text", 100)}}
		var vs []capture.Vector
		for c := 0; c < 20; c++ {
			cid := fmt.Sprintf("%s#%d", id, c)
			ds = append(ds, capture.Doc{ID: cid, Kind: capture.KindChunk, Parent: id, Text: "chunk " + cid + strings.Repeat(" words", 20)})
			vs = append(vs, capture.Vector{ID: cid, Embedding: []float32{float32(i), float32(c), 1, 0}})
		}
		return ds, vs
	}
	var tp, tc []float64
	var capturedTotal time.Duration
	for i := 0; i < o.Batches; i++ {
		ds, vs := ingestion(i)
		// The plain writes carry the subject tag capture writes (the
		// subject's keyed digest), computed outside the timing: the stores
		// then index the same bytes in both paths.
		k, err := rec.SubjectKey(ds[0].Subject)
		if err != nil {
			return nil, err
		}
		tag := k.String()
		plainDocs := make([]capture.Record, len(ds))
		for j, d := range ds {
			plainDocs[j] = capture.Record{ID: d.ID, Kind: d.Kind, Parent: d.Parent, Text: d.Text, Subject: tag}
		}
		plainVecs := make([]capture.VectorRecord, len(vs))
		for j, v := range vs {
			plainVecs[j] = capture.VectorRecord{ID: v.ID, Embedding: v.Embedding, Subject: tag}
		}
		t0 := time.Now()
		if err := pd.CapturePutBatch(ctx, plainDocs); err != nil {
			return nil, err
		}
		if err := pv.CapturePutBatch(ctx, plainVecs); err != nil {
			return nil, err
		}
		tp = append(tp, float64(time.Since(t0).Nanoseconds())/1e6)
		t0 = time.Now()
		if err := docs.PutBatch(ctx, ds, vecs, vs); err != nil {
			return nil, err
		}
		d := time.Since(t0)
		capturedTotal += d
		tc = append(tc, float64(d.Nanoseconds())/1e6)
	}
	b := &run.Batched
	b.Ingestions, b.Records = len(tp), 41
	b.PlainP50Ms, b.CapturedP50Ms = percentile(tp, 0.5), percentile(tc, 0.5)
	b.OverheadPc = 100 * (b.CapturedP50Ms/b.PlainP50Ms - 1)
	b.RecordsPerS = float64(41*len(tc)) / capturedTotal.Seconds()

	// The ledger alone: RecordBatch of the artifacts PutBatch records.
	br, ok := l.(lineage.BatchRecorder)
	if !ok {
		return nil, fmt.Errorf("ledger has no RecordBatch")
	}
	var ledgerTotal time.Duration
	for i := 0; i < o.Batches; i++ {
		ds, _ := ingestion(1_000_000 + i)
		owner, _ := rec.SubjectKey(ds[0].Subject)
		var arts []lineage.Artifact
		docID := lineage.ArtifactID(keyer, "default", "docs", ds[0].ID)
		arts = append(arts, lineage.Artifact{ID: docID, Scope: "default", Subject: owner, Kind: lineage.KindSource, Store: "docs", Key: ds[0].ID, Digest: lineage.ContentDigest(keyer, []byte(ds[0].Text))})
		var embs []lineage.Artifact
		for _, d := range ds[1:] {
			cid := lineage.ArtifactID(keyer, "default", "docs", d.ID)
			arts = append(arts, lineage.Artifact{ID: cid, Scope: "default", Subject: owner, Kind: lineage.KindChunk, Store: "docs", Key: d.ID, Digest: lineage.ContentDigest(keyer, []byte(d.Text)), Parents: []string{docID}})
			embs = append(embs, lineage.Artifact{ID: lineage.ArtifactID(keyer, "default", "vectors", d.ID), Scope: "default", Subject: owner, Kind: lineage.KindEmbedding, Store: "vectors", Key: d.ID, Digest: "e", Parents: []string{cid}})
		}
		arts = append(arts, embs...)
		t0 := time.Now()
		if err := br.RecordBatch(ctx, arts, nil); err != nil {
			return nil, err
		}
		ledgerTotal += time.Since(t0)
	}
	b.LedgerPerS = float64(41*o.Batches) / ledgerTotal.Seconds()

	tp, tc = nil, nil
	for i := 0; i < o.Singles; i++ {
		id := fmt.Sprintf("single-%d", i)
		text := "document " + id + strings.Repeat(" text", 100)
		k, err := rec.SubjectKey(fmt.Sprintf("person-%d", i%97))
		if err != nil {
			return nil, err
		}
		t0 := time.Now()
		if err := pd.CapturePut(ctx, capture.Record{ID: id, Kind: capture.KindDocument, Text: text, Subject: k.String()}); err != nil {
			return nil, err
		}
		tp = append(tp, float64(time.Since(t0).Nanoseconds())/1e3)
		t0 = time.Now()
		if err := docs.Put(ctx, capture.Doc{ID: id, Kind: capture.KindDocument, Subject: fmt.Sprintf("person-%d", i%97), Text: text}); err != nil {
			return nil, err
		}
		tc = append(tc, float64(time.Since(t0).Nanoseconds())/1e3)
	}
	s := &run.Single
	s.Writes = len(tp)
	s.PlainP50Us, s.CapturedP50Us = percentile(tp, 0.5), percentile(tc, 0.5)
	s.OverheadPc = 100 * (s.CapturedP50Us/s.PlainP50Us - 1)
	return run, nil
}

// Shape of the trace benchmark's ledger: each subject has 10 documents of
// 4 chunks, each chunk one embedding: 90 artifacts and 80 edges a subject.
const (
	docsPer   = 10
	chunksPer = 4
	edgesPer  = docsPer * chunksPer * 2
)

// progressf writes one progress line to w, when there is one.
func progressf(w io.Writer, format string, a ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", a...)
	}
}
