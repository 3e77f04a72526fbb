//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/internal/demo"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/chroma"
)

// An application whose memory is a collection of a Chroma server: capture
// records lineage, `amnesia check` sees the store ready, forget erases the
// subject's records from every query path and from the persist directory,
// and the certificate's entry for the store is VERIFIED by the byte scan —
// or, in a build whose SQLite has no FTS5, says that Chroma's full-text
// index was not merged.
//
// It runs a Chroma server of its own: the byte scan covers the whole
// persist directory, and Chroma writes new index files from uninitialised
// memory, so a collection another package's test creates meanwhile on a
// shared server could hold fragments of this test's records.
func TestChromaForget(t *testing.T) {
	bin := os.Getenv("AMNESIA_TEST_CHROMA_BIN")
	if bin == "" {
		t.Skip("AMNESIA_TEST_CHROMA_BIN is not set: scripts/services start installs chromadb and exports it (the chroma command)")
	}
	d := t.TempDir()
	u := startChroma(t, bin, d)
	ctx := context.Background()
	root := t.TempDir()
	coll := fmt.Sprintf("cli-forget-%d", time.Now().UnixNano())
	cfg := state.DefaultConfig()
	cfg.Stores = []state.StoreConfig{{Name: "memory", Type: chroma.Type, DSN: u, Collection: coll, DataDir: d}}
	sd, err := state.Init(filepath.Join(root, "state"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ledger, err := lineage.Open(ctx, sd.LedgerSpec())
	if err != nil {
		t.Fatal(err)
	}
	cs, err := chroma.Open(ctx, chroma.Options{Name: "memory", DSN: u, Collection: coll, DataDir: d}, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.DeleteCollection(context.Background()) })
	vecs := capture.New(ledger, sd.Keyer, sd.Config.Scope).Vectors(cs)
	stamp := coll[len("cli-forget-"):]
	turns := []struct{ id, owner, text string }{
		{"t1", "alice@example.org", "Alice (" + stamp + "): please move my dentist appointment to Thursday afternoon, not the morning."},
		{"t2", "bob@example.org", "Bob (" + stamp + "): the parcel arrived damaged, I would like a replacement sent to the office."},
		{"t3", "alice@example.org", "Alice (" + stamp + "): and remind me to bring the insurance card that expires next spring."},
	}
	for _, tu := range turns {
		if err := vecs.Put(ctx, capture.Vector{ID: tu.id, Subject: tu.owner, Content: tu.text, Embedding: demo.Embed(tu.text, 16)}); err != nil {
			t.Fatal(err)
		}
	}
	ledger.Close()
	ev, err := cs.ReadEvidence(ctx, []string{"t1", "t3"})
	if err != nil || len(ev) != 2 {
		t.Fatalf("evidence: %v, %v", ev, err)
	}

	r := runBinary(t, nil, "", "--state", sd.Path, "check")
	if r.code != exitOK || !strings.Contains(r.stdout, "memory") {
		t.Fatalf("check:\n%s", r)
	}
	r = runBinary(t, nil, "yes\n", "--state", sd.Path, "forget", "alice@example.org", "--reason", "DSR-17")
	// The binary is built without the sqlite_fts5 tag (helpers_test.go):
	// its SQLite cannot merge Chroma's full-text index, which the state
	// says; a binary built with the tag reports VERIFIED.
	if !regexp.MustCompile(`(?m)^store memory +\d+ artifacts +residue (VERIFIED|` + chroma.StateFTSNotMerged + `) `).MatchString(r.stdout) {
		t.Fatalf("forget: want the store VERIFIED or %s:\n%s", chroma.StateFTSNotMerged, r)
	}
	_, payload := singleCertificate(t, sd.Path)
	sj, _ := json.Marshal(predicateOf(t, payload)["declared_scope"])
	if strings.Contains(string(sj), "dentist") || strings.Contains(string(sj), "alice@") {
		t.Fatalf("the certificate holds personal data:\n%s", sj)
	}
	// The records are gone from every query path and from the files; Bob's stays.
	res, err := cs.ProbeLogical(ctx, []string{"t1", "t2", "t3"}, ev)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Found() || res[2].Found() || !res[1].ByID {
		t.Fatalf("after forget: %+v", res)
	}
	phys, err := cs.ProbePhysical(ctx, store.NewNeedleSet(ev))
	if err != nil {
		t.Fatal(err)
	}
	if phys.NeedlesFound != 0 {
		t.Fatalf("after forget %d needles of Alice's records are in the persist directory", phys.NeedlesFound)
	}
}

// startChroma starts `chroma run` on a free loopback port with persist
// directory dir; it is killed when the test ends.
func startChroma(t *testing.T, bin, dir string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "run", "--host", "127.0.0.1", "--port", strconv.Itoa(port), "--path", dir)
	cmd.Env = append(os.Environ(), "ANONYMIZED_TELEMETRY=False")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	for i := 0; i < 120; i++ {
		if resp, err := http.Get(url + "/api/v2/heartbeat"); err == nil {
			resp.Body.Close()
			return url
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("%s run did not answer on %s", bin, url)
	return ""
}
