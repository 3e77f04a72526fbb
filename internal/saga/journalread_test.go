package saga_test

import (
	"os"
	"testing"

	"github.com/amnesia-dev/amnesia/internal/saga"
)

// readJournal reads a journal with the one journal parser
// (saga.ParseJournal) and fails the test unless it is whole: the version
// line, an unbroken hash chain, no torn last line.
func readJournal(t *testing.T, path string) []saga.JournalEntry {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	es, torn, err := saga.ParseJournal(b)
	if err != nil {
		t.Fatalf("journal %s: %v", path, err)
	}
	if torn != nil {
		t.Fatalf("journal %s: its last line is torn (%d bytes)", path, torn.Len)
	}
	return es
}
