package server_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/amnesia-dev/amnesia/internal/server"
)

// TestOpenAPIIsCommitted fails when internal/server/openapi.json differs from
// what the code generates. Regenerate it with
//
//	AMNESIA_UPDATE_OPENAPI=1 go test ./internal/server -run TestOpenAPIIsCommitted
func TestOpenAPIIsCommitted(t *testing.T) {
	got, err := server.OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("AMNESIA_UPDATE_OPENAPI") == "1" {
		if err := os.WriteFile("openapi.json", got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatalf("%v: generate it with AMNESIA_UPDATE_OPENAPI=1 go test ./internal/server -run TestOpenAPIIsCommitted", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("internal/server/openapi.json differs from what the code generates: regenerate it with AMNESIA_UPDATE_OPENAPI=1 go test ./internal/server -run TestOpenAPIIsCommitted, review the diff, and commit it")
	}
	if !bytes.Contains(got, []byte(`"openapi": "3.1.0"`)) {
		t.Fatal("not an OpenAPI 3.1 document")
	}
}
