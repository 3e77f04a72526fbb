package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/amnesia-dev/amnesia/internal/bench/provenance"
	"github.com/amnesia-dev/amnesia/store"
)

// ScannerOptions sizes a scanner run (issue #13 point 1).
type ScannerOptions struct {
	MiB      int   // size of each scanned file (full run: 1024)
	Needles  []int // needle counts (full run: 1,000 and 10,000)
	Runs     int   // timed runs of each measurement; the fastest is kept
	Note     string
	Work     string
	Progress io.Writer
}

// ScannerDefaults is the full run.
func ScannerDefaults() ScannerOptions {
	return ScannerOptions{MiB: 1024, Needles: []int{1000, 10000}, Runs: 3}
}

// ScannerResult is bench/results/scanner.json.
type ScannerResult struct {
	Kind string `json:"kind"` // "scanner"
	provenance.Provenance
	Params struct {
		MiB     int   `json:"mib"`
		Needles []int `json:"needles"`
		Runs    int   `json:"runs"`
		Workers int   `json:"workers"` // GOMAXPROCS: the scanner searches on this many goroutines
	} `json:"params"`
	Note   string       `json:"note,omitempty"`
	Method string       `json:"method"`
	Rows   []ScannerRow `json:"rows"`
}

// ScannerRow is one data kind at one needle count.
type ScannerRow struct {
	Data         string  `json:"data"` // text or vectors
	Bytes        int64   `json:"bytes"`
	Needles      int     `json:"needles"`
	NeedlesFound int     `json:"needles_found"` // planted records' needles found (a sanity check: > 0)
	BuildMs      float64 `json:"needle_set_build_ms"`
	CatMBps      float64 `json:"cat_mb_per_s"`       // warm `cat FILE > /dev/null`, fastest run; 0 when no cat
	ReadMBps     float64 `json:"read_loop_mb_per_s"` // warm Go read loop (1 MiB reads to a discarded buffer), fastest run
	ScanMBps     float64 `json:"scan_mb_per_s"`      // warm store.ScanFiles, fastest run
	// ScanCPUMBps is the bytes scanned per second of the process's CPU time
	// (user and system, all workers) over all timed scans: what the scan
	// costs in CPU, less sensitive than wall time to other work on the
	// machine. Divided by params.workers it is the speed one core sustains.
	ScanCPUMBps  float64 `json:"scan_mb_per_cpu_s"`
	ScanVsCatPc  float64 `json:"scan_vs_cat_percent"`
	ScanVsReadPc float64 `json:"scan_vs_read_loop_percent"`
}

// Scanner builds a text-like and a vector-like file of o.MiB in o.Work and
// measures, with the page cache warm, cat, a read loop and the byte scanner
// with each needle count.
func Scanner(ctx context.Context, o ScannerOptions) (*ScannerResult, error) {
	if o.MiB <= 0 || o.Runs <= 0 || len(o.Needles) == 0 {
		return nil, fmt.Errorf("scanner: --mib, --runs and --needles must be positive (got %d, %d, %v)", o.MiB, o.Runs, o.Needles)
	}
	r := &ScannerResult{Kind: "scanner", Provenance: provenance.Capture(provenance.ResiduePaths), Note: o.Note}
	r.Params.MiB, r.Params.Needles, r.Params.Runs, r.Params.Workers = o.MiB, o.Needles, o.Runs, runtime.GOMAXPROCS(0)
	r.Method = "one file per data kind in a temp dir; after one warming read, the fastest of --runs runs of each: " +
		"`cat FILE > /dev/null` (exec), a Go read loop (1 MiB reads), and store.ScanFiles with a NeedleSet of the given needle count " +
		"(tiled windows of records, every other record planted in the file). Text: corpus documents (seeded, as the residue corpus) in random order; " +
		"the needles are windows of other subjects' documents less those a filler document also holds (as store.DropShared drops windows other live records hold); " +
		"vectors: 384-dimension float32 little-endian vectors; both with a 4 KiB zero run every 64 KiB"
	if err := os.MkdirAll(o.Work, 0o700); err != nil {
		return nil, err
	}
	for _, kind := range []string{"text", "vectors"} {
		path := filepath.Join(o.Work, "scan-"+kind+".bin")
		logScanner(o, "scanner: writing %d MiB of %s", o.MiB, kind)
		_, needles, err := writeScanFile(path, kind, int64(o.MiB)<<20, slices.Max(o.Needles))
		if err != nil {
			return nil, err
		}
		rows, err := measureScan(ctx, o, kind, path, needles)
		os.Remove(path)
		if err != nil {
			return nil, err
		}
		r.Rows = append(r.Rows, rows...)
	}
	return r, nil
}

// writeScanFile writes size bytes of kind to path, with every other one of
// records planted in it, and returns the records and, per record, its
// needles: at least needles in all.
func writeScanFile(path, kind string, size int64, needles int) ([][]byte, [][][]byte, error) {
	rng := rand.New(rand.NewPCG(17, 19))
	var filler func() []byte
	var records [][]byte
	var kept [][][]byte // per record, the windows that are its needles
	switch kind {
	case "text":
		pool := NewCorpus(1, FullSubjects, FullDocsEach).Docs
		filler = func() []byte { return []byte(pool[rng.IntN(len(pool))].Text + "\n") }
		// Other subjects' documents: their windows that a filler document
		// also holds (the templates' text) are dropped, as the adapters'
		// store.DropShared drops windows other live records hold.
		erased := NewCorpus(2, 1000, 5).Docs
		for i := 0; len(records) < len(erased); {
			var batch [][]byte
			ev := map[string]*store.Evidence{}
			for j := 0; j < 200 && len(records)+j < len(erased); j++ {
				d := []byte(erased[len(records)+j].Text)
				batch = append(batch, d)
				ev[fmt.Sprint(j)] = &store.Evidence{Needles: store.Windows(d)}
			}
			err := store.DropShared(context.Background(), ev, func(fn func(string, []byte) error) error {
				for _, d := range pool {
					if err := fn("", []byte(d.Text)); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return nil, nil, err
			}
			for j, d := range batch {
				records = append(records, d)
				kept = append(kept, ev[fmt.Sprint(j)].Needles)
				i += len(ev[fmt.Sprint(j)].Needles)
			}
			if i >= needles {
				break
			}
		}
	case "vectors":
		vec := func() []byte {
			v := make([]float32, 384)
			for i := range v {
				v[i] = float32(rng.NormFloat64() * 0.05)
			}
			return store.Float32LE(v)
		}
		filler = vec
		for n := 0; n < needles; {
			d := vec()
			records = append(records, d)
			kept = append(kept, store.Windows(d))
			n += len(kept[len(kept)-1])
		}
	default:
		return nil, nil, fmt.Errorf("unknown data kind %q", kind)
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var written int64
	zeros := make([]byte, 4<<10)
	nextZero, planted := int64(60<<10), 0
	plantEvery := size / int64(len(records)/2+1) // half of the records are in the file
	nextPlant := plantEvery / 2
	for written < size {
		var b []byte
		switch {
		case written >= nextZero:
			b, nextZero = zeros, nextZero+64<<10
		case written >= nextPlant && planted < len(records):
			b, nextPlant = records[planted], nextPlant+plantEvery
			planted += 2
		default:
			b = filler()
		}
		b = b[:min(int64(len(b)), size-written)]
		if _, err := w.Write(b); err != nil {
			f.Close()
			return nil, nil, err
		}
		written += int64(len(b))
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return nil, nil, err
	}
	return records, kept, f.Close()
}

func measureScan(ctx context.Context, o ScannerOptions, kind, path string, needles [][][]byte) ([]ScannerRow, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	mb := float64(fi.Size()) / (1 << 20)
	best := func(f func() error) (float64, error) {
		d := time.Duration(math.MaxInt64)
		for i := 0; i < o.Runs; i++ {
			start := time.Now()
			if err := f(); err != nil {
				return 0, err
			}
			d = min(d, time.Since(start))
		}
		return mb / d.Seconds(), nil
	}
	readLoop := func() error {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		buf := make([]byte, 1<<20)
		for {
			_, err := f.Read(buf)
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
		}
	}
	if err := readLoop(); err != nil { // warm the page cache
		return nil, err
	}
	readMBps, err := best(readLoop)
	if err != nil {
		return nil, err
	}
	var catMBps float64
	if cat, err := exec.LookPath("cat"); err == nil {
		devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		defer devnull.Close()
		if catMBps, err = best(func() error {
			c := exec.CommandContext(ctx, cat, path)
			c.Stdout = devnull
			return c.Run()
		}); err != nil {
			return nil, fmt.Errorf("cat: %w", err)
		}
	}
	var rows []ScannerRow
	for _, want := range o.Needles {
		ev := map[string]*store.Evidence{}
		n := 0
		for i, w := range needles {
			if n+len(w) > want {
				w = w[:want-n]
			}
			if len(w) == 0 {
				break
			}
			ev[fmt.Sprintf("r%05d", i)] = &store.Evidence{Needles: w}
			n += len(w)
		}
		start := time.Now()
		set := store.NewNeedleSet(ev)
		build := time.Since(start)
		var rep store.ScanReport
		cpu0 := cpuTime()
		scanMBps, err := best(func() error {
			var err error
			rep, err = store.ScanFiles(ctx, set, "bench", path)
			return err
		})
		if err != nil {
			return nil, err
		}
		cpu := cpuTime() - cpu0
		if rep.NeedlesFound == 0 {
			return nil, fmt.Errorf("scanner: %s with %d needles: no planted needle was found", kind, set.Len())
		}
		row := ScannerRow{Data: kind, Bytes: rep.Bytes, Needles: set.Len(), NeedlesFound: rep.NeedlesFound,
			BuildMs: float64(build.Microseconds()) / 1000, CatMBps: catMBps, ReadMBps: readMBps, ScanMBps: scanMBps,
			ScanCPUMBps:  mb * float64(o.Runs) / cpu.Seconds(),
			ScanVsReadPc: 100 * scanMBps / readMBps}
		if catMBps > 0 {
			row.ScanVsCatPc = 100 * scanMBps / catMBps
		}
		logScanner(o, "scanner: %s, %d needles: cat %.0f MB/s, read loop %.0f MB/s, scan %.0f MB/s (%.0f%% of cat; %.0f MB per CPU second), %d found",
			kind, row.Needles, catMBps, readMBps, scanMBps, row.ScanVsCatPc, row.ScanCPUMBps, row.NeedlesFound)
		rows = append(rows, row)
	}
	return rows, nil
}

func logScanner(o ScannerOptions, format string, a ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, format+"\n", a...)
	}
}

// cpuRate is mb per second of cpu, or 0 where CPU time is not measured.
func cpuRate(mb float64, cpu time.Duration) float64 {
	if cpu <= 0 {
		return 0
	}
	return mb / cpu.Seconds()
}
