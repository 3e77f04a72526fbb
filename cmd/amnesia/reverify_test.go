package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
)

func reverifyDocs() []e2eDoc {
	return []e2eDoc{
		{ID: "doc-a1", Owner: "alice@example.org", Text: "Alice asked to move her appointment to the afternoon and to be called on her mobile only."},
		{ID: "doc-a2", Owner: "alice@example.org", Text: "Follow-up: Alice confirmed the new appointment and asked for the invoice to be sent by post."},
		{ID: "doc-b1", Owner: "bob@example.org", Text: "Bob reported that the parcel arrived damaged and asked for a replacement to be shipped."},
	}
}

// payloadSHA256 is the hex SHA-256 of the signed payload of the bundle at path.
func payloadSHA256(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var bundle struct {
		DSSEEnvelope struct {
			Payload string `json:"payload"`
		} `json:"dsseEnvelope"`
	}
	if err := json.Unmarshal(b, &bundle); err != nil {
		t.Fatal(err)
	}
	raw, err := base64.StdEncoding.DecodeString(bundle.DSSEEnvelope.Payload)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// newCertificates returns the certificate files in stateDir that are not in before.
func newCertificates(t *testing.T, stateDir string, before []string) []string {
	t.Helper()
	old := map[string]bool{}
	for _, c := range before {
		old[c] = true
	}
	var out []string
	for _, c := range certFiles(t, stateDir) {
		if !old[c] {
			out = append(out, c)
		}
	}
	return out
}

func reverifyJournals(t *testing.T, stateDir string) []string {
	t.Helper()
	js, err := filepath.Glob(filepath.Join(stateDir, "erasures", "*", "reverify-*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// forget → reverify: a new certificate that verifies, links to the first
// and says VERIFIED(logical) only; a restored record → RESIDUAL, exit 7; a
// tampered certificate is refused before anything is written or probed.
func TestReverifyCLI(t *testing.T) {
	f := buildE2EFixture(t, t.TempDir(), reverifyDocs())
	st := f.state()
	pub := filepath.Join(st, "signing-key.pub.pem")
	if r := runBinary(t, nil, "", "--state", st, "forget", "alice@example.org", "--reason", "DSR-7", "--yes"); r.code != exitOK {
		t.Fatalf("forget:\n%s", r)
	}
	orig, payload := singleCertificate(t, st)
	op := predicateOf(t, payload)
	if op["reverifiable"] != true {
		t.Fatalf("the erasure certificate is not re-verifiable: %v", op["reverify_note"])
	}

	r := runBinary(t, nil, "", "--state", st, "reverify", orig)
	if r.code != exitOK {
		t.Fatalf("reverify:\n%s", r)
	}
	if !strings.Contains(r.stdout, "VERIFIED(logical)") || strings.Contains(r.stdout, "VERIFIED(physical)") {
		t.Errorf("reverify output does not say VERIFIED(logical) only:\n%s", r.stdout)
	}
	made := newCertificates(t, st, []string{orig})
	if len(made) != 1 || !strings.HasPrefix(filepath.Base(made[0]), "rv-") {
		t.Fatalf("reverify wrote %v", made)
	}
	if v := runBinary(t, nil, "", "verify", made[0], "--public-key", pub); v.code != exitOK {
		t.Fatalf("verify of the re-verification:\n%s", v)
	}
	p := predicateOf(t, certificatePayload(t, made[0]))
	link, _ := p["reverifies"].(map[string]any)
	if link["certificate_id"] != op["certificate_id"] || link["payload_sha256"] != payloadSHA256(t, orig) {
		t.Errorf("reverifies = %v, want certificate %v payload %s", link, op["certificate_id"], payloadSHA256(t, orig))
	}
	counts := p["counts"].(map[string]any)
	if counts["verified_physical"] != 0.0 || counts["verified_logical"] != counts["artifacts"] || p["complete"] != true {
		t.Errorf("re-verification counts %v complete %v", counts, p["complete"])
	}
	for _, a := range p["artifacts"].([]any) {
		a := a.(map[string]any)
		if a["outcome"] != "VERIFIED" || a["level"] != "logical" || a["method"] != "reverify: by id" {
			t.Errorf("artifact %v: %v(%v) by %q", a["id"], a["outcome"], a["level"], a["method"])
		}
	}

	// A restore from backup brings one erased document back.
	ctx := context.Background()
	ds, err := sqlitedoc.Open(ctx, "docs", f.docsDB(), false)
	if err != nil {
		t.Fatal(err)
	}
	if err := ds.Put(ctx, sqlitedoc.Record{ID: "doc-a2", Kind: sqlitedoc.KindDocument, Text: "restored"}); err != nil {
		t.Fatal(err)
	}
	ds.Close()
	before := certFiles(t, st)
	r = runBinary(t, nil, "", "--state", st, "reverify", orig)
	if r.code != exitIncomplete || !strings.Contains(r.stdout, "RESIDUAL") {
		t.Fatalf("reverify after a restore: want exit %d and RESIDUAL:\n%s", exitIncomplete, r)
	}
	made = newCertificates(t, st, before)
	if len(made) != 1 {
		t.Fatalf("reverify after a restore wrote %v", made)
	}
	p = predicateOf(t, certificatePayload(t, made[0]))
	if c := p["counts"].(map[string]any); c["residual"] != 1.0 || p["complete"] != false {
		t.Errorf("after a restore: counts %v complete %v", c, p["complete"])
	}
	if v := runBinary(t, nil, "", "verify", made[0], "--public-key", pub); v.code != exitOK {
		t.Errorf("verify of the incomplete re-verification:\n%s", v)
	}

	// A tampered certificate: refused, nothing written.
	b, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(b), `"payload": "`) + len(`"payload": "`) + 60
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	bad := filepath.Join(t.TempDir(), "tampered.dsse.json")
	if err := os.WriteFile(bad, b, 0o600); err != nil {
		t.Fatal(err)
	}
	before, journals := certFiles(t, st), reverifyJournals(t, st)
	r = runBinary(t, nil, "", "--state", st, "reverify", bad)
	if r.code != exitCertTampered && r.code != exitCertInvalid {
		t.Errorf("reverify of a tampered certificate: want exit %d or %d:\n%s", exitCertTampered, exitCertInvalid, r)
	}
	if made := newCertificates(t, st, before); len(made) != 0 || len(reverifyJournals(t, st)) != len(journals) {
		t.Errorf("a refused reverify wrote certificates %v or journals", made)
	}
	logb, _ := os.ReadFile(filepath.Join(st, "amnesia.log"))
	if n := strings.Count(string(logb), `"msg":"reverify start"`); n != 2 {
		t.Errorf("amnesia.log has %d reverify starts, want 2 (the tampered certificate must not start one)", n)
	}
}

// A certificate that says reverifiable=false (a store was down during the
// erasure) is refused with its own exit code.
func TestReverifyRefusesNotReverifiable(t *testing.T) {
	f := buildE2EFixture(t, t.TempDir(), reverifyDocs())
	st := f.state()
	if err := os.Rename(f.vecsDB(), f.vecsDB()+".away"); err != nil {
		t.Fatal(err)
	}
	if r := runBinary(t, nil, "", "--state", st, "forget", "bob@example.org", "--reason", "DSR-8", "--yes", "--allow-partial"); r.code != exitIncomplete {
		t.Fatalf("forget with a store down: want exit %d:\n%s", exitIncomplete, r)
	}
	cert, payload := singleCertificate(t, st)
	if p := predicateOf(t, payload); p["reverifiable"] != false || !strings.Contains(p["reverify_note"].(string), "vectors could not be opened") {
		t.Fatalf("reverifiable %v: %v", p["reverifiable"], p["reverify_note"])
	}
	if err := os.Rename(f.vecsDB()+".away", f.vecsDB()); err != nil {
		t.Fatal(err)
	}
	r := runBinary(t, nil, "", "--state", st, "reverify", cert)
	if r.code != exitNotReverifiable || !strings.Contains(r.stderr, "not re-verifiable") {
		t.Errorf("reverify of reverifiable=false: want exit %d:\n%s", exitNotReverifiable, r)
	}
	if len(certFiles(t, st)) != 1 || len(reverifyJournals(t, st)) != 0 {
		t.Errorf("a refused reverify wrote something")
	}
}
