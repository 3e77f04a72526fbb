package timestamp

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	dtimestamp "github.com/digitorus/timestamp"
	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

var checkpoint = []byte("amnesia.example/log\n42\nq6tE3n0yZ2b1u4bWc1Jw2m0Zp9X7m9h5wF5qvC4Zl0o=\n")

// request asks the openssl TSA for a token over checkpoint.
func request(t *testing.T, a *testTSA) *Token {
	t.Helper()
	srv := a.Serve(t, nil)
	tok, err := Request(context.Background(), srv.URL, checkpoint, nil)
	if err != nil {
		t.Fatalf("Request: %v", err)
	}
	return tok
}

func TestRequestVerify(t *testing.T) {
	a := newTestTSA(t, tsaOptions{})
	before := time.Now().Add(-2 * time.Second)
	tok := request(t, a)
	after := time.Now().Add(2 * time.Second)

	if tok.GenTime.Before(before) || tok.GenTime.After(after) {
		t.Errorf("genTime %v not between %v and %v", tok.GenTime, before, after)
	}
	if !tok.Policy.Equal(asn1.ObjectIdentifier{1, 2, 3, 4, 1}) {
		t.Errorf("policy %v, want the TSA's default 1.2.3.4.1", tok.Policy)
	}
	if tok.HashAlgorithm != crypto.SHA256 {
		t.Errorf("hash %v", tok.HashAlgorithm)
	}
	if tok.SerialNumber == nil || tok.SerialNumber.Sign() <= 0 {
		t.Errorf("serial %v", tok.SerialNumber)
	}
	if tok.TSAName != "CN=Amnesia Test TSA" || tok.TSASubject() != "CN=Amnesia Test TSA" {
		t.Errorf("TSA name %q, subject %q", tok.TSAName, tok.TSASubject())
	}
	if tok.Accuracy != 1500100*time.Microsecond || !tok.Ordering || tok.Nonce == nil {
		t.Errorf("accuracy %v ordering %v nonce %v", tok.Accuracy, tok.Ordering, tok.Nonce)
	}
	if tok.Chain != nil {
		t.Errorf("Request without Roots set Chain")
	}

	info, err := Verify(tok.DER, checkpoint, a.roots, nil)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if !info.GenTime.Equal(tok.GenTime) || info.SerialNumber.Cmp(tok.SerialNumber) != 0 {
		t.Errorf("Verify info %v/%v differs from Request's %v/%v", info.GenTime, info.SerialNumber, tok.GenTime, tok.SerialNumber)
	}
	if len(info.Chain) != 2 || !info.Chain[1].Equal(a.ca) {
		t.Errorf("chain has %d certificates, want TSA and root", len(info.Chain))
	}

	// The same with the chain check inside Request.
	srv := a.Serve(t, nil)
	tok2, err := Request(context.Background(), srv.URL, checkpoint, &RequestOptions{Roots: a.roots})
	if err != nil {
		t.Fatalf("Request with Roots: %v", err)
	}
	if len(tok2.Chain) != 2 {
		t.Errorf("Request with Roots: chain %d", len(tok2.Chain))
	}
	_, err = Request(context.Background(), srv.URL, checkpoint, &RequestOptions{Roots: newTestTSA(t, tsaOptions{}).roots})
	if !errors.Is(err, ErrChain) {
		t.Errorf("Request with another root: %v, want ErrChain", err)
	}
}

func TestOpenSSLAcceptsToken(t *testing.T) {
	for _, o := range []tsaOptions{{}, {rsa: true, essAlg: "sha1"}} {
		a := newTestTSA(t, o)
		tok := request(t, a)
		if out, err := a.opensslVerify(t, tok.DER, checkpoint); err != nil || !strings.Contains(string(out), "Verification: OK") {
			t.Errorf("%+v: openssl ts -verify rejected the token Request returned: %v\n%s", o, err, out)
		}
		// The cross-check can fail: openssl rejects another message.
		if out, err := a.opensslVerify(t, tok.DER, []byte("another checkpoint")); err == nil {
			t.Errorf("%+v: openssl ts -verify accepted the token for another message\n%s", o, out)
		}
		if _, err := Verify(tok.DER, checkpoint, a.roots, nil); err != nil {
			t.Errorf("%+v: Verify: %v", o, err)
		}
	}
}

func TestVerifyWrongMessage(t *testing.T) {
	a := newTestTSA(t, tsaOptions{})
	tok := request(t, a)
	for _, m := range [][]byte{nil, []byte("x"), append(append([]byte{}, checkpoint...), '\n'), checkpoint[:len(checkpoint)-1]} {
		if _, err := Verify(tok.DER, m, a.roots, nil); !errors.Is(err, ErrImprint) {
			t.Errorf("message %q: %v, want ErrImprint", m, err)
		}
	}
}

func TestVerifyOtherRoot(t *testing.T) {
	a := newTestTSA(t, tsaOptions{})
	tok := request(t, a)
	other := newTestTSA(t, tsaOptions{})
	_, err := Verify(tok.DER, checkpoint, other.roots, nil)
	if !errors.Is(err, ErrChain) {
		t.Fatalf("another root: %v, want ErrChain", err)
	}
	t.Logf("another root: %v", err)
	if _, err := Verify(tok.DER, checkpoint, nil, nil); !errors.Is(err, ErrChain) {
		t.Errorf("nil roots: %v, want ErrChain", err)
	}
	// The TSA certificate itself is no root: it is not a CA.
	tsaOnly := x509.NewCertPool()
	tsaOnly.AddCert(tok.Signer)
	if _, err := Verify(tok.DER, checkpoint, tsaOnly, nil); err != nil {
		// Go accepts a trusted leaf as its own root; that is the caller's
		// explicit choice, so either outcome is fine, but log it.
		t.Logf("TSA certificate as root: %v", err)
	}
	if _, err := Verify(tok.DER, checkpoint, x509.NewCertPool(), nil); !errors.Is(err, ErrChain) {
		t.Errorf("empty roots: %v, want ErrChain", err)
	}
}

// TestVerifyEveryByteChange changes every byte of real tokens, each in
// several ways, and requires every changed token to be rejected.
func TestVerifyEveryByteChange(t *testing.T) {
	for _, o := range []tsaOptions{{}, {essAlg: "sha1"}, {rsa: true}} {
		a := newTestTSA(t, o)
		tok := request(t, a)
		if _, err := Verify(tok.DER, checkpoint, a.roots, nil); err != nil {
			t.Fatalf("%+v: unchanged token: %v", o, err)
		}
		counts := map[error]int{}
		var accepted []string
		mut := make([]byte, len(tok.DER))
		for i := range tok.DER {
			for _, x := range []byte{0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0xff} {
				copy(mut, tok.DER)
				mut[i] ^= x
				_, err := Verify(mut, checkpoint, a.roots, nil)
				if err == nil {
					accepted = append(accepted, positionName(tok.DER, i, x))
					continue
				}
				kind := errors.Unwrap(err)
				switch kind {
				case ErrMalformed, ErrSignature, ErrChain, ErrNoCertificate, ErrImprint:
					counts[kind]++
				default:
					t.Errorf("%+v: byte %d ^ %#x: error %v wraps no sentinel", o, i, x, err)
				}
			}
		}
		t.Logf("%+v: %d bytes x 9 changes, all rejected: %v", o, len(tok.DER), counts)
		if len(accepted) > 0 {
			t.Errorf("%+v: %d changed tokens verified: %s", o, len(accepted), strings.Join(accepted, "; "))
		}
		// Truncations and extensions.
		for n := 0; n < len(tok.DER); n++ {
			if _, err := Verify(tok.DER[:n], checkpoint, a.roots, nil); err == nil {
				t.Errorf("%+v: token truncated to %d bytes verified", o, n)
			}
		}
		if _, err := Verify(append(append([]byte{}, tok.DER...), 0), checkpoint, a.roots, nil); !errors.Is(err, ErrMalformed) {
			t.Errorf("%+v: token with a trailing byte: %v", o, err)
		}
	}
}

// TestVerifyEveryByteValue changes every byte of a P-256 and an RSA token to
// each of its 255 other values. It takes minutes, so it runs only with
// AMNESIA_TIMESTAMP_EXHAUSTIVE=1. The one change it accepts is the documented
// rsaEncryption -> sha256WithRSAEncryption swap in an RSA token.
func TestVerifyEveryByteValue(t *testing.T) {
	if os.Getenv("AMNESIA_TIMESTAMP_EXHAUSTIVE") == "" {
		t.Skip("set AMNESIA_TIMESTAMP_EXHAUSTIVE=1 to try all 255 changes of every byte (minutes)")
	}
	for _, o := range []tsaOptions{{}, {rsa: true}} {
		a := newTestTSA(t, o)
		tok := request(t, a)
		swap, _ := rsaSignatureAlgorithm(tok.DER)
		mut := make([]byte, len(tok.DER))
		for i := range tok.DER {
			for v := 1; v < 256; v++ {
				copy(mut, tok.DER)
				mut[i] ^= byte(v)
				if _, err := Verify(mut, checkpoint, a.roots, nil); err == nil && !(o.rsa && i == swap && mut[i] == 0x0b) {
					t.Errorf("%+v: changed token verified: %s", o, positionName(tok.DER, i, byte(v)))
				}
			}
		}
	}
}

// rsaSignatureAlgorithm returns the index of the last byte of the
// rsaEncryption OID that openssl writes as the SignerInfo signature
// algorithm (the last occurrence in the token).
func rsaSignatureAlgorithm(token []byte) (int, bool) {
	rsaEnc := []byte{0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01}
	i := bytes.LastIndex(token, rsaEnc)
	return i + len(rsaEnc) - 1, i >= 0
}

// TestVerifyRSASignatureAlgorithmSwap pins the one documented unsigned
// change: rsaEncryption and sha256WithRSAEncryption are equivalent as the
// SignerInfo signature algorithm; a hash other than the digest's is not.
func TestVerifyRSASignatureAlgorithmSwap(t *testing.T) {
	a := newTestTSA(t, tsaOptions{rsa: true})
	tok := request(t, a)
	i, ok := rsaSignatureAlgorithm(tok.DER)
	if !ok {
		t.Fatal("no rsaEncryption OID in the token")
	}
	mut := append([]byte{}, tok.DER...)
	mut[i] = 0x0b // sha256WithRSAEncryption
	if _, err := Verify(mut, checkpoint, a.roots, nil); err != nil {
		t.Errorf("sha256WithRSAEncryption instead of rsaEncryption: %v (documented as equivalent)", err)
	}
	mut[i] = 0x0c // sha384WithRSAEncryption, not the signer's SHA-256
	if _, err := Verify(mut, checkpoint, a.roots, nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("sha384WithRSAEncryption with a SHA-256 digest: %v, want ErrMalformed", err)
	}
}

func positionName(tok []byte, i int, x byte) string {
	return fmt.Sprintf("byte %d (%#02x) ^ %#02x", i, tok[i], x)
}

func TestVerifyImprintHashes(t *testing.T) {
	a := newTestTSA(t, tsaOptions{digests: "sha1, sha256, sha384, sha512"})
	for _, d := range []struct {
		flag string
		hash crypto.Hash
	}{{"sha256", crypto.SHA256}, {"sha384", crypto.SHA384}, {"sha512", crypto.SHA512}} {
		tok := a.tokenFor(t, checkpoint, d.flag, false)
		info, err := Verify(tok, checkpoint, a.roots, nil)
		if err != nil {
			t.Errorf("%s imprint: %v", d.flag, err)
			continue
		}
		if info.HashAlgorithm != d.hash {
			t.Errorf("%s imprint reported as %v", d.flag, info.HashAlgorithm)
		}
		if _, err := Verify(tok, []byte("other"), a.roots, nil); !errors.Is(err, ErrImprint) {
			t.Errorf("%s imprint, other message: %v", d.flag, err)
		}
	}
	tok := a.tokenFor(t, checkpoint, "sha1", false)
	if _, err := Verify(tok, checkpoint, a.roots, nil); !errors.Is(err, ErrImprint) {
		t.Errorf("SHA-1 imprint: %v, want ErrImprint", err)
	}
	// No TSA trusted: the imprint's hash is held to the same list.
	if _, err := Checker(nil)(tok, checkpoint); !errors.Is(err, ErrImprint) {
		t.Errorf("SHA-1 imprint, no roots: %v, want ErrImprint", err)
	}
	if _, err := Checker(nil)(a.tokenFor(t, checkpoint, "sha256", false), checkpoint); err != nil {
		t.Errorf("SHA-256 imprint, no roots: %v", err)
	}
	if _, err := ParseToken(tok); err != nil {
		t.Errorf("ParseToken of a SHA-1 imprint token: %v", err)
	}
}

func TestVerifyTokenWithoutCertificate(t *testing.T) {
	a := newTestTSA(t, tsaOptions{})
	tok := a.tokenFor(t, checkpoint, "sha256", true)
	if _, err := Verify(tok, checkpoint, a.roots, nil); !errors.Is(err, ErrNoCertificate) {
		t.Errorf("token without certificates: %v, want ErrNoCertificate", err)
	}
}

func TestVerifyResponseNotToken(t *testing.T) {
	a := newTestTSA(t, tsaOptions{})
	q, err := dtimestamp.CreateRequest(strings.NewReader(string(checkpoint)), &dtimestamp.RequestOptions{Certificates: true})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := a.Reply(q)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Verify(resp, checkpoint, a.roots, nil)
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "TimeStampResp") {
		t.Errorf("whole response: %v, want ErrMalformed naming TimeStampResp", err)
	}
}

func TestVerifyGarbage(t *testing.T) {
	for _, b := range [][]byte{nil, {}, {0x30}, {0x30, 0x00}, {0x30, 0x80, 0x00, 0x00}, []byte("hello"), make([]byte, 1000)} {
		if _, err := Verify(b, checkpoint, x509.NewCertPool(), nil); !errors.Is(err, ErrMalformed) {
			t.Errorf("%x: %v, want ErrMalformed", b, err)
		}
		if _, err := ParseToken(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseToken %x: %v, want ErrMalformed", b, err)
		}
	}
}

// TestVerifyCertificateValidity: validity is judged at genTime. openssl signs
// with a TSA certificate that expired, or is not yet valid, at genTime.
func TestVerifyCertificateValidity(t *testing.T) {
	a := newTestTSA(t, tsaOptions{})
	now := time.Now()
	good := ekuExt(t, true, oidTimeStamping)
	cases := []struct {
		name      string
		nb, na    time.Time
		wantError bool
	}{
		{"valid", now.Add(-time.Hour), now.Add(time.Hour), false},
		{"expired", now.Add(-48 * time.Hour), now.Add(-24 * time.Hour), true},
		{"not-yet-valid", now.Add(24 * time.Hour), now.Add(48 * time.Hour), true},
	}
	for _, c := range cases {
		a.goLeaf(t, c.name, c.nb, c.na, good)
		q, _ := dtimestamp.CreateRequest(strings.NewReader(string(checkpoint)), &dtimestamp.RequestOptions{Certificates: true})
		resp, err := a.Reply(q, "-signer", a.Path(c.name+".pem"), "-inkey", a.Path(c.name+".key"))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		tok, err := parseResponse(resp)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		_, err = Verify(tok, checkpoint, a.roots, nil)
		if c.wantError != (err != nil) || (err != nil && !errors.Is(err, ErrChain)) {
			t.Errorf("%s certificate: %v (want error: %v, of kind ErrChain)", c.name, err, c.wantError)
		} else if err != nil {
			t.Logf("%s: %v", c.name, err)
		}
	}
}

// goToken makes a token with digitorus/timestamp's response builder, signed
// by a fresh certificate with the given extended key usage extension: openssl
// refuses to sign with certificates that lack the timeStamping purpose.
func goToken(t *testing.T, a *testTSA, name string, eku *pkix.Extension) []byte {
	t.Helper()
	cert, key := a.goLeaf(t, name, time.Now().Add(-time.Hour), time.Now().Add(time.Hour), eku)
	return goTokenBy(t, cert, key, time.Now(), nil)
}

// goTokenBy makes a token over checkpoint with the given genTime, signed by
// cert and key, embedding cert and the extra certificates.
func goTokenBy(t *testing.T, cert *x509.Certificate, key crypto.Signer, genTime time.Time, extra []*x509.Certificate) []byte {
	t.Helper()
	h := crypto.SHA256.New()
	h.Write(checkpoint)
	ts := &dtimestamp.Timestamp{
		HashAlgorithm:     crypto.SHA256,
		HashedMessage:     h.Sum(nil),
		Time:              genTime.UTC().Truncate(time.Second),
		Policy:            asn1.ObjectIdentifier{1, 2, 3, 4, 1},
		AddTSACertificate: true,
		Certificates:      extra,
	}
	resp, err := ts.CreateResponseWithOpts(cert, key, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := parseResponse(resp)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestVerifyAtGenTime: certificates are judged at genTime, not now. A token
// whose genTime lies outside its certificate's validity is refused even
// though the certificate is valid now (the opposite case, a certificate that
// has expired since, is the committed fuzz seed: see TestSeedCorpus).
func TestVerifyAtGenTime(t *testing.T) {
	a := newTestTSA(t, tsaOptions{})
	cert, key := a.goLeaf(t, "now", time.Now().Add(-time.Hour), time.Now().Add(time.Hour), ekuExt(t, true, oidTimeStamping))
	if _, err := Verify(goTokenBy(t, cert, key, time.Now(), nil), checkpoint, a.roots, nil); err != nil {
		t.Fatalf("genTime now: %v", err)
	}
	for _, g := range []time.Time{time.Now().Add(-48 * time.Hour), time.Now().Add(48 * time.Hour)} {
		_, err := Verify(goTokenBy(t, cert, key, g, nil), checkpoint, a.roots, nil)
		if !errors.Is(err, ErrChain) {
			t.Errorf("genTime %v outside the certificate's validity: %v, want ErrChain", g, err)
		}
	}
}

// TestVerifyIntermediates: a chain through an intermediate CA, given to
// Verify or embedded in the token; the intermediate's extended key usage
// must allow time stamping.
func TestVerifyIntermediates(t *testing.T) {
	a := newTestTSA(t, tsaOptions{})
	now := time.Now()
	ca := func(name string, eku []x509.ExtKeyUsage) (*x509.Certificate, crypto.Signer) {
		c, k := a.goCert(t, name, &x509.Certificate{
			Subject:               pkix.Name{CommonName: "Amnesia Test Intermediate (" + name + ")"},
			NotBefore:             now.Add(-time.Hour),
			NotAfter:              now.Add(time.Hour),
			KeyUsage:              x509.KeyUsageCertSign,
			ExtKeyUsage:           eku,
			BasicConstraintsValid: true,
			IsCA:                  true,
		}, a.ca, a.caSigner(t))
		return c, k
	}
	leaf := func(name string, parent *x509.Certificate, pk crypto.Signer) (*x509.Certificate, crypto.Signer) {
		c, k := a.goCert(t, name, &x509.Certificate{
			Subject:               pkix.Name{CommonName: "Amnesia Test TSA (" + name + ")"},
			NotBefore:             now.Add(-time.Hour),
			NotAfter:              now.Add(time.Hour),
			KeyUsage:              x509.KeyUsageDigitalSignature,
			ExtraExtensions:       []pkix.Extension{*ekuExt(t, true, oidTimeStamping)},
			BasicConstraintsValid: true,
		}, parent, pk)
		return c, k
	}

	inter, ik := ca("any", nil)
	lc, lk := leaf("under-any", inter, ik)
	tok := goTokenBy(t, lc, lk, now, nil)
	if _, err := Verify(tok, checkpoint, a.roots, nil); !errors.Is(err, ErrChain) {
		t.Errorf("intermediate neither given nor embedded: %v, want ErrChain", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(inter)
	if info, err := Verify(tok, checkpoint, a.roots, pool); err != nil || len(info.Chain) != 3 {
		t.Errorf("intermediate given: %v", err)
	}
	if _, err := Verify(goTokenBy(t, lc, lk, now, []*x509.Certificate{inter}), checkpoint, a.roots, nil); err != nil {
		t.Errorf("intermediate embedded: %v", err)
	}

	tlsOnly, tk := ca("tls", []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth})
	lc, lk = leaf("under-tls", tlsOnly, tk)
	_, err := Verify(goTokenBy(t, lc, lk, now, []*x509.Certificate{tlsOnly}), checkpoint, a.roots, nil)
	if !errors.Is(err, ErrChain) {
		t.Errorf("intermediate limited to serverAuth: %v, want ErrChain", err)
	}
}

func TestVerifyExtendedKeyUsage(t *testing.T) {
	a := newTestTSA(t, tsaOptions{})
	serverAuth := asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 3, 1}
	// A well-formed certificate first, so the failures below are down to the
	// extended key usage alone.
	if _, err := Verify(goToken(t, a, "ok", ekuExt(t, true, oidTimeStamping)), checkpoint, a.roots, nil); err != nil {
		t.Fatalf("token from digitorus/timestamp with a proper certificate: %v", err)
	}
	// A key usage that allows neither digitalSignature nor contentCommitment.
	now := time.Now()
	kc, kk := a.goCert(t, "key-encipherment", &x509.Certificate{
		Subject:               pkix.Name{CommonName: "Amnesia Test TSA (keyEncipherment)"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(time.Hour),
		KeyUsage:              x509.KeyUsageKeyEncipherment,
		ExtraExtensions:       []pkix.Extension{*ekuExt(t, true, oidTimeStamping)},
		BasicConstraintsValid: true,
	}, a.ca, a.caSigner(t))
	if _, err := Verify(goTokenBy(t, kc, kk, now, nil), checkpoint, a.roots, nil); !errors.Is(err, ErrChain) {
		t.Errorf("key usage keyEncipherment only: %v, want ErrChain", err)
	}
	for name, eku := range map[string]*pkix.Extension{
		"none":            nil,
		"non-critical":    ekuExt(t, false, oidTimeStamping),
		"with-serverAuth": ekuExt(t, true, oidTimeStamping, serverAuth),
		"serverAuth-only": ekuExt(t, true, serverAuth),
	} {
		_, err := Verify(goToken(t, a, name, eku), checkpoint, a.roots, nil)
		if !errors.Is(err, ErrChain) {
			t.Errorf("extended key usage %s: %v, want ErrChain", name, err)
		}
	}
}

func TestRequestUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String() + "/tsa"
	l.Close()
	start := time.Now()
	_, err = Request(context.Background(), url, checkpoint, nil)
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), url) {
		t.Errorf("closed port: %v, want ErrUnreachable naming the URL", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("closed port took %v", d)
	}
	t.Logf("closed port: %v", err)

	// A TSA that accepts the connection and never answers: the timeout.
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(block)
	start = time.Now()
	_, err = Request(context.Background(), srv.URL, checkpoint, &RequestOptions{Timeout: 300 * time.Millisecond})
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("silent TSA took %v with a 300ms timeout", d)
	}
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "did not answer within 300ms") {
		t.Errorf("silent TSA: %v", err)
	}
	t.Logf("silent TSA: %v", err)

	// Malformed URLs fail at once.
	if _, err := Request(context.Background(), "::not a url", checkpoint, nil); err == nil {
		t.Errorf("bad URL accepted")
	}
}

func TestRequestBadReplies(t *testing.T) {
	cases := []struct {
		name    string
		handler http.HandlerFunc
		want    error
		text    string
	}{
		{"500", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "TSA database on fire", http.StatusInternalServerError)
		}, ErrHTTPStatus, "500 Internal Server Error: \"TSA database on fire\""},
		{"404", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }, ErrHTTPStatus, "404"},
		{"garbage", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>hello</html>")) }, ErrMalformed, "not a DER TimeStampResp"},
		{"empty", func(w http.ResponseWriter, r *http.Request) {}, ErrMalformed, "not a DER TimeStampResp"},
		{"granted-no-token", func(w http.ResponseWriter, r *http.Request) {
			b, _ := asn1.Marshal(tspResponse{Status: pkiStatusInfo{Status: 0}})
			w.Write(b)
		}, ErrMalformed, "holds no TimeStampToken"},
		{"rejection", func(w http.ResponseWriter, r *http.Request) {
			b, _ := dtimestamp.CreateErrorResponse(dtimestamp.Rejection, dtimestamp.BadAlgorithm)
			w.Write(b)
		}, ErrRejected, "PKIStatus 2 (the request is rejected), failInfo badAlg"},
		{"waiting", func(w http.ResponseWriter, r *http.Request) {
			b, _ := dtimestamp.CreateErrorResponse(dtimestamp.Waiting, dtimestamp.SystemFailure)
			w.Write(b)
		}, ErrRejected, "PKIStatus 3 (the request is waiting), failInfo systemFailure"},
		{"huge", func(w http.ResponseWriter, r *http.Request) { w.Write(make([]byte, maxResponse+10)) }, ErrMalformed, "more than"},
	}
	for _, c := range cases {
		srv := httptest.NewServer(c.handler)
		_, err := Request(context.Background(), srv.URL, checkpoint, nil)
		srv.Close()
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: %v, want %v containing %q", c.name, err, c.want, c.text)
		} else {
			t.Logf("%s: %v", c.name, err)
		}
	}
}

func TestRequestRejectedByOpenSSL(t *testing.T) {
	a := newTestTSA(t, tsaOptions{})
	srv := a.Serve(t, nil)
	_, err := Request(context.Background(), srv.URL, checkpoint, &RequestOptions{Policy: asn1.ObjectIdentifier{1, 2, 9, 9}})
	if !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "unacceptedPolicy") {
		t.Fatalf("unknown policy: %v, want ErrRejected with unacceptedPolicy", err)
	}
	t.Logf("unknown policy: %v", err)
	tok, err := Request(context.Background(), srv.URL, checkpoint, &RequestOptions{Policy: asn1.ObjectIdentifier{1, 2, 3, 4, 5}})
	if err != nil || !tok.Policy.Equal(asn1.ObjectIdentifier{1, 2, 3, 4, 5}) {
		t.Fatalf("accepted policy: %v", err)
	}
}

// TestRequestMismatch plays TSAs that answer another question than the one
// asked: openssl signs a changed query.
func TestRequestMismatch(t *testing.T) {
	a := newTestTSA(t, tsaOptions{})
	rewrite := func(f func(*dtimestamp.Request)) func([]byte) []byte {
		return func(q []byte) []byte {
			r, err := dtimestamp.ParseRequest(q)
			if err != nil {
				t.Errorf("server: %v", err)
				return q
			}
			f(r)
			b, err := r.Marshal()
			if err != nil {
				t.Errorf("server: %v", err)
			}
			return b
		}
	}
	cases := []struct {
		name string
		f    func(*dtimestamp.Request)
		want error
	}{
		{"other-nonce", func(r *dtimestamp.Request) { r.Nonce = new(big.Int).Add(r.Nonce, big.NewInt(1)) }, ErrNonce},
		{"no-nonce", func(r *dtimestamp.Request) { r.Nonce = nil }, ErrNonce},
		{"other-imprint", func(r *dtimestamp.Request) { r.HashedMessage[0] ^= 1 }, ErrImprint},
		{"other-hash", func(r *dtimestamp.Request) {
			h := crypto.SHA512.New()
			h.Write(checkpoint)
			r.HashAlgorithm, r.HashedMessage = crypto.SHA512, h.Sum(nil)
		}, ErrImprint},
		{"no-certificate", func(r *dtimestamp.Request) { r.Certificates = false }, ErrNoCertificate},
	}
	for _, c := range cases {
		srv := a.Serve(t, rewrite(c.f))
		_, err := Request(context.Background(), srv.URL, checkpoint, nil)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		} else {
			t.Logf("%s: %v", c.name, err)
		}
	}
	// The policy check: a TSA that ignores the requested policy.
	srv := a.Serve(t, rewrite(func(r *dtimestamp.Request) { r.TSAPolicyOID = nil }))
	if _, err := Request(context.Background(), srv.URL, checkpoint, &RequestOptions{Policy: asn1.ObjectIdentifier{1, 2, 3, 4, 5}}); !errors.Is(err, ErrPolicy) {
		t.Errorf("policy ignored: %v, want ErrPolicy", err)
	}
}

func TestRequestContextCancelled(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block }))
	defer srv.Close()
	defer close(block)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	start := time.Now()
	_, err := Request(ctx, srv.URL, checkpoint, nil)
	if !errors.Is(err, ErrUnreachable) || time.Since(start) > 3*time.Second {
		t.Errorf("cancelled context: %v after %v", err, time.Since(start))
	}
}

// TestESSBindsSigner: the ESS signing-certificate attribute must name the
// certificate that signed. A token whose signer is swapped for another
// certificate (as an attacker with a second certificate for the same key
// would) is refused, for SigningCertificate (SHA-1) and V2 alike.
func TestESSBindsSigner(t *testing.T) {
	for _, ess := range []string{"sha1", "sha256"} {
		a := newTestTSA(t, tsaOptions{essAlg: ess})
		tok := request(t, a)
		st, err := parseStructure(tok.DER)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkESS(st); err != nil {
			t.Fatalf("%s: genuine signer: %v", ess, err)
		}
		st.signer = a.ca
		if err := checkESS(st); !errors.Is(err, ErrSignature) {
			t.Errorf("%s: another certificate as signer: %v, want ErrSignature", ess, err)
		}
	}
}

// TestVerifyAmbiguousSigner: two different embedded certificates with the
// signer's issuer and serial number (a CA that reused a serial, or a planted
// look-alike) make the signer ambiguous; identical copies do not.
func TestVerifyAmbiguousSigner(t *testing.T) {
	a := newTestTSA(t, tsaOptions{})
	now := time.Now()
	tmpl := func() *x509.Certificate {
		return &x509.Certificate{
			SerialNumber:          big.NewInt(4242),
			Subject:               pkix.Name{CommonName: "Amnesia Test TSA (serial 4242)"},
			NotBefore:             now.Add(-time.Hour),
			NotAfter:              now.Add(time.Hour),
			KeyUsage:              x509.KeyUsageDigitalSignature,
			ExtraExtensions:       []pkix.Extension{*ekuExt(t, true, oidTimeStamping)},
			BasicConstraintsValid: true,
		}
	}
	c1, k1 := a.goCert(t, "one", tmpl(), a.ca, a.caSigner(t))
	c2, _ := a.goCert(t, "two", tmpl(), a.ca, a.caSigner(t))
	tok := goTokenBy(t, c1, k1, now, nil)
	if _, err := Verify(tok, checkpoint, a.roots, nil); err != nil {
		t.Fatalf("token as made: %v", err)
	}
	if _, err := Verify(withCertificates(t, tok, c1, c1), checkpoint, a.roots, nil); err != nil {
		t.Errorf("signer embedded twice: %v", err)
	}
	_, err := Verify(withCertificates(t, tok, c1, c2), checkpoint, a.roots, nil)
	if !errors.Is(err, ErrMalformed) {
		t.Errorf("two certificates with the signer's issuer and serial: %v, want ErrMalformed", err)
	}
}

// withCertificates returns tok with its certificates field replaced by
// certs. The certificates are not signed by the TSA, so this needs no key.
func withCertificates(t *testing.T, tok []byte, certs ...*x509.Certificate) []byte {
	t.Helper()
	in := cryptobyte.String(tok)
	var ci, ct, wrapped, sd, version, digestAlgs, encap cryptobyte.String
	if !in.ReadASN1(&ci, cbasn1.SEQUENCE) || !ci.ReadASN1Element(&ct, cbasn1.OBJECT_IDENTIFIER) ||
		!ci.ReadASN1(&wrapped, tag0) || !wrapped.ReadASN1(&sd, cbasn1.SEQUENCE) ||
		!sd.ReadASN1Element(&version, cbasn1.INTEGER) || !sd.ReadASN1Element(&digestAlgs, cbasn1.SET) ||
		!sd.ReadASN1Element(&encap, cbasn1.SEQUENCE) || !sd.SkipOptionalASN1(tag0) {
		t.Fatal("token is not a ContentInfo with SignedData")
	}
	var b cryptobyte.Builder
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddBytes(ct)
		b.AddASN1(tag0, func(b *cryptobyte.Builder) {
			b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
				b.AddBytes(version)
				b.AddBytes(digestAlgs)
				b.AddBytes(encap)
				b.AddASN1(tag0, func(b *cryptobyte.Builder) {
					for _, c := range certs {
						b.AddBytes(c.Raw)
					}
				})
				b.AddBytes(sd) // crls, if any, and signerInfos
			})
		})
	})
	return b.BytesOrPanic()
}

// TestVerifyUnsignedCertificates shows the documented limit: certificates
// embedded beside the chain are not signed by the TSA, so adding one (here
// the root itself, and an unrelated certificate) changes nothing, while
// dropping the signer's certificate is ErrNoCertificate.
func TestVerifyUnsignedCertificates(t *testing.T) {
	a := newTestTSA(t, tsaOptions{})
	tok := request(t, a)
	other := newTestTSA(t, tsaOptions{})
	if _, err := Verify(withCertificates(t, tok.DER, tok.Signer), checkpoint, a.roots, nil); err != nil {
		t.Fatalf("rebuilt token: %v", err)
	}
	if _, err := Verify(withCertificates(t, tok.DER, tok.Signer, a.ca, other.ca), checkpoint, a.roots, nil); err != nil {
		t.Errorf("extra certificates: %v", err)
	}
	if _, err := Verify(withCertificates(t, tok.DER, other.ca), checkpoint, a.roots, nil); !errors.Is(err, ErrNoCertificate) {
		t.Errorf("signer's certificate replaced: %v, want ErrNoCertificate", err)
	}
}

// TestVerifySignatureChanges: changes to the signature value are reported
// as ErrSignature; changes to the signed attributes or the TSTInfo as
// ErrSignature, or ErrMalformed where they break the DER structure.
func TestVerifySignatureChanges(t *testing.T) {
	a := newTestTSA(t, tsaOptions{})
	tok := request(t, a).DER
	// Walk to the SignerInfo: ContentInfo > [0] > SignedData > signerInfos.
	in := cryptobyte.String(tok)
	var ci, wrapped, sd, encap, econtent, sis, si, attrs, sig cryptobyte.String
	if !in.ReadASN1(&ci, cbasn1.SEQUENCE) || !ci.SkipASN1(cbasn1.OBJECT_IDENTIFIER) ||
		!ci.ReadASN1(&wrapped, tag0) || !wrapped.ReadASN1(&sd, cbasn1.SEQUENCE) ||
		!sd.SkipASN1(cbasn1.INTEGER) || !sd.SkipASN1(cbasn1.SET) || !sd.ReadASN1(&encap, cbasn1.SEQUENCE) ||
		!sd.SkipOptionalASN1(tag0) || !sd.ReadASN1(&sis, cbasn1.SET) ||
		!encap.SkipASN1(cbasn1.OBJECT_IDENTIFIER) || !encap.ReadASN1(&econtent, tag0) ||
		!sis.ReadASN1(&si, cbasn1.SEQUENCE) || !si.SkipASN1(cbasn1.INTEGER) || !si.SkipASN1(cbasn1.SEQUENCE) ||
		!si.SkipASN1(cbasn1.SEQUENCE) || !si.ReadASN1(&attrs, tag0) || !si.SkipASN1(cbasn1.SEQUENCE) ||
		!si.ReadASN1(&sig, cbasn1.OCTET_STRING) {
		t.Fatal("token is not a ContentInfo with SignedData")
	}
	regions := map[string][]byte{
		"signature":         sig,
		"signed attributes": attrs,
		"TSTInfo":           econtent,
	}
	for name, r := range regions {
		start := bytes.Index(tok, r)
		if start < 0 || bytes.Index(tok[start+1:], r) >= 0 {
			t.Fatalf("%s not found once in the token", name)
		}
		sig := 0
		for i := start; i < start+len(r); i++ {
			mut := append([]byte{}, tok...)
			mut[i] ^= 0x01
			_, err := Verify(mut, checkpoint, a.roots, nil)
			switch {
			case errors.Is(err, ErrSignature):
				sig++
			case name != "signature" && errors.Is(err, ErrMalformed):
			default:
				t.Errorf("%s byte %d changed: %v, want ErrSignature", name, i, err)
			}
		}
		t.Logf("%s: %d bytes, %d changes reported as ErrSignature", name, len(r), sig)
	}
}

// TestSignatureCheckedOnce: a token's CMS signature is checked once, by
// checkSignature, on every path (ParseToken, Verify, Request with and
// without Roots), and no third-party code that would check it again (the
// Verify of digitorus/pkcs7, which digitorus/timestamp's Parse calls) is
// used by the package.
func TestSignatureCheckedOnce(t *testing.T) {
	a := newTestTSA(t, tsaOptions{})
	tok := request(t, a)
	srv := a.Serve(t, nil)
	for name, f := range map[string]func() error{
		"ParseToken": func() error { _, err := ParseToken(tok.DER); return err },
		"Verify":     func() error { _, err := Verify(tok.DER, checkpoint, a.roots, nil); return err },
		"Request": func() error {
			_, err := Request(context.Background(), srv.URL, checkpoint, nil)
			return err
		},
		"Request with Roots": func() error {
			_, err := Request(context.Background(), srv.URL, checkpoint, &RequestOptions{Roots: a.roots})
			return err
		},
	} {
		before := signatureChecks.Load()
		if err := f(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if n := signatureChecks.Load() - before; n != 1 {
			t.Errorf("%s checked the signature %d times, want 1", name, n)
		}
	}

	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkgs {
		for name, f := range p.Files {
			for _, imp := range f.Imports {
				if imp.Path.Value == `"github.com/digitorus/pkcs7"` {
					t.Errorf("%s imports github.com/digitorus/pkcs7, whose Verify checks the signature again", name)
				}
			}
			src, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			for _, call := range []string{"dtimestamp.Parse(", "dtimestamp.ParseResponse("} {
				if strings.Contains(string(src), call) {
					t.Errorf("%s calls %s, which checks the signature again", name, call)
				}
			}
		}
	}
}

// tokenParts is a token taken apart, for tests that rebuild it changed.
type tokenParts struct {
	contentType, version, digestAlgs, encap cryptobyte.String
	certs, crls                             []byte // contents of [0] and [1]
	hasCerts, hasCRLs                       bool
	siVersion, sid, digestAlg               cryptobyte.String
	signedAttrs                             [][]byte // each Attribute's DER
	sigAlg, signature                       cryptobyte.String
	unsigned                                []byte // contents of the SignerInfo's [1]
	hasUnsigned                             bool
}

func splitToken(t *testing.T, tok []byte) *tokenParts {
	t.Helper()
	p := &tokenParts{}
	in := cryptobyte.String(tok)
	var ci, wrapped, sd, certs, crls, sis, si, attrs, sig, unsigned cryptobyte.String
	if !in.ReadASN1(&ci, cbasn1.SEQUENCE) || !ci.ReadASN1Element(&p.contentType, cbasn1.OBJECT_IDENTIFIER) ||
		!ci.ReadASN1(&wrapped, tag0) || !wrapped.ReadASN1(&sd, cbasn1.SEQUENCE) ||
		!sd.ReadASN1Element(&p.version, cbasn1.INTEGER) || !sd.ReadASN1Element(&p.digestAlgs, cbasn1.SET) ||
		!sd.ReadASN1Element(&p.encap, cbasn1.SEQUENCE) ||
		!sd.ReadOptionalASN1(&certs, &p.hasCerts, tag0) || !sd.ReadOptionalASN1(&crls, &p.hasCRLs, tag1) ||
		!sd.ReadASN1(&sis, cbasn1.SET) || !sis.ReadASN1(&si, cbasn1.SEQUENCE) ||
		!si.ReadASN1Element(&p.siVersion, cbasn1.INTEGER) || !si.ReadASN1Element(&p.sid, cbasn1.SEQUENCE) ||
		!si.ReadASN1Element(&p.digestAlg, cbasn1.SEQUENCE) || !si.ReadASN1(&attrs, tag0) ||
		!si.ReadASN1Element(&p.sigAlg, cbasn1.SEQUENCE) || !si.ReadASN1Element(&sig, cbasn1.OCTET_STRING) ||
		!si.ReadOptionalASN1(&unsigned, &p.hasUnsigned, tag1) {
		t.Fatal("token does not split")
	}
	p.certs, p.crls, p.signature, p.unsigned = certs, crls, sig, unsigned
	for !attrs.Empty() {
		var a cryptobyte.String
		if !attrs.ReadASN1Element(&a, cbasn1.SEQUENCE) {
			t.Fatal("signed attributes do not split")
		}
		p.signedAttrs = append(p.signedAttrs, a)
	}
	return p
}

// signedAttrsDER is the DER the signature covers: the attributes as a SET.
func (p *tokenParts) signedAttrsDER() []byte {
	var b cryptobyte.Builder
	b.AddASN1(cbasn1.SET, func(b *cryptobyte.Builder) {
		for _, a := range p.signedAttrs {
			b.AddBytes(a)
		}
	})
	return b.BytesOrPanic()
}

func (p *tokenParts) join() []byte {
	optional := func(b *cryptobyte.Builder, present bool, tag cbasn1.Tag, contents []byte) {
		if present {
			b.AddASN1(tag, func(b *cryptobyte.Builder) { b.AddBytes(contents) })
		}
	}
	var b cryptobyte.Builder
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddBytes(p.contentType)
		b.AddASN1(tag0, func(b *cryptobyte.Builder) {
			b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
				b.AddBytes(p.version)
				b.AddBytes(p.digestAlgs)
				b.AddBytes(p.encap)
				optional(b, p.hasCerts, tag0, p.certs)
				optional(b, p.hasCRLs, tag1, p.crls)
				b.AddASN1(cbasn1.SET, func(b *cryptobyte.Builder) {
					b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
						b.AddBytes(p.siVersion)
						b.AddBytes(p.sid)
						b.AddBytes(p.digestAlg)
						b.AddASN1(tag0, func(b *cryptobyte.Builder) {
							for _, a := range p.signedAttrs {
								b.AddBytes(a)
							}
						})
						b.AddBytes(p.sigAlg)
						b.AddBytes(p.signature)
						optional(b, p.hasUnsigned, tag1, p.unsigned)
					})
				})
			})
		})
	})
	return b.BytesOrPanic()
}

// TestVerifyUnsignedParts: CRLs and unsigned attributes are not signed and
// not used, but they must be well-formed; signed attributes must be in DER
// order even when the signature covers them as they are.
func TestVerifyUnsignedParts(t *testing.T) {
	a := newTestTSA(t, tsaOptions{})
	now := time.Now()
	cert, key := a.goLeaf(t, "parts", now.Add(-time.Hour), now.Add(time.Hour), ekuExt(t, true, oidTimeStamping))
	tok := goTokenBy(t, cert, key, now, nil)
	if got := splitToken(t, tok).join(); !bytes.Equal(got, tok) {
		t.Fatal("split and join change the token")
	}
	attr := func(oid asn1.ObjectIdentifier, values ...[]byte) []byte {
		var b cryptobyte.Builder
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			b.AddASN1ObjectIdentifier(oid)
			b.AddASN1(cbasn1.SET, func(b *cryptobyte.Builder) {
				for _, v := range values {
					b.AddBytes(v)
				}
			})
		})
		return b.BytesOrPanic()
	}
	null := []byte{0x05, 0x00}
	crl, err := x509.CreateRevocationList(rand.Reader, &x509.RevocationList{Number: big.NewInt(1), ThisUpdate: now, NextUpdate: now.Add(time.Hour)}, a.ca, a.caSigner(t))
	if err != nil {
		t.Fatal(err)
	}
	// resign signs the signed attributes again, in the order given.
	resign := func(p *tokenParts) {
		d := sha256.Sum256(p.signedAttrsDER())
		sig, err := key.Sign(rand.Reader, d[:], crypto.SHA256)
		if err != nil {
			t.Fatal(err)
		}
		var b cryptobyte.Builder
		b.AddASN1OctetString(sig)
		p.signature = b.BytesOrPanic()
	}
	cases := []struct {
		name string
		edit func(*tokenParts)
		ok   bool
	}{
		{"unsigned attribute", func(p *tokenParts) { p.hasUnsigned, p.unsigned = true, attr(asn1.ObjectIdentifier{1, 2, 3, 4}, null) }, true},
		{"empty unsigned attributes", func(p *tokenParts) { p.hasUnsigned = true }, true},
		{"unsigned attribute not an Attribute", func(p *tokenParts) { p.hasUnsigned, p.unsigned = true, []byte{0x02, 0x01, 0x00} }, false},
		{"unsigned attribute with an extra element", func(p *tokenParts) {
			good := attr(asn1.ObjectIdentifier{1, 2, 3, 4}, null)
			p.hasUnsigned, p.unsigned = true, append([]byte{0x30, good[1] + 2}, append(good[2:], null...)...)
		}, false},
		{"a CRL", func(p *tokenParts) { p.hasCRLs, p.crls = true, crl }, true},
		{"CRLs holding an INTEGER", func(p *tokenParts) { p.hasCRLs, p.crls = true, []byte{0x02, 0x01, 0x00} }, false},
		{"CRLs holding an empty SEQUENCE", func(p *tokenParts) { p.hasCRLs, p.crls = true, []byte{0x30, 0x00} }, false},
		{"signed attributes re-signed", resign, true},
		{"signed attributes re-signed out of DER order", func(p *tokenParts) {
			n := len(p.signedAttrs)
			p.signedAttrs[0], p.signedAttrs[n-1] = p.signedAttrs[n-1], p.signedAttrs[0]
			resign(p)
		}, false},
	}
	for _, c := range cases {
		p := splitToken(t, tok)
		c.edit(p)
		_, err := Verify(p.join(), checkpoint, a.roots, nil)
		if c.ok && err != nil {
			t.Errorf("%s: %v, want it to verify", c.name, err)
		}
		if !c.ok && !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", c.name, err)
		}
	}
}
