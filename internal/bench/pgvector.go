package bench

// The pgvector-at-scale benchmark: one pgvector table of many vectors, six
// ways of deleting a person's vectors from it, and for each the wall time of
// the deletion path and what the adapter's physical probe still finds.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/amnesia-dev/amnesia/internal/bench/provenance"
	"github.com/amnesia-dev/amnesia/internal/state"
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
	Kind string `json:"kind"` // "pgvector"
	provenance.Provenance
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
		Provenance: provenance.Capture(provenance.ResiduePaths),
		Params: PGVectorParams{Vectors: o.Vectors, Dim: o.Dim, Subjects: o.Subjects, VectorsPerSubject: o.Vectors / o.Subjects,
			Sample: o.Sample, Batch: o.Batch, Seed: o.Seed,
			Content: "empty: rows hold only the vector and the subject tag, so every needle is a window of the vector's on-disk encoding"},
		Notes: []string{}}}
	if o.Note != "" {
		r.res.Notes = append(r.res.Notes, o.Note)
	}
	if set, err := provenance.PostgresSettings(ctx, o.DSN); err == nil {
		r.res.ServerSettings = set
	} else {
		r.note("The server's settings could not be read (%v).", err)
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
