package atomicfile

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("new contents"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "new contents" {
		t.Fatalf("read back %q, %v", b, err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Errorf("the directory holds %d files, want only state.json (no temporary file left)", len(es))
	}

	// A rename that fails (path is a directory) leaves no temporary file
	// and the error is returned.
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o700)
	os.WriteFile(filepath.Join(sub, "x"), nil, 0o600)
	if err := WriteFile(sub, []byte("x"), 0o600); err == nil {
		t.Error("WriteFile over a non-empty directory: no error")
	}
	if es, _ := os.ReadDir(dir); len(es) != 2 {
		t.Errorf("after a failed rename the directory holds %d entries, want 2", len(es))
	}
	if err := WriteFile(filepath.Join(dir, "missing", "f"), []byte("x"), 0o600); err == nil {
		t.Error("WriteFile into a missing directory: no error")
	}
}

// SyncDir returns its error (a copy of it once ignored every error).
func TestSyncDirReturnsErrors(t *testing.T) {
	if err := SyncDir(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if err := SyncDir(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("SyncDir of a missing directory: no error")
	}
}

// Shred overwrites the bytes themselves: a second link to the file sees
// zeros of the same length after the name is gone.
func TestShred(t *testing.T) {
	dir := t.TempDir()
	path, other := filepath.Join(dir, "evidence.sealed"), filepath.Join(dir, "link")
	secret := bytes.Repeat([]byte("ciphertext"), 100)
	if err := os.WriteFile(path, secret, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(path, other); err != nil {
		t.Skipf("hard links: %v", err)
	}
	if err := Shred(path); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the shredded file is still there: %v", err)
	}
	b, err := os.ReadFile(other)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != len(secret) || !bytes.Equal(b, make([]byte, len(secret))) {
		t.Errorf("the shredded bytes are not zeros of the same length (%d bytes)", len(b))
	}
	if err := Shred(path); err != nil {
		t.Errorf("Shred of a missing file: %v", err)
	}
}

// One copy: no package but this one makes its own temporary file to
// rename, or overwrites a file with zeros.
func TestOneCopy(t *testing.T) {
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		if filepath.Dir(path) == filepath.Join(root, "internal", "atomicfile") {
			return nil // this package
		}
		if path == filepath.Join(root, "store", "internal", "sqlitex", "zero.go") {
			// Zeroes byte ranges inside a live SQLite database, under
			// SQLite's write lock, through a descriptor it must never
			// close: not a file overwritten or published, which is what
			// this package is for.
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, s := range []string{"os.CreateTemp(", "WriteAt(make([]byte"} {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s has its own %s…: use internal/atomicfile", path, s)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Replace writes the whole file in place, as WriteFile does, and returns
// its errors; it only leaves the directory unsynced.
func TestReplace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ledger-state.json")
	for _, want := range []string{"first", "second, longer"} {
		if err := Replace(path, []byte(want), 0o600); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(path); err != nil || string(b) != want {
			t.Fatalf("read back %q, %v; want %q", b, err, want)
		}
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Errorf("the directory holds %d files, want 1 (no temporary file left)", len(es))
	}
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o700)
	os.WriteFile(filepath.Join(sub, "x"), nil, 0o600)
	if err := Replace(sub, []byte("x"), 0o600); err == nil {
		t.Error("Replace over a non-empty directory: no error")
	}
	if es, _ := os.ReadDir(dir); len(es) != 2 {
		t.Errorf("after a failed rename the directory holds %d entries, want 2", len(es))
	}
}
