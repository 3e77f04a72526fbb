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
// import) links neither: an application links the adapters it imports and
// no other database driver. cmd/amnesia links them all.
func TestAdaptersAreLinkedByTheBinary(t *testing.T) {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := exec.LookPath(goBin); err != nil {
		if goBin, err = exec.LookPath("go"); err != nil {
			t.Skip("no go command to list dependencies with")
		}
	}
	const mod = "github.com/amnesia-dev/amnesia/"
	// deps lists what a program importing the space-separated pkgs links.
	deps := func(pkgs string) []string {
		args := []string{"list", "-deps"}
		for _, p := range strings.Fields(pkgs) {
			args = append(args, mod+p)
		}
		out, err := exec.Command(goBin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkgs, err, out)
		}
		return strings.Fields(string(out))
	}
	const pgx, sqlite3 = "github.com/jackc/pgx/v5", "github.com/mattn/go-sqlite3"
	ledgers := []string{mod + "lineage/sqliteledger", mod + "lineage/pgledger"}
	stores := []string{mod + "store/sqlitedoc", mod + "store/sqlitevec", mod + "store/pgdoc", mod + "store/pgvector"}
	for _, c := range []struct {
		pkg        string
		want, none []string
	}{
		{"internal/state", []string{mod + "lineage", mod + "store"}, append(append([]string{pgx, sqlite3}, ledgers...), stores...)},
		{"capture", []string{mod + "lineage", mod + "capture/backend"}, append(append([]string{pgx, sqlite3}, ledgers...), stores...)},
		// An application on SQLite only links no PostgreSQL driver...
		{"capture lineage/sqliteledger store/sqlitedoc store/sqlitevec", []string{sqlite3}, []string{pgx, mod + "store/pgdoc", mod + "store/pgvector"}},
		// ...and one on PostgreSQL only no cgo SQLite.
		{"capture lineage/pgledger store/pgdoc", []string{pgx}, []string{sqlite3, mod + "store/sqlitedoc", mod + "store/sqlitevec"}},
		{"capture lineage/pgledger store/pgdoc store/pgvector", []string{pgx}, []string{sqlite3}},
		{"cmd/amnesia", append(append([]string{pgx, sqlite3}, ledgers...), stores...), nil},
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
