package bench

import (
	"context"
	"testing"

	"github.com/amnesia-dev/amnesia/internal/pgtest"
)

// A smoke-sized workers run: every queued erasure ends done with a complete
// certificate, and the figures are filled.
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
		if run.Erasures != 2 || run.Complete != 2 || run.PerMinute <= 0 || run.LogLeavesPerErasure <= 0 {
			t.Errorf("run %+v: want 2 complete erasures and positive rates", run)
		}
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) { w.t.Log(string(b)); return len(b), nil }
