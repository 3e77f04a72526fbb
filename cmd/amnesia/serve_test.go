package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/lineage/ledgertest"
)

// serveProc is a running `amnesia serve`.
type serveProc struct {
	cmd  *exec.Cmd
	url  string
	done chan struct{}
	err  error
	logs *bytes.Buffer
}

// startServe starts `amnesia serve --listen 127.0.0.1:0` and waits for its
// "listening on" line.
func startServe(t *testing.T, stateDir string, env []string, args ...string) *serveProc {
	t.Helper()
	cmd := exec.Command(amnesiaBin, append([]string{"--state", stateDir, "serve", "--listen", "127.0.0.1:0", "--lease", "3s", "--poll", "100ms"}, args...)...)
	cmd.Env = append(cleanEnv(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &serveProc{cmd: cmd, done: make(chan struct{}), logs: &bytes.Buffer{}}
	cmd.Stderr = p.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "amnesia serve: listening on "); ok {
				lines <- u
			}
		}
		io.Copy(io.Discard, out)
	}()
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			cmd.Process.Kill()
			<-p.done
		}
	})
	select {
	case p.url = <-lines:
	case <-p.done:
		t.Fatalf("amnesia serve exited: %v\n%s", p.err, p.logs)
	case <-time.After(30 * time.Second):
		t.Fatalf("amnesia serve did not start\n%s", p.logs)
	}
	return p
}

func (p *serveProc) call(t *testing.T, method, path, token string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, p.url+path, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return r.StatusCode, b
}

func createToken(t *testing.T, stateDir, role string) string {
	t.Helper()
	r := runBinary(t, nil, "", "--state", stateDir, "tokens", "create", "--role", role, "--scope", "default", "--name", "test-"+role)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "amn_") {
		t.Fatalf("tokens create: %s", r)
	}
	return strings.TrimSpace(r.stdout)
}

func TestTokensCommand(t *testing.T) {
	f := buildE2EFixture(t, t.TempDir(), nil)
	secret := createToken(t, f.state(), "operator")
	l := runBinary(t, nil, "", "--state", f.state(), "tokens", "list")
	if l.code != 0 || !strings.Contains(l.stdout, "operator") || strings.Contains(l.stdout, secret) {
		t.Fatalf("tokens list: %s", l)
	}
	b, _ := os.ReadFile(filepath.Join(f.state(), "tokens.json"))
	if strings.Contains(string(b), secret) {
		t.Fatal("tokens.json holds the secret")
	}
	id := strings.Fields(strings.Split(l.stdout, "\n")[1])[0]
	if r := runBinary(t, nil, "", "--state", f.state(), "tokens", "revoke", id); r.code != 0 {
		t.Fatalf("revoke: %s", r)
	}
	if r := runBinary(t, nil, "", "--state", f.state(), "tokens", "create", "--role", "root", "--scope", "default"); r.code != exitUsage {
		t.Fatalf("a bad role: %s", r)
	}
	p := startServe(t, f.state(), nil)
	if code, _ := p.call(t, "GET", "/v1/keys", secret, nil); code != 401 {
		t.Fatalf("a revoked token: %d", code)
	}
	// SIGTERM: a graceful exit.
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		if p.err != nil {
			t.Fatalf("serve after SIGTERM: %v\n%s", p.err, p.logs)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop on SIGTERM")
	}
}

// TestServeKilledMidErasureResumes: a serve process is SIGKILLed in the
// middle of an erasure it runs for a confirmed request (the test hook
// AMNESIA_CRASH_AFTER_JOURNAL); a new serve process on the same state
// directory claims the erasure when the lease ends, resumes it from its
// journal, and the request ends done with one valid certificate.
func TestServeKilledMidErasureResumes(t *testing.T) {
	f := buildE2EFixture(t, t.TempDir(), crashCorpus())
	st := f.state()
	op, au := createToken(t, st, "operator"), createToken(t, st, "auditor")
	a := startServe(t, st, []string{"AMNESIA_CRASH_AFTER_JOURNAL=6"})
	code, b := a.call(t, "POST", "/v1/requests", op, map[string]string{"subject": crashTarget, "reason": "GDPR-Art17-T-7"})
	if code != 201 {
		t.Fatalf("create: %d %s", code, b)
	}
	var req struct {
		ID, State, CertificateID, CertificateSHA256 string `json:"-"`
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	req.ID = m["id"].(string)
	code, b = a.call(t, "POST", "/v1/requests/"+req.ID+"/preview", op, map[string]any{})
	if code != 200 {
		t.Fatalf("preview: %d %s", code, b)
	}
	json.Unmarshal(b, &m)
	cnf := m["confirmation"].(string)
	if code, b = a.call(t, "POST", "/v1/requests/"+req.ID+"/confirm", op, map[string]string{"confirmation": cnf}); code != 200 {
		t.Fatalf("confirm: %d %s", code, b)
	}
	select {
	case <-a.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("serve was not killed by the crash hook\n%s", a.logs)
	}
	var ee *exec.ExitError
	if !errors.As(a.err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("serve ended with %v, want SIGKILL by the crash hook\n%s", a.err, a.logs)
	}
	if n := len(certFiles(t, st)); n != 0 {
		t.Fatalf("%d certificates after the crash, want none yet", n)
	}
	bp := startServe(t, st, nil)
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		code, b = bp.call(t, "GET", "/v1/requests/"+req.ID, au, nil)
		if code != 200 {
			t.Fatalf("get: %d %s", code, b)
		}
		m = map[string]any{}
		json.Unmarshal(b, &m)
		if m["state"] == "done" || m["state"] == "failed" {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if m["state"] != "done" {
		t.Fatalf("request after the restart: %s\n%s", b, bp.logs)
	}
	if n := len(certFiles(t, st)); n != 1 {
		t.Fatalf("%d certificates, want exactly one", n)
	}
	code, bundle := bp.call(t, "GET", "/v1/certificates/"+m["certificate_id"].(string), au, nil)
	if code != 200 {
		t.Fatalf("certificate: %d", code)
	}
	req2, _ := http.NewRequest("POST", bp.url+"/v1/verify", bytes.NewReader(bundle))
	req2.Header.Set("Authorization", "Bearer "+au)
	req2.Header.Set("Content-Type", "application/vnd.amnesia.certificate.v1+json")
	r, err := http.DefaultClient.Do(req2)
	if err != nil {
		t.Fatal(err)
	}
	vb, _ := io.ReadAll(r.Body)
	r.Body.Close()
	var v map[string]any
	json.Unmarshal(vb, &v)
	if v["valid"] != true {
		t.Fatalf("verify: %s", vb)
	}
	// No subject or token in either process's log.
	if s := bp.logs.String() + a.logs.String(); strings.Contains(s, crashTarget) || strings.Contains(s, op) {
		t.Fatal("serve's log holds the subject or a token")
	}
	lst := runBinary(t, nil, "", "--state", st, "requests", "--status", "done")
	if lst.code != 0 || !strings.Contains(lst.stdout, req.ID) {
		t.Fatalf("amnesia requests: %s", lst)
	}
}

// TestServesShareOnePostgresLedger: two serve processes on one PostgreSQL
// ledger and one state directory run the erasures of confirmed requests;
// every subject is erased exactly once (one claim, one certificate), and
// both processes did some of the work.
func TestServesShareOnePostgresLedger(t *testing.T) {
	const subjects = 6
	docs := workerCorpus(subjects)
	f := buildE2EFixtureLedger(t, t.TempDir(), ledgertest.PostgresDSN(t), docs)
	st := f.state()
	op := createToken(t, st, "operator")
	env := []string{"AMNESIA_TEST_WORKER_BARRIER=" + t.TempDir() + ":2"}
	a := startServe(t, st, env, "--id", "serve-A")
	b := startServe(t, st, env, "--id", "serve-B")
	var ids []string
	for i, d := range docs {
		p := a
		if i%2 == 1 {
			p = b
		}
		code, body := p.call(t, "POST", "/v1/requests", op, map[string]string{"subject": d.Owner, "reason": "GDPR-Art17-T-" + strconv.Itoa(i)})
		if code != 201 {
			t.Fatalf("create: %d %s", code, body)
		}
		var r map[string]any
		json.Unmarshal(body, &r)
		id := r["id"].(string)
		if code, body = p.call(t, "POST", "/v1/requests/"+id+"/preview", op, map[string]any{}); code != 200 {
			t.Fatalf("preview: %d %s", code, body)
		}
		json.Unmarshal(body, &r)
		if code, body = p.call(t, "POST", "/v1/requests/"+id+"/confirm", op, map[string]string{"confirmation": r["confirmation"].(string)}); code != 200 {
			t.Fatalf("confirm: %d %s", code, body)
		}
		ids = append(ids, id)
	}
	deadline := time.Now().Add(3 * time.Minute)
	certs := map[string]bool{}
	for _, id := range ids {
		for {
			code, body := a.call(t, "GET", "/v1/requests/"+id, op, nil)
			var r map[string]any
			json.Unmarshal(body, &r)
			if code == 200 && r["state"] == "done" {
				certs[r["certificate_id"].(string)] = true
				break
			}
			if r["state"] == "failed" || time.Now().After(deadline) {
				t.Fatalf("request %s: %d %s\nA:\n%s\nB:\n%s", id, code, body, a.logs, b.logs)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	if len(certs) != subjects || len(certFiles(t, st)) != subjects {
		t.Fatalf("%d certificates named by the requests, %d files; want %d", len(certs), len(certFiles(t, st)), subjects)
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
	byWorker := map[string]int{}
	for _, j := range jobs {
		if j.State != lineage.JobDone || j.Attempts != 1 {
			t.Errorf("job %s: %s after %d claims, want done after exactly 1", j.ID, j.State, j.Attempts)
		}
		byWorker[j.Worker]++
	}
	if len(jobs) != subjects || byWorker["serve-A"] == 0 || byWorker["serve-B"] == 0 {
		t.Fatalf("%d jobs, by worker %v: want %d shared by both", len(jobs), byWorker, subjects)
	}
}
