package provenance

import (
	"os/exec"
	"strings"
	"testing"
)

// The trace benchmark grows and reads the SQLite and PostgreSQL ledgers:
// every package of this module they import must lie under TracePaths, or a
// change to it would leave a trace result marked current.
func TestTracePathsCoverTheLedgers(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}",
		"github.com/amnesia-dev/amnesia/lineage/sqliteledger", "github.com/amnesia-dev/amnesia/lineage/pgledger").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const mod = "github.com/amnesia-dev/amnesia/"
	checked := 0
	for _, p := range strings.Fields(string(out)) {
		dir, ok := strings.CutPrefix(p, mod)
		if !ok {
			continue // another module: its version is in go.mod, which TracePaths holds
		}
		checked++
		covered := false
		for _, tp := range TracePaths {
			if strings.HasSuffix(tp, "/") && strings.HasPrefix(dir+"/", tp) {
				covered = true
			}
		}
		if !covered {
			t.Errorf("the ledgers import %s, which TracePaths does not hold", p)
		}
	}
	if checked < 3 {
		t.Fatalf("go list named %d packages of this module: want the ledgers and what they import", checked)
	}
}
