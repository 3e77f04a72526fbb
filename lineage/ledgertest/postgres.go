package ledgertest

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

// PostgresEnv is the variable that holds the test server's DSN (a superuser
// on a server shared with other tests); scripts/services exports it.
const PostgresEnv = "AMNESIA_TEST_PG_DSN"

// PostgresDSN creates a database of the test's own on the test server and
// returns its URL; the database is dropped when the test ends. The test is
// skipped when PostgresEnv is not set.
func PostgresDSN(t testing.TB) string {
	t.Helper()
	base := os.Getenv(PostgresEnv)
	if base == "" {
		t.Skip(PostgresEnv + ` is not set: run eval "$(scripts/services start)" to test against PostgreSQL`)
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s does not parse as a URL: %v", PostgresEnv, err)
	}
	b := make([]byte, 8)
	rand.Read(b)
	name := "amnesia_test_" + hex.EncodeToString(b)
	admin(t, base, "CREATE DATABASE "+name)
	t.Cleanup(func() { admin(t, base, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") })
	u.Path = "/" + name
	return u.String()
}

func admin(t testing.TB, dsn, stmt string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to the test PostgreSQL: %v", err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, stmt); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}
