package timestamp

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The fuzz seeds are a real token made by `openssl ts -reply` (see
// TestSeedCorpus), committed with the root that issued its TSA certificate.
// Regenerate them with
//
//	go test ./timestamp -run TestSeedCorpus -update-seed
var updateSeed = flag.Bool("update-seed", false, "regenerate the fuzz seed token and root in testdata with openssl")

const (
	seedRoot    = "testdata/seed-root.pem"
	seedVerify  = "testdata/fuzz/FuzzVerify/openssl-token"
	seedParse   = "testdata/fuzz/FuzzParseToken/openssl-token"
	seedMessage = "amnesia checkpoint (fuzz seed)\n"
)

func seedRoots(t testing.TB) *x509.CertPool {
	t.Helper()
	b, err := os.ReadFile(seedRoot)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("%s: no PEM block", seedRoot)
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	p := x509.NewCertPool()
	p.AddCert(c)
	return p
}

// readCorpusFile decodes a "go test fuzz v1" file whose values are []byte.
func readCorpusFile(t testing.TB, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) < 2 || lines[0] != "go test fuzz v1" {
		t.Fatalf("%s: not a go test fuzz v1 file", path)
	}
	var vals [][]byte
	for _, l := range lines[1:] {
		q, ok := strings.CutPrefix(l, "[]byte(")
		q, ok2 := strings.CutSuffix(q, ")")
		if !ok || !ok2 {
			t.Fatalf("%s: %q is not a []byte value", path, l)
		}
		s, err := strconv.Unquote(q)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		vals = append(vals, []byte(s))
	}
	return vals
}

func writeCorpusFile(t testing.TB, path string, vals ...[]byte) {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("go test fuzz v1\n")
	for _, v := range vals {
		fmt.Fprintf(&b, "[]byte(%q)\n", v)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSeedCorpus checks that the committed seed token verifies against the
// committed root, so the fuzzers start from a token that reaches every check.
// The seed's TSA certificate was valid for only 20 minutes around its genTime
// and has expired since: that the token still verifies shows certificates
// are judged at genTime, not at the time of verification. With -update-seed
// it first makes a new seed with openssl.
func TestSeedCorpus(t *testing.T) {
	if *updateSeed {
		a := newTestTSA(t, tsaOptions{})
		now := time.Now()
		a.goLeaf(t, "seed", now.Add(-10*time.Minute), now.Add(10*time.Minute), ekuExt(t, true, oidTimeStamping))
		a.SignerArgs = []string{"-signer", a.Path("seed.pem"), "-inkey", a.Path("seed.key")}
		tok, err := Request(context.Background(), a.Serve(t, nil).URL, []byte(seedMessage), &RequestOptions{Roots: a.roots})
		if err != nil {
			t.Fatal(err)
		}
		root, err := os.ReadFile(a.Path("ca.pem"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(seedRoot, root, 0o644); err != nil {
			t.Fatal(err)
		}
		writeCorpusFile(t, seedVerify, tok.DER, []byte(seedMessage))
		writeCorpusFile(t, seedParse, tok.DER)
	}
	v := readCorpusFile(t, seedVerify)
	if len(v) != 2 || string(v[1]) != seedMessage {
		t.Fatalf("%s: want the token and the seed message", seedVerify)
	}
	info, err := Verify(v[0], v[1], seedRoots(t), nil)
	if err != nil {
		t.Fatalf("seed token: %v", err)
	}
	t.Logf("seed token: genTime %s, serial %v, TSA %q", info.GenTime, info.SerialNumber, info.TSAName)
	if exp := info.Signer.NotAfter; time.Now().After(exp) {
		t.Logf("seed TSA certificate expired at %s and the token verifies at its genTime", exp)
	} else {
		t.Logf("seed TSA certificate expires at %s; until then this test does not show that validity is judged at genTime", exp)
	}
	if _, err := Verify(v[0], []byte("not the seed message"), seedRoots(t), nil); !errors.Is(err, ErrImprint) {
		t.Errorf("seed token, other message: %v", err)
	}
	p := readCorpusFile(t, seedParse)
	if len(p) != 1 || !bytes.Equal(p[0], v[0]) {
		t.Errorf("%s does not hold the same token as %s", seedParse, seedVerify)
	}
}

// sentinels are the errors every failure must wrap.
var sentinels = []error{ErrMalformed, ErrNoCertificate, ErrSignature, ErrChain, ErrImprint}

func checkSentinel(t *testing.T, err error) {
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return
		}
	}
	t.Errorf("error wraps no sentinel: %v", err)
}

func FuzzParseToken(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0x30, 0x00})
	f.Fuzz(func(t *testing.T, token []byte) {
		info, err := ParseToken(token)
		if err != nil {
			checkSentinel(t, err)
			return
		}
		if info.Signer == nil || info.SerialNumber == nil || len(info.HashedMessage) != info.HashAlgorithm.Size() {
			t.Errorf("ParseToken accepted a token with incomplete info: %+v", info)
		}
	})
}

func FuzzVerify(f *testing.F) {
	roots := seedRoots(f)
	f.Add([]byte{}, []byte(seedMessage))
	f.Fuzz(func(t *testing.T, token, message []byte) {
		info, err := Verify(token, message, roots, nil)
		if err != nil {
			checkSentinel(t, err)
			return
		}
		if len(info.Chain) < 2 || !info.Chain[0].Equal(info.Signer) {
			t.Errorf("Verify succeeded without a chain from the signer")
		}
		h := info.HashAlgorithm.New()
		h.Write(message)
		if !bytes.Equal(h.Sum(nil), info.HashedMessage) {
			t.Errorf("Verify succeeded with an imprint that is not the message's")
		}
	})
}
