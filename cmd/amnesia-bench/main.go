// Command amnesia-bench runs amnesia's benchmarks on demand and writes their
// results as JSON under bench/results/; `report` regenerates RESULTS.md and
// the README's headline table from those files. Every results file records
// the commit and the paths it measured, the machine and the day; report marks
// a file stale when that code has changed since.
//
//	go run ./cmd/amnesia-bench residue [--store sqlite-doc] [--subjects 200 --docs-each 15 --sample 20]
//	go run ./cmd/amnesia-bench window [--store sqlite-doc --sizes 1,10,100,1000 --subjects 2000 --docs-each 15]
//	go run ./cmd/amnesia-bench scale --store sqlite-doc|postgres [--records 1000000 --sample 3 --window 100 --pg $AMNESIA_TEST_PG_DSN]
//	go run ./cmd/amnesia-bench trace [--edges 100000,1000000 --ledgers sqlite,postgres --pg $AMNESIA_TEST_PG_DSN --pg-datadir $AMNESIA_TEST_PG_DATADIR --traces 1000 --tx-subjects 20 --keep DIR | --reuse DIR]
//	go run ./cmd/amnesia-bench capture [--ledgers sqlite,postgres --pg $AMNESIA_TEST_PG_DSN --batches 200 --singles 1000]
//	go run ./cmd/amnesia-bench pgvector [--vectors 100000 --dim 384 --subjects 1000 --batch 100 --dsn $AMNESIA_TEST_PG_DSN]
//	go run ./cmd/amnesia-bench scanner [--mib 1024 --needles 1000,10000 --runs 3]
//	go run ./cmd/amnesia-bench serve-capture [--dsn $AMNESIA_TEST_PG_DSN --clients 8 --duration 10s]
//	go run ./cmd/amnesia-bench model [--shards 4 --people 40 --rows-each 5 --erasures 5 --references 99]
//	go run ./cmd/amnesia-bench workers [--pg $AMNESIA_TEST_PG_DSN --workers 1,2,4 --erasures 200 --docs-each 5]
//	go run ./cmd/amnesia-bench report
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/amnesia-dev/amnesia/internal/bench"
	"github.com/amnesia-dev/amnesia/internal/server/servebench"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: amnesia-bench residue|window|scale|trace|capture|pgvector|scanner|serve-capture|model|workers|report [flags]")
		os.Exit(2)
	}
	ctx := context.Background()
	// AMNESIA_BENCH_CPUPROFILE=FILE writes a CPU profile of the whole run
	// (for finding where a slow cell spends its time; results files are
	// the same with or without it, apart from the profiler's overhead).
	if p := os.Getenv("AMNESIA_BENCH_CPUPROFILE"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "amnesia-bench:", err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "amnesia-bench:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	out := fs.String("out", "bench/results", "results directory")
	work := fs.String("work", "", "scratch directory (default: a new temp dir)")
	var err error
	switch os.Args[1] {
	case "residue":
		typ := fs.String("store", "", "store type (default: every type with a residue target)")
		o := bench.Options{Progress: os.Stderr}
		fs.Uint64Var(&o.Seed, "seed", 1, "corpus seed")
		fs.IntVar(&o.Subjects, "subjects", bench.FullSubjects, "subjects in the corpus")
		fs.IntVar(&o.DocsEach, "docs-each", bench.FullDocsEach, "documents per subject")
		fs.IntVar(&o.Sample, "sample", 20, "subjects erased one at a time in B0–B4")
		fs.Parse(os.Args[2:])
		o.Work = scratch(*work)
		types := bench.ResidueTypes()
		if *typ != "" {
			types = []string{*typ}
		}
		for _, t := range types {
			var r *bench.StoreResult
			if r, err = bench.Residue(ctx, t, o); err != nil {
				break
			}
			if err = write(filepath.Join(*out, "residue-"+t+".json"), r); err != nil {
				break
			}
		}
	case "window":
		typ := fs.String("store", "sqlite-doc", "store type")
		sizes := fs.String("sizes", "1,10,100,1000", "window sizes (subjects a batch erases), ascending")
		o := bench.Options{Progress: os.Stderr}
		fs.Uint64Var(&o.Seed, "seed", 1, "corpus seed")
		// Twice the largest default window: a window as large as the
		// corpus erases every record, leaving no other records for the
		// shared-window detection to read.
		fs.IntVar(&o.Subjects, "subjects", 2000, "subjects in the corpus (more than the largest window)")
		fs.IntVar(&o.DocsEach, "docs-each", bench.FullDocsEach, "documents per subject")
		fs.Parse(os.Args[2:])
		o.Work = scratch(*work)
		var ns []int
		for _, f := range strings.Split(*sizes, ",") {
			n, cerr := strconv.Atoi(strings.TrimSpace(f))
			if cerr != nil {
				err = fmt.Errorf("--sizes %q: want ascending counts such as 1,10,100,1000", *sizes)
				break
			}
			ns = append(ns, n)
		}
		if err == nil {
			var r *bench.WindowResult
			if r, err = bench.Windows(ctx, *typ, o, ns); err == nil {
				err = write(filepath.Join(*out, "window-"+*typ+".json"), r)
			}
		}
	case "scale":
		o := bench.ScaleOptions{Progress: os.Stderr}
		fs.StringVar(&o.Store, "store", "", "store type: "+strings.Join(bench.ScaleTypes, " or ")+" (required)")
		fs.IntVar(&o.Records, "records", bench.ScaleTargetRecords, "records in the store, at least (the subjects follow from the corpus's shape)")
		fs.IntVar(&o.DocsEach, "docs-each", bench.FullDocsEach, "documents per subject")
		fs.IntVar(&o.Sample, "sample", 9, "subjects erased one at a time (B4), whose median is reported: one erasure at a million records varies by up to about 2x")
		fs.IntVar(&o.Window, "window", 100, "other subjects erased as one batch (B5)")
		fs.StringVar(&o.BatchBy, "batch-by", "subject", "what one PutBatch (one ledger transaction) holds while ingesting: subject or document")
		fs.StringVar(&o.PG, "pg", "", "PostgreSQL server of the postgres store (default: $AMNESIA_BENCH_PG_DSN, else $AMNESIA_TEST_PG_DSN, as residue --store postgres)")
		fs.Uint64Var(&o.Seed, "seed", 1, "corpus seed")
		fs.Parse(os.Args[2:])
		if o.Store == "" {
			fmt.Fprintf(os.Stderr, "amnesia-bench scale: --store is required (%s)\n", strings.Join(bench.ScaleTypes, " or "))
			os.Exit(2)
		}
		o.Work = scratch(*work)
		var r *bench.ScaleResult
		if r, err = bench.Scale(ctx, o); err == nil {
			err = write(filepath.Join(*out, "scale-"+o.Store+".json"), r)
		}
	case "trace", "capture":
		o := bench.PerfOptions{Progress: os.Stderr}
		edges := fs.String("edges", "100000,1000000", "ledger sizes in edges, ascending (trace)")
		ledgers := fs.String("ledgers", "sqlite,postgres", "ledgers measured")
		fs.StringVar(&o.PG, "pg", os.Getenv("AMNESIA_TEST_PG_DSN"), "PostgreSQL server URL; a database amnesia_bench_<name> is created (dropped first) on it")
		fs.StringVar(&o.PGData, "pg-datadir", os.Getenv("AMNESIA_TEST_PG_DATADIR"), "that server's data directory, readable here: cold traces drop its database's files from the page cache (trace; empty: no PostgreSQL cold figure)")
		fs.IntVar(&o.Traces, "traces", 1000, "traces timed at each size")
		fs.IntVar(&o.Batches, "batches", 200, "1+20+20 ingestions timed (capture)")
		fs.IntVar(&o.Singles, "singles", 1000, "single writes timed (capture)")
		fs.IntVar(&o.TxSubjects, "tx-subjects", 20, "subjects (90 artifacts each) a RecordBatch transaction of the trace ledger's growth holds (trace)")
		fs.StringVar(&o.Keep, "keep", "", "build the trace ledgers in this directory (PostgreSQL: the database stays on the server) and keep them, with a manifest, for --reuse (trace)")
		fs.StringVar(&o.Reuse, "reuse", "", "measure the ledgers an earlier --keep left in this directory again, growing them first where --edges asks for more (trace)")
		fs.Parse(os.Args[2:])
		o.Work = scratch(*work)
		o.Ledgers = strings.Split(*ledgers, ",")
		for _, e := range strings.Split(*edges, ",") {
			n, perr := strconv.Atoi(strings.TrimSpace(e))
			if perr != nil || n <= 0 {
				fmt.Fprintf(os.Stderr, "amnesia-bench: --edges: %q is not a positive number\n", e)
				os.Exit(2)
			}
			o.Edges = append(o.Edges, n)
		}
		if os.Args[1] == "trace" {
			var r *bench.TraceResult
			if r, err = bench.TracePerf(ctx, o); err == nil {
				err = write(filepath.Join(*out, "trace.json"), r)
			}
		} else {
			var r *bench.CaptureResult
			if r, err = bench.CapturePerf(ctx, o); err == nil {
				err = write(filepath.Join(*out, "capture.json"), r)
			}
		}
	case "pgvector":
		o := bench.PGVectorDefaults()
		o.Progress = os.Stderr
		fs.StringVar(&o.DSN, "dsn", os.Getenv("AMNESIA_TEST_PG_DSN"), "PostgreSQL with pgvector (default $AMNESIA_TEST_PG_DSN)")
		fs.StringVar(&o.DataDir, "data-dir", os.Getenv("AMNESIA_TEST_PG_DATADIR"), "the server's data directory, read by the physical probe (default $AMNESIA_TEST_PG_DATADIR; empty: through pg_read_binary_file)")
		fs.IntVar(&o.Vectors, "vectors", o.Vectors, "vectors in the table")
		fs.IntVar(&o.Dim, "dim", o.Dim, "dimensions")
		fs.IntVar(&o.Subjects, "subjects", o.Subjects, "subjects owning the vectors")
		fs.IntVar(&o.Sample, "sample", o.Sample, "subjects erased one at a time per baseline")
		fs.IntVar(&o.Batch, "batch", o.Batch, "subjects erased in the batch baseline")
		fs.Uint64Var(&o.Seed, "seed", o.Seed, "vector seed")
		fs.StringVar(&o.Index, "index", o.Index, "vector index: hnsw, ivfflat, or auto (HNSW if it builds within --hnsw-budget)")
		fs.IntVar(&o.Lists, "lists", o.Lists, "IVFFlat lists")
		fs.DurationVar(&o.HNSWBudget, "hnsw-budget", o.HNSWBudget, "--index auto: the longest projected HNSW build of one table that still picks HNSW")
		fs.IntVar(&o.HNSWTrial, "hnsw-trial", o.HNSWTrial, "--index auto: vectors in the timed HNSW trial build")
		fs.StringVar(&o.Note, "note", "", "a note kept in the result (e.g. why the size differs from the full one)")
		fs.Parse(os.Args[2:])
		o.Work = scratch(*work)
		var r *bench.PGVectorResult
		if r, err = bench.PGVector(ctx, o); err == nil {
			err = write(filepath.Join(*out, "pgvector.json"), r)
		}
	case "scanner":
		o := bench.ScannerDefaults()
		o.Progress = os.Stderr
		fs.IntVar(&o.MiB, "mib", o.MiB, "MiB of each scanned file (text, vectors)")
		needles := fs.String("needles", "1000,10000", "needle counts, comma-separated")
		fs.IntVar(&o.Runs, "runs", o.Runs, "timed runs of each measurement (the fastest is kept)")
		fs.StringVar(&o.Note, "note", "", "a note kept in the result (e.g. why the size differs from the full one)")
		fs.Parse(os.Args[2:])
		o.Work = scratch(*work)
		o.Needles = nil
		for _, e := range strings.Split(*needles, ",") {
			n, perr := strconv.Atoi(strings.TrimSpace(e))
			if perr != nil || n <= 0 {
				fmt.Fprintf(os.Stderr, "amnesia-bench: --needles: %q is not a positive number\n", e)
				os.Exit(2)
			}
			o.Needles = append(o.Needles, n)
		}
		var r *bench.ScannerResult
		if r, err = bench.Scanner(ctx, o); err == nil {
			err = write(filepath.Join(*out, "scanner.json"), r)
		}
	case "serve-capture":
		o := servebench.Options{Progress: os.Stderr}
		fs.StringVar(&o.DSN, "dsn", os.Getenv("AMNESIA_TEST_PG_DSN"), "PostgreSQL server for the postgres ledger (default $AMNESIA_TEST_PG_DSN; empty: SQLite only)")
		fs.IntVar(&o.Clients, "clients", 8, "concurrent clients")
		fs.DurationVar(&o.Duration, "duration", 10*time.Second, "per measurement")
		fs.Parse(os.Args[2:])
		o.Work = scratch(*work)
		var r *servebench.Result
		if r, err = servebench.Run(ctx, o); err == nil {
			err = write(filepath.Join(*out, "serve-capture.json"), r)
		}
	case "model":
		o := bench.ModelOptions{Progress: os.Stderr}
		fs.IntVar(&o.Shards, "shards", bench.ModelShards, "dataset shards (one n-gram model each)")
		fs.IntVar(&o.People, "people", bench.ModelPeople, "subjects, each with rows and one canary")
		fs.IntVar(&o.RowsEach, "rows-each", bench.ModelRowsEach, "training rows per subject")
		fs.IntVar(&o.Erasures, "erasures", bench.ModelErasures, "subjects erased, one after another")
		fs.IntVar(&o.References, "references", bench.ModelReferences, "reference canaries per canary")
		fs.Parse(os.Args[2:])
		o.Work = scratch(*work)
		if o.Self, err = os.Executable(); err != nil {
			break
		}
		var r *bench.ModelResult
		if r, err = bench.Model(ctx, o); err == nil {
			err = write(filepath.Join(*out, "model.json"), r)
		}
	case "ngram-train":
		// The model benchmark's retrain command: ngram-train <shard.jsonl> <output>.
		_, err = bench.RunNgramTrain(os.Args)
	case "workers":
		o := bench.WorkersOptions{Progress: os.Stderr}
		fs.StringVar(&o.PG, "pg", os.Getenv("AMNESIA_TEST_PG_DSN"), "PostgreSQL server (a role that may CREATE DATABASE; default $AMNESIA_TEST_PG_DSN)")
		counts := fs.String("workers", "1,2,4", "worker counts, one run each")
		fs.IntVar(&o.Erasures, "erasures", 200, "erasures queued per run")
		fs.IntVar(&o.DocsEach, "docs-each", 5, "documents per subject (each with 2 chunks)")
		fs.IntVar(&o.Window, "window", 0, "run the workers in erasure windows of at most this many erasures (0: one at a time); reports the delete persistence latency per store either way")
		fs.Parse(os.Args[2:])
		o.Work = scratch(*work)
		for _, c := range strings.Split(*counts, ",") {
			n, cerr := strconv.Atoi(strings.TrimSpace(c))
			if cerr != nil || n < 1 {
				err = fmt.Errorf("--workers %q: want positive counts such as 1,2,4", *counts)
				break
			}
			o.Counts = append(o.Counts, n)
		}
		if err == nil {
			var r *bench.WorkersResult
			if r, err = bench.Workers(ctx, o); err == nil {
				err = write(filepath.Join(*out, "workers.json"), r)
			}
		}
	case "report":
		stale := fs.Bool("stale", false, "write nothing: print the scripts/bench-all parts that would measure the stale files again, one per line")
		fs.Parse(os.Args[2:])
		if *stale {
			err = staleParts(*out)
			break
		}
		err = report(*out)
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		pprof.StopCPUProfile() // a no-op without a profile; os.Exit skips the deferred one
		fmt.Fprintln(os.Stderr, "amnesia-bench:", err)
		os.Exit(1)
	}
}

func scratch(dir string) string {
	if dir != "" {
		return dir
	}
	d, err := os.MkdirTemp("", "amnesia-bench-")
	if err != nil {
		panic(err)
	}
	return d
}

func write(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "wrote", path)
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// staleParts prints the bench-all parts of the files report marks stale.
func staleParts(dir string) error {
	r, err := bench.Load(dir)
	if err != nil {
		return err
	}
	r.Check(".")
	for _, p := range r.StaleParts() {
		fmt.Println(p)
	}
	return nil
}

func report(dir string) error {
	r, err := bench.Load(dir)
	if err != nil {
		return err
	}
	// Mark every file whose measured code changed since its commit (run from
	// the repository root, where RESULTS.md and README.md are).
	r.Check(".")
	if err := os.WriteFile("RESULTS.md", []byte(r.Markdown()), 0o644); err != nil {
		return err
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		return err
	}
	updated, err := r.UpdateReadme(readme)
	if err != nil {
		return err
	}
	return os.WriteFile("README.md", updated, 0o644)
}
