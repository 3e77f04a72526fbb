package state

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"version: 2\n", "version 2"},
		{"version: 1\ncertificate_validity: soon\n", "certificate_validity"},
		{"version: 1\nstores:\n  - {type: sqlite-doc, path: a.db}\n", "name is required"},
		{"version: 1\nstores:\n  - {name: a, type: mongodb, path: a.db}\n", "unknown type"},
		{"version: 1\nstores:\n  - {name: a, type: sqlite-vec, path: a.db}\n", "dimensions"},
		{"version: 1\nstores:\n  - {name: a, type: sqlite-doc, path: a.db}\n  - {name: a, type: sqlite-doc, path: b.db}\n", "duplicate"},
		{"version: [\n", "load config"},
	} {
		p := filepath.Join(t.TempDir(), "amnesia.yaml")
		os.WriteFile(p, []byte(tc.yaml), 0o600)
		if _, err := LoadConfig(p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want it to mention %q", tc.yaml, err, tc.want)
		}
	}
	t.Setenv("AMNESIA_TEST_DIR", "/srv/data")
	p := filepath.Join(t.TempDir(), "amnesia.yaml")
	os.WriteFile(p, []byte("version: 1\nstores:\n  - {name: d, type: sqlite-doc, path: $AMNESIA_TEST_DIR/d.db}\n  - {name: r, type: sqlite-doc, path: rel.db}\n"), 0o600)
	c, err := LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.StorePath(c.Stores[0]); got != "/srv/data/d.db" {
		t.Errorf("env expansion: %s", got)
	}
	if got := c.StorePath(c.Stores[1]); got != filepath.Join(filepath.Dir(p), "rel.db") {
		t.Errorf("relative path: %s", got)
	}
}

func TestInitRefusesToOverwrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "st")
	_, err := Init(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	pepper, _ := os.ReadFile(filepath.Join(dir, "pepper"))
	if _, err := Init(dir, nil); err == nil {
		t.Fatal("second Init succeeded")
	}
	after, _ := os.ReadFile(filepath.Join(dir, "pepper"))
	if string(pepper) != string(after) {
		t.Fatal("second Init changed the pepper")
	}
	if _, err := Open(filepath.Join(t.TempDir(), "none")); err == nil || !strings.Contains(err.Error(), "amnesia init") {
		t.Errorf("Open(missing) = %v", err)
	}

}
