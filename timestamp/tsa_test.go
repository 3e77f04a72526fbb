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
	"math/big"
	"os"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/internal/tsatest"
)

// The tests run openssl as a real Time-Stamping Authority: internal/tsatest,
// the module's one test TSA (a throwaway CA and TSA certificate made with
// the openssl CLI, an httptest server that pipes each request into
// `openssl ts -reply`). testTSA adds what these tests need of Go's x509.

type tsaOptions struct {
	rsa     bool   // RSA-2048 keys instead of P-256
	essAlg  string // ess_cert_id_alg: "sha1" gives SigningCertificate, else V2
	digests string // accepted imprint digests
}

// testTSA is a tsatest authority with its root parsed.
type testTSA struct {
	*tsatest.TSA
	roots *x509.CertPool
	ca    *x509.Certificate
}

func newTestTSA(t testing.TB, o tsaOptions) *testTSA {
	t.Helper()
	a := &testTSA{TSA: tsatest.New(t, tsatest.Options{RSA: o.rsa, ESSAlg: o.essAlg, Digests: o.digests}), roots: x509.NewCertPool()}
	a.ca = readCert(t, a.Root)
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

// tokenFor makes a token with the openssl CLI alone: `openssl ts -query`
// with the given digest flag (and -cert unless noCert) on message, then
// `openssl ts -reply`.
func (a *testTSA) tokenFor(t testing.TB, message []byte, digest string, noCert bool) []byte {
	t.Helper()
	msg := a.Path("msg-" + digest)
	if err := os.WriteFile(msg, message, 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"ts", "-query", "-data", msg, "-" + digest, "-out", a.Path("query-" + digest)}
	if !noCert {
		args = append(args, "-cert")
	}
	if out, err := a.OpenSSL(args...); err != nil {
		t.Fatalf("openssl %v: %v\n%s", args, err, out)
	}
	q, err := os.ReadFile(a.Path("query-" + digest))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := a.Reply(q)
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
	f, err := os.CreateTemp(a.Dir, "verify-*")
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
	return a.OpenSSL("ts", "-verify", "-token_in", "-in", f.Name()+".tok",
		"-data", f.Name()+".msg", "-CAfile", a.Path("ca.pem"))
}

// caSigner loads the CA's private key (PKCS #8 from genpkey).
func (a *testTSA) caSigner(t testing.TB) crypto.Signer {
	t.Helper()
	b, err := os.ReadFile(a.Path("ca.key"))
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
	os.WriteFile(a.Path(base+".pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(a.Path(base+".key"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600)
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
