package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/internal/saga"
)

// The test hooks (AMNESIA_CRASH_AFTER_JOURNAL in internal/saga, the worker
// barrier AMNESIA_TEST_WORKER_BARRIER here) are only compiled into a binary
// built with the tag amnesia_testhooks, as TestMain builds the binary these
// tests run. A release build neither has them nor reads the variables.
func TestReleaseBuildHasNoTestHooks(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not found")
	}
	for _, c := range []struct {
		tags     []string
		has, not string
	}{
		{nil, "testhooks_off.go", "testhooks.go"},
		{[]string{"-tags", "amnesia_testhooks"}, "testhooks.go", "testhooks_off.go"},
	} {
		args := append(append([]string{"list"}, c.tags...), "-f", "{{.ImportPath}}: {{join .GoFiles \" \"}}", ".", "../../internal/saga")
		out, err := exec.Command(goTool, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("go %v: %v\n%s", args, err, out)
		}
		for _, pkg := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			files := " " + pkg[strings.Index(pkg, ":")+1:] + " "
			if !strings.Contains(files, " "+c.has+" ") || strings.Contains(files, " "+c.not+" ") {
				t.Errorf("go %v: %s, want %s and not %s", args, pkg, c.has, c.not)
			}
		}
	}

	if saga.TestHooks {
		t.Skip("this test binary is built with -tags amnesia_testhooks")
	}
	dir := t.TempDir()
	t.Setenv("AMNESIA_TEST_WORKER_BARRIER", dir+":2")
	testBarrier("worker-A") // with the hook, it would mark dir and wait 30s for a second worker
	if es, err := os.ReadDir(dir); err != nil || len(es) != 0 {
		t.Errorf("a release build's worker read AMNESIA_TEST_WORKER_BARRIER: %d marks in the barrier, %v", len(es), err)
	}
}
