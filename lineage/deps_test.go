package lineage_test

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

const (
	sqliteDriver = "github.com/mattn/go-sqlite3"
	pgDriver     = "github.com/jackc/pgx/v5"
)

// deps lists the packages a program importing pkgs links (go list -deps).
func deps(t *testing.T, pkgs ...string) []string {
	t.Helper()
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := exec.LookPath(goBin); err != nil {
		if goBin, err = exec.LookPath("go"); err != nil {
			t.Skip("no go command to list dependencies with")
		}
	}
	cmd := exec.Command(goBin, append([]string{"list", "-deps"}, pkgs...)...)
	cmd.Env = append(cmd.Environ(), "CGO_ENABLED=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", strings.Join(pkgs, " "), err, out)
	}
	return strings.Fields(string(out))
}

// A program that uses a PostgreSQL ledger links no cgo SQLite through
// lineage, and lineage itself links no database driver at all.
func TestBackendsLinkOnlyTheirDriver(t *testing.T) {
	const mod = "github.com/amnesia-dev/amnesia/"
	for _, c := range []struct {
		pkgs       []string
		want, none []string
	}{
		{[]string{mod + "lineage"}, nil, []string{sqliteDriver, pgDriver}},
		{[]string{mod + "lineage", mod + "lineage/pgledger"}, []string{pgDriver}, []string{sqliteDriver}},
		{[]string{mod + "lineage", mod + "lineage/sqliteledger"}, []string{sqliteDriver}, []string{pgDriver}},
	} {
		got := deps(t, c.pkgs...)
		for _, w := range c.want {
			if !slices.Contains(got, w) {
				t.Errorf("%v does not link %s: the check would prove nothing", c.pkgs, w)
			}
		}
		for _, n := range c.none {
			if slices.Contains(got, n) {
				t.Errorf("%v links %s", c.pkgs, n)
			}
		}
	}
}
