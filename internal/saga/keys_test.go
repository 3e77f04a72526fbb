package saga_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
)

// An erasure whose certificate step is done and whose certificate is not
// published holds back a key rotation; one that is published, or that has
// not signed yet, does not.
func TestSignedUnpublished(t *testing.T) {
	d, err := state.Init(filepath.Join(t.TempDir(), "st"), nil)
	if err != nil {
		t.Fatal(err)
	}
	journal := func(id string, lines ...string) {
		p := filepath.Join(d.ErasureDir(id), "journal.jsonl")
		os.MkdirAll(filepath.Dir(p), 0o700)
		b := saga.JournalVersion + "\n"
		for _, l := range lines {
			b += l + "\n"
		}
		if err := os.WriteFile(p, []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	journal("er-signed", `{"seq":1,"step":"certificate","phase":"begin"}`, `{"seq":2,"step":"certificate","phase":"done"}`)
	journal("er-published", `{"seq":1,"step":"certificate","phase":"done"}`, `{"seq":2,"step":"publish","phase":"done"}`)
	os.WriteFile(d.CertificatePath("er-published"), []byte("{}"), 0o600)
	// A crash after the certificate file was written but before publish
	// was journaled: resuming signs again, so it holds rotation back.
	journal("er-written", `{"seq":1,"step":"certificate","phase":"done"}`)
	os.WriteFile(d.CertificatePath("er-written"), []byte("{}"), 0o600)
	journal("er-early", `{"seq":1,"step":"plan","phase":"done"}`, `{"seq":2,"step":"certificate","phase":"begin"}`)
	got, err := saga.SignedUnpublished(context.Background(), saga.FileDurable(d))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != "er-signed" || got[1] != "er-written" {
		t.Errorf("SignedUnpublished = %v, want [er-signed er-written]", got)
	}
}
