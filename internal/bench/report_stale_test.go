package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/internal/bench/provenance"
)

// gitRepo makes a repository in a temporary directory with one commit
// holding files (path -> content).
func gitRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	run(t, dir, "init", "-q")
	run(t, dir, "config", "user.email", "bench@example.invalid")
	run(t, dir, "config", "user.name", "bench")
	run(t, dir, "config", "commit.gpgsign", "false")
	commitFiles(t, dir, files)
	return dir
}

func run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v: %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func commitFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	writeFiles(t, dir, files)
	run(t, dir, "add", "-A")
	run(t, dir, "commit", "-q", "-m", "change")
}

// results is a one-store Results whose file carries prov.
func staleResults(prov provenance.Provenance) *Results {
	s := &StoreResult{Kind: "residue", Store: "sqlite-doc", Seed: 1, Subjects: 2, Docs: 4, Records: 4, Sample: 1, Provenance: prov,
		Cells: []Cell{{Baseline: "B0", PhysicalResidue: 1, ProbePower: 1}, {Baseline: "B4", Records: 2, ProbePower: 1, WallMedianMs: 10, WallP95Ms: 12}}}
	return &Results{Residue: []*StoreResult{s}, Files: []*File{{Name: "residue-sqlite-doc.json", Kind: "residue", Store: "sqlite-doc", Prov: prov}}}
}

func checkStale(t *testing.T, dir string, prov provenance.Provenance, want bool, step string) *Results {
	t.Helper()
	r := staleResults(prov)
	r.Check(dir)
	f := r.Files[0]
	if f.Fresh.Stale != want {
		t.Fatalf("%s: stale = %v (%s), want %v", step, f.Fresh.Stale, f.Fresh.Why, want)
	}
	head := r.Headline()
	md := r.Markdown()
	for name, text := range map[string]string{"README table": head, "RESULTS.md": md} {
		marked := strings.Contains(text, "**stale**:")
		if marked != want {
			t.Errorf("%s: %s marked stale = %v, want %v:\n%s", step, name, marked, want, text)
		}
		if want && !strings.Contains(text, "re-run `go run ./cmd/amnesia-bench residue --store sqlite-doc`") {
			t.Errorf("%s: %s does not say how to re-measure:\n%s", step, name, text)
		}
		if label := f.Fresh.Label(); !strings.Contains(text, label) {
			t.Errorf("%s: %s does not name the commit %s", step, name, label)
		}
	}
	return r
}

// A row is stale once a measured path changes after its commit, and stays
// current when only unmeasured paths (docs, tests, the report) change.
func TestStaleWhenMeasuredCodeChanges(t *testing.T) {
	dir := gitRepo(t, map[string]string{
		"store/scan.go":            "package store\n",
		"store/scan_test.go":       "package store\n",
		"internal/bench/cell.go":   "package bench\n",
		"internal/bench/report.go": "package bench\n",
		"docs/bench.md":            "# bench\n",
		"go.mod":                   "module x\n",
	})
	t.Chdir(dir)
	prov := provenance.Capture(provenance.ResiduePaths)
	head := run(t, dir, "rev-parse", "HEAD")
	if prov.Commit != head {
		t.Fatalf("recorded commit %q, want HEAD %q (full hash, clean tree)", prov.Commit, head)
	}
	if !strings.HasPrefix(prov.MeasuredTree, "sha256:") || prov.GoVersion == "" || prov.GOOS == "" || prov.GOARCH == "" || prov.CPUs == 0 || prov.Date == "" || prov.MeasuredAt == "" || len(prov.MeasuredPaths) == 0 {
		t.Fatalf("provenance lacks a field: %+v", prov)
	}
	checkStale(t, dir, prov, false, "unchanged")

	commitFiles(t, dir, map[string]string{"docs/bench.md": "# bench, edited\n", "README.md": "x\n"})
	checkStale(t, dir, prov, false, "docs changed")
	commitFiles(t, dir, map[string]string{"store/scan_test.go": "package store // edited\n", "internal/bench/report.go": "package bench // edited\n"})
	checkStale(t, dir, prov, false, "tests and report code changed")
	commitFiles(t, dir, map[string]string{"internal/server/server.go": "package server\n"})
	checkStale(t, dir, prov, false, "serve code changed (not measured by residue)")

	commitFiles(t, dir, map[string]string{"store/scan.go": "package store // the scan changed\n"})
	r := checkStale(t, dir, prov, true, "store changed")
	if !strings.Contains(r.Headline(), "the measured code changed since (store/scan.go)") || !strings.Contains(r.Headline(), "measured on "+head[:7]) {
		t.Errorf("the README row does not say its code changed since %s:\n%s", head[:7], r.Headline())
	}
}

// The serve-capture benchmark also measures the server: a change there
// makes it stale, not the residue rows.
func TestStaleServeCaptureMeasuresTheServer(t *testing.T) {
	dir := gitRepo(t, map[string]string{"store/scan.go": "package store\n", "internal/server/server.go": "package server\n"})
	t.Chdir(dir)
	serve := provenance.Capture(provenance.ServePaths)
	residue := provenance.Capture(provenance.ResiduePaths)
	commitFiles(t, dir, map[string]string{"internal/server/server.go": "package server // edited\n"})
	if f := provenance.Check(dir, serve, nil); !f.Stale {
		t.Errorf("serve-capture not stale after the server changed")
	}
	if f := provenance.Check(dir, residue, nil); f.Stale {
		t.Errorf("residue stale after only the server changed: %s", f.Why)
	}
}

// A run on uncommitted changes records "+dirty" and the tree it measured:
// it is stale while HEAD holds other code, and current once exactly that
// code is committed.
func TestStaleDirtyRun(t *testing.T) {
	dir := gitRepo(t, map[string]string{"store/scan.go": "package store\n", "docs/a.md": "a\n"})
	t.Chdir(dir)
	writeFiles(t, dir, map[string]string{"docs/a.md": "b\n"})
	if p := provenance.Capture(provenance.ResiduePaths); strings.HasSuffix(p.Commit, "+dirty") {
		t.Errorf("an uncommitted change to docs/ (not measured) made the commit %q", p.Commit)
	}
	writeFiles(t, dir, map[string]string{"store/scan.go": "package store // uncommitted\n", "store/new.go": "package store\n"})
	prov := provenance.Capture(provenance.ResiduePaths)
	if !strings.HasSuffix(prov.Commit, "+dirty") {
		t.Fatalf("commit %q lacks +dirty with uncommitted changes in store/", prov.Commit)
	}
	if st := run(t, dir, "diff", "--cached", "--name-only"); st != "" {
		t.Errorf("Capture staged files in the repository's own index: %q", st)
	}
	checkStale(t, dir, prov, true, "dirty, not committed")
	commitFiles(t, dir, nil)
	checkStale(t, dir, prov, false, "dirty changes committed as measured")
	commitFiles(t, dir, map[string]string{"store/scan.go": "package store // later\n"})
	checkStale(t, dir, prov, true, "changed after the dirty run")

	// Recorded dirty, without a tree (files written before trees were recorded).
	old := prov
	old.MeasuredTree = ""
	checkStale(t, dir, old, true, "dirty, no tree")
}

// A file without a commit (written before commits were recorded) still
// loads, says "commit unknown" and is stale; so is a commit this
// repository does not hold.
func TestStaleUnknownCommit(t *testing.T) {
	dir := gitRepo(t, map[string]string{"store/scan.go": "package store\n"})
	res := t.TempDir()
	old := `{"kind":"residue","store":"sqlite-doc","seed":1,"corpus_subjects":2,"corpus_documents":4,"corpus_records":4,"sample":1,"machine":"linux/amd64, 2 CPUs, go1.26.8","date":"2026-11-30","cells":[{"baseline":"B0"},{"baseline":"B4"}]}`
	if err := os.WriteFile(filepath.Join(res, "residue-sqlite-doc.json"), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Load(res)
	if err != nil {
		t.Fatalf("a results file without the provenance fields does not load: %v", err)
	}
	if len(r.Files) != 1 || r.Residue[0].Machine != "linux/amd64, 2 CPUs, go1.26.8" || r.Residue[0].Date != "2026-11-30" {
		t.Fatalf("old file's machine/date not read: %+v", r.Files)
	}
	r.Check(dir)
	if f := r.Files[0].Fresh; !f.Stale || f.Label() != "commit unknown" {
		t.Errorf("no commit: stale %v, label %q; want stale, \"commit unknown\"", f.Stale, f.Label())
	}
	if !strings.Contains(r.Headline(), "commit unknown") || !strings.Contains(r.Headline(), "**stale**") {
		t.Errorf("README row does not say commit unknown and stale:\n%s", r.Headline())
	}
	missing := provenance.Provenance{Commit: strings.Repeat("ab", 20)}
	if f := provenance.Check(dir, missing, provenance.ResiduePaths); !f.Stale {
		t.Errorf("a commit this repository does not hold is not stale")
	}
	if f := provenance.Check(t.TempDir(), provenance.Provenance{Commit: run(t, dir, "rev-parse", "HEAD")}, provenance.ResiduePaths); !f.Stale {
		t.Errorf("outside any repository, a row is not stale")
	}
}

// A FAISS results file is measured again with the build tag that links
// FAISS.
func TestRerunFAISSNeedsTag(t *testing.T) {
	f := &File{Kind: "residue", Store: "faiss-hnsw"}
	if got := f.Rerun(); got != "go run -tags faiss ./cmd/amnesia-bench residue --store faiss-hnsw" {
		t.Errorf("Rerun = %q", got)
	}
}

// A cell's note (a baseline that does not apply to the store, and why) is
// in RESULTS.md under the store's table.
func TestMarkdownShowsNotes(t *testing.T) {
	r := &Results{Residue: []*StoreResult{{Kind: "residue", Store: "chromem", Cells: []Cell{
		{Baseline: "B1", Note: "not applicable: chromem-go has no compaction"},
		{Baseline: "B5", Note: "one batch (saga.RunBatch): each store reclaims once for all subjects"},
	}}}}
	md := r.Markdown()
	if !strings.Contains(md, "- B1: not applicable: chromem-go has no compaction") {
		t.Errorf("RESULTS.md lacks the B1 note:\n%s", md)
	}
	if !strings.Contains(md, "- B5: one batch") {
		t.Errorf("RESULTS.md lacks the B5 note")
	}
}

// A results file of one store is not made stale by a change to another
// store's adapter, and is by a change to its own adapter, to the code its
// adapter shares with others of its kind, or to the code every store
// shares. A file whose benchmark ran several stores is stale when any of
// theirs changed; one whose benchmark ran none only when the code every
// store shares changed; a file whose stores are not known (provenance.Check)
// and a store StoreDirs does not name keep every adapter in their measured
// code.
func TestStaleOnlyForItsOwnAdapter(t *testing.T) {
	dir := gitRepo(t, map[string]string{
		"store/scan.go":                     "package store\n",
		"store/sqlitedoc/sqlitedoc.go":      "package sqlitedoc\n",
		"store/sqlitevec/sqlitevec.go":      "package sqlitevec\n",
		"store/internal/sqlitex/sqlitex.go": "package sqlitex\n",
		"store/chromem/chromem.go":          "package chromem\n",
		"store/internal/pg/pg.go":           "package pg\n",
	})
	t.Chdir(dir)
	prov := provenance.Capture(provenance.ResiduePaths)
	checkStale(t, dir, prov, false, "unchanged")
	kind := func(k string) *File { // a file of kind k measured at prov, checked at HEAD
		r := &Results{Files: []*File{{Kind: k, Prov: prov}}}
		r.Check(dir)
		return r.Files[0]
	}

	commitFiles(t, dir, map[string]string{"store/chromem/chromem.go": "package chromem // edited\n", "store/internal/pg/pg.go": "package pg // edited\n"})
	checkStale(t, dir, prov, false, "another store's adapter changed")
	if f := provenance.Check(dir, prov, nil); !f.Stale {
		t.Error("a file whose stores are not known is not stale after an adapter changed")
	}
	if f := provenance.CheckStores(dir, prov, nil, "sqlite-doc", "some-new-store"); !f.Stale {
		t.Error("a file of a store StoreDirs does not name is not stale after an adapter changed")
	}
	if f := provenance.CheckStores(dir, prov, nil, "chromem"); !f.Stale {
		t.Error("chromem's file is not stale after its adapter changed")
	}
	if f := provenance.CheckStores(dir, prov, nil, "sqlite-vec", "chromem"); !f.Stale {
		t.Error("a file of sqlite-vec and chromem is not stale after chromem's adapter changed")
	}
	if f := provenance.CheckStores(dir, prov, nil); f.Stale {
		t.Errorf("a file that ran no store is stale after two adapters changed: %s", f.Why)
	}
	for k, want := range map[string]bool{"scanner": false, "serve-capture": false, "capture": false, "model": false, "workers": true, "some-new-kind": true} {
		if f := kind(k); f.Fresh.Stale != want {
			t.Errorf("a %s file after chromem's and the pg adapters' code changed: stale = %v, want %v (%s)", k, f.Fresh.Stale, want, f.Fresh.Why)
		}
	}

	prov = provenance.Capture(provenance.ResiduePaths)
	commitFiles(t, dir, map[string]string{"store/sqlitevec/sqlitevec.go": "package sqlitevec // edited\n"})
	checkStale(t, dir, prov, false, "sqlite-vec's adapter changed")
	if f := kind("capture"); !f.Fresh.Stale {
		t.Error("the capture file is not stale after sqlite-vec's adapter, which it writes to, changed")
	}

	commitFiles(t, dir, map[string]string{"store/internal/sqlitex/sqlitex.go": "package sqlitex // edited\n"})
	checkStale(t, dir, prov, true, "the SQLite code sqlite-doc's adapter shares changed")

	prov = provenance.Capture(provenance.ResiduePaths)
	commitFiles(t, dir, map[string]string{"store/scan.go": "package store // edited\n"})
	if f := provenance.CheckStores(dir, prov, nil, "chromem"); !f.Stale {
		t.Error("chromem's file is not stale after the scanner every store shares changed")
	}
	if f := kind("scanner"); !f.Fresh.Stale {
		t.Error("the scanner file is not stale after the scanner changed")
	}
}

// Each kind of results file names the bench-all part that measures it
// again; StaleParts lists those of the stale files once each.
func TestStaleParts(t *testing.T) {
	for _, c := range []struct {
		f    File
		want string
	}{
		{File{Kind: "residue", Store: "faiss-hnsw"}, "residue:faiss-hnsw"},
		{File{Kind: "scale", Store: "sqlite-doc"}, "scale-sqlite"},
		{File{Kind: "scale", Store: "postgres"}, "scale-postgres"},
		{File{Kind: "serve-capture"}, "serve"},
		{File{Kind: "fixedcost", Store: "sqlite-doc"}, "fixedcost"},
		{File{Kind: "pgvector"}, "pgvector"},
		{File{Kind: "trace"}, ""},
	} {
		if got := c.f.Part(); got != c.want {
			t.Errorf("%s %s: part %q, want %q", c.f.Kind, c.f.Store, got, c.want)
		}
	}
	stale, fresh := &provenance.Freshness{Stale: true}, &provenance.Freshness{}
	r := &Results{Files: []*File{
		{Kind: "fixedcost", Store: "sqlite-doc", Fresh: stale},
		{Kind: "fixedcost", Store: "sqlite-doc", Fresh: stale},
		{Kind: "residue", Store: "redis", Fresh: fresh},
		{Kind: "residue", Store: "sqlite-vec", Fresh: stale},
		{Kind: "trace", Fresh: stale},
	}}
	if got := strings.Join(r.StaleParts(), " "); got != "fixedcost residue:sqlite-vec" {
		t.Errorf("StaleParts = %q", got)
	}
}
