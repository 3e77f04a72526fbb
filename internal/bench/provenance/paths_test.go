package provenance

import (
	"os/exec"
	"strings"
	"testing"
)

// Every package of this module that a benchmark runs must lie under the
// paths its results record, or a change to it would leave a result marked
// current: the trace benchmark grows and reads the ledgers; the residue,
// window, pgvector, scale and capture benchmarks run the stores, the saga
// and what it signs and logs with; serve-capture and workers run the
// server and the workers on top of those.
func TestPathsCoverWhatRuns(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	const mod = "github.com/amnesia-dev/amnesia/"
	for _, c := range []struct {
		name  string
		paths []string
		pkgs  []string
		// metadata: imported packages that record, but do not run, what
		// is measured (the provenance itself).
		metadata []string
	}{
		{"TracePaths", TracePaths, []string{"lineage/sqliteledger", "lineage/pgledger"}, nil},
		{"ResiduePaths", ResiduePaths, []string{"internal/bench", "internal/saga"}, []string{"internal/bench/provenance"}},
		{"ServePaths", ServePaths, []string{"internal/server/servebench", "internal/bench"}, []string{"internal/bench/provenance"}},
		{"ScalePaths", ScalePaths, []string{"internal/bench"}, []string{"internal/bench/provenance"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}"}
			for _, p := range c.pkgs {
				args = append(args, mod+p)
			}
			out, err := exec.Command("go", args...).Output()
			if err != nil {
				t.Fatalf("go list: %v", err)
			}
			checked := 0
			for _, p := range strings.Fields(string(out)) {
				dir, ok := strings.CutPrefix(p, mod)
				if !ok {
					continue // another module: its version is in go.mod, which every list holds
				}
				checked++
				if covered(dir, c.paths) || contains(c.metadata, dir) {
					continue
				}
				t.Errorf("%s imports %s, which %s does not hold", strings.Join(c.pkgs, " and "), p, c.name)
			}
			if checked < 3 {
				t.Fatalf("go list named %d packages of this module: want %s and what they import", checked, strings.Join(c.pkgs, ", "))
			}
		})
	}
}

// covered reports whether package dir lies under one of the folder
// pathspecs of paths.
func covered(dir string, paths []string) bool {
	for _, p := range paths {
		if strings.HasSuffix(p, "/") && !strings.HasPrefix(p, ":") && strings.HasPrefix(dir+"/", p) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
