package bench

import (
	"bytes"
	"os"
	"regexp"
	"strings"
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

// bench/README.md's sections on issue #13's performance points describe
// how each benchmark runs and what it found; their figures are in
// RESULTS.md, generated from the results files, so the hand-written text
// quotes none (a target, after ≤ or ≥, is not a measured figure).
func TestPublishedBenchReadmeQuotesNoPerfFigure(t *testing.T) {
	b, err := os.ReadFile("../../bench/README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	figure := regexp.MustCompile(`(≤ |≥ )?\d[\d,]*(\.\d+)?\s?(%|ms\b|µs|MB/s|GB\b|s\b|seconds|minutes|hours|(records|artifacts|traces)/s|fsyncs)`)
	for _, h := range []string{"## Byte scanner", "## Trace and capture", "## Fixed cost per erasure"} {
		i := strings.Index(text, h)
		if i < 0 {
			t.Errorf("bench/README.md has no section %q", h)
			continue
		}
		sec := text[i+len(h):]
		if j := strings.Index(sec, "\n## "); j >= 0 {
			sec = sec[:j]
		}
		if !strings.Contains(sec, "RESULTS.md") {
			t.Errorf("%s does not point to RESULTS.md for its figures", h)
		}
		for _, m := range figure.FindAllString(sec, -1) {
			if !strings.HasPrefix(m, "≤ ") && !strings.HasPrefix(m, "≥ ") {
				t.Errorf("%s quotes a figure by hand: %q", h, m)
			}
		}
	}
}
