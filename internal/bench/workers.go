package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/internal/bench/provenance"
	"github.com/amnesia-dev/amnesia/internal/erasure"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/internal/worker"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/pgdoc"
)

// WorkersOptions sizes a workers run (`amnesia-bench workers`).
type WorkersOptions struct {
	PG       string // PostgreSQL server URL (a role that may CREATE DATABASE)
	Counts   []int  // worker counts, one run each (full run: 1, 2, 4)
	Erasures int    // erasures queued per run (full run: 200)
	DocsEach int    // documents per subject, each with ChunksEach chunks
	Work     string
	Progress io.Writer
	// Window, when positive, runs the workers in erasure windows of at
	// most Window erasures (worker.Window; --drain: each window runs at
	// once); 0 runs one erasure at a time.
	Window int
}

// ChunksEach is the chunks of each document in the workers benchmark.
const ChunksEach = 2

// WorkersRun is one run: Workers workers drain Erasures queued erasures.
type WorkersRun struct {
	Workers   int     `json:"workers"`
	Erasures  int     `json:"erasures"`
	Complete  int     `json:"complete"` // certificates that say complete (every artifact verified)
	Seconds   float64 `json:"seconds"`
	PerMinute float64 `json:"erasures_per_minute"`
	// CompletePerMinute counts only the erasures whose certificate says
	// complete; the others (RESIDUAL or UNVERIFIED entries) finished and
	// need a follow-up erasure.
	CompletePerMinute float64 `json:"complete_erasures_per_minute"`
	// PerWorkerPerMinute is PerMinute / Workers.
	PerWorkerPerMinute float64 `json:"erasures_per_minute_per_worker"`
	// Ledger growth per erasure (the erasures' own writes, captures not
	// counted): events appended, transparency-log leaves, and bytes of the
	// ledger database (pg_database_size, which includes the benchmark's
	// store table: an upper bound).
	EventsPerErasure      float64 `json:"events_per_erasure"`
	LogLeavesPerErasure   float64 `json:"log_leaves_per_erasure"`
	LedgerBytesPerErasure float64 `json:"database_bytes_per_erasure"`
	// LogLeafBytes is the mean size of a transparency-log leaf (its data
	// column); CertificateBytes the mean size of a certificate file.
	LogLeafBytes     float64 `json:"log_leaf_bytes_mean"`
	CertificateBytes float64 `json:"certificate_bytes_mean"`
	// Window is the most erasures per window (0: one at a time).
	Window int `json:"window,omitempty"`
	// Latency is the delete persistence latency per store
	// (saga.PersistenceLatency): from each erasure's enqueue to the
	// physical probe that found none of its bytes. Every erasure is queued
	// before the workers start, so it includes the time spent waiting in
	// the queue.
	Latency map[string]*LatencyStats `json:"delete_persistence_latency,omitempty"`
}

// LatencyStats summarises the delete persistence latency of one store.
type LatencyStats struct {
	Clean int `json:"clean"` // erasures whose physical probe found no bytes: the latencies below
	// NotClean counts the others by state (found, no-physical-probe, not-probed).
	NotClean map[string]int `json:"not_clean,omitempty"`
	P50ms    float64        `json:"p50_ms"`
	P95ms    float64        `json:"p95_ms"`
	Maxms    float64        `json:"max_ms"`
	all      []time.Duration
}

func (l *LatencyStats) add(s saga.StoreLatency) {
	if s.State != saga.LatencyClean {
		if l.NotClean == nil {
			l.NotClean = map[string]int{}
		}
		l.NotClean[s.State]++
		return
	}
	l.Clean++
	l.all = append(l.all, s.Latency)
}

func (l *LatencyStats) finish() {
	if len(l.all) == 0 {
		return
	}
	slices.Sort(l.all)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	l.P50ms = ms(l.all[(len(l.all)-1)/2])
	l.P95ms = ms(l.all[(len(l.all)*95+99)/100-1])
	l.Maxms = ms(l.all[len(l.all)-1])
}

// WorkersResult is bench/results/workers.json.
type WorkersResult struct {
	Kind string `json:"kind"` // "workers"
	provenance.Provenance
	Setup struct {
		Store               string `json:"store"`
		DocsEach            int    `json:"docs_each"`
		ArtifactsPerSubject int    `json:"artifacts_per_subject"`
		Note                string `json:"note"`
	} `json:"setup"`
	Runs []WorkersRun `json:"runs"`
}

// Workers measures erasures per minute with 1, 2, 4… workers sharing one
// PostgreSQL ledger. Each run gets a fresh database holding the ledger and
// a PostgreSQL document store (a server store: workers erase from it in
// parallel; stores in files are erased one at a time per host, see
// docs/scale.md); Erasures subjects of DocsEach documents are recorded and
// their erasures queued, then Workers workers, each with its own state
// handle and ledger connections (in this one process), drain the queue.
// The time is from the workers' start to the last job's end.
func Workers(ctx context.Context, o WorkersOptions) (*WorkersResult, error) {
	if o.PG == "" {
		return nil, errors.New("workers: a PostgreSQL server URL is required (--pg, default $AMNESIA_TEST_PG_DSN)")
	}
	if o.Erasures < 1 || o.DocsEach < 1 || len(o.Counts) == 0 {
		return nil, errors.New("workers: --erasures, --docs-each and --workers must be positive")
	}
	r := &WorkersResult{Kind: "workers", Provenance: provenance.Capture(provenance.ServePaths)}
	r.Setup.Store, r.Setup.DocsEach = pgdoc.Type, o.DocsEach
	r.Setup.ArtifactsPerSubject = o.DocsEach * (1 + ChunksEach)
	r.Setup.Note = "workers are goroutines of one process, each with its own state handle and ledger connection pool, on the machine that also runs PostgreSQL; every erasure deletes, verifies, signs a certificate and appends it to the transparency log"
	for _, n := range o.Counts {
		run, err := workersRun(ctx, o, n)
		if err != nil {
			return nil, fmt.Errorf("workers=%d: %w", n, err)
		}
		r.Runs = append(r.Runs, *run)
	}
	return r, nil
}

func workersRun(ctx context.Context, o WorkersOptions, n int) (*WorkersRun, error) {
	dsn, drop, err := freshDatabase(ctx, o.PG, fmt.Sprintf("amnesia_bench_workers_%d_%s", n, runTag))
	if err != nil {
		return nil, err
	}
	defer drop()
	cfg := state.DefaultConfig()
	cfg.Ledger = dsn
	sc := store.Config{Name: "docs", Type: pgdoc.Type, DSN: dsn, Table: "bench_docs"}
	cfg.Stores = []state.StoreConfig{sc}
	statePath := filepath.Join(o.Work, fmt.Sprintf("workers-%d-%s", n, runTag))
	sd, err := state.Init(statePath, cfg)
	if err != nil {
		return nil, err
	}
	l, err := sd.OpenLedger(ctx, state.LedgerCreate)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	st, err := pgdoc.Open(ctx, sc, true)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	env := &erasure.Env{Dir: sd, Ledger: l}
	scope := cfg.Scope
	progress(o.Progress, "workers=%d: recording %d subjects of %d documents\n", n, o.Erasures, o.DocsEach)
	for s := 0; s < o.Erasures; s++ {
		key, err := sd.Keyer.Key(scope, fmt.Sprintf("bench-subject-%d", s))
		if err != nil {
			return nil, err
		}
		for d := 0; d < o.DocsEach; d++ {
			doc := fmt.Sprintf("s%d-d%d", s, d)
			text := fmt.Sprintf("Benchmark document %s: delivery of order %d to depot %d.", doc, s*31+d, d)
			docID := lineage.ArtifactID(sd.Keyer, scope, "docs", doc)
			if err := l.Record(ctx, lineage.Artifact{ID: docID, Scope: scope, Subject: key, Kind: lineage.KindSource, Store: "docs", Key: doc, Digest: lineage.ContentDigest(sd.Keyer, []byte(text))}); err != nil {
				return nil, err
			}
			if err := st.Put(ctx, pgdoc.Record{ID: doc, Subject: key.String(), Kind: "document", Content: text}); err != nil {
				return nil, err
			}
			for c := 0; c < ChunksEach; c++ {
				k, ct := fmt.Sprintf("%s#%d", doc, c), fmt.Sprintf("%s part %d", text, c)
				if err := l.Record(ctx, lineage.Artifact{ID: lineage.ArtifactID(sd.Keyer, scope, "docs", k), Scope: scope, Subject: key, Kind: lineage.KindChunk, Store: "docs", Key: k, Digest: lineage.ContentDigest(sd.Keyer, []byte(ct)), Parents: []string{docID}}); err != nil {
					return nil, err
				}
				if err := st.Put(ctx, pgdoc.Record{ID: k, Subject: key.String(), Kind: "chunk", Content: ct}); err != nil {
					return nil, err
				}
			}
		}
		t, _, err := env.Trace(ctx, key, scope)
		if err != nil {
			return nil, err
		}
		if err := worker.Enqueue(ctx, env, t, "BENCH-1"); err != nil {
			return nil, err
		}
	}
	before, err := ledgerCounts(ctx, dsn)
	if err != nil {
		return nil, err
	}
	// Each worker opens the installation as its own process would.
	ws := make([]*worker.Worker, n)
	var complete atomic.Int64
	var latMu sync.Mutex
	latency := map[string]*LatencyStats{}
	for i := range ws {
		d, err := state.Open(statePath)
		if err != nil {
			return nil, err
		}
		wl, err := d.OpenLedger(ctx, state.LedgerChecked)
		if err != nil {
			return nil, err
		}
		defer wl.Close()
		q, err := worker.QueueOf(wl)
		if err != nil {
			return nil, err
		}
		ws[i] = &worker.Worker{Env: &erasure.Env{Dir: d, Ledger: wl}, Queue: q, ID: fmt.Sprintf("bench-w%d", i), Lease: 5 * time.Minute, Poll: 50 * time.Millisecond, Drain: true,
			Finished: func(_ *lineage.Job, res *saga.Result) {
				if res.Complete() {
					complete.Add(1)
				} else {
					progress(o.Progress, "workers=%d: erasure %s incomplete: %v\n", n, res.ID, res.Err())
				}
			},
			Latency: func(_ *lineage.Job, _ *saga.Result, ls []saga.StoreLatency) {
				latMu.Lock()
				defer latMu.Unlock()
				for _, l := range ls {
					if latency[l.Store] == nil {
						latency[l.Store] = &LatencyStats{}
					}
					latency[l.Store].add(l)
				}
			}}
		if o.Window > 0 {
			ws[i].Window = &worker.Window{Wait: time.Hour, Max: o.Window}
		}
	}
	progress(o.Progress, "workers=%d: draining %d erasures\n", n, o.Erasures)
	errs := make([]error, n)
	var wg sync.WaitGroup
	t0 := time.Now()
	for i, w := range ws {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = w.Run(ctx) }()
	}
	wg.Wait()
	elapsed := time.Since(t0)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	q, _ := worker.QueueOf(l)
	jobs, err := q.Jobs(ctx)
	if err != nil {
		return nil, err
	}
	run := &WorkersRun{Workers: n, Erasures: len(jobs), Seconds: elapsed.Seconds(), Window: o.Window, Latency: latency}
	for _, l := range latency {
		l.finish()
	}
	for _, j := range jobs {
		if j.State != lineage.JobDone {
			return nil, fmt.Errorf("job %s ended %s: %s", j.ID, j.State, j.Error)
		}
	}
	after, err := ledgerCounts(ctx, dsn)
	if err != nil {
		return nil, err
	}
	run.Complete = int(complete.Load())
	e := float64(run.Erasures)
	run.PerMinute = e / elapsed.Minutes()
	run.PerWorkerPerMinute = run.PerMinute / float64(n)
	run.CompletePerMinute = float64(run.Complete) / elapsed.Minutes()
	run.EventsPerErasure = float64(after.events-before.events) / e
	run.LogLeavesPerErasure = float64(after.leaves-before.leaves) / e
	run.LedgerBytesPerErasure = float64(after.bytes-before.bytes) / e
	run.LogLeafBytes = after.leafBytes
	certs, _ := filepath.Glob(filepath.Join(statePath, "certificates", "*.dsse.json"))
	var total int64
	for _, c := range certs {
		if fi, err := os.Stat(c); err == nil {
			total += fi.Size()
		}
	}
	if len(certs) > 0 {
		run.CertificateBytes = float64(total) / float64(len(certs))
	}
	progress(o.Progress, "workers=%d: %d erasures (%d complete) in %.1fs: %.1f per minute\n", n, run.Erasures, run.Complete, run.Seconds, run.PerMinute)
	for st, l := range latency {
		progress(o.Progress, "workers=%d: store %s: delete persistence latency p50 %.0f ms, p95 %.0f ms, max %.0f ms (%d clean, others %v)\n", n, st, l.P50ms, l.P95ms, l.Maxms, l.Clean, l.NotClean)
	}
	return run, nil
}

type counts struct {
	events, leaves, bytes int64
	leafBytes             float64
}

func ledgerCounts(ctx context.Context, dsn string) (counts, error) {
	var c counts
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return c, err
	}
	defer conn.Close(ctx)
	err = conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM tlog_leaves), pg_database_size(current_database()),
		(SELECT coalesce(avg(length(data)), 0)::float8 FROM tlog_leaves)`).Scan(&c.events, &c.leaves, &c.bytes, &c.leafBytes)
	return c, err
}

// freshDatabase creates the database name on the server (dropping one left
// by an earlier run) and returns its URL and a function that drops it.
func freshDatabase(ctx context.Context, server, name string) (string, func(), error) {
	c, err := pgx.Connect(ctx, server)
	if err != nil {
		return "", nil, err
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
		return "", nil, err
	}
	if _, err := c.Exec(ctx, "CREATE DATABASE "+name+" STRATEGY FILE_COPY"); err != nil {
		return "", nil, err
	}
	cfg := c.Config()
	dsn := fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Host, cfg.Port, name)
	if cfg.Password != "" {
		dsn = fmt.Sprintf("postgres://%s:%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Password, cfg.Host, cfg.Port, name)
	}
	drop := func() {
		if c, err := pgx.Connect(context.Background(), server); err == nil {
			c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			c.Close(context.Background())
		}
	}
	return dsn, drop, nil
}

func progress(w io.Writer, format string, a ...any) {
	if w != nil {
		fmt.Fprintf(w, format, a...)
	}
}
