package saga

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// The scan of the ledger's files before a data key's destruction stops
// once it has found the wrapped key (every window of it) and reports it
// found, without reading the rest; the scan after the destruction reads
// every byte of every file, finds none of the key where it is gone, and
// finds it where it is left (at the very end of the last file).
func TestScanKeyStopsBeforeNotAfter(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	wrapped := make([]byte, 60)
	for i := range wrapped {
		wrapped[i] = byte(i*37 + 11)
	}
	windows := len(keyNeedles(wrapped))
	filler := bytes.Repeat([]byte("a page of the ledger that holds no key. "), 50000) // 2 MB
	spec := filepath.Join(dir, "ledger.db")
	files := []string{spec, spec + "-wal", spec + "-shm", spec + "-journal"}
	put := func(path string, parts ...[]byte) int64 {
		t.Helper()
		b := bytes.Join(parts, nil)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return int64(len(b))
	}
	db := put(spec, filler[:4096], wrapped, filler)
	wal := put(spec+"-wal", filler)

	before, err := scanKey(ctx, files, wrapped, "before the key's destruction", true)
	if err != nil {
		t.Fatal(err)
	}
	if before.NeedlesFound != windows || !before.Stopped || before.Files != 1 || before.Bytes >= db {
		t.Fatalf("scan before: %+v; want the key's %d windows found, stopped in the first of %d bytes", before, windows, db)
	}

	// The key's bytes overwritten: the scan after reads everything, finds none.
	db = put(spec, filler[:4096], make([]byte, len(wrapped)), filler)
	after, err := scanKey(ctx, files, wrapped, "after the key's destruction", false)
	if err != nil {
		t.Fatal(err)
	}
	if after.NeedlesFound != 0 || after.Stopped || after.Files != 2 || after.Bytes != db+wal {
		t.Fatalf("scan after: %+v; want none found in %d files, %d bytes", after, 2, db+wal)
	}
	// The key left at the end of the WAL: found by the scan after.
	wal = put(spec+"-wal", filler, wrapped)
	after, err = scanKey(ctx, files, wrapped, "after the key's destruction", false)
	if err != nil {
		t.Fatal(err)
	}
	if after.NeedlesFound != windows || after.Stopped || after.Bytes != db+wal {
		t.Fatalf("scan after, the key in the WAL: %+v; want the key's %d windows found in %d bytes", after, windows, db+wal)
	}
}
