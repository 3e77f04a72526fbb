package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/internal/state"
)

// setOwners gives every store of the installation at stateDir the owner
// host (owner: in amnesia.yaml): their files are on that host's disk.
func setOwners(t *testing.T, stateDir, host string) {
	t.Helper()
	path := filepath.Join(stateDir, "amnesia.yaml")
	cfg, err := state.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range cfg.Stores {
		cfg.Stores[i].Owner = host
	}
	b, err := cfg.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// Stores in files with owners: forget and erase run an erasure at once
// only on the host that holds the trace's stores in files (--host). Without
// --host, or with another host's name, they refuse before anything is
// erased and say how to queue the erasure for that host's worker.
func TestForgetRunsOnlyOnTheOwnerHost(t *testing.T) {
	docs := appDeletedDocs()
	f := buildE2EFixture(t, t.TempDir(), docs)
	setOwners(t, f.state(), "host-b")
	alice := []byte(docs[0].Text[:40])
	if !inStoreFiles(t, f.docsDB(), alice) {
		t.Fatal("alice's document is not in the docs file: the premise failed")
	}
	for _, extra := range [][]string{nil, {"--host", "host-a"}} {
		args := append([]string{"--state", f.state(), "forget", "alice@example.org", "--reason", "DSR-9", "--yes"}, extra...)
		out, errOut, code := runCLI(t, "", args...)
		if code != exitUsage || !strings.Contains(errOut, "host-b") || !strings.Contains(errOut, "--queue") || !strings.Contains(errOut, "nothing was erased") {
			t.Fatalf("forget %v: exit %d, stderr %q; want exit %d naming host-b, --queue and that nothing was erased", extra, code, errOut, exitUsage)
		}
		if strings.Contains(out+errOut, "alice@example.org") {
			t.Errorf("forget %v printed the subject id", extra)
		}
	}
	if _, errOut, code := runCLI(t, "", "--state", f.state(), "forget", "alice@example.org", "--reason", "DSR-9", "--yes", "--host", "bad host"); code != exitUsage || !strings.Contains(errOut, "--host") {
		t.Fatalf("forget --host 'bad host': exit %d, stderr %q; want exit %d", code, errOut, exitUsage)
	}
	if !inStoreFiles(t, f.docsDB(), alice) {
		t.Fatal("a refused forget erased alice's document")
	}
	out, errOut, code := runCLI(t, "", "--state", f.state(), "forget", "alice@example.org", "--reason", "DSR-9", "--yes", "--host", "host-b")
	if code != exitOK {
		t.Fatalf("forget --host host-b: exit %d: %s\n%s", code, errOut, out)
	}
	if inStoreFiles(t, f.docsDB(), alice) {
		t.Error("after forget on the owner host alice's document is still in the docs file")
	}
}
