package certificate_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/certificate"
)

// The verifier without amnesia: docs/verify-without-amnesia.md holds a
// shell and Python script that checks a certificate with openssl. This test
// runs the script exactly as the document shows it, so the two cannot drift.

const (
	externalDoc = "../docs/verify-without-amnesia.md"
	// Each marker is an HTML comment line in the document; the fenced code
	// block after it is what the test uses.
	scriptMarker = "<!-- verify-cert.sh: "
	outputMarker = "<!-- verify-cert.sh output on the golden vectors"
)

// codeBlockAfter returns the contents of the first fenced code block after
// the single line that starts with marker.
func codeBlockAfter(t *testing.T, doc, marker string) string {
	t.Helper()
	lines := strings.Split(doc, "\n")
	at := -1
	for i, l := range lines {
		if strings.HasPrefix(l, marker) {
			if at >= 0 {
				t.Fatalf("%s: marker %q appears more than once", externalDoc, marker)
			}
			at = i
		}
	}
	if at < 0 {
		t.Fatalf("%s: no line starts with %q", externalDoc, marker)
	}
	start := -1
	for i := at + 1; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "```") {
			start = i + 1
			break
		}
		if strings.TrimSpace(lines[i]) != "" {
			t.Fatalf("%s: text between marker %q and its code block", externalDoc, marker)
		}
	}
	for i := start; start > 0 && i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) == "```" {
			return strings.Join(lines[start:i], "\n") + "\n"
		}
	}
	t.Fatalf("%s: no closed code block after marker %q", externalDoc, marker)
	return ""
}

// externalVerifier writes the document's script to a file and returns a
// function that runs it with bash on a certificate and a public key, both
// given as bytes, and returns its combined output and exit status.
func externalVerifier(t *testing.T) func(cert, pubPEM []byte) (string, int) {
	t.Helper()
	for _, tool := range []string{"bash", "openssl", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found on PATH: the verifier of docs/verify-without-amnesia.md needs bash, OpenSSL 3 and Python 3 (.ci/run installs openssl)", tool)
		}
	}
	doc, err := os.ReadFile(externalDoc)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "verify-cert.sh")
	if err := os.WriteFile(script, []byte(codeBlockAfter(t, string(doc), scriptMarker)), 0o644); err != nil {
		t.Fatal(err)
	}
	n := 0
	return func(cert, pubPEM []byte) (string, int) {
		t.Helper()
		n++
		certFile := filepath.Join(dir, fmt.Sprintf("cert%d.json", n))
		keyFile := filepath.Join(dir, fmt.Sprintf("key%d.pem", n))
		if err := os.WriteFile(certFile, cert, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(keyFile, pubPEM, 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", script, certFile, keyFile)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		switch {
		case err == nil:
			return string(out), 0
		case errors.As(err, &exit) && ctx.Err() == nil:
			return string(out), exit.ExitCode()
		default:
			t.Fatalf("running verify-cert.sh: %v\n%s", err, out)
			return "", -1
		}
	}
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// externalStatement is a small complete certificate: one artifact verified
// physically, one logically.
func externalStatement(certID string) *certificate.Statement {
	arts := []certificate.Artifact{
		{
			ID: "art:" + sum("app-db/users/7")[:32], Kind: "source", Store: "app-db",
			Outcome: certificate.Verified, Level: certificate.LevelPhysical, Method: "delete+vacuum",
			Measurement: &certificate.Measurement{
				Deleted:  true,
				Physical: &certificate.Physical{Needles: 8, FoundBefore: 8, FilesScanned: 2, BytesScanned: 65536},
			},
		},
		{
			ID: "art:" + sum("vectors/chunks/7")[:32], Kind: "embedding", Store: "vectors",
			Outcome: certificate.Verified, Level: certificate.LevelLogical, Method: "delete",
			Measurement: &certificate.Measurement{
				Deleted: true,
				Logical: &certificate.Logical{Methods: []string{"by_id", "by_filter", "by_similarity"}},
			},
		},
	}
	p := certificate.Predicate{
		SchemaVersion: certificate.SchemaVersion,
		CertificateID: certID,
		SubjectRef:    "hmac-sha256:" + sum("external subject"),
		Scope:         "tenant/external",
		Reason:        "GDPR Art. 17 request",
		IssuedAt:      "2025-06-01T09:00:00Z",
		ValidUntil:    "2026-06-01T09:00:00Z",
		Trace:         certificate.TraceRef{ID: sum("external trace " + certID), Artifacts: len(arts)},
		Complete:      true,
		DeclaredScope: []certificate.StoreState{
			{Name: "app-db", Type: "sqlite", Capabilities: []string{"delete", "vacuum", "physical-probe"},
				Touched: true, Artifacts: 1, Residue: "VERIFIED", Evidence: "byte scan after VACUUM: 0 of 8 needles found", Reclaim: "vacuum"},
			{Name: "vectors", Type: "sqlite-vec", Capabilities: []string{"delete", "similarity"},
				Touched: true, Artifacts: 1, Residue: "UNVERIFIED-physical-not-measured", Evidence: "logical queries only"},
		},
		Artifacts:    arts,
		Counts:       certificate.CountArtifacts(arts),
		OutOfScope:   []certificate.Exclusion{{What: "backups", Reason: "outside the configured stores"}},
		Journal:      certificate.JournalRef{Head: sum("external journal"), Steps: 4},
		Reverifiable: true,
		ReverifyNote: "the stores can be probed again with the same trace",
	}
	return certificate.NewStatement(p, p.Trace.ID)
}

func newKey(t *testing.T) (ed25519.PublicKey, ed25519.PrivateKey, []byte) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pemBytes, err := certificate.EncodePublicKeyPEM(pub)
	if err != nil {
		t.Fatal(err)
	}
	return pub, priv, pemBytes
}

// pae is the DSSE pre-authentication encoding, written out as the document
// states it.
func pae(payloadType string, body []byte) []byte {
	return append([]byte(fmt.Sprintf("DSSEv1 %d %s %d ", len(payloadType), payloadType, len(body))), body...)
}

type envelope struct {
	PayloadType string      `json:"payloadType"`
	Payload     string      `json:"payload"`
	Signatures  []signature `json:"signatures"`
}

type signature struct {
	KeyID string `json:"keyid"`
	Sig   string `json:"sig"`
}

func decodeEnv(t *testing.T, b []byte) (envelope, []byte) {
	t.Helper()
	var env envelope
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatal(err)
	}
	payload, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		t.Fatal(err)
	}
	return env, payload
}

func encodeEnv(t *testing.T, env envelope) []byte {
	t.Helper()
	b, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// pyCounts is counts as the script prints it: Python's json.dumps of the
// payload's object, in payload order.
func pyCounts(t *testing.T, c certificate.Counts) string {
	t.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.ReplaceAll(string(b), `,"`, `, "`)
	return strings.ReplaceAll(s, `":`, `": `)
}

func TestExternalVerifier(t *testing.T) {
	run := externalVerifier(t)
	ctx := context.Background()

	pub, priv, pubPEM := newKey(t)
	_, _, otherPEM := newKey(t)
	otherPub, err := certificate.ParsePublicKeyPEM(otherPEM)
	if err != nil {
		t.Fatal(err)
	}
	idBytes := make([]byte, 8)
	if _, err := rand.Read(idBytes); err != nil {
		t.Fatal(err)
	}
	certID := "ext-" + hex.EncodeToString(idBytes)
	st := externalStatement(certID)
	cert, err := certificate.Sign(ctx, st, priv)
	if err != nil {
		t.Fatal(err)
	}
	keyID := certificate.KeyID(pub)
	env, payload := decodeEnv(t, cert)

	// The PAE as the document defines it is what amnesia signs: Ed25519 is
	// deterministic, so signing it here gives the envelope's signature.
	if got := base64.StdEncoding.EncodeToString(ed25519.Sign(priv, pae(env.PayloadType, payload))); got != env.Signatures[0].Sig {
		t.Fatal("the signature in the envelope is not Ed25519 over the PAE as docs/verify-without-amnesia.md defines it")
	}

	// Variants of the certificate.
	tampered := append([]byte(nil), payload...)
	at := bytes.Index(tampered, []byte(certID))
	if at < 0 {
		t.Fatal("certificate id not in the payload")
	}
	tampered[at+len(certID)-1] ^= 0x01 // one byte of the payload, inside the id
	tamperedEnv := env
	tamperedEnv.Payload = base64.StdEncoding.EncodeToString(tampered)

	forgedEnv := env // the other key's id on this key's signature
	forgedEnv.Signatures = []signature{{KeyID: certificate.KeyID(otherPub), Sig: env.Signatures[0].Sig}}

	bundle, err := json.Marshal(map[string]any{
		"mediaType":    "application/vnd.amnesia.certificate.v1+json",
		"dsseEnvelope": json.RawMessage(cert),
		"logEntry":     map[string]any{},
	})
	if err != nil {
		t.Fatal(err)
	}

	urlSafe := env // URL-safe base64, which DSSE and amnesia verify accept
	urlSafe.Payload = base64.URLEncoding.EncodeToString(payload)
	urlSafe.Signatures = []signature{{KeyID: keyID, Sig: base64.URLEncoding.EncodeToString(
		ed25519.Sign(priv, pae(env.PayloadType, payload)))}}

	// Correctly signed, but predicate.key_id names another key.
	wrongInner := externalStatement(certID)
	wrongInner.Predicate.KeyID = certificate.KeyID(otherPub)
	wrongInnerPayload, err := certificate.Encode(wrongInner)
	if err != nil {
		t.Fatal(err)
	}
	wrongInnerEnv := envelope{
		PayloadType: certificate.PayloadType,
		Payload:     base64.StdEncoding.EncodeToString(wrongInnerPayload),
		Signatures: []signature{{KeyID: keyID, Sig: base64.StdEncoding.EncodeToString(
			ed25519.Sign(priv, pae(certificate.PayloadType, wrongInnerPayload)))}},
	}

	success := []string{
		"key id: " + keyID,
		"Signature Verified Successfully",
		"predicateType: " + certificate.PredicateType,
		"certificate_id: " + certID,
		"complete: true",
		"counts: " + pyCounts(t, st.Predicate.Counts),
		"OK: signature and key id verified",
	}
	for _, c := range []struct {
		name string
		cert []byte
		pub  []byte
		// goErr is what certificate.Verify says; nil for a bundle, which it
		// does not read.
		goErr   error
		bundled bool
		ok      bool
		want    []string // lines of the output, in order
	}{
		{name: "fresh certificate", cert: cert, pub: pubPEM, ok: true, want: success},
		{name: "one payload byte changed", cert: encodeEnv(t, tamperedEnv), pub: pubPEM, goErr: certificate.ErrSignature,
			want: []string{"key id: " + keyID, "Signature Verification Failure"}},
		{name: "different public key", cert: cert, pub: otherPEM, goErr: certificate.ErrWrongKey,
			want: []string{"key id: " + certificate.KeyID(otherPub), "verify-cert: no signature has key id " + certificate.KeyID(otherPub)}},
		{name: "forged key id", cert: encodeEnv(t, forgedEnv), pub: otherPEM, goErr: certificate.ErrSignature,
			want: []string{"key id: " + certificate.KeyID(otherPub), "Signature Verification Failure"}},
		{name: "bundle", cert: bundle, pub: pubPEM, bundled: true, ok: true, want: success},
		{name: "URL-safe base64", cert: encodeEnv(t, urlSafe), pub: pubPEM, ok: true, want: success},
		{name: "predicate names another key", cert: encodeEnv(t, wrongInnerEnv), pub: pubPEM, goErr: certificate.ErrSchema,
			want: []string{"key id: " + keyID, "Signature Verified Successfully", "verify-cert: predicate.key_id is not the key id of the key"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !c.bundled {
				key, err := certificate.ParsePublicKeyPEM(c.pub)
				if err != nil {
					t.Fatal(err)
				}
				_, err = certificate.Verify(ctx, c.cert, key)
				if c.ok && err != nil || !c.ok && !errors.Is(err, c.goErr) {
					t.Fatalf("certificate.Verify = %v; the case is set up wrong", err)
				}
			}
			out, code := run(c.cert, c.pub)
			if c.ok != (code == 0) {
				t.Errorf("verify-cert.sh exited %d, want success %v", code, c.ok)
			}
			got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("verify-cert.sh output:\n%s\nwant:\n%s", out, strings.Join(c.want, "\n"))
			}
			if !c.ok && strings.Contains(out, "certificate_id:") {
				t.Error("a failed verification printed payload fields")
			}
		})
	}
}

// TestExternalVerifierGolden runs the document's script on the golden
// vectors and compares its output with the example in the document.
func TestExternalVerifierGolden(t *testing.T) {
	run := externalVerifier(t)
	doc, err := os.ReadFile(externalDoc)
	if err != nil {
		t.Fatal(err)
	}
	want := codeBlockAfter(t, string(doc), outputMarker)
	cert, err := os.ReadFile("testdata/golden-v1.dsse.json")
	if err != nil {
		t.Fatal(err)
	}
	pubPEM, err := os.ReadFile("testdata/golden-v1.pub.pem")
	if err != nil {
		t.Fatal(err)
	}
	out, code := run(cert, pubPEM)
	if code != 0 || out != want {
		t.Errorf("verify-cert.sh on the golden vectors exited %d with:\n%s\nthe document's example says:\n%s", code, out, want)
	}
}
