package sqlitex

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/store"
)

// MeasureResidue places the last write of the database files (a non-empty
// WAL included, the -shm never) before, within or after the second of since.
func TestMeasureResidue(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "x.db")
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	write := func(path string, size int, at time.Time) {
		t.Helper()
		if err := os.WriteFile(path, make([]byte, size), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, at, at); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := MeasureResidue(db, since); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("missing database: %v", err)
	}
	write(db, 4096, since.Add(-time.Hour))
	write(db+"-shm", 32768, since.Add(time.Hour)) // every open touches it
	write(db+"-wal", 0, since.Add(time.Hour))     // an empty WAL holds no write
	check := func(want string) {
		t.Helper()
		rep, err := MeasureResidue(db, since)
		if err != nil {
			t.Fatal(err)
		}
		if rep.State != "" || !strings.Contains(rep.Evidence, want) {
			t.Errorf("evidence %q (state %q), want %q", rep.Evidence, rep.State, want)
		}
	}
	check("not written after")
	write(db+"-wal", 8192, since.Add(400*time.Millisecond))
	check("in the second")
	write(db+"-wal", 8192, since.Add(90*time.Minute))
	check("were written after")
}
