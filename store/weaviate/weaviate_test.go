package weaviate_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/storetest"
	"github.com/amnesia-dev/amnesia/store/weaviate"
)

const dim = 24

func vector(seed int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(math.Sin(float64(seed*dim+i)*1.37)) + float32(seed)*1e-3
	}
	return v
}

// content is long enough for needles, distinct per seed, and holds
// characters encoding/json escapes (<, &) and non-ASCII, so that a needle
// in the wrong encoding would not be found.
func content(seed int) string {
	return fmt.Sprintf("Conversation %d: the user said <their> appointment & results are on day %d at clinic Zürich-%d, please remember.", seed, seed*7, seed*13)
}

// server is a Weaviate server for tests: the shared one (scripts/services
// start), or one a test starts.
type server struct {
	url, data string
}

func shared(t *testing.T) server {
	t.Helper()
	u, d := os.Getenv("AMNESIA_TEST_WEAVIATE_URL"), os.Getenv("AMNESIA_TEST_WEAVIATE_DATADIR")
	if u == "" || d == "" {
		t.Skip("AMNESIA_TEST_WEAVIATE_URL and AMNESIA_TEST_WEAVIATE_DATADIR are not set: run eval \"$(scripts/services start)\" to build and start a Weaviate server")
	}
	return server{url: u, data: d}
}

func className(t *testing.T) string {
	var b [6]byte
	rand.Read(b[:])
	return "Amnesia" + hex.EncodeToString(b[:])
}

func openClass(t *testing.T, srv server, class string, create bool) *weaviate.Store {
	t.Helper()
	s, err := weaviate.Open(context.Background(), weaviate.Options{Name: "memory", URL: srv.url, Class: class, Dimensions: dim, DataDir: srv.data, Poll: 30 * time.Second}, create)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newStore(t *testing.T, srv server) *weaviate.Store {
	t.Helper()
	class := className(t)
	s := openClass(t, srv, class, true)
	t.Cleanup(func() { dropClass(srv, class) })
	return s
}

func dropClass(srv server, class string) {
	req, _ := http.NewRequest(http.MethodDelete, srv.url+"/v1/schema/"+class, nil)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
}

func put(t *testing.T, s *weaviate.Store, key, tag string, seed int) {
	t.Helper()
	if err := s.Put(context.Background(), weaviate.Record{ID: key, Subject: tag, Content: content(seed), Vector: vector(seed)}); err != nil {
		t.Fatal(err)
	}
}

func nativeDelete(t *testing.T, srv server, class, key string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, srv.url+"/v1/objects/"+class+"/"+weaviate.KeyUUID(key), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("native delete: %s", resp.Status)
	}
}

func TestWeaviateConformance(t *testing.T) {
	srv := shared(t)
	storetest.Run(t, storetest.Harness{
		Open: func(t *testing.T) store.Store { return newStore(t, srv) },
		Put: func(t *testing.T, s store.Store, key, tag string, seed int) {
			put(t, s.(*weaviate.Store), key, tag, seed)
		},
	})
}

// The needles are in the encoding the server writes: planted records are
// found in the class's files (WAL or segment), every needle of them, and
// a needle in another encoding (the raw text, with < and & unescaped) is
// not.
func TestWeaviateNeedlesMatchOnDiskEncoding(t *testing.T) {
	srv := shared(t)
	ctx := context.Background()
	s := newStore(t, srv)
	tagA, tagB := "hmac:5f1c0a9e77d24b6c8e13aa90f2d4c6b1e8a7f3d2c1b0a9e8d7c6b5a4f3e2d1c0", "hmac:0d1e2f3a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5a"
	put(t, s, "rec-a", tagA, 1)
	put(t, s, "rec-b", tagB, 2)
	ev, err := s.ReadEvidence(ctx, []string{"rec-a"})
	if err != nil {
		t.Fatal(err)
	}
	e := ev["rec-a"]
	want := len(weaviate.TextBytes(content(1))) + 4*dim
	if e == nil || e.RecordBytes != want || e.CoveredBytes != e.RecordBytes {
		t.Fatalf("evidence covers %d of %d bytes, want all %d of content and vector", e.CoveredBytes, e.RecordBytes, want)
	}
	if len(e.Vector) != dim || e.Filter[weaviate.DefaultSubject] != tagA {
		t.Fatalf("evidence lacks the vector or the subject tag")
	}
	var rep store.ScanReport
	deadline := time.Now().Add(20 * time.Second)
	for {
		if rep, err = s.ProbePhysical(ctx, store.NewNeedleSet(ev)); err != nil {
			t.Fatal(err)
		}
		if rep.Found["rec-a"] == len(e.Needles) || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond) // a flush moving it from WAL to segment
	}
	if rep.Found["rec-a"] != len(e.Needles) {
		t.Fatalf("the probe found %d of %d needles of a live record: needles are not in the server's encoding", rep.Found["rec-a"], len(e.Needles))
	}
	// The raw text, unescaped, is not what the server writes.
	raw := &store.Evidence{Key: "raw"}
	raw.AddWindows([]byte(content(1))[30:80]) // spans "<their> appointment & results"
	got, err := s.ProbePhysical(ctx, store.NewNeedleSet(map[string]*store.Evidence{"raw": raw}))
	if err != nil {
		t.Fatal(err)
	}
	if got.Found["raw"] == len(raw.Needles) {
		t.Fatalf("the unescaped text was found whole: the test does not show that the JSON escaping matters")
	}
	// After the erasure, the record's needles are gone, and what is not a
	// needle but stays (the subject tag as an inverted-index key of a
	// bucket nothing compacts yet) is said.
	if err := s.Delete(ctx, []string{"rec-a"}); err != nil {
		t.Fatal(err)
	}
	rc, err := s.Reclaim(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rc.State != "" || !strings.Contains(rc.Method, "subject tag (a keyed digest, no content) is still a key in") {
		t.Fatalf("reclaim: %s: %s: %s", rc.State, rc.Method, rc.Evidence)
	}
}

func TestWeaviateDeleteSubject(t *testing.T) {
	srv := shared(t)
	ctx := context.Background()
	s := newStore(t, srv)
	put(t, s, "a1", "tag-a", 1)
	put(t, s, "a2", "tag-a", 2)
	put(t, s, "b1", "tag-ab", 3) // a tag that word tokenization would relate
	ev, err := s.ReadEvidence(ctx, []string{"a1", "a2", "b1"})
	if err != nil {
		t.Fatal(err)
	}
	n, err := s.DeleteSubject(ctx, "tag-a")
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("deleted %d objects, want 2", n)
	}
	res, err := s.ProbeLogical(ctx, []string{"a1", "a2", "b1"}, ev)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Found() || res[1].Found() {
		t.Fatalf("subject's objects still returned: %+v", res[:2])
	}
	if !res[2].ByID || !res[2].ByFilter || !res[2].BySimilarity {
		t.Fatalf("another subject's object not returned by every path: %+v", res[2])
	}
}

// A key that is a UUID is the object's id; any other key maps to a stable
// UUIDv5.
func TestKeyUUID(t *testing.T) {
	u := "6F9619FF-8B86-D011-B42D-00C04FC964FF"
	if weaviate.KeyUUID(u) != strings.ToLower(u) {
		t.Fatalf("a UUID key is not kept")
	}
	a, b := weaviate.KeyUUID("rec-a"), weaviate.KeyUUID("rec-b")
	if a == b || a != weaviate.KeyUUID("rec-a") || a[14] != '5' {
		t.Fatalf("KeyUUID(rec-a)=%s, KeyUUID(rec-b)=%s: want distinct, stable UUIDv5s", a, b)
	}
}

func TestWeaviateCheck(t *testing.T) {
	srv := shared(t)
	ctx := context.Background()
	s := newStore(t, srv)
	put(t, s, "rec-a", "tag-1", 1)
	class := strings.TrimPrefix(s.Location(), srv.url+" class ")
	good := store.Config{Name: "m", Type: weaviate.Type, DSN: srv.url, Collection: class, Dimensions: dim, DataDir: srv.data}
	if errs := store.Errors(weaviate.Check(ctx, good)); len(errs) != 0 {
		t.Fatalf("check of a good store: %v", errs)
	}
	for _, p := range weaviate.Check(ctx, good) {
		if strings.Contains(p.Message, "PERSISTENCE_") {
			t.Errorf("the shared server runs with the documented settings, yet check says: %s", p)
		}
	}
	for _, tc := range []struct {
		mod func(*store.Config)
		key string
	}{
		{func(c *store.Config) { c.Collection = "Nope" + class }, "collection"},
		{func(c *store.Config) { c.Dimensions = dim + 1 }, "dimensions"},
		{func(c *store.Config) { c.Subject = "nope" }, "subject"},
		{func(c *store.Config) { c.DSN = "http://127.0.0.1:1" }, "dsn"},
		{func(c *store.Config) { c.DataDir = filepath.Join(srv.data, "nope") }, "data_dir"},
	} {
		c := good
		tc.mod(&c)
		ps := store.Errors(weaviate.Check(ctx, c))
		if len(ps) != 1 || ps[0].Key != tc.key {
			t.Errorf("check with a bad %s = %v, want one error on %s", tc.key, ps, tc.key)
		}
	}
}

// ---- servers a test starts ----

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// own starts a Weaviate server of the test's own on data, with the
// settings docs/weaviate.md gives, or, with defaults true, with the
// server's default persistence settings. It returns the server and a
// function that stops it (SIGTERM, as a restart would).
func own(t *testing.T, data string, defaults bool) (server, func()) {
	return ownOn(t, data, defaults, 0)
}

// ownOn is own on a given REST port (0: a free one).
func ownOn(t *testing.T, data string, defaults bool, port int) (server, func()) {
	t.Helper()
	bin := os.Getenv("AMNESIA_TEST_WEAVIATE_BIN")
	if bin == "" {
		t.Skip("AMNESIA_TEST_WEAVIATE_BIN is not set: run eval \"$(scripts/services start)\", which builds weaviate-server")
	}
	if port == 0 {
		port = freePort(t)
	}
	env := []string{
		"AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED=true", "PERSISTENCE_DATA_PATH=" + data, "DEFAULT_VECTORIZER_MODULE=none",
		"CLUSTER_HOSTNAME=node1", "CLUSTER_ADVERTISE_ADDR=127.0.0.1", "CLUSTER_BIND_ADDR=127.0.0.1",
		fmt.Sprintf("CLUSTER_GOSSIP_BIND_PORT=%d", freePort(t)), fmt.Sprintf("CLUSTER_DATA_BIND_PORT=%d", freePort(t)),
		fmt.Sprintf("RAFT_PORT=%d", freePort(t)), fmt.Sprintf("RAFT_INTERNAL_RPC_PORT=%d", freePort(t)),
		"RAFT_BOOTSTRAP_EXPECT=1", fmt.Sprintf("GRPC_PORT=%d", freePort(t)), "GO_PROFILING_DISABLE=true", "DISABLE_TELEMETRY=true",
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
	}
	if !defaults {
		env = append(env, "PERSISTENCE_MAX_REUSE_WAL_SIZE=0", "PERSISTENCE_MEMTABLES_FLUSH_DIRTY_AFTER_SECONDS=1", "PERSISTENCE_LSM_SEGMENTS_CLEANUP_INTERVAL_HOURS=1")
	}
	var log bytes.Buffer
	cmd := exec.Command(bin, "--host", "127.0.0.1", "--port", fmt.Sprint(port), "--scheme", "http")
	cmd.Env, cmd.Stdout, cmd.Stderr = env, &log, &log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}
	t.Cleanup(stop)
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(3 * time.Minute)
	for {
		resp, err := http.Get(url + "/v1/.well-known/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-done:
			t.Fatalf("weaviate-server exited: %s", tail(log.String()))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("weaviate-server not ready after 3 minutes: %s", tail(log.String()))
		}
		time.Sleep(300 * time.Millisecond)
	}
	return server{url: url, data: data}, stop
}

func tail(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}

// After an erasure the server is restarted on the same data; the deleted
// object must not come back by any query path, nor its bytes be in the
// files, while the other object is still there.
func TestWeaviateRestartAfterErasure(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	srv, stop := own(t, data, false)
	class := className(t)
	s := openClass(t, srv, class, true)
	put(t, s, "rec-a", "tag-1", 1)
	put(t, s, "rec-b", "tag-2", 2)
	ev, err := s.ReadEvidence(ctx, []string{"rec-a"})
	if err != nil {
		t.Fatal(err)
	}
	ev["rec-b"] = mustEvidence(t, s, "rec-b")
	if err := s.Delete(ctx, []string{"rec-a"}); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Reclaim(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.State != "" {
		t.Fatalf("reclaim under the documented settings: %s: %s", rep.State, rep.Evidence)
	}
	s.Close()
	stop()

	srv2, _ := own(t, data, false)
	s2 := openClass(t, srv2, class, false)
	res, err := s2.ProbeLogical(ctx, []string{"rec-a", "rec-b"}, ev)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Found() {
		t.Fatalf("the deleted object came back after a restart: %+v", res[0])
	}
	if !res[1].ByID || !res[1].ByFilter || !res[1].BySimilarity {
		t.Fatalf("the live object is not returned by every path after the restart: %+v", res[1])
	}
	phys, err := s2.ProbePhysical(ctx, store.NewNeedleSet(ev))
	if err != nil {
		t.Fatal(err)
	}
	if phys.Found["rec-a"] != 0 || phys.Found["rec-b"] == 0 {
		t.Fatalf("after the restart the files hold %v needles (want none of rec-a, some of rec-b)", phys.Found)
	}
}

func mustEvidence(t *testing.T, s *weaviate.Store, key string) *store.Evidence {
	t.Helper()
	ev, err := s.ReadEvidence(context.Background(), []string{key})
	if err != nil || ev[key] == nil {
		t.Fatalf("evidence of %s: %v", key, err)
	}
	return ev[key]
}

// Under the server's default persistence settings a small WAL is reused,
// never flushed: a deleted object's bytes stay in it, across a restart
// too. Reclaim says PENDING, names the WAL and the setting; the physical
// probe after a restart still finds the bytes (what the certificate then
// reports as residue), though no query returns the object.
func TestWeaviateDefaultSettingsKeepBytesInWAL(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	srv, stop := own(t, data, true)
	class := className(t)
	s, err := weaviate.Open(ctx, weaviate.Options{Name: "memory", URL: srv.url, Class: class, Dimensions: dim, DataDir: data, Poll: 3 * time.Second}, true)
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, "rec-a", "tag-1", 1)
	put(t, s, "rec-b", "tag-2", 2)
	ev, err := s.ReadEvidence(ctx, []string{"rec-a"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, []string{"rec-a"}); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Reclaim(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.State != weaviate.StatePending {
		t.Fatalf("reclaim state %q, want %s: %s", rep.State, weaviate.StatePending, rep.Evidence)
	}
	for _, want := range []string{"lsm/objects/", ".wal", "write-ahead log", "PERSISTENCE_MAX_REUSE_WAL_SIZE is unset", "flushed after 60 s"} {
		if !strings.Contains(rep.Evidence, want) {
			t.Errorf("reclaim evidence does not say %q: %s", want, rep.Evidence)
		}
	}
	ps := weaviate.Check(ctx, store.Config{Name: "m", Type: weaviate.Type, DSN: srv.url, Collection: class, DataDir: data})
	if !strings.Contains(fmt.Sprint(ps), "PERSISTENCE_MAX_REUSE_WAL_SIZE") {
		t.Errorf("check does not warn about the WAL setting: %v", ps)
	}
	s.Close()
	stop()

	srv2, _ := own(t, data, true)
	s2 := openClass(t, srv2, class, false)
	res, err := s2.ProbeLogical(ctx, []string{"rec-a"}, ev)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Found() {
		t.Fatalf("the deleted object came back after a restart: %+v", res[0])
	}
	phys, err := s2.ProbePhysical(ctx, store.NewNeedleSet(ev))
	if err != nil {
		t.Fatal(err)
	}
	if phys.Found["rec-a"] == 0 {
		t.Fatalf("the reused WAL no longer holds the deleted object's bytes: the default-settings residue this test documents is gone")
	}
}

// Without data_dir there are no files to scan: the store does not declare
// the physical probe, so the erasure stops at the logical level instead of
// failing the store.
func TestWeaviateWithoutDataDir(t *testing.T) {
	srv := shared(t)
	s := newStore(t, server{url: srv.url})
	if s.Info().Has(store.CapProbePhysical) {
		t.Fatalf("physical probe declared without data_dir: %v", s.Info().Capabilities)
	}
	rep, err := s.Reclaim(context.Background())
	if err != nil || rep.State != weaviate.StateNotMeasured || !strings.Contains(rep.Method, "data_dir is not set") || !strings.Contains(rep.Evidence, "only the logical probes") {
		t.Fatalf("reclaim without data_dir: %+v, %v", rep, err)
	}
}
