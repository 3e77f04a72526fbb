// Package tsatest is the one test time-stamping authority of the module:
// `openssl ts` as a real RFC 3161 TSA, with a throwaway CA and TSA
// certificate made with the openssl CLI, and an HTTP server that pipes
// each query into `openssl ts -reply`. The timestamp package's tests and
// the end-to-end tests of cmd/amnesia both use it.
package tsatest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Options shape the authority New makes.
type Options struct {
	RSA     bool   // RSA-2048 keys instead of P-256
	ESSAlg  string // ess_cert_id_alg: "sha1" gives SigningCertificate, else V2 (default sha256)
	Digests string // the imprint digests it accepts (default "sha256, sha384, sha512")
}

// TSA is a test authority. Its directory holds openssl.cnf, ca.pem and
// ca.key (the root), tsa.pem and tsa.key (the TSA certificate).
type TSA struct {
	URL  string // POST application/timestamp-query here (set by Start)
	Root string // path of the CA certificate (PEM) the TSA chains to
	Dir  string // the authority's files
	// SignerArgs, if set, are passed to every `openssl ts -reply` its
	// server runs (-signer and -inkey, to sign with another certificate).
	SignerArgs []string
	mu         sync.Mutex // openssl ts -reply updates the serial file
	n          int
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
other_policies = 1.2.3.4.5
digests = %[2]s
accuracy = secs:1, millisecs:500, microsecs:100
clock_precision_digits = 0
ordering = yes
tsa_name = yes
ess_cert_id_chain = no
ess_cert_id_alg = %[3]s
`

// Start makes a default authority (New) and starts its server at URL.
func Start(t testing.TB) *TSA {
	t.Helper()
	a := New(t, Options{})
	a.URL = a.Serve(t, nil).URL
	return a
}

// New makes the CA and TSA certificates in a temporary directory, without
// a server; the test is skipped when openssl is missing.
func New(t testing.TB, o Options) *TSA {
	t.Helper()
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl not found: these tests use `openssl ts` as the TSA (.ci/run installs it)")
	}
	if o.ESSAlg == "" {
		o.ESSAlg = "sha256"
	}
	if o.Digests == "" {
		o.Digests = "sha256, sha384, sha512"
	}
	a := &TSA{Dir: t.TempDir()}
	if err := os.WriteFile(a.Path("openssl.cnf"), fmt.Appendf(nil, config, a.Dir, o.Digests, o.ESSAlg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a.Path("serial"), []byte("01\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	key := []string{"genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"}
	if o.RSA {
		key = []string{"genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"}
	}
	for _, args := range [][]string{
		append(key, "-out", "ca.key"),
		{"req", "-config", "openssl.cnf", "-x509", "-new", "-key", "ca.key", "-subj", "/CN=Amnesia Test Root", "-days", "3650", "-extensions", "ca_ext", "-out", "ca.pem"},
		append(key, "-out", "tsa.key"),
		{"req", "-config", "openssl.cnf", "-new", "-key", "tsa.key", "-subj", "/CN=Amnesia Test TSA", "-out", "tsa.csr"},
		{"x509", "-req", "-in", "tsa.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "365", "-extfile", "openssl.cnf", "-extensions", "tsa_ext", "-out", "tsa.pem"},
	} {
		if out, err := a.OpenSSL(args...); err != nil {
			t.Fatalf("openssl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	a.Root = a.Path("ca.pem")
	return a
}

// Path is the path of a file in the authority's directory.
func (a *TSA) Path(name string) string { return filepath.Join(a.Dir, name) }

// OpenSSL runs the openssl CLI in the authority's directory with its
// config.
func (a *TSA) OpenSSL(args ...string) ([]byte, error) {
	cmd := exec.Command("openssl", args...)
	cmd.Dir = a.Dir
	cmd.Env = append(os.Environ(), "OPENSSL_CONF="+a.Path("openssl.cnf"))
	return cmd.CombinedOutput()
}

// Reply runs `openssl ts -reply` on a DER TimeStampReq and returns the DER
// TimeStampResp; extra arguments are passed on (e.g. -signer, -inkey).
func (a *TSA) Reply(query []byte, extra ...string) ([]byte, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n++
	q, r := a.Path(fmt.Sprintf("q%d.der", a.n)), a.Path(fmt.Sprintf("r%d.der", a.n))
	if err := os.WriteFile(q, query, 0o600); err != nil {
		return nil, err
	}
	args := append([]string{"ts", "-reply", "-config", "openssl.cnf", "-queryfile", q, "-out", r}, extra...)
	if out, err := a.OpenSSL(args...); err != nil {
		return nil, fmt.Errorf("openssl ts -reply: %v: %s", err, out)
	}
	return os.ReadFile(r)
}

// Serve starts an HTTP TSA in front of openssl, closed when the test ends.
// mutate, if not nil, rewrites each query before openssl sees it (to play
// a TSA that answers another question than the one asked).
func (a *TSA) Serve(t testing.TB, mutate func([]byte) []byte) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/timestamp-query" {
			http.Error(w, "want POST application/timestamp-query", http.StatusBadRequest)
			return
		}
		q, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if mutate != nil {
			q = mutate(q)
		}
		resp, err := a.Reply(q, a.SignerArgs...)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/timestamp-reply")
		w.Write(resp)
	}))
	t.Cleanup(srv.Close)
	return srv
}
