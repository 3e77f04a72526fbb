package pgvector_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/internal/pgtest"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/pgvector"
)

const dim = 32

// dbs holds each test's database: config and sql of one test share it.
var dbs sync.Map // *testing.T -> DSN

// dsn returns the DSN of a database of the test's own on the test server
// (PostgreSQL 15 with pgvector 0.8.6), with the vector and pgstattuple
// extensions, or skips. The database is dropped when the test ends.
func dsn(t *testing.T) string {
	t.Helper()
	if d, ok := dbs.Load(t); ok {
		return d.(string)
	}
	d := pgtest.DB(t, "vector", "pgstattuple")
	dbs.Store(t, d)
	t.Cleanup(func() { dbs.Delete(t) })
	return d
}

func uniq(prefix string) string {
	b := make([]byte, 5)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// sql runs statements on a connection of its own.
func sql(t *testing.T, stmts ...string) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn(t))
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

// Vector indexes the adapter's tests cover: HNSW (what the adapter creates,
// and what most applications build) and IVFFlat.
const (
	HNSW    = "hnsw"
	IVFFlat = "ivfflat"
)

var indexKinds = []string{HNSW, IVFFlat}

// config returns a configuration for a unique table in the test's database
// (dropped with it when the test ends). The adapter creates the table, with
// an HNSW index, on Open with create set.
func config(t *testing.T) store.Config {
	t.Helper()
	return store.Config{Name: "vectors", Type: pgvector.Type, DSN: dsn(t), Table: uniq("vec_"), Dimensions: dim}
}

// configIndex is config with the table already made, in the adapter's
// layout, by the application, with a vector index of the given kind: for
// IVFFlat, lists = 1 (built on the empty table, as an application that
// creates its schema first does), so every search visits the one list.
func configIndex(t *testing.T, kind string) store.Config {
	t.Helper()
	c := config(t)
	if kind == HNSW {
		return c
	}
	sql(t,
		fmt.Sprintf(`CREATE TABLE %s (id text PRIMARY KEY, embedding vector(%d) NOT NULL, content text NOT NULL DEFAULT '', metadata jsonb NOT NULL DEFAULT '{}')`, c.Table, dim),
		`ALTER TABLE `+c.Table+` ALTER COLUMN content SET STORAGE EXTERNAL`,
		`CREATE INDEX `+c.Table+`_embedding_ivfflat ON `+c.Table+` USING ivfflat (embedding vector_l2_ops) WITH (lists = 1)`,
		`CREATE INDEX `+c.Table+`_subject ON `+c.Table+` ((metadata->>'subject'))`,
	)
	return c
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
