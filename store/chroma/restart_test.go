//go:build linux

package chroma_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/chroma"
)

// startPrivate starts `chroma run` on a free loopback port with persist
// directory dir and returns its URL; the server is killed when the test
// ends (or stop is called).
func startPrivate(t *testing.T, bin, dir string) (url string, stop func()) {
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
	stop = func() {
		cmd.Process.Kill()
		cmd.Wait()
	}
	t.Cleanup(stop)
	url = fmt.Sprintf("http://127.0.0.1:%d", port)
	for i := 0; i < 120; i++ {
		if resp, err := http.Get(url + "/api/v2/heartbeat"); err == nil {
			resp.Body.Close()
			return url, stop
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("%s run did not answer on %s", bin, url)
	return "", nil
}

// What Reclaim leaves (the rebuilt collection, zeroed index slots, removed
// segment directories, a VACUUMed chroma.sqlite3) is what the server loads
// after a restart: every survivor is found by id and by its own vector, the
// deleted records by neither, and none of their bytes came back.
func TestChromaReclaimSurvivesRestart(t *testing.T) {
	bin := os.Getenv("AMNESIA_TEST_CHROMA_BIN")
	if bin == "" {
		t.Skip("AMNESIA_TEST_CHROMA_BIN is not set: scripts/services start exports it (the chroma command); this test runs a server of its own")
	}
	ctx := context.Background()
	dir := t.TempDir()
	url, stop := startPrivate(t, bin, dir)
	o := chroma.Options{Name: "m", DSN: url, Collection: "restart-check", DataDir: dir, Configuration: persisted}
	s, err := chroma.Open(ctx, o, true)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 12; i++ {
		put(t, s, fmt.Sprint("r", i), "tag", 500+i)
	}
	gone := []string{"r0", "r1", "r2"}
	ev, err := s.ReadEvidence(ctx, gone)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reclaim(ctx); err != nil {
		t.Fatal(err)
	}
	s.Close()
	stop()

	url, _ = startPrivate(t, bin, dir)
	o.DSN = url
	s, err = chroma.Open(ctx, o, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := 0; i < 12; i++ {
		k := fmt.Sprint("r", i)
		r, err := s.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if (r != nil) != (i >= 3) {
			t.Fatalf("%s after restart: present=%v", k, r != nil)
		}
		if r == nil {
			continue
		}
		ns, err := s.Search(ctx, r.Embedding, 1)
		if err != nil || len(ns) != 1 || ns[0].ID != k {
			t.Fatalf("%s after restart: a query with its own vector returns %+v, %v", k, ns, err)
		}
	}
	res, err := s.ProbeLogical(ctx, gone, ev)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Found() {
			t.Fatalf("deleted record back after restart: %+v", r)
		}
	}
	phys, err := s.ProbePhysical(ctx, store.NewNeedleSet(ev))
	if err != nil {
		t.Fatal(err)
	}
	if phys.NeedlesFound != 0 {
		t.Fatalf("after restart %d needles of the deleted records are in the persist directory", phys.NeedlesFound)
	}
}
