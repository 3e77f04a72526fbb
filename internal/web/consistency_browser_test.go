package web_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/transparency"
)

// signedBundle signs payload (as is: no schema check) with priv and logs
// it as the only entry of a log, as an installation would: a bundle whose
// signature, checkpoint and inclusion proof are all valid.
func signedBundle(t *testing.T, payload []byte, priv ed25519.PrivateKey) []byte {
	t.Helper()
	signer, err := certificate.NewSigner(priv)
	if err != nil {
		t.Fatal(err)
	}
	es, err := dsse.NewEnvelopeSigner(signer)
	if err != nil {
		t.Fatal(err)
	}
	e, err := es.SignPayload(context.Background(), certificate.PayloadType, payload)
	if err != nil {
		t.Fatal(err)
	}
	env, _ := json.Marshal(e) // payloadType, payload, signatures: the envelope's canonical order
	var st struct {
		Predicate struct {
			ID string `json:"certificate_id"`
		} `json:"predicate"`
	}
	_ = json.Unmarshal(payload, &st) // a payload without an id gets the leaf of ""
	leaf, err := transparency.CertificateLeaf(st.Predicate.ID, payload)
	if err != nil {
		t.Fatal(err)
	}
	logSigner, err := transparency.NewSigner("amnesia.test/consistency", priv)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := transparency.Sign(transparency.Checkpoint{Origin: "amnesia.test/consistency", Size: 1, Hash: tlog.RecordHash(leaf)}, logSigner)
	if err != nil {
		t.Fatal(err)
	}
	out, err := certificate.EncodeBundle(&certificate.Bundle{MediaType: certificate.BundleMediaType, DSSEEnvelope: env,
		LogEntry: &certificate.LogEntry{LogIndex: 0, InclusionProof: []string{}, Checkpoint: string(cp)}})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A certificate that contradicts itself is refused by the page as it is by
// certificate.VerifyBundle, even though its signature, checkpoint and
// inclusion proof are valid: the check named is "consistency" (or "keys"
// for a key Go would read as another field), and Go's error is ErrSchema.
func TestBrowserRefusesSelfContradiction(t *testing.T) {
	c := staticPage(t)
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	pemb, _ := certificate.EncodePublicKeyPEM(pub)
	golden, err := os.ReadFile("../../certificate/testdata/golden-v1.payload.json")
	if err != nil {
		t.Fatal(err)
	}
	golden = bytes.TrimSpace(golden)
	// The golden statement, under this test's key.
	base := regexp.MustCompile(`"key_id":"sha256:[0-9a-f]{64}"`).ReplaceAll(golden, []byte(`"key_id":"`+certificate.KeyID(pub)+`"`))
	edit := func(old, new string) []byte {
		if !bytes.Contains(base, []byte(old)) {
			t.Fatalf("the golden payload lacks %q", old)
		}
		return bytes.Replace(base, []byte(old), []byte(new), 1)
	}
	// edits makes several edits, each as edit does, one after the other.
	edits := func(rs ...[2]string) []byte {
		out := base
		for _, r := range rs {
			if !bytes.Contains(out, []byte(r[0])) {
				t.Fatalf("the edited golden payload lacks %q", r[0])
			}
			out = bytes.Replace(out, []byte(r[0]), []byte(r[1]), 1)
		}
		return out
	}
	// A third configured store that could not be opened, declared as the
	// saga declares it, and out_of_scope entries naming it (or not).
	const (
		lastStore     = `"evidence":"logical queries only: by id, by filter, by similarity"}]`
		lastExclusion = `{"what":"derived models","reason":"not traced by amnesia"}]`
	)
	complete := [2]string{`"complete":false`, `"complete":true`}
	unreachable := [2]string{lastStore, strings.TrimSuffix(lastStore, "]") + `,{"name":"archive","type":"sqlite-doc","capabilities":[],"touched":false,"artifacts":0,"residue":"UNREACHABLE","evidence":"the store could not be opened or reached when the erasure ran, so nothing about it was checked; the store is declared out of scope (out_of_scope: true)"}]`}
	excluded := func(what string) [2]string {
		return [2]string{lastExclusion, strings.TrimSuffix(lastExclusion, "]") + `,{"what":"` + what + `","reason":"configured, but it could not be opened or reached when the erasure ran; nothing in it was erased or checked (declared out of scope: out_of_scope: true)"}]`}
	}
	// The NEEDS_HUMAN artifact made UNVERIFIED, the counts kept right, and
	// complete set: only the complete flag is wrong.
	unverified := edit(`"complete":false`, `"complete":true`)
	for _, r := range [][2]string{{`"outcome":"NEEDS_HUMAN"`, `"outcome":"UNVERIFIED"`}, {`"unverified":0`, `"unverified":1`}, {`"needs_human":1`, `"needs_human":0`}} {
		unverified = bytes.Replace(unverified, []byte(r[0]), []byte(r[1]), 1)
	}
	cases := []struct {
		name    string
		payload []byte
		failed  string // "" = valid
		detail  string // in the failed check's detail
	}{
		{"golden", base, "", ""},
		{"found after deletion", edit(`"found_after":0`, `"found_after":2`), "consistency", "found 2 of its fragments"},
		{"a query still returns it", edit(`"by_id":false`, `"by_id":true`), "consistency", "a query still returns it"},
		{"a probe without power", edit(`"found_before":11`, `"found_before":0`), "consistency", "the probe had no power"},
		{"counts", edit(`"verified_logical":1`, `"verified_logical":2`), "consistency", "the counts say 2 verified_logical"},
		{"complete with an unverified artifact", unverified, "consistency", "says complete"},
		{"complete in capitals", edit(`"complete":false`, `"complete":false,"Complete":true`), "keys", "the field complete only in case"},
		{"complete with a tainted model", edit(`"complete":false`, `"complete":true,"models":[{"model":"m","sharded":true,"level":"model","outcome":"TAINTED","reason":"r","method":"x","shards":[]}]`), "consistency", "model 1 is TAINTED"},
		{"a verified model without shards", edit(`"complete":false`, `"complete":false,"models":[{"model":"m","sharded":false,"level":"model","outcome":"VERIFIED","method":"x","shards":[]}]`), "consistency", "shards or probe do not show it"},
		{"empty out_of_scope", edit(`"out_of_scope":[{"what":"backups & replicas","reason":"outside the configured stores"},{"what":"derived models","reason":"not traced by amnesia"}]`, `"out_of_scope":[]`), "consistency", "out_of_scope is empty"},
		{"an unknown via", edit(`"outcome":"NEEDS_HUMAN"`, `"outcome":"NEEDS_HUMAN","via":"import"`), "consistency", "via other than reconcile"},
		{"a near-duplicate without near", edit(`"id":"art:1b8e906f04e1a51e8cd3677d1c092750","kind":"row"`, `"id":"art:1b8e906f04e1a51e8cd3677d1c092750","kind":"near-duplicate"`), "consistency", "without measurement.near"},
		{"complete with an unreachable store out_of_scope does not name", edits(complete, unreachable), "consistency", "is UNREACHABLE"},
		{"complete with an unreachable store whose files only are excluded", edits(complete, unreachable, excluded("files of store archive")), "consistency", "is UNREACHABLE"},
		{"complete with an unreachable store declared out of scope", edits(complete, unreachable, excluded("store archive (unreachable)")), "", ""},
		{"incomplete with an unreachable store", edits(unreachable), "", ""},
		{"complete with a failed store", edits(complete, [2]string{`"residue":"UNVERIFIED-no-physical-probe"`, `"residue":"UNVERIFIED-store-failed"`}), "consistency", "is UNVERIFIED-store-failed"},
		{"complete with a residual store", edits(complete, [2]string{`"residue":"VERIFIED"`, `"residue":"RESIDUAL"`}), "consistency", "is RESIDUAL"},
		{"complete with a deferred reclaim", edits(complete, [2]string{`"residue":"VERIFIED"`, `"residue":"PENDING-reclaim-deferred"`}), "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bundle := signedBundle(t, tc.payload, priv)
			v := verifyInPage(t, c, bundle, string(pemb))
			_, gerr := certificate.VerifyBundle(context.Background(), bundle, certificate.VerifyOptions{Keys: []certificate.TrustedKey{{Public: pub}}})
			if tc.failed == "" {
				if !v.Valid || gerr != nil {
					t.Fatalf("page: %+v; Go: %v; want both valid", v, gerr)
				}
				return
			}
			if v.Valid || v.Failed != tc.failed {
				t.Errorf("page: valid=%v failed=%q, want invalid naming %q (%+v)", v.Valid, v.Failed, tc.failed, v.Checks)
			}
			for _, ch := range v.Checks {
				if ch.Name == tc.failed && !strings.Contains(ch.Detail, tc.detail) {
					t.Errorf("page: %s says %q, want %q in it", ch.Name, ch.Detail, tc.detail)
				}
			}
			if !errors.Is(gerr, certificate.ErrSchema) {
				t.Errorf("Go: %v, want ErrSchema", gerr)
			}
		})
	}
}

// The page's list of schema fields is certificate.SchemaFields().
func TestPageSchemaFieldsMatch(t *testing.T) {
	src, err := os.ReadFile("static/verify.js")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(src), "export const SCHEMA_FIELDS = new Set([")
	list, _, ok2 := strings.Cut(rest, "]);")
	if !ok || !ok2 {
		t.Fatal("verify.js has no SCHEMA_FIELDS = new Set([…]) list")
	}
	var js []string
	for _, m := range regexp.MustCompile(`"([^"]*)"`).FindAllStringSubmatch(list, -1) {
		js = append(js, m[1])
	}
	slices.Sort(js)
	if got, want := strings.Join(js, " "), strings.Join(certificate.SchemaFields(), " "); got != want {
		t.Errorf("verify.js SCHEMA_FIELDS differ from certificate.SchemaFields():\n js: %s\n go: %s", got, want)
	}
}
