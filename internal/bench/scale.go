package bench

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/internal/bench/provenance"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
	"github.com/amnesia-dev/amnesia/subject"
)

// ScaleOptions sizes a scale run.
type ScaleOptions struct {
	Edges    int  // ledger size for trace latency (full run: 10,000,000)
	Reuse    bool // reuse a ledger this command recorded earlier in Work
	Traces   int  // traces timed
	Writes   int  // writes timed, with and without capture
	ScanMB   int  // size of the file scanned
	Work     string
	Progress io.Writer
}

// ScaleResult is bench/results/scale.json.
type ScaleResult struct {
	Kind string `json:"kind"` // "scale"
	provenance.Provenance
	Trace struct {
		Edges     int     `json:"edges"`
		Artifacts int     `json:"artifacts"`
		Traces    int     `json:"traces"`
		P50Ms     float64 `json:"p50_ms"`
		P99Ms     float64 `json:"p99_ms"`
		Note      string  `json:"note"`
	} `json:"trace"`
	Capture struct {
		Writes        int     `json:"writes"`
		PlainP50Us    float64 `json:"plain_p50_us"`
		CaptureP50Us  float64 `json:"capture_p50_us"`
		OverheadP50Us float64 `json:"overhead_p50_us"`
		Note          string  `json:"note"`
	} `json:"capture"`
	Scan struct {
		Bytes   int64 `json:"bytes"`
		Needles int   `json:"needles"`
		// ScanMBps keeps its JSON name from when the scanner used one
		// core; Workers (absent in those files) says on how many
		// goroutines it searched since.
		ScanMBps     float64 `json:"scan_mb_per_s_per_core"`
		Workers      int     `json:"workers,omitempty"`
		SeqReadMBps  float64 `json:"sequential_read_mb_per_s"`
		ScanVsReadPc float64 `json:"scan_vs_read_percent"`
	} `json:"scan"`
}

// Scale measures trace latency, capture overhead and scan throughput.
func Scale(ctx context.Context, o ScaleOptions) (*ScaleResult, error) {
	r := &ScaleResult{Kind: "scale", Provenance: provenance.Capture(provenance.ResiduePaths)}
	if err := os.MkdirAll(o.Work, 0o700); err != nil {
		return nil, err
	}
	if err := traceLatency(ctx, o, r); err != nil {
		return nil, fmt.Errorf("trace latency: %w", err)
	}
	if err := captureOverhead(ctx, o, r); err != nil {
		return nil, fmt.Errorf("capture overhead: %w", err)
	}
	if err := scanThroughput(ctx, o, r); err != nil {
		return nil, fmt.Errorf("scan throughput: %w", err)
	}
	return r, nil
}

// Shape of the synthetic ledger: each subject has 10 documents of 4 chunks,
// each chunk one embedding: 90 artifacts and 80 edges per subject.
const (
	docsPer   = 10
	chunksPer = 4
	edgesPer  = docsPer * chunksPer * 2
)

func traceLatency(ctx context.Context, o ScaleOptions, r *ScaleResult) error {
	path := filepath.Join(o.Work, "ledger.db")
	keyer, _ := subject.NewKeyer(make([]byte, subject.PepperSize))
	subjects := (o.Edges + edgesPer - 1) / edgesPer
	if !o.Reuse || !loaded(ctx, path, subjects) {
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			os.Remove(p)
		}
		l, err := sqliteledger.Open(ctx, path)
		if err != nil {
			return err
		}
		logScale(o, "trace: recording %d edges (%d subjects) through RecordBatch", subjects*edgesPer, subjects)
		err = grow(ctx, PerfOptions{Progress: o.Progress}, l, keyer, 0, subjects)
		l.Close()
		if err != nil {
			return err
		}
	}
	logScale(o, "trace: timing %d traces", o.Traces)
	l, err := sqliteledger.Open(ctx, path)
	if err != nil {
		return err
	}
	defer l.Close()
	var lat []float64
	for i := 0; i < o.Traces; i++ {
		k, _ := keyer.Key("default", fmt.Sprintf("subject-%d", (i*7919)%subjects))
		start := time.Now()
		v, err := l.View(ctx, "default", k)
		if err != nil {
			return err
		}
		t, err := lineage.BuildTrace(v)
		if err != nil {
			return err
		}
		lat = append(lat, float64(time.Since(start).Microseconds())/1000)
		if len(t.Artifacts) != docsPer*(1+2*chunksPer) {
			return fmt.Errorf("trace has %d artifacts, want %d", len(t.Artifacts), docsPer*(1+2*chunksPer))
		}
	}
	r.Trace.Edges, r.Trace.Artifacts, r.Trace.Traces = subjects*edgesPer, subjects*(docsPer*(1+2*chunksPer)), o.Traces
	r.Trace.P50Ms, r.Trace.P99Ms = percentile(lat, 0.5), percentile(lat, 0.99)
	r.Trace.Note = "SQLite ledger recorded through RecordBatch, the ledger's write path (events and hash chain included), 20 subjects a transaction; each trace is View + BuildTrace of one subject with 90 artifacts"
	return nil
}

// loaded reports whether path holds a ledger of that size recorded earlier.
func loaded(ctx context.Context, path string, subjects int) bool {
	if _, err := os.Stat(path); err != nil {
		return false
	}
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		return false
	}
	defer db.Close()
	var n int
	err = db.QueryRowContext(ctx, `SELECT count(*) FROM edges`).Scan(&n)
	return err == nil && n == subjects*edgesPer
}

func captureOverhead(ctx context.Context, o ScaleOptions, r *ScaleResult) error {
	dir := filepath.Join(o.Work, "capture")
	os.RemoveAll(dir)
	os.MkdirAll(dir, 0o700)
	l, err := sqliteledger.Open(ctx, filepath.Join(dir, "ledger.db"))
	if err != nil {
		return err
	}
	defer l.Close()
	plain, err := sqlitedoc.Open(ctx, "plain", filepath.Join(dir, "plain.db"), true)
	if err != nil {
		return err
	}
	defer plain.Close()
	captured, err := sqlitedoc.Open(ctx, "docs", filepath.Join(dir, "captured.db"), true)
	if err != nil {
		return err
	}
	defer captured.Close()
	keyer, _ := subject.NewKeyer(make([]byte, subject.PepperSize))
	docs := capture.New(l, keyer, "").Docs(captured)
	c := NewCorpus(5, 50, (o.Writes+49)/50)
	var tp, tc []float64
	for i := 0; i < o.Writes && i < len(c.Docs); i++ {
		d := c.Docs[i]
		start := time.Now()
		if err := plain.Put(ctx, sqlitedoc.Record{ID: d.ID, Kind: sqlitedoc.KindDocument, Subject: "x", Text: d.Text}); err != nil {
			return err
		}
		tp = append(tp, float64(time.Since(start).Nanoseconds())/1000)
		start = time.Now()
		if err := docs.Put(ctx, capture.Doc{ID: d.ID, Kind: sqlitedoc.KindDocument, Subject: c.Subjects[d.Owner].ID, Text: d.Text}); err != nil {
			return err
		}
		tc = append(tc, float64(time.Since(start).Nanoseconds())/1000)
	}
	r.Capture.Writes = len(tp)
	r.Capture.PlainP50Us, r.Capture.CaptureP50Us = percentile(tp, 0.5), percentile(tc, 0.5)
	r.Capture.OverheadP50Us = r.Capture.CaptureP50Us - r.Capture.PlainP50Us
	r.Capture.Note = "one document write to the SQLite document store (synchronous=FULL), alternating plain and captured; capture adds one ledger transaction (synchronous=FULL) per write"
	return nil
}

func scanThroughput(ctx context.Context, o ScaleOptions, r *ScaleResult) error {
	path := filepath.Join(o.Work, "scan.bin")
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.CopyN(f, rand.Reader, int64(o.ScanMB)<<20); err != nil {
		f.Close()
		return err
	}
	f.Close()
	defer os.Remove(path)
	ev := map[string]*store.Evidence{}
	c := NewCorpus(9, 100, 5)
	for _, d := range c.Docs {
		ev[d.ID] = &store.Evidence{Needles: store.Windows([]byte(d.Text))}
	}
	set := store.NewNeedleSet(ev)
	read := func() (time.Duration, error) {
		f, err := os.Open(path)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		start := time.Now()
		_, err = io.Copy(io.Discard, f)
		return time.Since(start), err
	}
	if _, err := read(); err != nil { // warm the page cache for both
		return err
	}
	rd, err := read()
	if err != nil {
		return err
	}
	start := time.Now()
	rep, err := store.ScanFiles(ctx, set, "bench", path)
	if err != nil {
		return err
	}
	sd := time.Since(start)
	mb := float64(rep.Bytes) / (1 << 20)
	r.Scan.Bytes, r.Scan.Needles, r.Scan.Workers = rep.Bytes, set.Len(), runtime.GOMAXPROCS(0)
	r.Scan.ScanMBps, r.Scan.SeqReadMBps = mb/sd.Seconds(), mb/rd.Seconds()
	r.Scan.ScanVsReadPc = 100 * r.Scan.ScanMBps / r.Scan.SeqReadMBps
	return nil
}

func logScale(o ScaleOptions, format string, a ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, format+"\n", a...)
	}
}
