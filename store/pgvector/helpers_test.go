package pgvector_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/pgvector"
)

const dim = 32

// dsn returns the PGlite DSN or skips. PGlite serves one connection at a
// time: a test never holds a second connection while a store is open, and
// goes through Store.Exec instead.
func dsn(t *testing.T) string {
	t.Helper()
	d := os.Getenv("AMNESIA_TEST_PGLITE_DSN")
	if d == "" {
		t.Skip("AMNESIA_TEST_PGLITE_DSN is not set: run eval \"$(scripts/services start)\" for PGlite with pgvector")
	}
	return d
}

func uniq(prefix string) string {
	b := make([]byte, 5)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// connect opens a connection of its own. PGlite refuses a second one, and
// for a moment after a close, so it retries for a few seconds.
func connect(d string) (*pgx.Conn, error) {
	ctx := context.Background()
	var err error
	for i := 0; i < 50; i++ {
		var c *pgx.Conn
		if c, err = pgx.Connect(ctx, d); err == nil {
			return c, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil, err
}

// sql runs statements on a connection of its own (no store may be open).
func sql(t *testing.T, stmts ...string) {
	t.Helper()
	ctx := context.Background()
	c, err := connect(dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	for _, q := range stmts {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// config returns a configuration for a unique table, dropped (with any
// other tables listed) when the test ends, after its stores are closed.
func config(t *testing.T, extra ...string) store.Config {
	t.Helper()
	d := dsn(t)
	table := uniq("vec_")
	t.Cleanup(func() {
		ctx := context.Background()
		c, err := connect(d)
		if err != nil {
			t.Errorf("drop test table: %v", err)
			return
		}
		defer c.Close(ctx)
		for _, x := range append([]string{table}, extra...) {
			if _, err := c.Exec(ctx, "DROP TABLE IF EXISTS "+x+" CASCADE"); err != nil {
				t.Errorf("drop test table: %v", err)
			}
		}
	})
	return store.Config{Name: "vectors", Type: pgvector.Type, DSN: d, Table: table, Dimensions: dim}
}

func open(t *testing.T, c store.Config) *pgvector.Store {
	t.Helper()
	s, err := pgvector.Open(context.Background(), c, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func vector(seed int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(math.Sin(float64(seed*dim+i)*1.37)) + float32(seed)*1e-3
	}
	return v
}

func text(seed int) string {
	var b strings.Builder
	for i := 0; i < 8; i++ {
		fmt.Fprintf(&b, "chunk %d part %d: the applicant mentioned account %x and address %d. ", seed, i, seed*7919+i, seed*104729+i*13)
	}
	return b.String()
}

func put(t *testing.T, s *pgvector.Store, id, subject string, seed int) {
	t.Helper()
	if err := s.Put(context.Background(), pgvector.Record{ID: id, Subject: subject, Embedding: vector(seed), Content: text(seed)}); err != nil {
		t.Fatal(err)
	}
}

func evidence(t *testing.T, s *pgvector.Store, keys ...string) map[string]*store.Evidence {
	t.Helper()
	ev, err := s.ReadEvidence(context.Background(), keys)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func found(t *testing.T, s *pgvector.Store, ev map[string]*store.Evidence) map[string]int {
	t.Helper()
	rep, err := s.ProbePhysical(context.Background(), store.NewNeedleSet(ev))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("probe: %s: %d files, %d bytes, found %v", rep.Method, rep.Files, rep.Bytes, rep.Found)
	return rep.Found
}

func reclaim(t *testing.T, s *pgvector.Store) store.ReclaimReport {
	t.Helper()
	rep, err := s.Reclaim(context.Background())
	if err != nil {
		t.Fatalf("Reclaim: %v", err)
	}
	t.Logf("reclaim: state=%q evidence=%q steps=%q", rep.State, rep.Evidence, rep.Steps)
	return rep
}

func windowsOf(s string) [][]byte { return store.Windows([]byte(s)) }
