package pgvector_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/pgvector"
)

// A closed port is named by host:port, never with the DSN's password.
func TestCheckClosedPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	c := store.Config{Name: "vectors", Type: pgvector.Type, DSN: fmt.Sprintf("postgres://amnesia:s3cret-pw@127.0.0.1:%d/appdb", port), Dimensions: 8}
	errs := store.Errors(store.Check(context.Background(), c))
	if len(errs) != 1 || errs[0].Key != "dsn" || !strings.Contains(errs[0].Message, fmt.Sprintf("127.0.0.1:%d", port)) || strings.Contains(errs[0].Message, "s3cret-pw") {
		t.Fatalf("closed port: %v", errs)
	}
}

// The check compares the embedding column's dimensions with the
// configuration, and does not create a missing table.
func TestCheckDimensions(t *testing.T) {
	ctx := context.Background()
	c := config(t)
	errs := store.Errors(store.Check(ctx, c))
	if len(errs) != 1 || errs[0].Key != "table" || !strings.Contains(errs[0].Message, "does not exist") {
		t.Fatalf("missing table: %v", errs)
	}
	s := open(t, c) // creates it with dim dimensions
	s.Close()
	if errs := store.Errors(store.Check(ctx, c)); len(errs) != 0 {
		t.Fatalf("matching dimensions: %v", errs)
	}
	c.Dimensions = dim + 1
	errs = store.Errors(store.Check(ctx, c))
	if len(errs) != 1 || errs[0].Key != "dimensions" || !strings.Contains(errs[0].Message, fmt.Sprintf("has %d dimensions, the configuration says %d", dim, dim+1)) {
		t.Fatalf("wrong dimensions: %v", errs)
	}
}
