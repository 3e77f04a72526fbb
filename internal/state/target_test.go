package state

import (
	"strings"
	"testing"
)

// StoreTarget shows where a PostgreSQL store is through its adapter (this
// package parses no DSN itself, so that it links no driver), never the
// password; a DSN of a type no linked adapter names is not shown at all.
func TestStoreTargetThroughTheAdapter(t *testing.T) {
	var c Config
	for _, typ := range []string{"postgres", "pgvector"} {
		got := c.StoreTarget(StoreConfig{Name: "x", Type: typ, DSN: "postgres://alice:s3cret@db.example:6543/app", Table: "docs"})
		if got != "db.example:6543/app table docs" {
			t.Errorf("%s: StoreTarget = %q, want %q", typ, got, "db.example:6543/app table docs")
		}
	}
	if got := c.StoreTarget(StoreConfig{Name: "x", Type: "postgres", DSN: "host=db.example port=6543 dbname=app password=s3cret"}); got != "db.example:6543/app" {
		t.Errorf("keyword DSN: StoreTarget = %q", got)
	}
	if got := c.StoreTarget(StoreConfig{Name: "x", Type: "postgres", DSN: "postgres://a b@%zz"}); got != "(invalid dsn)" {
		t.Errorf("invalid DSN: StoreTarget = %q", got)
	}
	got := c.StoreTarget(StoreConfig{Name: "x", Type: "nosuch", DSN: "postgres://alice:s3cret@db.example/app"})
	if strings.Contains(got, "s3cret") || strings.Contains(got, "alice") || !strings.Contains(got, "not shown") {
		t.Errorf("unlinked type: StoreTarget = %q", got)
	}
}
