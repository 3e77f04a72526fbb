package timestamp

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// This file runs openssl as a real Time-Stamping Authority for the tests: a
// throwaway CA and TSA certificate made with the openssl CLI in t.TempDir(),
// an openssl config with a [tsa] section, and an httptest server that pipes
// each request into `openssl ts -reply`.

func needOpenSSL(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl not found in PATH: these tests use `openssl ts` as the TSA (.ci/run installs it)")
	}
}

// runOpenSSL runs openssl in dir and fails the test on error.
func runOpenSSL(t testing.TB, dir string, args ...string) []byte {
	t.Helper()
	out, err := opensslIn(dir, args...)
	if err != nil {
		t.Fatalf("openssl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func opensslIn(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("openssl", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "OPENSSL_CONF="+filepath.Join(dir, "openssl.cnf"))
	return cmd.CombinedOutput()
}

type tsaOptions struct {
	rsa     bool   // RSA-2048 keys instead of P-256
	essAlg  string // ess_cert_id_alg: "sha1" gives SigningCertificate, else V2
	digests string // accepted imprint digests
}

// testTSA is a CA, a TSA certificate signed by it and an openssl TSA config.
type testTSA struct {
	dir   string
	roots *x509.CertPool
	ca    *x509.Certificate
	mu    sync.Mutex // openssl ts -reply updates the serial file
	n     int
	// signerArgs, if set, are passed to every `openssl ts -reply` the
	// server runs (-signer and -inkey, to sign with another certificate).
	signerArgs []string
}

const baseConfig = `
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

func newTestTSA(t testing.TB, o tsaOptions) *testTSA {
	t.Helper()
	needOpenSSL(t)
	if o.essAlg == "" {
		o.essAlg = "sha256"
	}
	if o.digests == "" {
		o.digests = "sha256, sha384, sha512"
	}
	dir := t.TempDir()
	cfg := fmt.Sprintf(baseConfig, dir, o.digests, o.essAlg)
	if err := os.WriteFile(filepath.Join(dir, "openssl.cnf"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "serial"), []byte("01\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	keygen := []string{"genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"}
	if o.rsa {
		keygen = []string{"genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"}
	}
	runOpenSSL(t, dir, append(keygen, "-out", "ca.key")...)
	runOpenSSL(t, dir, "req", "-config", "openssl.cnf", "-x509", "-new", "-key", "ca.key",
		"-subj", "/CN=Amnesia Test Root", "-days", "3650", "-extensions", "ca_ext", "-out", "ca.pem")
	runOpenSSL(t, dir, append(keygen, "-out", "tsa.key")...)
	runOpenSSL(t, dir, "req", "-config", "openssl.cnf", "-new", "-key", "tsa.key",
		"-subj", "/CN=Amnesia Test TSA", "-out", "tsa.csr")
	runOpenSSL(t, dir, "x509", "-req", "-in", "tsa.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
		"-CAcreateserial", "-days", "365", "-extfile", "openssl.cnf", "-extensions", "tsa_ext", "-out", "tsa.pem")
	a := &testTSA{dir: dir, roots: x509.NewCertPool()}
	a.ca = readCert(t, filepath.Join(dir, "ca.pem"))
	a.roots.AddCert(a.ca)
	return a
}

func readCert(t testing.TB, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("%s: no PEM block", path)
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (a *testTSA) path(name string) string { return filepath.Join(a.dir, name) }

// reply runs `openssl ts -reply` on a DER TimeStampReq and returns the DER
// TimeStampResp; extra arguments are passed on (e.g. -signer, -inkey).
func (a *testTSA) reply(query []byte, extra ...string) ([]byte, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n++
	q := a.path(fmt.Sprintf("q%d.der", a.n))
	r := a.path(fmt.Sprintf("r%d.der", a.n))
	if err := os.WriteFile(q, query, 0o600); err != nil {
		return nil, err
	}
	args := append([]string{"ts", "-reply", "-config", "openssl.cnf", "-queryfile", q, "-out", r}, extra...)
	if out, err := opensslIn(a.dir, args...); err != nil {
		return nil, fmt.Errorf("openssl ts -reply: %v\n%s", err, out)
	}
	return os.ReadFile(r)
}

// server is an HTTP TSA in front of openssl. mutate, if not nil, rewrites
// each query before openssl sees it (to play a TSA that answers another
// question than the one asked).
func (a *testTSA) server(t testing.TB, mutate func([]byte) []byte) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/timestamp-query" {
			http.Error(w, "want POST application/timestamp-query", http.StatusBadRequest)
			return
		}
		q, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if mutate != nil {
			q = mutate(q)
		}
		resp, err := a.reply(q, a.signerArgs...)
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

// tokenFor makes a token with the openssl CLI alone: `openssl ts -query`
// with the given digest flag (and -cert unless noCert) on message, then
// `openssl ts -reply`.
func (a *testTSA) tokenFor(t testing.TB, message []byte, digest string, noCert bool) []byte {
	t.Helper()
	msg := a.path("msg-" + digest)
	if err := os.WriteFile(msg, message, 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"ts", "-query", "-data", msg, "-" + digest, "-out", a.path("query-" + digest)}
	if !noCert {
		args = append(args, "-cert")
	}
	runOpenSSL(t, a.dir, args...)
	q, err := os.ReadFile(a.path("query-" + digest))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := a.reply(q)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := parseResponse(resp)
	if err != nil {
		t.Fatalf("openssl reply: %v", err)
	}
	return tok
}

// opensslVerify runs `openssl ts -verify` on a DER token and message.
func (a *testTSA) opensslVerify(t testing.TB, token, message []byte) ([]byte, error) {
	t.Helper()
	f, err := os.CreateTemp(a.dir, "verify-*")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.WriteFile(f.Name()+".tok", token, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.Name()+".msg", message, 0o600); err != nil {
		t.Fatal(err)
	}
	return opensslIn(a.dir, "ts", "-verify", "-token_in", "-in", f.Name()+".tok",
		"-data", f.Name()+".msg", "-CAfile", a.path("ca.pem"))
}

// caSigner loads the CA's private key (PKCS #8 from genpkey).
func (a *testTSA) caSigner(t testing.TB) crypto.Signer {
	t.Helper()
	b, err := os.ReadFile(a.path("ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return k.(crypto.Signer)
}

// goLeaf issues, with Go's x509 and the CA key, a P-256 TSA certificate
// valid from notBefore to notAfter with the given extended key usage
// extension (nil: none). It writes it and its key as PEM files named
// base.pem and base.key for openssl, and returns both.
func (a *testTSA) goLeaf(t testing.TB, base string, notBefore, notAfter time.Time, eku *pkix.Extension) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "Amnesia Test TSA (" + base + ")"},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	if eku != nil {
		tmpl.ExtraExtensions = []pkix.Extension{*eku}
	}
	return a.goCert(t, base, tmpl, a.ca, a.caSigner(t))
}

// goCert issues tmpl for a new P-256 key, signed by parent, and writes it
// and its key as base.pem and base.key.
func (a *testTSA) goCert(t testing.TB, base string, tmpl, parent *x509.Certificate, parentKey crypto.Signer) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if tmpl.SerialNumber == nil {
		tmpl.SerialNumber = big.NewInt(time.Now().UnixNano())
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(a.path(base+".pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(a.path(base+".key"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600)
	return cert, key
}

// ekuExt builds an extendedKeyUsage extension.
func ekuExt(t testing.TB, critical bool, oids ...asn1.ObjectIdentifier) *pkix.Extension {
	t.Helper()
	v, err := asn1.Marshal(oids)
	if err != nil {
		t.Fatal(err)
	}
	return &pkix.Extension{Id: oidExtKeyUsage, Critical: critical, Value: v}
}
