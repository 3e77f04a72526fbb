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
	// Tables is, per ledger table an erasure writes, the rows and bytes
	// it adds per erasure (the difference between before the subjects
	// are recorded and after the run, divided by the erasures; events:
	// from the workers' start, captures not counted): erasure_journal,
	// erasure_records (the trace saved at enqueue and the certificate),
	// erasure_sealed (after the shred: what is left), the transparency
	// log's tables, events, queue. SealedWritten is what erasure_sealed
	// held before the shred: the rows and bytes inserted into it during
	// the run (counted by a trigger the benchmark adds), per erasure.
	Tables        map[string]TableGrowth `json:"ledger_tables_per_erasure"`
	SealedWritten TableGrowth            `json:"erasure_sealed_written_per_erasure"`
}

// TableGrowth is what a ledger table grows by per erasure: Rows; Bytes,
// the rows' own size (pg_column_size of each row: the data as stored,
// compressed where PostgreSQL compressed it, without page, index and
// tuple-pointer overhead); DiskBytes, the growth of
// pg_total_relation_size (table, indexes and TOAST, in whole 8 KiB pages:
// coarse at small counts, and 0 when the rows fit in pages already
// there).
type TableGrowth struct {
	Rows      float64 `json:"rows"`
	Bytes     float64 `json:"bytes"`
	DiskBytes float64 `json:"disk_bytes,omitempty"`
}

// LatencyStats summarises the delete persistence latency of one store.
type LatencyStats struct {
	Clean int `json:"clean"` // erasures whose physical probe found no bytes: the latencies below
	// NotClean counts the others by state (found, not-physical, no-physical-probe, not-probed).
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
	set, err := provenance.PostgresSettings(ctx, o.PG)
	if err != nil {
		return nil, fmt.Errorf("workers: %w", err)
	}
	r.ServerSettings = set
	r.Setup.Store, r.Setup.DocsEach = pgdoc.Type, o.DocsEach
	r.Setup.ArtifactsPerSubject = o.DocsEach * (1 + ChunksEach)
	r.Setup.Note = "workers are goroutines of one process, each with its own state directory (a copy of the installation's: the hosts of a PostgreSQL installation share nothing else), state handle and ledger connection pool, on the machine that also runs PostgreSQL; every erasure deletes, verifies, signs a certificate and appends it to the transparency log; journals, sealed evidence, traces and certificates are rows of the ledger (saga.Durable in the ledger)"
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
	// The tables' sizes before anything is recorded: the queue row and
	// the saved trace (erasure_records) of each erasure are written when
	// it is queued, below.
	tablesStart, err := tableSizes(ctx, dsn)
	if err != nil {
		return nil, err
	}
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
	if err := countSealedWrites(ctx, dsn); err != nil {
		return nil, err
	}
	before, err := ledgerCounts(ctx, dsn)
	if err != nil {
		return nil, err
	}
	tablesBefore, err := tableSizes(ctx, dsn)
	if err != nil {
		return nil, err
	}
	// Each worker opens the installation as its own host would: a state
	// directory of its own (a copy of the installation's), the ledger
	// shared.
	ws := make([]*worker.Worker, n)
	var complete atomic.Int64
	var latMu sync.Mutex
	latency := map[string]*LatencyStats{}
	for i := range ws {
		hostPath := fmt.Sprintf("%s-host%d", statePath, i)
		if err := copyTree(statePath, hostPath); err != nil {
			return nil, err
		}
		d, err := state.Open(hostPath)
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
	run.CertificateBytes = after.certBytes
	tablesAfter, err := tableSizes(ctx, dsn)
	if err != nil {
		return nil, err
	}
	run.Tables = map[string]TableGrowth{}
	for _, t := range growthTables {
		b, a := tablesStart[t], tablesAfter[t]
		if t == "events" { // captures append events too: counted from the workers' start
			b = tablesBefore[t]
		}
		run.Tables[t] = TableGrowth{Rows: float64(a.rows-b.rows) / e, Bytes: float64(a.bytes-b.bytes) / e, DiskBytes: float64(a.disk-b.disk) / e}
	}
	sw, err := sealedWritten(ctx, dsn)
	if err != nil {
		return nil, err
	}
	run.SealedWritten = TableGrowth{Rows: float64(sw.rows) / e, Bytes: float64(sw.bytes) / e}
	progress(o.Progress, "workers=%d: %d erasures (%d complete) in %.1fs: %.1f per minute\n", n, run.Erasures, run.Complete, run.Seconds, run.PerMinute)
	for st, l := range latency {
		progress(o.Progress, "workers=%d: store %s: delete persistence latency p50 %.0f ms, p95 %.0f ms, max %.0f ms (%d clean, others %v)\n", n, st, l.P50ms, l.P95ms, l.Maxms, l.Clean, l.NotClean)
	}
	return run, nil
}

type counts struct {
	events, leaves, bytes int64
	leafBytes, certBytes  float64
}

func ledgerCounts(ctx context.Context, dsn string) (counts, error) {
	var c counts
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return c, err
	}
	defer conn.Close(ctx)
	err = conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM tlog_leaves), pg_database_size(current_database()),
		(SELECT coalesce(avg(length(data)), 0)::float8 FROM tlog_leaves),
		(SELECT coalesce(avg(octet_length(body)), 0)::float8 FROM erasure_records WHERE kind = 'certificate')`).Scan(&c.events, &c.leaves, &c.bytes, &c.leafBytes, &c.certBytes)
	return c, err
}

// growthTables are the ledger tables whose growth per erasure a workers
// run reports.
var growthTables = []string{"erasure_journal", "erasure_records", "erasure_sealed", "tlog_leaves", "tlog_hashes", "tlog_checkpoints", "events", "queue"}

type tableSize struct{ rows, bytes, disk int64 }

// tableSizes returns the rows, row bytes and on-disk size of growthTables.
func tableSizes(ctx context.Context, dsn string) (map[string]tableSize, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	out := map[string]tableSize{}
	for _, t := range growthTables {
		var s tableSize
		if err := conn.QueryRow(ctx, `SELECT count(*), coalesce(sum(pg_column_size(t.*)), 0)::bigint, pg_total_relation_size('`+t+`') FROM `+t+` t`).Scan(&s.rows, &s.bytes, &s.disk); err != nil {
			return nil, fmt.Errorf("size of %s: %w", t, err)
		}
		out[t] = s
	}
	return out, nil
}

// countSealedWrites adds to the benchmark's ledger database a table and a
// trigger that count each row inserted into (or updated in) erasure_sealed
// and its size: the sealed evidence is shredded at publication, so the
// table's size after a run says nothing of what it held.
func countSealedWrites(ctx context.Context, dsn string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `CREATE TABLE bench_sealed_writes (bytes BIGINT NOT NULL);
		CREATE FUNCTION bench_count_sealed() RETURNS trigger LANGUAGE plpgsql AS
			$$BEGIN INSERT INTO bench_sealed_writes VALUES (pg_column_size(NEW.*)); RETURN NEW; END$$;
		CREATE TRIGGER bench_count_sealed AFTER INSERT OR UPDATE ON erasure_sealed FOR EACH ROW EXECUTE FUNCTION bench_count_sealed();`)
	if err != nil {
		return fmt.Errorf("count sealed evidence: %w", err)
	}
	return nil
}

func sealedWritten(ctx context.Context, dsn string) (tableSize, error) {
	var s tableSize
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return s, err
	}
	defer conn.Close(ctx)
	err = conn.QueryRow(ctx, `SELECT count(*), coalesce(sum(bytes), 0)::bigint FROM bench_sealed_writes`).Scan(&s.rows, &s.bytes)
	return s, err
}

// copyTree copies the directory from (files and directories, modes kept)
// to to, which must not exist.
func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(p string, de os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		fi, err := de.Info()
		if err != nil {
			return err
		}
		if de.IsDir() {
			return os.MkdirAll(dst, fi.Mode().Perm())
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, fi.Mode().Perm())
	})
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
