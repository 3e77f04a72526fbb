package state

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// The composition root is the binary: the state package links no store
// adapter and no ledger backend, and capture (the library applications
// import) links no ledger backend; cmd/amnesia links them all.
func TestAdaptersAreLinkedByTheBinary(t *testing.T) {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := exec.LookPath(goBin); err != nil {
		if goBin, err = exec.LookPath("go"); err != nil {
			t.Skip("no go command to list dependencies with")
		}
	}
	const mod = "github.com/amnesia-dev/amnesia/"
	deps := func(pkg string) []string {
		out, err := exec.Command(goBin, "list", "-deps", mod+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		return strings.Fields(string(out))
	}
	ledgers := []string{mod + "lineage/sqliteledger", mod + "lineage/pgledger"}
	stores := []string{mod + "store/sqlitedoc", mod + "store/sqlitevec", mod + "store/pgdoc", mod + "store/pgvector"}
	for _, c := range []struct {
		pkg        string
		want, none []string
	}{
		{"internal/state", []string{mod + "lineage", mod + "store"}, append(append([]string{}, ledgers...), stores...)},
		{"capture", []string{mod + "lineage"}, ledgers},
		{"cmd/amnesia", append(append([]string{}, ledgers...), stores...), nil},
	} {
		got := deps(c.pkg)
		for _, w := range c.want {
			if !slices.Contains(got, w) {
				t.Errorf("%s does not link %s", c.pkg, w)
			}
		}
		for _, n := range c.none {
			if slices.Contains(got, n) {
				t.Errorf("%s links %s: the program that composes amnesia imports it, not %s", c.pkg, n, c.pkg)
			}
		}
	}
}
