package web_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/web"
	"github.com/amnesia-dev/amnesia/transparency"
)

type proofVector struct {
	Size  int64    `json:"size"`
	Index int64    `json:"index"`
	Leaf  string   `json:"leaf"`
	Proof []string `json:"proof"`
	Root  string   `json:"root"`
}

// proofVectors builds logs of 1..maxSize leaves with tlog and returns an
// inclusion proof for every leaf of every size.
func proofVectors(t *testing.T, maxSize int64) []proofVector {
	t.Helper()
	var stored []tlog.Hash
	reader := tlog.HashReaderFunc(func(ids []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(ids))
		for i, id := range ids {
			out[i] = stored[id]
		}
		return out, nil
	})
	b64 := func(h tlog.Hash) string { return base64.StdEncoding.EncodeToString(h[:]) }
	var vs []proofVector
	for n := int64(0); n < maxSize; n++ {
		hs, err := tlog.StoredHashes(n, fmt.Appendf(nil, "leaf %d\n", n), reader)
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, hs...)
		size := n + 1
		root, err := tlog.TreeHash(size, reader)
		if err != nil {
			t.Fatal(err)
		}
		for i := int64(0); i < size; i++ {
			p, err := tlog.ProveRecord(size, i, reader)
			if err != nil {
				t.Fatal(err)
			}
			v := proofVector{Size: size, Index: i, Root: b64(root), Proof: []string{}}
			v.Leaf = b64(tlog.RecordHash(fmt.Appendf(nil, "leaf %d\n", i)))
			for _, h := range p {
				v.Proof = append(v.Proof, b64(h))
			}
			vs = append(vs, v)
		}
	}
	return vs
}

// staticPage serves the page's files (no service behind it: /ui/api
// answers 401) and opens it in the browser.
func staticPage(t *testing.T) pageCtx {
	t.Helper()
	ctx := newBrowser(t)
	srv := httptest.NewServer(web.New(nil, web.Options{Logger: slog.New(slog.DiscardHandler)}))
	t.Cleanup(srv.Close)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.ID("token"))); err != nil {
		t.Fatalf("open the page: %v", err)
	}
	return pageCtx{ctx}
}

// TestBrowserInclusionProofs: the page's RFC 6962 inclusion check agrees
// with golang.org/x/mod/sumdb/tlog on every leaf of trees of 1 to 33
// leaves, and refuses a proof for another index.
func TestBrowserInclusionProofs(t *testing.T) {
	c := staticPage(t)
	vs, _ := json.Marshal(proofVectors(t, 33))
	var got struct {
		Checked int      `json:"checked"`
		Bad     []string `json:"bad"`
		Moved   int      `json:"moved"`
	}
	evalJSON(t, c.ctx, `(async () => {
		const m = await import("/ui/static/verify.js");
		const vs = `+string(vs)+`;
		const eq = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
		let checked = 0, moved = 0; const bad = [];
		for (const v of vs) {
			const proof = v.proof.map(m.b64decode);
			const r = await m.rootFromInclusionProof(v.index, v.size, m.b64decode(v.leaf), proof);
			if (!eq(Array.from(r), Array.from(m.b64decode(v.root)))) bad.push(v.size + "/" + v.index);
			checked++;
			if (v.size > 1) {
				const j = (v.index + 1) % v.size;
				let r2 = null;
				try { r2 = await m.rootFromInclusionProof(j, v.size, m.b64decode(v.leaf), proof); } catch (e) {}
				if (r2 && eq(Array.from(r2), Array.from(m.b64decode(v.root)))) moved++;
			}
		}
		return {checked, bad, moved};
	})()`, &got)
	if got.Checked != 33*34/2 || len(got.Bad) > 0 {
		t.Fatalf("checked %d proofs (want %d); roots differing from tlog's: %v", got.Checked, 33*34/2, got.Bad)
	}
	if got.Moved != 0 {
		t.Fatalf("%d proofs verified for another leaf index", got.Moved)
	}
}

type verdict struct {
	Valid  bool   `json:"valid"`
	Failed string `json:"failed"`
	Checks []struct {
		Name   string `json:"name"`
		OK     bool   `json:"ok"`
		Detail string `json:"detail"`
	} `json:"checks"`
	CertificateID string `json:"certificateId"`
}

func verifyInPage(t *testing.T, c pageCtx, bundle []byte, pem string, others ...string) verdict {
	t.Helper()
	b, _ := json.Marshal(string(bundle))
	k, _ := json.Marshal(pem)
	o, _ := json.Marshal(append([]string{}, others...))
	var v verdict
	evalJSON(t, c.ctx, `(async () => { const m = await import("/ui/static/verify.js"); return m.verifyBundle(`+string(b)+`, `+string(k)+`, `+string(o)+`); })()`, &v)
	return v
}

// editBundle decodes the golden bundle, lets f change it and re-encodes it.
func editBundle(t *testing.T, data []byte, f func(b *certificate.Bundle, env map[string]any)) []byte {
	t.Helper()
	var b certificate.Bundle
	if err := json.Unmarshal(data, &b); err != nil {
		t.Fatal(err)
	}
	var env map[string]any
	if err := json.Unmarshal(b.DSSEEnvelope, &env); err != nil {
		t.Fatal(err)
	}
	f(&b, env)
	b.DSSEEnvelope, _ = json.Marshal(env)
	out, err := certificate.EncodeBundle(&b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBrowserVerifyGolden: the page's verifier accepts the golden
// certificate with its key and names the check each tampering breaks.
func TestBrowserVerifyGolden(t *testing.T) {
	c := staticPage(t)
	golden, err := os.ReadFile("../../certificate/testdata/golden-v1.bundle.json")
	if err != nil {
		t.Fatal(err)
	}
	pemb, err := os.ReadFile("../../certificate/testdata/golden-v1.pub.pem")
	if err != nil {
		t.Fatal(err)
	}
	pem := string(pemb)
	v := verifyInPage(t, c, golden, pem)
	if !v.Valid || v.CertificateID != "01JNB5Q6X2R7Y8Z9A0B1C2D3E4" {
		t.Fatalf("golden certificate: %+v, want valid", v)
	}

	// The golden certificate in plain words: its NEEDS_HUMAN artifact with
	// the reason, the logical level, a store not shown complete, and the
	// exclusions.
	gb, _ := json.Marshal(string(golden))
	var words string
	evalJSON(t, c.ctx, `(async () => {
		const v = await import("/ui/static/verify.js");
		const w = await import("/ui/static/words.js");
		return w.renderWords(v.statementOf(`+string(gb)+`), true).textContent;
	})()`, &words)
	for _, want := range []string{
		"Not complete: 2 of 3 traced artifacts were erased and shown gone",
		"1 row: left for a person to decide — why: invoice under statutory retention; a person must decide",
		"1 embedding: erased and shown gone — logical: no query returns it (asked by id, by filter, by similarity)",
		"1 row: erased and shown gone — physical: a byte scan of the store's files found 0 of the 12 fragments",
		"result: UNVERIFIED-no-physical-probe",
		"backups & replicas: outside the configured stores",
	} {
		if !strings.Contains(words, want) {
			t.Errorf("the golden certificate in plain words lacks %q:\n%s", want, words)
		}
	}

	other, _, _ := ed25519.GenerateKey(rand.Reader)
	otherPEM, _ := certificate.EncodePublicKeyPEM(other)
	cases := []struct {
		name   string
		bundle []byte
		pem    string
		failed string
	}{
		{"payload byte", editBundle(t, golden, func(_ *certificate.Bundle, env map[string]any) {
			p, _ := base64.StdEncoding.DecodeString(env["payload"].(string))
			i := bytes.Index(p, []byte("GDPR"))
			p[i] = 'X'
			env["payload"] = base64.StdEncoding.EncodeToString(p)
		}), pem, "signature"},
		{"signature byte", editBundle(t, golden, func(_ *certificate.Bundle, env map[string]any) {
			sig := env["signatures"].([]any)[0].(map[string]any)
			s, _ := base64.StdEncoding.DecodeString(sig["sig"].(string))
			s[10] ^= 1
			sig["sig"] = base64.StdEncoding.EncodeToString(s)
		}), pem, "signature"},
		{"another key", golden, string(otherPEM), "key"},
		{"checkpoint root", editBundle(t, golden, func(b *certificate.Bundle, _ map[string]any) {
			lines := strings.SplitN(b.LogEntry.Checkpoint, "\n", 4)
			h, _ := base64.StdEncoding.DecodeString(lines[2])
			h[0] ^= 1
			lines[2] = base64.StdEncoding.EncodeToString(h)
			b.LogEntry.Checkpoint = strings.Join(lines, "\n")
		}), pem, "checkpoint"},
		{"proof hash", editBundle(t, golden, func(b *certificate.Bundle, _ map[string]any) {
			h, _ := base64.StdEncoding.DecodeString(b.LogEntry.InclusionProof[0])
			h[31] ^= 1
			b.LogEntry.InclusionProof[0] = base64.StdEncoding.EncodeToString(h)
		}), pem, "inclusion"},
		{"log index", editBundle(t, golden, func(b *certificate.Bundle, _ map[string]any) {
			b.LogEntry.LogIndex = 4
		}), pem, "inclusion"},
		{"not a bundle", []byte(`{"hello": 1}`), pem, "form"},
	}
	// After a key rotation the log signs checkpoints with the new key: the
	// installation's other keys are accepted for the checkpoint only.
	_, rotated, _ := ed25519.GenerateKey(rand.Reader)
	rotatedPEM, _ := certificate.EncodePublicKeyPEM(rotated.Public().(ed25519.PublicKey))
	resigned := editBundle(t, golden, func(b *certificate.Bundle, _ map[string]any) {
		body, _, _ := strings.Cut(b.LogEntry.Checkpoint, "\n\n")
		cp, err := transparency.ParseCheckpoint([]byte(body + "\n"))
		if err != nil {
			t.Fatal(err)
		}
		signer, err := transparency.NewSigner(cp.Origin, rotated)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := transparency.Sign(cp, signer)
		if err != nil {
			t.Fatal(err)
		}
		b.LogEntry.Checkpoint = string(raw)
	})
	if v := verifyInPage(t, c, resigned, pem); v.Valid || v.Failed != "checkpoint" {
		t.Errorf("checkpoint by an unknown key: valid=%v failed=%q, want checkpoint", v.Valid, v.Failed)
	}
	if v := verifyInPage(t, c, resigned, pem, string(rotatedPEM)); !v.Valid {
		t.Errorf("checkpoint by the installation's other key: %+v, want valid", v)
	}
	if v := verifyInPage(t, c, golden, string(rotatedPEM), pem); v.Valid || v.Failed != "key" {
		t.Errorf("certificate by a key given only for checkpoints: valid=%v failed=%q, want key", v.Valid, v.Failed)
	}

	for _, tc := range cases {
		v := verifyInPage(t, c, tc.bundle, tc.pem)
		if v.Valid || v.Failed != tc.failed {
			t.Errorf("%s: valid=%v failed=%q, want invalid naming %q", tc.name, v.Valid, v.Failed, tc.failed)
		}
	}
}
