package state

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// owner: is read for stores in files only, and once one has it every store
// in files must: no store in files is left to any host.
func TestStoreOwners(t *testing.T) {
	const ok = "version: 1\nstores:\n  - {name: a, type: sqlite-doc, path: a.db, owner: host-a}\n  - {name: v, type: sqlite-vec, path: v.db, dimensions: 4, owner: host-b}\n  - {name: p, type: postgres, dsn: 'postgres://db/x', table: docs}\n"
	p := filepath.Join(t.TempDir(), "amnesia.yaml")
	os.WriteFile(p, []byte(ok), 0o600)
	c, err := LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	if o := c.Owners(); len(o) != 2 || o["a"] != "host-a" || o["v"] != "host-b" || !c.HasOwners() || !c.OwnsAny("host-b") || c.OwnsAny("host-c") {
		t.Fatalf("owners %v", o)
	}
	for yaml, want := range map[string]string{
		"stores:\n  - {name: p, type: postgres, dsn: 'postgres://db/x', table: docs, owner: h}\n":                       "line 3: stores[0]: key owner is not read by type postgres",
		"stores:\n  - {name: a, type: sqlite-doc, path: a.db, owner: h}\n  - {name: b, type: sqlite-doc, path: b.db}\n": `store "a" has an owner but store "b", also in files, has none`,
		"stores:\n  - {name: a, type: sqlite-doc, path: a.db, owner: 'h a'}\n":                                          "want a host name",
	} {
		p := filepath.Join(t.TempDir(), "amnesia.yaml")
		os.WriteFile(p, []byte("version: 1\n"+yaml), 0o600)
		if _, err := LoadConfig(p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", yaml, err, want)
		}
	}
}
