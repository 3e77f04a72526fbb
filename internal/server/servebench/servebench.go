// Package servebench measures lineage capture through `amnesia serve`'s HTTP
// API: concurrent clients POST /v1/lineage batches over loopback TCP to a
// real server (huma, auth, rate limit off) on a real ledger (SQLite file, or
// a fresh PostgreSQL schema), and it reports records per second and call
// latency percentiles. `go run ./cmd/amnesia-bench serve-capture` writes
// bench/results/serve-capture.json.
package servebench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/internal/bench/provenance"
	"github.com/amnesia-dev/amnesia/internal/server"
	"github.com/amnesia-dev/amnesia/internal/service"
	"github.com/amnesia-dev/amnesia/internal/state"
)

// Options of a run.
type Options struct {
	Work     string        // scratch directory
	DSN      string        // PostgreSQL server for the postgres ledger; empty: SQLite only
	Clients  int           // concurrent clients (default 8)
	Batches  []int         // records per call, one measurement each (default 1 and 100)
	Duration time.Duration // per measurement (default 10s)
	Progress io.Writer
}

// Result is serve-capture.json.
type Result struct {
	Kind string `json:"kind"` // "serve-capture"
	provenance.Provenance
	Note string        `json:"note"`
	Runs []Measurement `json:"runs"`
}

// Measurement is one (ledger, batch size) run.
type Measurement struct {
	Ledger        string  `json:"ledger"` // sqlite or postgres
	Batch         int     `json:"batch"`  // records per call
	Clients       int     `json:"clients"`
	Calls         int     `json:"calls"`
	Records       int     `json:"records"`
	Errors        int     `json:"errors"`
	Seconds       float64 `json:"seconds"`
	RecordsPerSec float64 `json:"records_per_sec"`
	P50Ms         float64 `json:"p50_ms"`
	P99Ms         float64 `json:"p99_ms"`
	MaxMs         float64 `json:"max_ms"`
}

// Run runs every measurement.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Clients <= 0 {
		o.Clients = 8
	}
	if len(o.Batches) == 0 {
		o.Batches = []int{1, 100}
	}
	if o.Duration <= 0 {
		o.Duration = 10 * time.Second
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	r := &Result{Kind: "serve-capture", Provenance: provenance.Capture(provenance.ServePaths),
		Note: "loopback TCP to amnesia serve in the same process; each record a source artifact with a subject and ~200 bytes of content; latency is one POST /v1/lineage call; the machine was shared with other work while measured"}
	ledgers := []string{"sqlite"}
	if o.DSN != "" {
		ledgers = append(ledgers, "postgres")
	}
	for _, ledger := range ledgers {
		for _, batch := range o.Batches {
			m, err := measure(ctx, o, ledger, batch)
			if err != nil {
				return nil, fmt.Errorf("%s, batch %d: %w", ledger, batch, err)
			}
			fmt.Fprintf(o.Progress, "serve-capture %s batch %d: %.0f records/s, p50 %.2f ms, p99 %.2f ms (%d calls, %d errors)\n", ledger, batch, m.RecordsPerSec, m.P50Ms, m.P99Ms, m.Calls, m.Errors)
			r.Runs = append(r.Runs, *m)
		}
	}
	return r, nil
}

func measure(ctx context.Context, o Options, ledger string, batch int) (*Measurement, error) {
	root, err := os.MkdirTemp(o.Work, "serve-capture-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(root)
	cfg := state.DefaultConfig()
	if ledger == "postgres" {
		if cfg.Ledger, err = freshSchema(ctx, o.DSN); err != nil {
			return nil, err
		}
	}
	sd, err := state.Init(filepath.Join(root, "state"), cfg)
	if err != nil {
		return nil, err
	}
	svc, err := service.Open(ctx, sd.Path, service.Options{NoWorker: true})
	if err != nil {
		return nil, err
	}
	defer svc.Close()
	srv, err := server.New(server.Options{Service: svc, Rate: 1e9, MaxBody: 4 << 20})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sctx, ln, "", "", 10*time.Second) }()
	defer func() { stop(); <-served }()
	token, _, err := service.CreateToken(sd.Path, "bench", service.RoleCapture, []string{"default"}, time.Now())
	if err != nil {
		return nil, err
	}
	url := "http://" + ln.Addr().String() + "/v1/lineage"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.Clients}}
	var mu sync.Mutex
	var lat []time.Duration
	m := &Measurement{Ledger: ledger, Batch: batch, Clients: o.Clients}
	deadline := time.Now().Add(o.Duration)
	start := time.Now()
	var wg sync.WaitGroup
	for c := 0; c < o.Clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for n := 0; time.Now().Before(deadline); n++ {
				body := payload(c, n, batch)
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/json")
				t0 := time.Now()
				resp, err := client.Do(req)
				d := time.Since(t0)
				ok := err == nil && resp.StatusCode == http.StatusOK
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				mu.Lock()
				m.Calls++
				if ok {
					m.Records += batch
					lat = append(lat, d)
				} else {
					m.Errors++
				}
				mu.Unlock()
			}
		}(c)
	}
	wg.Wait()
	m.Seconds = time.Since(start).Seconds()
	if len(lat) == 0 {
		return nil, fmt.Errorf("no call succeeded (%d errors)", m.Errors)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	q := func(p float64) float64 { return ms(lat[min(len(lat)-1, int(p*float64(len(lat))))]) }
	m.RecordsPerSec = float64(m.Records) / m.Seconds
	m.P50Ms, m.P99Ms, m.MaxMs = q(0.50), q(0.99), ms(lat[len(lat)-1])
	return m, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// payload is one call's body: batch source records of distinct subjects.
func payload(c, n, batch int) []byte {
	type rec struct {
		Store   string `json:"store"`
		Key     string `json:"key"`
		Kind    string `json:"kind"`
		Subject string `json:"subject"`
		Content string `json:"content"`
	}
	recs := make([]rec, batch)
	for i := range recs {
		id := fmt.Sprintf("%d-%d-%d", c, n, i)
		recs[i] = rec{Store: "kb", Key: "doc-" + id, Kind: "source", Subject: "user-" + id + "@bench.example",
			Content: "Benchmark document " + id + ": " + strings.Repeat("lorem ipsum dolor sit amet ", 7)}
	}
	b, _ := json.Marshal(map[string]any{"records": recs})
	return b
}

// freshSchema creates a new schema on the server and returns a DSN whose
// search_path names it.
func freshSchema(ctx context.Context, dsn string) (string, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	defer conn.Close(ctx)
	name := fmt.Sprintf("amnesia_bench_%d", time.Now().UnixNano())
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		return "", err
	}
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "search_path=" + name, nil
}
