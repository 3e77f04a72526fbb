package bench

import (
	"context"
	"testing"

	"github.com/amnesia-dev/amnesia/internal/pgtest"
)

// A smoke-sized workers run: every queued erasure ends done, and the
// figures are filled.
func TestWorkersSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("runs erasures against PostgreSQL")
	}
	r, err := Workers(context.Background(), WorkersOptions{PG: pgtest.Server(t), Counts: []int{1, 2}, Erasures: 2, DocsEach: 1, Work: t.TempDir(), Progress: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Kind != "workers" || len(r.Runs) != 2 || r.Setup.ArtifactsPerSubject != 3 {
		t.Fatalf("result %+v", r)
	}
	for _, run := range r.Runs {
		if run.Erasures != 2 || run.PerMinute <= 0 || run.LogLeavesPerErasure <= 0 || run.CertificateBytes <= 0 {
			t.Errorf("run %+v: want 2 erasures and positive figures", run)
		}
		// The erasures' state went to the ledger: journal rows, a trace
		// and a certificate each, sealed evidence written and then
		// shredded (none left).
		j, rec, sealed := run.Tables["erasure_journal"], run.Tables["erasure_records"], run.Tables["erasure_sealed"]
		if j.Rows < 10 || j.Bytes <= 0 || rec.Rows != 2 || rec.Bytes <= 0 || sealed.Rows != 0 ||
			run.SealedWritten.Rows < 1 || run.SealedWritten.Bytes <= 0 || run.Tables["tlog_leaves"].Rows != run.LogLeavesPerErasure {
			t.Errorf("ledger rows per erasure: journal %+v, records %+v, sealed left %+v, sealed written %+v, tlog %+v",
				j, rec, sealed, run.SealedWritten, run.Tables["tlog_leaves"])
		}
	}
	// One worker alone: every certificate complete. Concurrent workers on
	// one PostgreSQL table may leave RESIDUAL entries (another worker's
	// reclaim rewrites the table into newer WAL): counted, not hidden.
	if r.Runs[0].Complete != 2 || r.Runs[1].Complete > 2 {
		t.Errorf("complete: %d of 2 with one worker, %d with two", r.Runs[0].Complete, r.Runs[1].Complete)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) { w.t.Log(string(b)); return len(b), nil }

// A smoke-sized windowed run: the erasures run in windows, every job ends
// done, and the delete persistence latency of the store is reported (clean
// where the physical probe ran, counted by state where it did not).
func TestWorkersWindowSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("runs erasures against PostgreSQL")
	}
	r, err := Workers(context.Background(), WorkersOptions{PG: pgtest.Server(t), Counts: []int{1}, Erasures: 3, DocsEach: 1, Window: 2, Work: t.TempDir(), Progress: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	run := r.Runs[0]
	if run.Erasures != 3 || run.Window != 2 || run.Complete != 3 {
		t.Fatalf("run %+v: want 3 complete erasures in windows of 2", run)
	}
	l := run.Latency["docs"]
	if l == nil {
		t.Fatalf("no latency for store docs: %+v", run.Latency)
	}
	n := l.Clean
	for _, c := range l.NotClean {
		n += c
	}
	if n != 3 || (l.Clean > 0 && (l.P50ms <= 0 || l.P95ms < l.P50ms || l.Maxms < l.P95ms)) {
		t.Errorf("latency %+v: want 3 erasures counted and ordered percentiles", l)
	}
}
