package bench

import (
	"bytes"
	"os"
	"regexp"
	"testing"

	"github.com/amnesia-dev/amnesia/internal/bench/provenance"
)

// Every number README.md and RESULTS.md publish must come from a results
// file: the generated parts must equal what the committed results produce,
// and the hand-written rest of the README must carry no measured figure.
func TestPublishedNumbersComeFromResults(t *testing.T) {
	r, err := Load("../../bench/results")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Residue) == 0 {
		t.Fatal("bench/results/ holds no residue results")
	}
	// The stale marks depend on the repository's history: without git
	// (e.g. a module download) they cannot be reproduced here.
	if _, err := provenance.Toplevel("../.."); err != nil {
		t.Skipf("no git repository here to check the stale marks against: %v", err)
	}
	r.Check("../..")
	results, err := os.ReadFile("../../RESULTS.md")
	if err != nil {
		t.Fatal(err)
	}
	if string(results) != r.Markdown() {
		t.Errorf("RESULTS.md differs from what bench/results/ generates (a results file or its stale mark changed): run `go run ./cmd/amnesia-bench report`")
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := r.UpdateReadme(readme)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(want, readme) {
		t.Errorf("README.md's headline table differs from what bench/results/ generates: run `go run ./cmd/amnesia-bench report`")
	}
	i, j := bytes.Index(readme, []byte(ReadmeBegin)), bytes.Index(readme, []byte(ReadmeEnd))
	rest := append(append([]byte{}, readme[:i]...), readme[j:]...)
	figure := regexp.MustCompile(`\d+(\.\d+)?\s?(%|ms\b|µs|MB/s|s per|seconds)`)
	if m := figure.FindAll(rest, -1); len(m) > 0 {
		t.Errorf("README.md states measured figures outside the generated table: %q", m)
	}
}
