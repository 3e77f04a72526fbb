package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// residentBytes tells how much of a file the page cache holds: all of a
// file just written, less after dropCache (on a file system whose pages
// can be dropped), nothing of a missing file.
func TestResidentBytes(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	data := bytes.Repeat([]byte("ledger page "), 100_000) // 1.2 MB, not page-aligned
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	in, size, err := residentBytes(p)
	if err != nil {
		t.Fatal(err)
	}
	if size != int64(len(data)) || in != size {
		t.Fatalf("just written: %d of %d bytes resident, want all of %d", in, size, len(data))
	}
	if pc := cachedPercent([]string{p, p + "-missing"}); pc == nil || *pc != 100 {
		t.Fatalf("cachedPercent = %v, want 100", pc)
	}
	if in, size, err := residentBytes(p + "-missing"); in != 0 || size != 0 || err != nil {
		t.Fatalf("missing file: %d, %d, %v", in, size, err)
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	if fs.Type == unix.TMPFS_MAGIC {
		t.Skip("the temp dir is on tmpfs, whose pages cannot be dropped")
	}
	if err := dropCache(p); err != nil {
		t.Fatal(err)
	}
	if in, _, _ := residentBytes(p); in >= size {
		t.Fatalf("after dropCache: %d of %d bytes resident, want fewer", in, size)
	}
}
