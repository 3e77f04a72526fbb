package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
)

const preflightOwner = "preflight.owner@example.org"

func preflightFixture(t *testing.T) e2eFixture {
	t.Helper()
	return buildE2EFixture(t, t.TempDir(), []e2eDoc{
		{ID: "pf-1", Owner: preflightOwner, Text: "Preflight owner asked on Tuesday to move the delivery of order 883311 to the depot at gate 14, and to call back after five."},
		{ID: "pf-2", Owner: "someone.else@example.org", Text: "Someone else booked a repair of machine 7741 for the second week of March, with spare parts from the northern warehouse."},
	})
}

// editConfig rewrites <state>/amnesia.yaml with old replaced by new.
func editConfig(t *testing.T, st, old, new string) {
	t.Helper()
	p := filepath.Join(st, "amnesia.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("amnesia.yaml has no %q:\n%s", old, b)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), old, new, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
}

func fileSum(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return "absent"
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// ledgerState returns the transparency log's size and how many of the
// subject's artifacts are suppressed (or erased) in the ledger.
func ledgerState(t *testing.T, st string, artifacts []string) (leaves int64, suppressed int) {
	t.Helper()
	ctx := context.Background()
	sd, err := state.Open(st)
	if err != nil {
		t.Fatal(err)
	}
	l, err := lineage.Open(ctx, sd.LedgerSpec())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if leaves, err = l.(interface {
		LogSize(context.Context) (int64, error)
	}).LogSize(ctx); err != nil {
		t.Fatal(err)
	}
	for _, a := range artifacts {
		s, err := l.Suppressed(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		if s {
			suppressed++
		}
	}
	return leaves, suppressed
}

func traceOf(t *testing.T, st, subject string) lineage.Trace {
	t.Helper()
	r := runBinary(t, nil, subject+"\n", "--state", st, "trace", "-", "--json")
	if r.code != 0 {
		t.Fatalf("trace: %s", r)
	}
	var tr lineage.Trace
	if err := json.Unmarshal([]byte(r.stdout), &tr); err != nil {
		t.Fatal(err)
	}
	return tr
}

func artifactIDs(tr lineage.Trace) []string {
	var out []string
	for _, a := range tr.Artifacts {
		out = append(out, a.ID)
	}
	return out
}

// A store of the trace that is not ready (wrong dimensions, a missing file,
// a closed port) stops forget and erase before anything is suppressed,
// deleted or logged: exit 8, one line naming the store and the reason, no
// erasure directory, no suppression, no log leaf, the store files as they
// were.
func TestPreflightRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		break_ func(t *testing.T, f e2eFixture) (store string)
		want   string
	}{
		{"wrong dimensions", func(t *testing.T, f e2eFixture) string {
			editConfig(t, f.state(), fmt.Sprintf("dimensions: %d", fixtureDim), "dimensions: 8")
			return "vectors"
		}, fmt.Sprintf("have %d dimensions, the configuration says 8", fixtureDim)},
		{"missing file", func(t *testing.T, f e2eFixture) string {
			if err := os.Rename(f.docsDB(), f.docsDB()+".elsewhere"); err != nil {
				t.Fatal(err)
			}
			return "docs"
		}, "does not exist"},
		{"closed port", func(t *testing.T, f e2eFixture) string {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			port := l.Addr().(*net.TCPAddr).Port
			l.Close()
			editConfig(t, f.state(), "type: sqlite-doc\n      path: ../docs.db", fmt.Sprintf("type: postgres\n      dsn: postgres://amnesia:s3cret-pw@127.0.0.1:%d/appdb", port))
			return "docs"
		}, "cannot connect to database appdb on 127.0.0.1:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := preflightFixture(t)
			st := f.state()
			tr := traceOf(t, st, preflightOwner)
			bad := tc.break_(t, f)
			sums := map[string]string{f.docsDB(): fileSum(t, f.docsDB()), f.vecsDB(): fileSum(t, f.vecsDB())}
			leaves0, _ := ledgerState(t, st, nil)
			for _, args := range [][]string{
				{"--state", st, "forget", "-", "--reason", "T-1", "--yes"},
				{"--state", st, "erase", "--trace", tr.ID, "--reason", "T-1"},
			} {
				r := runBinary(t, nil, preflightOwner+"\n", args...)
				if r.code != exitNotReady {
					t.Fatalf("want exit %d:\n%s", exitNotReady, r)
				}
				if !strings.Contains(r.stderr, "store "+bad+" (") || !strings.Contains(r.stderr, "NOT READY: ") || !strings.Contains(r.stderr, tc.want) || !strings.Contains(r.stderr, "nothing was changed") {
					t.Errorf("stderr does not name store %s and %q:\n%s", bad, tc.want, r)
				}
				if strings.Contains(r.stdout+r.stderr, "s3cret-pw") {
					t.Errorf("output holds the DSN's password:\n%s", r)
				}
			}
			if ds := erasureDirs(t, st); len(ds) != 0 {
				t.Errorf("a refused erasure left %v", ds)
			}
			leaves, suppressed := ledgerState(t, st, artifactIDs(tr))
			if leaves != leaves0 || suppressed != 0 {
				t.Errorf("after the refusal: %d log leaves (was %d), %d of %d artifacts suppressed", leaves, leaves0, suppressed, len(tr.Artifacts))
			}
			for p, sum := range sums {
				if got := fileSum(t, p); got != sum {
					t.Errorf("%s changed (or was created) by a refused erasure", p)
				}
			}
			if n := len(certFiles(t, st)); n != 0 {
				t.Errorf("%d certificates after a refusal", n)
			}
		})
	}
}

// --allow-partial erases from the ready stores and leaves the other alone:
// the certificate is issued, incomplete (exit 7), and the store that was not
// ready is not opened.
func TestPreflightAllowPartial(t *testing.T) {
	f := preflightFixture(t)
	st := f.state()
	editConfig(t, st, fmt.Sprintf("dimensions: %d", fixtureDim), "dimensions: 8")
	vecs := fileSum(t, f.vecsDB())
	r := runBinary(t, nil, preflightOwner+"\n", "--state", st, "forget", "-", "--reason", "T-2", "--yes", "--allow-partial")
	if r.code != exitIncomplete {
		t.Fatalf("want exit %d:\n%s", exitIncomplete, r)
	}
	if !strings.Contains(r.stderr, "--allow-partial: erasing without vectors") {
		t.Errorf("stderr does not say what is left out:\n%s", r)
	}
	_, payload := singleCertificate(t, st)
	var docs, vectors int
	for _, a := range predicateOf(t, payload)["artifacts"].([]any) {
		a := a.(map[string]any)
		switch a["store"] {
		case "docs":
			if a["outcome"] != "VERIFIED" {
				t.Errorf("docs artifact %v: %v", a["id"], a["outcome"])
			}
			docs++
		case "vectors":
			if a["outcome"] == "VERIFIED" {
				t.Errorf("vectors artifact %v VERIFIED, but the store was left alone", a["id"])
			}
			vectors++
		}
	}
	if docs == 0 || vectors == 0 {
		t.Fatalf("certificate has %d docs and %d vectors artifacts", docs, vectors)
	}
	if fileSum(t, f.vecsDB()) != vecs {
		t.Errorf("the store that was not ready was changed")
	}
}

// A queued erasure whose store is not ready is not started by the worker:
// exit 8, the job is released (pending, not failed), nothing is erased,
// and the log says why.
func TestPreflightWorker(t *testing.T) {
	f := preflightFixture(t)
	st := f.state()
	tr := traceOf(t, st, preflightOwner)
	if r := runBinary(t, nil, "", "--state", st, "erase", "--trace", tr.ID, "--reason", "T-3", "--queue"); r.code != 0 {
		t.Fatalf("erase --queue: %s", r)
	}
	editConfig(t, st, fmt.Sprintf("dimensions: %d", fixtureDim), "dimensions: 8")
	r := runBinary(t, nil, "", "--state", st, "worker", "--once")
	if r.code != exitNotReady || !strings.Contains(r.stderr, "NOT READY") {
		t.Fatalf("worker --once: want exit %d:\n%s", exitNotReady, r)
	}
	if ds := erasureDirs(t, st); len(ds) != 0 {
		t.Errorf("the worker started the erasure: %v", ds)
	}
	sd, err := state.Open(st)
	if err != nil {
		t.Fatal(err)
	}
	l, err := lineage.Open(context.Background(), sd.LedgerSpec())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	jobs, err := l.(lineage.Queue).Jobs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].State != lineage.JobPending {
		t.Fatalf("jobs %+v: want the one job left pending", jobs)
	}
	log, _ := os.ReadFile(sd.LogPath())
	if !strings.Contains(string(log), "erasure not started, a store of its trace is not ready") {
		t.Errorf("amnesia.log does not say why the erasure did not start")
	}
}

// amnesia check prints one line per store with its resolved path and OK or
// NOT READY with the reason, and exits 8 when one is not ready.
func TestCheckCommand(t *testing.T) {
	f := preflightFixture(t)
	st := f.state()
	r := runBinary(t, nil, "", "--state", st, "check")
	if r.code != 0 {
		t.Fatalf("check: %s", r)
	}
	for _, want := range []string{"docs         sqlite-doc " + f.docsDB() + "  OK", "vectors      sqlite-vec " + f.vecsDB() + "  OK"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("check output lacks %q:\n%s", want, r.stdout)
		}
	}
	editConfig(t, st, fmt.Sprintf("dimensions: %d", fixtureDim), "dimensions: 8")
	r = runBinary(t, nil, "", "--state", st, "check")
	if r.code != exitNotReady || !strings.Contains(r.stdout, "vectors      sqlite-vec "+f.vecsDB()+"  NOT READY: dimensions: ") || !strings.Contains(r.stdout, "docs         sqlite-doc "+f.docsDB()+"  OK") {
		t.Errorf("check with wrong dimensions:\n%s", r)
	}
}

// A strict configuration: the error names the key, its line and the key
// that was probably meant.
func TestCheckStrictConfig(t *testing.T) {
	p := filepath.Join(t.TempDir(), "amnesia.yaml")
	os.WriteFile(p, []byte("version: 1\nstores:\n  - name: pg\n    type: postgres\n    dsn: postgres://h/db\n    lock_timout: 5s\n"), 0o600)
	r := runBinary(t, nil, "", "check", "--config", p)
	if r.code != exitError || !strings.Contains(r.stderr, "line 6: unknown key lock_timout in stores[0] (did you mean lock_timeout?)") {
		t.Errorf("check of a misspelt key:\n%s", r)
	}
}

// init --config ./amnesia.yaml with a relative store path resolves it
// against the file's directory (not the state directory), writes it
// absolute into the state's copy, says so, and checks the store.
func TestInitConfigRelativePath(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "data", "x.db")
	s, err := sqlitedoc.Open(context.Background(), "x", db, true)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	os.WriteFile(filepath.Join(dir, "amnesia.yaml"), []byte("version: 1\nstores:\n  - name: x\n    type: sqlite-doc\n    path: data/x.db\n"), 0o600)
	t.Chdir(dir)
	out, errOut, code := runCLI(t, "", "--state", "st", "init", "--config", "./amnesia.yaml")
	if code != 0 {
		t.Fatalf("init: exit %d: %s\n%s", code, errOut, out)
	}
	for _, want := range []string{"stores[0].path", "data/x.db -> " + db, "x            sqlite-doc " + db + "  OK"} {
		if !strings.Contains(out, want) {
			t.Errorf("init output lacks %q:\n%s", want, out)
		}
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "st", "amnesia.yaml"))
	if err != nil || !strings.Contains(string(cfg), "path: "+db+"\n") {
		t.Errorf("the state's amnesia.yaml does not hold the absolute path %s (%v):\n%s", db, err, cfg)
	}
	if _, err := os.Stat(filepath.Join(dir, "st", "data", "x.db")); !os.IsNotExist(err) {
		t.Errorf("a store was created under the state directory")
	}
	out, _, code = runCLI(t, "", "--state", "st", "check")
	if code != 0 || !strings.Contains(out, "x            sqlite-doc "+db+"  OK") {
		t.Errorf("check after init: exit %d:\n%s", code, out)
	}

	// A store that is not ready at init is a warning; the state is created.
	os.WriteFile(filepath.Join(dir, "other.yaml"), []byte("version: 1\nstores:\n  - name: y\n    type: sqlite-doc\n    path: data/none.db\n"), 0o600)
	out, errOut, code = runCLI(t, "", "--state", "st2", "init", "--config", "other.yaml")
	if code != 0 || !strings.Contains(out, "NOT READY: path: "+filepath.Join(dir, "data", "none.db")+" does not exist") || !strings.Contains(out, "warning: 1 of 1 stores not ready") {
		t.Errorf("init with a store not ready: exit %d: %s\n%s", code, errOut, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "st2", "pepper")); err != nil {
		t.Errorf("init with a store not ready did not create the state: %v", err)
	}
}
