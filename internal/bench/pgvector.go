package bench

// The pgvector-at-scale benchmark: one pgvector table of many vectors, six
// ways of deleting a person's vectors from it, and for each the wall time of
// the deletion path and what the adapter's physical probe still finds.

import (
	"bufio"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	pathpkg "path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	pgv "github.com/pgvector/pgvector-go"

	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/pgvector"
)

// PGVectorOptions sizes a pgvector run.
type PGVectorOptions struct {
	DSN      string
	DataDir  string // the server's data directory: the probe reads files there; "" reads them through pg_read_binary_file
	Vectors  int    // rows in the table
	Dim      int    // dimensions
	Subjects int    // owners; vector i belongs to subject i % Subjects
	Sample   int    // subjects erased one at a time in each per-subject baseline
	Batch    int    // subjects erased in the batch baseline
	Seed     uint64
	// Index is "hnsw", "ivfflat" or "auto": auto times HNSW builds of the
	// first HNSWTrial/2 and HNSWTrial vectors and uses HNSW when the build of
	// all Vectors, projected from them, fits in HNSWBudget; IVFFlat
	// otherwise. (statement_timeout cannot bound a build of all of them:
	// PGlite never fires it.)
	Index      string
	Lists      int // IVFFlat lists
	HNSWBudget time.Duration
	HNSWTrial  int
	Tables     string // prefix of the tables this run creates (and drops)
	Note       string // the operator's note, kept verbatim in the result (e.g. why the size was reduced)
	Work       string
	Progress   io.Writer
}

// PGVectorBaselines are the baselines, in the order they run.
var PGVectorBaselines = []struct{ ID, What string }{
	{"native-delete", "plain SQL DELETE of the subject's rows (metadata->>'subject' = tag) on the application's connection"},
	{"delete-vacuum", "the same DELETE, then VACUUM of the table"},
	{"delete-vacuum-full", "the same DELETE, then VACUUM FULL of the table"},
	{"amnesia-delete-only", "amnesia erasure (saga.Run), store configured reclaim: delete-only"},
	{"amnesia-full", "amnesia erasure (saga.Run), store configured reclaim: full"},
	{"amnesia-full-batch", "amnesia erasure of --batch subjects as one erasure window (saga.RunBatch: per store one evidence read, one byte scan before deletion, one reclaim and one byte scan after it for all; each erasure journaled, probed logically and certified on its own), reclaim: full"},
}

// PGVectorResult is bench/results/pgvector.json.
type PGVectorResult struct {
	Kind        string         `json:"kind"` // "pgvector"
	Machine     string         `json:"machine"`
	Date        string         `json:"date"`
	Server      string         `json:"server"`
	Params      PGVectorParams `json:"params"`
	Index       PGVectorIndex  `json:"index"`
	Probe       string         `json:"probe"` // how the physical probe read the files (first after-scan's method)
	Cells       []PGVectorCell `json:"baselines"`
	WallSeconds float64        `json:"run_wall_seconds"`
	Notes       []string       `json:"notes"`
}

// PGVectorParams are the parameters actually run.
type PGVectorParams struct {
	Vectors           int    `json:"vectors"`
	Dim               int    `json:"dim"`
	Subjects          int    `json:"subjects"`
	VectorsPerSubject int    `json:"vectors_per_subject"`
	Sample            int    `json:"sample"` // subjects per per-subject baseline
	Batch             int    `json:"batch"`
	Seed              uint64 `json:"seed"`
	Content           string `json:"content"`
}

// PGVectorIndex says which vector index the tables had, and why.
type PGVectorIndex struct {
	Method      string        `json:"method"` // hnsw or ivfflat
	Definition  string        `json:"definition"`
	HNSWAttempt *HNSWAttempt  `json:"hnsw_attempt,omitempty"`
	Note        string        `json:"note"`
	Sizes       PGVectorSizes `json:"sizes"` // of the first baseline's table after loading and indexing
}

// HNSWAttempt is the timed HNSW trial of index "auto".
type HNSWAttempt struct {
	Vectors          int      `json:"vectors"` // rows of the larger trial table
	Seconds          float64  `json:"seconds"`
	HalfSeconds      float64  `json:"half_seconds,omitempty"` // build of half as many
	Exponent         float64  `json:"exponent,omitempty"`     // fitted growth exponent (at least 1)
	ProjectedSeconds float64  `json:"projected_seconds"`      // for the run's vectors
	BudgetSeconds    float64  `json:"budget_seconds"`
	Notices          []string `json:"notices,omitempty"` // the server's notices during the larger build
}

// PGVectorSizes are relation sizes in bytes.
type PGVectorSizes struct {
	Heap        int64 `json:"heap_bytes"`
	VectorIndex int64 `json:"vector_index_bytes"`
	Total       int64 `json:"total_relation_bytes"` // heap, TOAST and every index
	WALSegments int   `json:"wal_segments"`
}

// PGVectorCell is one baseline.
type PGVectorCell struct {
	Baseline string `json:"baseline"`
	What     string `json:"what"`
	Subjects int    `json:"subjects"`
	Vectors  int    `json:"vectors"` // erased vectors measured
	// Setup of this baseline's table (not part of the deletion path).
	Setup PGVectorSetup `json:"setup"`
	// Wall time of the deletion path: per subject for the per-subject
	// baselines; the whole batch (one entry) for the batch.
	WallMs           []float64 `json:"wall_ms"`
	WallMedianMs     float64   `json:"wall_median_ms"`
	WallTotalMs      float64   `json:"wall_total_ms"`
	WallPerSubjectMs float64   `json:"wall_per_subject_ms"`
	// Residue, measured by the benchmark with the adapter: ReadEvidence and
	// ProbePhysical before the deletion, ProbePhysical after it.
	Needles      int `json:"needles"`       // windows of the erased vectors' on-disk encoding (no other row holds them)
	FoundBefore  int `json:"found_before"`  // erased vectors with a needle found before deletion
	FoundAfter   int `json:"found_after"`   // erased vectors with a needle found after
	NeedlesAfter int `json:"needles_after"` // needles found after
	// Where, when data_dir is set: erased vectors with a needle, after the
	// deletion path, in the database's relation files (every file under
	// base/: heap, TOAST, indexes, free space and visibility maps) and in
	// pg_wal, by two more scans right after the adapter's probe.
	FoundAfterRelation *int `json:"found_after_in_relation_files,omitempty"`
	FoundAfterWAL      *int `json:"found_after_in_wal,omitempty"`
	// Which relations those files belong to (resolved when the baseline
	// ends): relation (fork) -> erased vectors found after, summed over
	// the subjects.
	ResidueByRelation map[string]int `json:"residue_by_relation,omitempty"`
	relFiles          map[string]int // file under base/ -> vectors found after
	ProbePower        float64        `json:"probe_power"` // found_before / vectors
	Residue           float64        `json:"residue"`     // found_after / vectors
	ScanBytes         int64          `json:"scan_bytes"`  // bytes read by one after-scan (median)
	// Amnesia baselines: what the certificates say.
	Certificates *PGVectorCerts `json:"certificates,omitempty"`
	Note         string         `json:"note,omitempty"`
}

// PGVectorSetup is how one baseline's table was built.
type PGVectorSetup struct {
	Table         string  `json:"table"`
	InsertSeconds float64 `json:"insert_seconds"`
	VacuumSeconds float64 `json:"vacuum_analyze_seconds"`
	IndexSeconds  float64 `json:"vector_index_seconds"`
	OtherSeconds  float64 `json:"subject_index_seconds"`
}

// PGVectorCerts sums the certificates of one amnesia baseline.
type PGVectorCerts struct {
	Erasures      int                     `json:"erasures"`
	Complete      int                     `json:"complete"`
	Residue       map[string]int          `json:"store_residue"`  // declared_scope residue state -> erasures
	ReclaimState  map[string]int          `json:"reclaim_state"`  // the adapter's reclaim state (journal) -> erasures; "" = nothing known left
	Outcomes      map[string]int          `json:"outcomes"`       // artifact outcome(level) -> artifacts
	FoundBefore   int                     `json:"found_before"`   // artifacts whose needles the saga found before deletion
	FoundAfter    int                     `json:"found_after"`    // artifacts whose needles the saga found after
	Evidence      string                  `json:"evidence"`       // the first certificate's store evidence
	ReclaimMethod string                  `json:"reclaim_method"` // the first certificate's reclaim method
	ReclaimSteps  []string                `json:"reclaim_steps"`  // the first erasure's reclaim steps (journal)
	Steps         map[string]PGVectorStep `json:"saga_steps"`     // per saga step kind: wall time from the journals
	// The first erasure's step times (ms, journal), batch only: its
	// evidence and probe steps hold the batch's shared evidence read and
	// byte scans (saga.RunBatch), the later erasures' only their own work.
	FirstSteps      map[string]float64 `json:"first_erasure_steps_ms,omitempty"`
	CertificateFile string             `json:"certificate_file"` // first certificate, relative to the work dir (not kept)
}

// PGVectorStep is one saga step kind over a baseline's erasures.
type PGVectorStep struct {
	Count    int     `json:"count"`
	MedianMs float64 `json:"median_ms"`
	TotalMs  float64 `json:"total_ms"`
}

// PGVectorDefaults are the full-size parameters.
func PGVectorDefaults() PGVectorOptions {
	return PGVectorOptions{Vectors: 100_000, Dim: 384, Subjects: 1000, Sample: 5, Batch: 100, Seed: 1,
		Index: "auto", Lists: 100, HNSWBudget: 90 * time.Second, HNSWTrial: 10_000, Tables: "bench_vectors_"}
}

const pgvStore = "vectors"

// pgvRun is one benchmark run.
type pgvRun struct {
	o       PGVectorOptions
	res     *PGVectorResult
	tmpl    string     // state directory template: pepper, keys, bulk-loaded ledger
	dir     *state.Dir // the template, opened
	tags    []string   // subject tag per subject
	index   string     // hnsw or ivfflat
	tables  []string
	notices []string // server notices since the last reset
	start   time.Time
}

// PGVector runs the benchmark.
func PGVector(ctx context.Context, o PGVectorOptions) (*PGVectorResult, error) {
	start := time.Now()
	if err := o.check(); err != nil {
		return nil, err
	}
	r := &pgvRun{o: o, start: start, res: &PGVectorResult{Kind: "pgvector",
		Machine: fmt.Sprintf("%s/%s, %d CPUs, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version()),
		Date:    time.Now().UTC().Format("2006-01-02"),
		Params: PGVectorParams{Vectors: o.Vectors, Dim: o.Dim, Subjects: o.Subjects, VectorsPerSubject: o.Vectors / o.Subjects,
			Sample: o.Sample, Batch: o.Batch, Seed: o.Seed,
			Content: "empty: rows hold only the vector and the subject tag, so every needle is a window of the vector's on-disk encoding"},
		Notes: []string{}}}
	if o.Note != "" {
		r.res.Notes = append(r.res.Notes, o.Note)
	}
	r.note("Each baseline gets its own table, built the same way: created in the adapter's layout, filled with multi-row INSERTs (250 rows each, " +
		"vectors in pgvector's binary format; PGlite's socket server loses protocol sync on COPY FROM STDIN), VACUUM (ANALYZE), then the vector index " +
		"and the subject index. Between baselines the table is dropped and pg_wal rotated, so each table's files and WAL hold only its own history.")
	r.note("Measurement: the adapter's ReadEvidence for every sampled subject's vectors once, before any deletion; its ProbePhysical right before and " +
		"right after each subject's deletion path (the batch: before and after the batch). Wall time covers the deletion path only: the SQL statements " +
		"for the native baselines; saga.Run or saga.RunBatch for amnesia, which includes its own evidence read, physical and logical probes, reclaim and certificate.")
	defer r.dropAll()
	if err := os.MkdirAll(o.Work, 0o700); err != nil {
		return nil, err
	}
	if err := r.prepare(ctx); err != nil {
		return nil, err
	}
	if err := r.chooseIndex(ctx); err != nil {
		return nil, err
	}
	for i, b := range PGVectorBaselines {
		r.logf("%s: loading %d×%d vectors", b.ID, o.Vectors, o.Dim)
		cell, err := r.baseline(ctx, i)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", b.ID, err)
		}
		cell.What = b.What
		r.res.Cells = append(r.res.Cells, *cell)
		r.logf("%s: wall median %.0f ms, power %.3f, residue %.3f", b.ID, cell.WallMedianMs, cell.ProbePower, cell.Residue)
	}
	r.res.WallSeconds = time.Since(start).Seconds()
	return r.res, nil
}

func (o *PGVectorOptions) check() error {
	switch {
	case o.DSN == "":
		return errors.New("pgvector bench: no DSN (--dsn or AMNESIA_TEST_PG_DSN)")
	case o.Dim < 2 || o.Dim > pgvector.MaxDimensions:
		return fmt.Errorf("pgvector bench: dim %d", o.Dim)
	case o.Subjects < 1 || o.Vectors < o.Subjects:
		return fmt.Errorf("pgvector bench: %d vectors for %d subjects: every subject needs one", o.Vectors, o.Subjects)
	case o.Sample < 1 || o.Batch < 1 || o.Sample > o.Subjects || o.Batch > o.Subjects:
		return fmt.Errorf("pgvector bench: sample %d and batch %d must be 1..%d", o.Sample, o.Batch, o.Subjects)
	case o.Index != "hnsw" && o.Index != "ivfflat" && o.Index != "auto":
		return fmt.Errorf("pgvector bench: index %q: want hnsw, ivfflat or auto", o.Index)
	case o.Tables == "" || strings.Trim(o.Tables, "abcdefghijklmnopqrstuvwxyz0123456789_") != "":
		return fmt.Errorf("pgvector bench: table prefix %q: lower-case letters, digits and _ only", o.Tables)
	}
	if o.Lists < 1 {
		o.Lists = 100
	}
	return nil
}

func (r *pgvRun) logf(format string, a ...any) {
	if r.o.Progress != nil {
		fmt.Fprintf(r.o.Progress, "pgvector %6.0fs: "+format+"\n", append([]any{time.Since(r.start).Seconds()}, a...)...)
	}
}

func (r *pgvRun) note(format string, a ...any) {
	r.res.Notes = append(r.res.Notes, fmt.Sprintf(format, a...))
}

// --- vectors ---------------------------------------------------------------

// pgvVector is vector i: seeded, deterministic, unit-normalised.
func pgvVector(seed uint64, i, dim int) []float32 {
	rng := rand.New(rand.NewPCG(seed, uint64(i)))
	v := make([]float32, dim)
	var n float64
	for j := range v {
		x := rng.NormFloat64()
		v[j] = float32(x)
		n += x * x
	}
	n = math.Sqrt(n)
	for j := range v {
		v[j] = float32(float64(v[j]) / n)
	}
	return v
}

func pgvKey(i int) string { return fmt.Sprintf("vec-%07d", i) }

func pgvSubjectID(s int) string { return fmt.Sprintf("subject-%d", s) }

// keysOf returns subject s's keys.
func (r *pgvRun) keysOf(s int) []string {
	var out []string
	for i := s; i < r.o.Vectors; i += r.o.Subjects {
		out = append(out, pgvKey(i))
	}
	return out
}

// --- the state template and its ledger --------------------------------------

func (r *pgvRun) storeConfig(table, mode string) store.Config {
	return store.Config{Name: pgvStore, Type: pgvector.Type, DSN: r.o.DSN, Table: table, Dimensions: r.o.Dim, Reclaim: mode, DataDir: r.o.DataDir}
}

// prepare creates the state template, its subject tags and its ledger (one
// embedding artifact per vector, bulk-loaded with the real schema), and
// checks the server.
func (r *pgvRun) prepare(ctx context.Context) error {
	r.tmpl = filepath.Join(r.o.Work, "state-template")
	os.RemoveAll(r.tmpl)
	cfg := state.DefaultConfig()
	cfg.Stores = []state.StoreConfig{r.storeConfig(r.o.Tables+"template", "")}
	d, err := state.Init(r.tmpl, cfg)
	if err != nil {
		return err
	}
	r.dir = d
	scope := d.Config.Scope
	r.tags = make([]string, r.o.Subjects)
	for s := range r.tags {
		k, err := d.Keyer.Key(scope, pgvSubjectID(s))
		if err != nil {
			return err
		}
		r.tags[s] = k.String()
	}
	start := time.Now()
	if err := r.bulkLedger(ctx); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	r.logf("ledger: %d embedding artifacts in %.1fs", r.o.Vectors, time.Since(start).Seconds())
	return r.withConn(ctx, func(c *pgx.Conn) error {
		var ver, ext string
		if _, err := c.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS vector`); err != nil {
			return err
		}
		if err := c.QueryRow(ctx, `SELECT version(), (SELECT extversion FROM pg_extension WHERE extname = 'vector')`).Scan(&ver, &ext); err != nil {
			return err
		}
		r.res.Server = ver + "; pgvector " + ext
		return nil
	})
}

// bulkLedger writes the artifacts capture would record (kind embedding,
// store, key, keyed digest of the vector's float32 bytes) straight into
// the ledger's tables, as scale.go's bulkLedger does.
func (r *pgvRun) bulkLedger(ctx context.Context) error {
	path := r.dir.LedgerPath()
	l, err := lineage.OpenSQLite(ctx, path) // creates the real schema
	if err != nil {
		return err
	}
	l.Close()
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_synchronous=OFF")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	scope, k := r.dir.Config.Scope, r.dir.Keyer
	const batch = 5000
	for i0 := 0; i0 < r.o.Vectors; i0 += batch {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		ins, err := tx.Prepare(`INSERT INTO artifacts (id, seq, scope, subject, kind, store, key, digest) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			tx.Rollback()
			return err
		}
		for i := i0; i < i0+batch && i < r.o.Vectors; i++ {
			key := pgvKey(i)
			dig := lineage.ContentDigest(k, store.Float32LE(pgvVector(r.o.Seed, i, r.o.Dim)))
			if _, err := ins.Exec(lineage.ArtifactID(k, scope, pgvStore, key), i+1, scope, r.tags[i%r.o.Subjects], string(lineage.KindEmbedding), pgvStore, key, dig); err != nil {
				tx.Rollback()
				return err
			}
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	return nil
}

// stateFor copies the template to a new state directory whose only store is
// table in mode, and opens it with its ledger.
func (r *pgvRun) stateFor(ctx context.Context, name, table, mode string) (*state.Dir, *lineage.SQLite, error) {
	path := filepath.Join(r.o.Work, name, "state")
	if err := copyDir(r.tmpl, path); err != nil {
		return nil, nil, err
	}
	cfg := state.DefaultConfig()
	cfg.Stores = []state.StoreConfig{r.storeConfig(table, mode)}
	b, err := cfg.Marshal()
	if err != nil {
		return nil, nil, err
	}
	if err := state.WriteFileAtomic(filepath.Join(path, "amnesia.yaml"), b); err != nil {
		return nil, nil, err
	}
	d, err := state.Open(path)
	if err != nil {
		return nil, nil, err
	}
	l, err := lineage.OpenSQLite(ctx, d.LedgerPath())
	if err != nil {
		return nil, nil, err
	}
	return d, l, nil
}

// --- the server ---------------------------------------------------------------

// withConn runs fn on a connection of its own. PGlite serves one connection
// at a time: never call it while a store is open.
func (r *pgvRun) withConn(ctx context.Context, fn func(c *pgx.Conn) error) error {
	cfg, err := pgx.ParseConfig(r.o.DSN)
	if err != nil {
		return errors.New("connect: invalid DSN")
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeDescribeExec // parameter types from the server: vectors are sent binary
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { r.notices = append(r.notices, n.Message) }
	var c *pgx.Conn
	for wait := time.Duration(0); ; wait += pgvRetry {
		if c, err = pgx.ConnectConfig(ctx, cfg.Copy()); err == nil || wait > pgvPatience || ctx.Err() != nil {
			break
		}
		time.Sleep(pgvRetry)
	}
	if err != nil {
		return fmt.Errorf("connect: %v", errors.Unwrap(err))
	}
	defer c.Close(context.Background())
	return fn(c)
}

// A server that serves one connection at a time (PGlite) refuses others
// while another client of it (a test) holds its connection: wait that long.
const (
	pgvRetry    = 250 * time.Millisecond
	pgvPatience = 2 * time.Minute
)

// open opens the adapter on table, waiting for the server like withConn.
func (r *pgvRun) open(ctx context.Context, d *state.Dir, sc store.Config) (*pgvector.Store, error) {
	for wait := time.Duration(0); ; wait += pgvRetry {
		var st store.Store
		var err error
		if d != nil {
			st, err = d.Config.OpenStore(ctx, sc, false)
		} else {
			st, err = store.Open(ctx, sc, false)
		}
		if err == nil {
			return st.(*pgvector.Store), nil
		}
		if !errors.Is(err, store.ErrUnavailable) || wait > pgvPatience || ctx.Err() != nil {
			return nil, err
		}
		time.Sleep(pgvRetry)
	}
}

// pgvCodec encodes pgvector-go's Vector in pgvector's binary format (what
// pgvector-go/pgx registers; that package also needs a float16 module this
// one does not carry).
type pgvCodec struct{}

type pgvEncode struct{}

func (pgvEncode) Encode(value any, buf []byte) ([]byte, error) {
	return value.(pgv.Vector).EncodeBinary(buf)
}

func (pgvCodec) FormatSupported(f int16) bool { return f == pgx.BinaryFormatCode }
func (pgvCodec) PreferredFormat() int16       { return pgx.BinaryFormatCode }
func (pgvCodec) PlanEncode(_ *pgtype.Map, _ uint32, f int16, v any) pgtype.EncodePlan {
	if _, ok := v.(pgv.Vector); ok && f == pgx.BinaryFormatCode {
		return pgvEncode{}
	}
	return nil
}
func (pgvCodec) PlanScan(*pgtype.Map, uint32, int16, any) pgtype.ScanPlan { return nil }
func (pgvCodec) DecodeDatabaseSQLValue(*pgtype.Map, uint32, int16, []byte) (driver.Value, error) {
	return nil, errors.New("vector: decode not supported")
}
func (pgvCodec) DecodeValue(*pgtype.Map, uint32, int16, []byte) (any, error) {
	return nil, errors.New("vector: decode not supported")
}

// pgvInsertRows is how many rows one INSERT carries (4 parameters each).
const pgvInsertRows = 250

// row returns vector i's row: id, embedding, content, metadata.
func (r *pgvRun) row(i int) []any {
	meta, _ := json.Marshal(map[string]string{"subject": r.tags[i%r.o.Subjects]})
	return []any{pgvKey(i), pgv.NewVector(pgvVector(r.o.Seed, i, r.o.Dim)), "", string(meta)}
}

// insert loads rows 0..n-1 into t with multi-row INSERTs whose vectors are
// sent in pgvector's binary format, in transactions of 20 statements.
// (PGlite's socket server loses protocol sync on COPY FROM STDIN.)
func (r *pgvRun) insert(ctx context.Context, c *pgx.Conn, t string, n int) error {
	stmt := func(rows int) string {
		var b strings.Builder
		b.WriteString("INSERT INTO " + t + " (id, embedding, content, metadata) VALUES ")
		for k := 0; k < rows; k++ {
			if k > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "($%d, $%d, $%d, $%d)", 4*k+1, 4*k+2, 4*k+3, 4*k+4)
		}
		return b.String()
	}
	full := stmt(pgvInsertRows)
	for i0 := 0; i0 < n; {
		tx, err := c.Begin(ctx)
		if err != nil {
			return err
		}
		for s := 0; s < 20 && i0 < n; s++ {
			rows := min(pgvInsertRows, n-i0)
			q := full
			if rows < pgvInsertRows {
				q = stmt(rows)
			}
			args := make([]any, 0, 4*rows)
			for i := i0; i < i0+rows; i++ {
				args = append(args, r.row(i)...)
			}
			if _, err := tx.Exec(ctx, q, args...); err != nil {
				tx.Rollback(ctx)
				return err
			}
			i0 += rows
		}
		if err := tx.Commit(ctx); err != nil {
			return err
		}
	}
	return nil
}

// load creates table in the adapter's layout (what pgvector.Open with create
// does, the vector index left for later), fills it (insert), runs VACUUM
// (ANALYZE) as a settled application table would have had, then builds the
// vector index (method) and the subject index.
func (r *pgvRun) load(ctx context.Context, table, method string, rows int) (PGVectorSetup, error) {
	su := PGVectorSetup{Table: table}
	t := pgx.Identifier{table}.Sanitize()
	err := r.withConn(ctx, func(c *pgx.Conn) error {
		var oid uint32
		if err := c.QueryRow(ctx, `SELECT 'vector'::regtype::oid`).Scan(&oid); err != nil {
			return err
		}
		c.TypeMap().RegisterType(&pgtype.Type{Name: "vector", OID: oid, Codec: pgvCodec{}})
		for _, q := range []string{
			`DROP TABLE IF EXISTS ` + t,
			fmt.Sprintf(`CREATE TABLE %s (id text PRIMARY KEY, embedding vector(%d) NOT NULL, content text NOT NULL DEFAULT '', metadata jsonb NOT NULL DEFAULT '{}')`, t, r.o.Dim),
			`ALTER TABLE ` + t + ` ALTER COLUMN content SET STORAGE EXTERNAL`,
		} {
			if _, err := c.Exec(ctx, q); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		r.tables = append(r.tables, table)
		start := time.Now()
		if err := r.insert(ctx, c, t, rows); err != nil {
			return fmt.Errorf("insert: %w", err)
		}
		su.InsertSeconds = time.Since(start).Seconds()
		start = time.Now()
		if _, err := c.Exec(ctx, `VACUUM (ANALYZE) `+t); err != nil {
			return err
		}
		su.VacuumSeconds = time.Since(start).Seconds()
		start = time.Now()
		r.notices = nil
		if _, err := c.Exec(ctx, r.indexDDL(table, method)); err != nil {
			return fmt.Errorf("vector index: %w", err)
		}
		su.IndexSeconds = time.Since(start).Seconds()
		start = time.Now()
		if _, err := c.Exec(ctx, `CREATE INDEX `+pgx.Identifier{table + "_subject"}.Sanitize()+` ON `+t+` ((metadata->>'subject'))`); err != nil {
			return err
		}
		su.OtherSeconds = time.Since(start).Seconds()
		return nil
	})
	return su, err
}

func (r *pgvRun) indexDDL(table, method string) string {
	t := pgx.Identifier{table}.Sanitize()
	if method == "hnsw" { // exactly what pgvector.Open creates
		return `CREATE INDEX ` + pgx.Identifier{table + "_embedding_hnsw"}.Sanitize() + ` ON ` + t + ` USING hnsw (embedding vector_l2_ops)`
	}
	return fmt.Sprintf(`CREATE INDEX %s ON %s USING ivfflat (embedding vector_l2_ops) WITH (lists = %d)`, pgx.Identifier{table + "_embedding_ivfflat"}.Sanitize(), t, r.o.Lists)
}

// drop drops table and makes the server recycle every WAL segment, so that
// the next baseline's files hold only its own table's history.
func (r *pgvRun) drop(ctx context.Context, table string) error {
	return r.withConn(ctx, func(c *pgx.Conn) error {
		if _, err := c.Exec(ctx, `DROP TABLE IF EXISTS `+pgx.Identifier{table}.Sanitize()); err != nil {
			return err
		}
		for i, t := range r.tables {
			if t == table {
				r.tables = append(r.tables[:i], r.tables[i+1:]...)
				break
			}
		}
		var n int
		if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_ls_waldir() WHERE name ~ '^[0-9A-F]{24}$'`).Scan(&n); err != nil {
			return err
		}
		if _, err := c.Exec(ctx, `CHECKPOINT`); err != nil {
			return err
		}
		for i := 0; i < min(n+2, 64); i++ {
			if _, err := c.Exec(ctx, `SELECT pg_switch_wal()`); err != nil {
				return err
			}
			if _, err := c.Exec(ctx, `CHECKPOINT`); err != nil {
				return err
			}
		}
		return nil
	})
}

func (r *pgvRun) dropAll() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, t := range append([]string(nil), r.tables...) {
		r.withConn(ctx, func(c *pgx.Conn) error {
			_, err := c.Exec(ctx, `DROP TABLE IF EXISTS `+pgx.Identifier{t}.Sanitize())
			return err
		})
	}
	r.tables = nil
}

func (r *pgvRun) sizes(ctx context.Context, table string) (PGVectorSizes, error) {
	var z PGVectorSizes
	err := r.withConn(ctx, func(c *pgx.Conn) error {
		t := pgx.Identifier{table}.Sanitize()
		return c.QueryRow(ctx, `SELECT pg_relation_size($1::text::regclass), pg_total_relation_size($1::text::regclass),
			COALESCE((SELECT sum(pg_relation_size(i.indexrelid)) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
				WHERE i.indrelid = $1::text::regclass AND a.amname IN ('hnsw', 'ivfflat')), 0)::bigint,
			(SELECT count(*) FROM pg_ls_waldir() WHERE name ~ '^[0-9A-F]{24}$')::int`, t).Scan(&z.Heap, &z.Total, &z.VectorIndex, &z.WALSegments)
	})
	return z, err
}

// chooseIndex settles the vector index method. For "auto": HNSW builds,
// timed, on scratch tables of the first HNSWTrial/2 and HNSWTrial vectors
// (loaded like the others, then dropped); the build of all the vectors is
// projected from them as t·(N/n)^b, b fitted to the two builds (at least 1).
func (r *pgvRun) chooseIndex(ctx context.Context) error {
	if r.o.Index != "auto" {
		r.index = r.o.Index
		r.res.Index.Note = "index method given on the command line (--index " + r.o.Index + ")"
		return nil
	}
	n := r.o.Vectors
	if r.o.HNSWTrial > 0 && r.o.HNSWTrial < n {
		n = r.o.HNSWTrial
	}
	a := &HNSWAttempt{Vectors: n, BudgetSeconds: r.o.HNSWBudget.Seconds()}
	table := r.o.Tables + "hnsw_trial"
	var half float64
	for _, rows := range []int{n / 2, n} {
		if rows == n/2 && n == r.o.Vectors {
			continue // the trial is the real size: nothing to project
		}
		r.logf("index: timing an HNSW build of %d×%d vectors", rows, r.o.Dim)
		su, err := r.load(ctx, table, "hnsw", rows)
		if err != nil {
			return fmt.Errorf("hnsw trial: %w", err)
		}
		if rows == n/2 {
			a.HalfSeconds = su.IndexSeconds
			half = su.IndexSeconds
		} else {
			a.Seconds, a.Notices = su.IndexSeconds, r.notices
		}
		if err := r.drop(ctx, table); err != nil {
			return err
		}
	}
	a.ProjectedSeconds = a.Seconds
	if n < r.o.Vectors {
		a.Exponent = 1
		if half > 0 && a.Seconds > half {
			a.Exponent = max(1, math.Log(a.Seconds/half)/math.Log(float64(n)/float64(n/2)))
		}
		a.ProjectedSeconds = a.Seconds * math.Pow(float64(r.o.Vectors)/float64(n), a.Exponent)
	}
	r.res.Index.HNSWAttempt = a
	what := fmt.Sprintf("HNSW (m=16, ef_construction=64, vector_l2_ops: what the adapter creates) built in %.1fs for %d×%d vectors", a.Seconds, n, r.o.Dim)
	if n < r.o.Vectors {
		what += fmt.Sprintf(" and %.1fs for %d; projected as t·(N/n)^%.2f: %.0fs for the %d vectors of each table", a.HalfSeconds, n/2, a.Exponent, a.ProjectedSeconds, r.o.Vectors)
	}
	if len(a.Notices) > 0 {
		what += " (the server said: " + strings.Join(a.Notices, "; ") + ")"
	}
	if a.ProjectedSeconds <= a.BudgetSeconds {
		r.index = "hnsw"
		r.res.Index.Note = what + fmt.Sprintf(", within the %s budget per build: HNSW used", r.o.HNSWBudget)
	} else {
		r.index = "ivfflat"
		r.res.Index.Note = what + fmt.Sprintf(", over the %s budget per build (each table is indexed once, VACUUM FULL rebuilds the index once per subject, "+
			"amnesia full twice per reclaim: REINDEX CONCURRENTLY, then VACUUM FULL): IVFFlat (lists=%d, vector_l2_ops) used for every table", r.o.HNSWBudget, r.o.Lists)
	}
	r.logf("index: %s", r.res.Index.Note)
	return nil
}

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
			"median %.1fs per erasure (its own logical probes: by id, by subject tag, exact and index k=10 searches per vector), %.1fs in all",
			certs.FirstSteps["evidence"]/1000, ev.MedianMs/1000, certs.Steps["reclaim"].TotalMs/1000, certs.FirstSteps["probe"]/1000, pr.MedianMs/1000, pr.TotalMs/1000)
	}
	return nil
}

// certificates sums what the certificates and journals of a baseline say.
func (r *pgvRun) certificates(d *state.Dir, results []*saga.Result, batch bool) (*PGVectorCerts, error) {
	c := &PGVectorCerts{Residue: map[string]int{}, ReclaimState: map[string]int{}, Outcomes: map[string]int{}, Steps: map[string]PGVectorStep{}}
	steps := map[string][]float64{}
	for i, res := range results {
		p := res.Statement.Predicate
		c.Erasures++
		if p.Complete {
			c.Complete++
		}
		for _, s := range p.DeclaredScope {
			if s.Name != pgvStore {
				continue
			}
			c.Residue[s.Residue]++
			if i == 0 {
				c.Evidence, c.ReclaimMethod = s.Evidence, s.Reclaim
			}
		}
		for _, a := range p.Artifacts {
			o := a.Outcome
			if a.Level != "" {
				o += "(" + a.Level + ")"
			}
			c.Outcomes[o]++
			if m := a.Measurement; m != nil && m.Physical != nil {
				if m.Physical.FoundBefore > 0 {
					c.FoundBefore++
				}
				if m.Physical.FoundAfter > 0 {
					c.FoundAfter++
				}
			}
		}
		if i == 0 {
			c.CertificateFile, _ = filepath.Rel(r.o.Work, res.CertificatePath)
		}
		js, err := readJournal(filepath.Join(d.ErasureDir(res.ID), "journal.jsonl"))
		if err != nil {
			return nil, err
		}
		for name, ms := range js.durations {
			kind, _, _ := strings.Cut(name, ":")
			steps[kind] = append(steps[kind], ms)
			if i == 0 && batch {
				if c.FirstSteps == nil {
					c.FirstSteps = map[string]float64{}
				}
				c.FirstSteps[kind] += ms
			}
		}
		c.ReclaimState[js.reclaim.State]++
		if i == 0 {
			c.ReclaimSteps = js.reclaim.Steps
		}
	}
	for k, v := range steps {
		s := PGVectorStep{Count: len(v), MedianMs: percentile(v, 0.5)}
		for _, x := range v {
			s.TotalMs += x
		}
		c.Steps[k] = s
	}
	return c, nil
}

type pgvJournal struct {
	durations map[string]float64 // step -> ms from begin to done
	reclaim   struct {
		State string   `json:"state"`
		Steps []string `json:"steps"`
	}
}

// readJournal reads an erasure journal's step times and reclaim result.
func readJournal(path string) (*pgvJournal, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	j := &pgvJournal{durations: map[string]float64{}}
	begun := map[string]time.Time{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for first := true; sc.Scan(); first = false {
		if first {
			continue // the version line
		}
		var e struct {
			Step, Phase, At string
			Result          json.RawMessage
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("journal %s: %w", path, err)
		}
		at, err := time.Parse(time.RFC3339Nano, e.At)
		if err != nil {
			return nil, fmt.Errorf("journal %s: %w", path, err)
		}
		switch e.Phase {
		case "begin":
			begun[e.Step] = at
		case "done", "failed":
			if b, ok := begun[e.Step]; ok {
				j.durations[e.Step] = float64(at.Sub(b).Microseconds()) / 1000
			}
			if strings.HasPrefix(e.Step, "reclaim:") && len(e.Result) > 0 {
				if err := json.Unmarshal(e.Result, &j.reclaim); err != nil {
					return nil, fmt.Errorf("journal %s: %w", path, err)
				}
			}
		}
	}
	return j, sc.Err()
}

// PGVectorMarkdown renders the "## pgvector at scale" section.
func (p *PGVectorResult) markdown() string {
	var b strings.Builder
	pr := p.Params
	fmt.Fprintf(&b, "\n## pgvector at scale\n\n%d vectors of dimension %d (%d subjects, %d vectors each, seed %d), %s index; %s; %s; %s. Run wall time %.0f s.\n\n",
		pr.Vectors, pr.Dim, pr.Subjects, pr.VectorsPerSubject, pr.Seed, p.Index.Method, p.Server, p.Machine, p.Date, p.WallSeconds)
	b.WriteString("| baseline | subjects | vectors | wall per subject | wall total | probe power | residue | in relation files | in pg_wal | certificate store residue |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range p.Cells {
		cert := "n/a"
		if c.Certificates != nil {
			var parts []string
			for _, k := range sortedKeys(c.Certificates.Residue) {
				parts = append(parts, fmt.Sprintf("%s ×%d", k, c.Certificates.Residue[k]))
			}
			cert = strings.Join(parts, ", ")
		}
		where := func(n *int) string {
			if n == nil || c.Vectors == 0 {
				return "n/a"
			}
			return pct(float64(*n) / float64(c.Vectors))
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %s | %s | %s | %s | %s | %s | %s |\n", c.Baseline, c.Subjects, c.Vectors, ms(c.WallPerSubjectMs), ms(c.WallTotalMs),
			pct(c.ProbePower), pct(c.Residue), where(c.FoundAfterRelation), where(c.FoundAfterWAL), cert)
	}
	b.WriteString("\nResidue: share of the erased vectors with at least one window of their on-disk encoding still found by the adapter's physical probe (heap, TOAST, indexes, pg_wal) after the deletion path; probe power: share found before it; in relation files / in pg_wal: share found by a scan of the database's files under base/, and of pg_wal, right after. Index: " + p.Index.Note + ".\n")
	for _, c := range p.Cells {
		if c.Note != "" {
			b.WriteString("\n- " + c.Baseline + ": " + c.Note + ".")
		}
	}
	for _, n := range p.Notes {
		b.WriteString("\n- " + n)
	}
	if len(p.Notes) > 0 {
		b.WriteString("\n")
	}
	return b.String()
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
