// Package tsatest runs `openssl ts` as a real RFC 3161 time-stamping
// authority for tests: a throwaway CA and TSA certificate made with the
// openssl CLI, and an HTTP server that pipes each query into
// `openssl ts -reply`.
package tsatest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// TSA is a running test authority.
type TSA struct {
	URL  string // POST application/timestamp-query here
	Root string // path of the CA certificate (PEM) the TSA chains to
	dir  string
	mu   sync.Mutex
	n    int
}

const config = `
[req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[ca_ext]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[tsa_ext]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = critical,timeStamping
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
[tsa]
default_tsa = tsa1
[tsa1]
serial = %[1]s/serial
crypto_device = builtin
signer_cert = %[1]s/tsa.pem
signer_key = %[1]s/tsa.key
signer_digest = sha256
default_policy = 1.2.3.4.1
digests = sha256, sha384, sha512
accuracy = secs:1
ordering = yes
tsa_name = yes
ess_cert_id_alg = sha256
`

// Start makes the CA and TSA certificates in a temporary directory and
// starts the server; the test is skipped when openssl is missing.
func Start(t testing.TB) *TSA {
	t.Helper()
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl not found: these tests use `openssl ts` as the TSA (.ci/run installs it)")
	}
	a := &TSA{dir: t.TempDir()}
	if err := os.WriteFile(a.path("openssl.cnf"), fmt.Appendf(nil, config, a.dir), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a.path("serial"), []byte("01\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	key := []string{"genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"}
	for _, args := range [][]string{
		append(key, "-out", "ca.key"),
		{"req", "-config", "openssl.cnf", "-x509", "-new", "-key", "ca.key", "-subj", "/CN=amnesia test root", "-days", "30", "-extensions", "ca_ext", "-out", "ca.pem"},
		append(key, "-out", "tsa.key"),
		{"req", "-config", "openssl.cnf", "-new", "-key", "tsa.key", "-subj", "/CN=amnesia test TSA", "-out", "tsa.csr"},
		{"x509", "-req", "-in", "tsa.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "30", "-extfile", "openssl.cnf", "-extensions", "tsa_ext", "-out", "tsa.pem"},
	} {
		if out, err := a.openssl(args...); err != nil {
			t.Fatalf("openssl %v: %v\n%s", args, err, out)
		}
	}
	a.Root = a.path("ca.pem")
	srv := httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(srv.Close)
	a.URL = srv.URL
	return a
}

func (a *TSA) path(name string) string { return filepath.Join(a.dir, name) }

func (a *TSA) openssl(args ...string) ([]byte, error) {
	cmd := exec.Command("openssl", args...)
	cmd.Dir = a.dir
	cmd.Env = append(os.Environ(), "OPENSSL_CONF="+a.path("openssl.cnf"))
	return cmd.CombinedOutput()
}

func (a *TSA) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/timestamp-query" {
		http.Error(w, "want POST application/timestamp-query", http.StatusBadRequest)
		return
	}
	q, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n++
	qf, rf := a.path(fmt.Sprintf("q%d.der", a.n)), a.path(fmt.Sprintf("r%d.der", a.n))
	if err := os.WriteFile(qf, q, 0o600); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if out, err := a.openssl("ts", "-reply", "-config", "openssl.cnf", "-queryfile", qf, "-out", rf); err != nil {
		http.Error(w, fmt.Sprintf("openssl ts -reply: %v: %s", err, out), http.StatusInternalServerError)
		return
	}
	resp, err := os.ReadFile(rf)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/timestamp-reply")
	w.Write(resp)
}
