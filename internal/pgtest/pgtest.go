// Package pgtest gives tests a PostgreSQL database of their own on the test
// server that scripts/services starts (PostgreSQL 15 with contrib,
// pg_dirtyread and pgvector).
//
// Each test gets its own database, so that packages can run in parallel
// against one server: a plain VACUUM's horizon, REINDEX CONCURRENTLY's wait
// for older snapshots and the catalogs are per database, and a transaction
// another package holds open in a shared database would otherwise keep the
// dead tuples a reclaim must remove (see docs/postgres.md, Tests).
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Env names: the server's DSN (a superuser) and its data directory, which
// the tests read directly as root (the cluster runs as postgres, mode 0700).
const (
	DSNEnv     = "AMNESIA_TEST_PG_DSN"
	DataDirEnv = "AMNESIA_TEST_PG_DATADIR"
)

// Server returns the test server's DSN, or skips the test when DSNEnv is not set.
func Server(t testing.TB) string {
	t.Helper()
	base := os.Getenv(DSNEnv)
	if base == "" {
		t.Skip(DSNEnv + ` is not set: run eval "$(scripts/services start)" for PostgreSQL 15 with pgvector`)
	}
	return base
}

// DataDir returns the test server's data directory, or skips the test when
// DataDirEnv is not set.
func DataDir(t testing.TB) string {
	t.Helper()
	d := os.Getenv(DataDirEnv)
	if d == "" {
		t.Skip(DataDirEnv + " is not set")
	}
	return d
}

// DB creates a database of the test's own on the test server, creates the
// given extensions in it (e.g. "vector", "pgstattuple", "pg_dirtyread"), and
// returns its URL, as the superuser. The database is dropped, with any
// connections still open to it, when the test ends. The test is skipped
// when DSNEnv is not set.
func DB(t testing.TB, extensions ...string) string {
	t.Helper()
	base := Server(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s does not parse as a URL: %v", DSNEnv, err)
	}
	b := make([]byte, 6)
	rand.Read(b)
	name := "amnesia_test_" + hex.EncodeToString(b)
	// FILE_COPY: the default WAL_LOG strategy writes the whole template
	// (about 7 MB) to WAL, which every reclaim then rotates and every WAL
	// probe reads.
	exec(t, base, "CREATE DATABASE "+name+" STRATEGY FILE_COPY")
	t.Cleanup(func() { exec(t, base, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") })
	u.Path = "/" + name
	dsn := u.String()
	for _, e := range extensions {
		exec(t, dsn, "CREATE EXTENSION IF NOT EXISTS "+pgx.Identifier{e}.Sanitize())
	}
	return dsn
}

func exec(t testing.TB, dsn, stmt string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to the test PostgreSQL: %v", err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, stmt); err != nil {
		t.Fatalf("test PostgreSQL: %s: %v", stmt, err)
	}
}
