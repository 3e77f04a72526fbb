package pgdoc_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/internal/pgtest"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/pgdoc"
)

// dbs holds each test's database: config, admin and the privilege tests'
// connections of one test share it.
var dbs sync.Map // *testing.T -> DSN

// dsn returns the DSN of a database of the test's own on the test server,
// with pgstattuple and pg_dirtyread, or skips the test when
// AMNESIA_TEST_PG_DSN is unset. Its own database: other tests' (and other
// packages') open transactions do not pin the xmin horizon of its tables,
// nor wait with it on pg_statistic. Dropped when the test ends.
func dsn(t *testing.T) string {
	t.Helper()
	if d, ok := dbs.Load(t); ok {
		return d.(string)
	}
	d := pgtest.DB(t, "pgstattuple", "pg_dirtyread")
	dbs.Store(t, d)
	t.Cleanup(func() { dbs.Delete(t) })
	return d
}

// withUser returns dsn with the user replaced.
func withUser(t *testing.T, dsn, user string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(user)
	return u.String()
}

// admin returns a superuser connection to the test database, closed at the
// end of the test.
func admin(t *testing.T) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func exec(t *testing.T, c *pgx.Conn, sql string, args ...any) {
	t.Helper()
	if _, err := c.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func uniq(prefix string) string {
	b := make([]byte, 5)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// config returns a configuration for a new, unique table, dropped at the
// end of the test.
func config(t *testing.T) store.Config {
	t.Helper()
	d := dsn(t)
	table := uniq("doc_")
	t.Cleanup(func() {
		ctx := context.Background()
		if c, err := pgx.Connect(ctx, d); err == nil {
			c.Exec(ctx, "DROP TABLE IF EXISTS "+table)
			c.Close(ctx)
		}
	})
	return store.Config{Name: "docs", Type: pgdoc.Type, DSN: d, Table: table}
}

func open(t *testing.T, c store.Config) *pgdoc.Store {
	t.Helper()
	s, err := pgdoc.Open(context.Background(), c, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// text returns distinct, needle-rich content for a seed.
func text(seed int) string {
	var b strings.Builder
	for i := 0; i < 12; i++ {
		fmt.Fprintf(&b, "record %d line %d: patient visited clinic %x on day %d with note %x. ", seed, i, seed*7919+i, i*31+seed, seed*104729+i*13)
	}
	return b.String()
}

func put(t *testing.T, s *pgdoc.Store, id, subject string, seed int) {
	t.Helper()
	if err := s.Put(context.Background(), pgdoc.Record{ID: id, Subject: subject, Kind: "chat", Content: text(seed), Metadata: map[string]any{"turn": seed}}); err != nil {
		t.Fatal(err)
	}
}

// found scans the store for ev and returns the needles found per key.
func found(t *testing.T, s *pgdoc.Store, ev map[string]*store.Evidence) map[string]int {
	t.Helper()
	rep, err := s.ProbePhysical(context.Background(), store.NewNeedleSet(ev))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("probe: %s: %d files, %d bytes, found %v", rep.Method, rep.Files, rep.Bytes, rep.Found)
	return rep.Found
}

func evidence(t *testing.T, s *pgdoc.Store, keys ...string) map[string]*store.Evidence {
	t.Helper()
	ev, err := s.ReadEvidence(context.Background(), keys)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}
