package provenance

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

// ForStore leaves out the other adapters' directories for a benchmark of
// one store: that is sound only if no package a benchmark runs reaches an
// adapter other than through the benchmarks' own dispatch by store name
// (internal/bench, cmd/amnesia-bench) and internal/demo, whose Chunk and
// Embed the benchmarks call (its adapter imports serve `amnesia demo`);
// and if each adapter imports only the directories of its own store's
// list. Every directory named exists.
func TestStoreDirsCoverWhatRuns(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	const mod = "github.com/amnesia-dev/amnesia/"
	cmd := exec.Command("go", "list", "-tags", "faiss", "-deps", "-f", `{{if not .Standard}}{{.ImportPath}}{{range .Imports}} {{.}}{{end}}{{end}}`, mod+"cmd/amnesia-bench")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	adapter := func(pkg string) string { // the adapterDirs entry pkg lies under, or ""
		dir, ok := strings.CutPrefix(pkg, mod)
		if !ok {
			return ""
		}
		for _, d := range adapterDirs {
			if strings.HasPrefix(dir+"/", d) {
				return d
			}
		}
		return ""
	}
	dispatch := map[string]bool{mod + "internal/bench": true, mod + "cmd/amnesia-bench": true, mod + "internal/demo": true}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], mod) {
			continue
		}
		pkg, from := f[0], adapter(f[0])
		if from != "" {
			seen[from] = true
		}
		for _, imp := range f[1:] {
			to := adapter(imp)
			if to == "" || to == from {
				continue
			}
			if from == "" {
				if !dispatch[pkg] {
					t.Errorf("%s imports the adapter %s: a benchmark of another store may run it", pkg, imp)
				}
				continue
			}
			for st, own := range StoreDirs {
				if slices.Contains(own, from) && !slices.Contains(own, to) {
					t.Errorf("%s imports %s, which StoreDirs[%q] does not hold", pkg, imp, st)
				}
			}
		}
	}
	for st, own := range StoreDirs {
		for _, d := range own {
			if !slices.Contains(adapterDirs, d) {
				t.Errorf("StoreDirs[%q] names %s, which adapterDirs does not hold", st, d)
			}
			if !seen[d] {
				t.Errorf("StoreDirs[%q] names %s, which the benchmarks do not import", st, d)
			}
		}
	}
	for _, d := range adapterDirs {
		if _, err := os.Stat(filepath.Join("..", "..", "..", d)); err != nil {
			t.Errorf("adapterDirs names %s: %v", d, err)
		}
	}
}
