package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/internal/bench/provenance"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/pgdoc"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
)

// Issue #13, point 8: B4 and B5 on a store of a million records. The
// scale benchmark ingests one corpus once, through capture's batch API
// (the ledger records every artifact the way an application's writes do),
// then runs B4 on a few subjects, one at a time, and B5 on a window of
// other subjects, both on that one store, through runCell: the residue
// benchmark's cells, byte scans and outcome counts.

// Scale targets of issue #13, point 8, at ScaleTargetRecords records.
const (
	ScaleTargetRecords  = 1_000_000
	scaleB4TargetMs     = 1000.0 // B4, per erasure (median)
	scaleB5TargetMs     = 20.0   // B5, per subject of the window
	scaleKeptSubjects   = 20     // subjects that stay, read back after the erasures
	scaleProgressPeriod = 5 * time.Second
)

// ScaleTypes are the store types the scale benchmark runs on.
var ScaleTypes = []string{sqlitedoc.Type, pgdoc.Type}

// ScaleOptions sizes a scale run.
type ScaleOptions struct {
	Store    string // sqlite-doc or postgres
	Records  int    // records wanted in the store; the subjects follow from the corpus's shape
	DocsEach int    // documents per subject (FullDocsEach when 0)
	Sample   int    // subjects erased one at a time (B4)
	Window   int    // other subjects erased as one batch (B5)
	// BatchBy is what one PutBatch (one ledger transaction) holds while
	// ingesting: "subject" (every document of a subject with its chunks;
	// the default) or "document" (one document and its chunks).
	BatchBy  string
	Seed     uint64
	PG       string // PostgreSQL server of the postgres store (default: the residue target's)
	Work     string
	Progress io.Writer
}

// ScaleResult is one results file: bench/results/scale-<store>.json.
type ScaleResult struct {
	Kind         string `json:"kind"` // "scale"
	Store        string `json:"store"`
	Seed         uint64 `json:"seed"`
	RecordsAsked int    `json:"records_asked"`
	Subjects     int    `json:"corpus_subjects"`
	DocsEach     int    `json:"docs_each"`
	Docs         int    `json:"corpus_documents"`
	Records      int    `json:"corpus_records"` // records the corpus makes in this store
	provenance.Provenance
	Ledger string      `json:"ledger"` // the ledger the erasures read and write
	Ingest ScaleIngest `json:"ingest"`
	// Before the erasures: the records the store holds (counted in the
	// store), its size and the ledger's, in bytes.
	StoreRecords int       `json:"store_records"`
	StoreBytes   int64     `json:"store_bytes"`
	LedgerBytes  int64     `json:"ledger_bytes"`
	B4           ScaleCell `json:"b4"`
	B5           ScaleCell `json:"b5"`
	// KeptReadable of KeptRecords: the records of subjects no erasure
	// touched, read back through capture after both cells.
	KeptRecords  int `json:"kept_records"`
	KeptReadable int `json:"kept_readable"`
	// RunSeconds is the whole run: corpus, ingest, both cells with the
	// harness's scans, the read-back.
	RunSeconds float64 `json:"run_seconds"`
	Note       string  `json:"note,omitempty"`
}

// ScaleIngest is how the corpus got into the store.
type ScaleIngest struct {
	BatchBy     string  `json:"batch_by"` // what one PutBatch holds
	Batches     int     `json:"batches"`  // PutBatch calls (ledger transactions)
	Seconds     float64 `json:"seconds"`  // the PutBatch calls, ledger and store writes together
	RecordsPerS float64 `json:"records_per_s"`
	// SettleSeconds is the store's own reclaim once after ingesting (as
	// the residue benchmark settles its template): not in Seconds.
	SettleSeconds float64 `json:"settle_seconds"`
}

// ScaleCell is one baseline of a scale run: the residue benchmark's cell,
// each erasure's wall time, and how long the cell took with the harness's
// own measurements (evidence read and byte scans before and after each
// erasure, outside the timed deletion path).
type ScaleCell struct {
	Cell
	WallsMs     []float64 `json:"walls_ms"` // B4: each erasure; B5: the batch
	CellSeconds float64   `json:"cell_seconds"`
}

// Scale ingests a corpus of at least o.Records records into a store of type
// o.Store once, then runs B4 and B5 on it.
func Scale(ctx context.Context, o ScaleOptions) (*ScaleResult, error) {
	began := time.Now()
	o = scaleDefaults(o)
	tg, err := scaleTarget(o)
	if err != nil {
		return nil, err
	}
	c, err := scaleCorpus(tg, o)
	if err != nil {
		return nil, err
	}
	subjects := len(c.Subjects)
	if subjects < o.Sample+o.Window+1 {
		return nil, fmt.Errorf("bench: --records %d makes %d subjects, too few for --sample %d and --window %d and one subject that stays", o.Records, subjects, o.Sample, o.Window)
	}
	res := &ScaleResult{Kind: "scale", Store: o.Store, Seed: o.Seed, RecordsAsked: o.Records, Subjects: subjects, DocsEach: o.DocsEach, Docs: len(c.Docs),
		Ledger: "sqlite", Provenance: provenance.Capture(provenance.ScalePaths)}
	res.Records = corpusRecords(tg, c)
	if tg.server != nil {
		set, err := provenance.PostgresSettings(ctx, tg.server())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.Store, err)
		}
		res.ServerSettings = set
	}
	dir := filepath.Join(o.Work, "scale-"+o.Store)
	defer os.RemoveAll(dir)
	if tg.drop != nil {
		defer func() {
			if e, err := openEnv(context.WithoutCancel(ctx), dir, false); err == nil {
				tg.drop(context.WithoutCancel(ctx), e)
				e.close()
			}
		}()
	}
	if res.Ingest, err = scaleIngest(ctx, tg, c, dir, o); err != nil {
		return nil, err
	}
	if res.StoreRecords, res.StoreBytes, res.LedgerBytes, err = scaleSizes(ctx, dir); err != nil {
		return nil, err
	}
	if res.StoreRecords != res.Records {
		return nil, fmt.Errorf("bench: the store holds %d records after ingesting %d", res.StoreRecords, res.Records)
	}
	b4, b5, kept := scalePick(subjects, o.Sample, o.Window)
	// The cells run on the one store; the store is dropped at the end,
	// not after each cell.
	cellTg := *tg
	cellTg.drop = nil
	for _, x := range []struct {
		id       string
		subjects []int
		out      *ScaleCell
	}{{"B4", b4, &res.B4}, {"B5", b5, &res.B5}} {
		logf(Options{Progress: o.Progress}, "%s %s: %d subject%s of %d", o.Store, x.id, len(x.subjects), plural(len(x.subjects)), subjects)
		start := time.Now()
		cell, err := runCell(ctx, &cellTg, c, dir, x.id, x.subjects)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", o.Store, x.id, err)
		}
		cell.What = "amnesia full erasure, one subject at a time (journaled saga, certificate)"
		if x.id == "B5" {
			cell.What = fmt.Sprintf("amnesia full erasure of %d subject%s as one batch (one reclaim per store)", len(x.subjects), plural(len(x.subjects)))
		}
		*x.out = ScaleCell{Cell: *cell, WallsMs: cell.walls, CellSeconds: time.Since(start).Seconds()}
		if x.id == "B5" {
			// One batch: its wall time, not a per-subject share of it.
			x.out.WallsMs = []float64{cell.WallTotalMs}
		}
		logf(Options{Progress: o.Progress}, "%s %s: wall %.0f ms in all (median %.1f ms), cell %.1f s with the harness's scans", o.Store, x.id, cell.WallTotalMs, cell.WallMedianMs, x.out.CellSeconds)
	}
	if res.KeptRecords, res.KeptReadable, err = scaleKept(ctx, tg, c, dir, kept); err != nil {
		return nil, err
	}
	res.RunSeconds = time.Since(began).Seconds()
	res.Note = fmt.Sprintf("ingested through capture's Docs.PutBatch, one batch per %s (one ledger transaction, then one store transaction for the batch's records: the store's CapturePutBatch); B4 and B5 run one after the other on that one store, B5 on other subjects than B4's", o.BatchBy)
	return res, nil
}

func scaleDefaults(o ScaleOptions) ScaleOptions {
	if o.Records == 0 {
		o.Records = ScaleTargetRecords
	}
	if o.DocsEach == 0 {
		o.DocsEach = FullDocsEach
	}
	if o.BatchBy == "" {
		o.BatchBy = "subject"
	}
	return o
}

// scaleTarget is the residue target of o.Store, on o.PG for postgres.
func scaleTarget(o ScaleOptions) (*target, error) {
	switch {
	case !slices.Contains(ScaleTypes, o.Store):
		return nil, fmt.Errorf("bench: scale runs on %v, not %q", ScaleTypes, o.Store)
	case o.Records < 1 || o.Sample < 1 || o.Window < 1 || o.DocsEach < 1:
		return nil, fmt.Errorf("bench: scale: --records, --sample and --window must be positive (got %d, %d, %d)", o.Records, o.Sample, o.Window)
	case o.BatchBy != "subject" && o.BatchBy != "document":
		return nil, fmt.Errorf("bench: scale: --batch-by %q: want subject or document", o.BatchBy)
	}
	tg := *targets[o.Store]
	if o.Store == pgdoc.Type {
		dsn := o.PG
		if dsn == "" {
			dsn = pgDSN()
		}
		if dsn == "" {
			return nil, errors.New("bench: scale --store postgres needs a server: --pg, AMNESIA_BENCH_PG_DSN or AMNESIA_TEST_PG_DSN")
		}
		config := tg.config
		tg.config = func(dir string) store.Config {
			c := config(dir)
			c.DSN = dsn
			return c
		}
		tg.server = func() string { return dsn }
	}
	return &tg, nil
}

// scaleCorpus is the corpus of the fewest subjects (of o.DocsEach
// documents) that makes at least o.Records records in tg's store: the
// number of subjects is estimated from the records per subject of a
// corpus of 200 subjects of the same seed, then grown while short (each
// subject's documents depend on how many subjects there are).
func scaleCorpus(tg *target, o ScaleOptions) (*Corpus, error) {
	pilot := NewCorpus(o.Seed, FullSubjects, o.DocsEach)
	perSubject := float64(corpusRecords(tg, pilot)) / FullSubjects
	if perSubject == 0 {
		return nil, errors.New("bench: the corpus makes no records")
	}
	subjects := max(1, int(math.Round(float64(o.Records)/perSubject)))
	for {
		logf(Options{Progress: o.Progress}, "%s: generating %d subjects × %d documents", o.Store, subjects, o.DocsEach)
		c := NewCorpus(o.Seed, subjects, o.DocsEach)
		short := o.Records - corpusRecords(tg, c)
		if short <= 0 {
			return c, nil
		}
		subjects += int(math.Ceil(float64(short) / perSubject))
	}
}

// scalePick chooses sample subjects for B4 and window others for B5,
// each spread evenly over the corpus, and up to scaleKeptSubjects of the
// rest that stay.
func scalePick(total, sampleN, window int) (b4, b5, kept []int) {
	used := map[int]bool{}
	b4 = sample(total, sampleN)
	for _, s := range b4 {
		used[s] = true
	}
	pick := func(n int) []int {
		var rest []int
		for s := 0; s < total; s++ {
			if !used[s] {
				rest = append(rest, s)
			}
		}
		var out []int
		for _, i := range sample(len(rest), n) {
			out = append(out, rest[i])
			used[rest[i]] = true
		}
		return out
	}
	b5 = pick(window)
	kept = pick(min(scaleKeptSubjects, total-sampleN-window))
	return b4, b5, kept
}

// scaleIngest makes the state directory and the store in dir and writes
// the corpus through capture's batch API.
func scaleIngest(ctx context.Context, tg *target, c *Corpus, dir string, o ScaleOptions) (ScaleIngest, error) {
	in := ScaleIngest{BatchBy: o.BatchBy}
	os.RemoveAll(dir)
	cfg := state.DefaultConfig()
	cfg.Stores = []state.StoreConfig{tg.config(dir)}
	if _, err := state.Init(filepath.Join(dir, "state"), cfg); err != nil {
		return in, err
	}
	e, err := openEnv(ctx, dir, true)
	if err != nil {
		return in, err
	}
	defer e.close()
	ds, ok := e.st.(capture.DocStore)
	if !ok {
		return in, fmt.Errorf("bench: store %s has no capture wrapper", o.Store)
	}
	docs := e.rec.Docs(ds)
	total := 0
	for _, d := range c.Docs {
		total += 1 + len(d.Chunks)
	}
	var batch []capture.Doc
	done := 0
	start := time.Now()
	last := start
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := docs.PutBatch(ctx, batch, nil, nil); err != nil {
			return err
		}
		in.Batches++
		done += len(batch)
		batch = batch[:0]
		if now := time.Now(); o.Progress != nil && now.Sub(last) >= scaleProgressPeriod {
			last = now
			el := now.Sub(start).Seconds()
			rate := float64(done) / el
			fmt.Fprintf(o.Progress, "%s: ingested %d of %d records in %.0f s (%.0f/s, about %.0f s left)\n", o.Store, done, total, el, rate, float64(total-done)/rate)
		}
		return nil
	}
	for i, d := range c.Docs {
		batch = append(batch, capture.Doc{ID: d.ID, Kind: capture.KindDocument, Subject: c.Subjects[d.Owner].ID, Text: d.Text, Mentions: mentionIDs(c, d)})
		for j, ch := range d.Chunks {
			batch = append(batch, capture.Doc{ID: chunkID(d, j), Kind: capture.KindChunk, Parent: d.ID, Text: ch})
		}
		if o.BatchBy == "document" || i+1 == len(c.Docs) || c.Docs[i+1].Owner != d.Owner {
			if err := flush(); err != nil {
				return in, fmt.Errorf("ingest %s: %w", d.ID, err)
			}
		}
	}
	in.Seconds = time.Since(start).Seconds()
	in.RecordsPerS = float64(done) / in.Seconds
	logf(Options{Progress: o.Progress}, "%s: ingested %d records in %d batches in %.1f s (%.0f records/s); settling the store", o.Store, done, in.Batches, in.Seconds, in.RecordsPerS)
	// Settle the files, as the residue benchmark's template is settled.
	start = time.Now()
	if rc, ok := e.st.(store.Reclaimer); ok {
		if _, err := rc.Reclaim(ctx); err != nil {
			return in, err
		}
	}
	in.SettleSeconds = time.Since(start).Seconds()
	return in, nil
}

// scaleSizes counts the store's records and measures the store and the
// ledger in bytes.
func scaleSizes(ctx context.Context, dir string) (records int, storeBytes, ledgerBytes int64, err error) {
	e, err := openEnv(ctx, dir, false)
	if err != nil {
		return 0, 0, 0, err
	}
	defer e.close()
	if ledgerBytes, err = filesBytes(e.dir.LedgerPath()); err != nil {
		return 0, 0, 0, err
	}
	switch s := e.st.(type) {
	case *sqlitedoc.Store:
		db, err := appDB(s)
		if err != nil {
			return 0, 0, 0, err
		}
		defer db.Close()
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM documents").Scan(&records); err != nil {
			return 0, 0, 0, err
		}
		storeBytes, err = filesBytes(s.Path())
		return records, storeBytes, ledgerBytes, err
	case *pgdoc.Store:
		conn, err := pgx.Connect(ctx, e.dir.Config.Stores[0].DSN)
		if err != nil {
			return 0, 0, 0, err
		}
		defer conn.Close(ctx)
		err = conn.QueryRow(ctx, "SELECT count(*), pg_total_relation_size($1::regclass) FROM "+s.Table(), s.Table()).Scan(&records, &storeBytes)
		return records, storeBytes, ledgerBytes, err
	}
	return 0, 0, 0, fmt.Errorf("bench: scale cannot size a %T", e.st)
}

// filesBytes is the size of an SQLite database with its -wal and -shm.
func filesBytes(path string) (int64, error) {
	var n int64
	for _, suffix := range []string{"", "-wal", "-shm"} {
		fi, err := os.Stat(path + suffix)
		switch {
		case errors.Is(err, os.ErrNotExist) && suffix != "":
		case err != nil:
			return 0, err
		default:
			n += fi.Size()
		}
	}
	return n, nil
}

// scaleKept reads every record of the kept subjects back through capture's
// read path.
func scaleKept(ctx context.Context, tg *target, c *Corpus, dir string, kept []int) (records, readable int, err error) {
	e, err := openEnv(ctx, dir, false)
	if err != nil {
		return 0, 0, err
	}
	defer e.close()
	for _, s := range kept {
		for _, di := range c.DocsOf(s) {
			for _, k := range tg.keys(c.Docs[di]) {
				records++
				ok, err := tg.visible(ctx, e, k, nil)
				if err != nil {
					return 0, 0, err
				}
				if ok {
					readable++
				}
			}
		}
	}
	return records, readable, nil
}
