package pgdoc_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/pgdoc"
)

// testDB is the database the tests use on the shared server: their own, so
// that other packages' open transactions in the default database do not pin
// the xmin horizon of these tables.
const testDB = "amnesia_pgdoc_test"

var (
	dbOnce sync.Once
	dbDSN  string
	dbErr  error
)

// dsn returns the DSN of the test database, creating it (with pgstattuple
// and pg_dirtyread) on first use, or skips the test when
// AMNESIA_TEST_PG_DSN is unset.
func dsn(t *testing.T) string {
	t.Helper()
	base := os.Getenv("AMNESIA_TEST_PG_DSN")
	if base == "" {
		t.Skip("AMNESIA_TEST_PG_DSN is not set: run eval \"$(scripts/services start)\" for a real PostgreSQL 15")
	}
	dbOnce.Do(func() { dbDSN, dbErr = setupDB(base) })
	if dbErr != nil {
		t.Fatalf("set up test database: %v", dbErr)
	}
	return dbDSN
}

func setupDB(base string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", err
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE DATABASE "+testDB); err != nil {
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "42P04" { // duplicate_database
			return "", err
		}
	}
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	u.Path = "/" + testDB
	d, err := pgx.Connect(ctx, u.String())
	if err != nil {
		return "", err
	}
	defer d.Close(ctx)
	for _, ext := range []string{"pgstattuple", "pg_dirtyread"} {
		if _, err := d.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS "+ext); err != nil {
			return "", fmt.Errorf("create extension %s: %w", ext, err)
		}
	}
	return u.String(), nil
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
