package certificate

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func trustKey(b byte) ed25519.PublicKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{b}, ed25519.SeedSize)).Public().(ed25519.PublicKey)
}

// sampleTrustFile is two keys: the first created and retired, the second
// with neither time.
func sampleTrustFile(t testing.TB) []byte {
	t.Helper()
	b, err := EncodeTrustFile(&TrustFile{Keys: []TrustEntry{
		{Public: trustKey(1), Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Retired: time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)},
		{Public: trustKey(2)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTrustFileRoundTrip(t *testing.T) {
	b := sampleTrustFile(t)
	tf, err := ParseTrustFile(b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if len(tf.Keys) != 2 || tf.Keys[0].KeyID != KeyID(trustKey(1)) || !tf.Keys[1].Retired.IsZero() || !tf.Keys[1].Created.IsZero() {
		t.Fatalf("parsed %+v", tf)
	}
	if !tf.Keys[0].Retired.Equal(time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("retired %v", tf.Keys[0].Retired)
	}
	keys := tf.TrustedKeys()
	if len(keys) != 2 || !keys[0].Public.Equal(trustKey(1)) || keys[0].Retired.IsZero() {
		t.Errorf("trusted keys %+v", keys)
	}
	again, err := EncodeTrustFile(tf)
	if err != nil || !bytes.Equal(again, b) {
		t.Errorf("re-encoded differs (%v):\n%s\nwas\n%s", err, again, b)
	}
	for _, want := range []string{`"format": "amnesia.trust/v1"`, `"key_id": "sha256:`, `"retired": "2026-06-01T00:00:00Z"`, "-----BEGIN PUBLIC KEY-----\\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("encoded trust file lacks %s:\n%s", want, b)
		}
	}
	if _, err := EncodeTrustFile(&TrustFile{Keys: []TrustEntry{{KeyID: "sha256:00", Public: trustKey(1)}}}); err == nil {
		t.Error("encoded an entry whose key id is not its key's")
	}
	if _, err := EncodeTrustFile(&TrustFile{}); err == nil {
		t.Error("encoded a trust file without keys")
	}
}

// trustFileRefusals are edits of the sample file that must be refused.
func trustFileRefusals(t testing.TB) map[string][]byte {
	b := string(sampleTrustFile(t))
	id1 := KeyID(trustKey(1))
	pem1, _ := EncodePublicKeyPEM(trustKey(1))
	pem2, _ := EncodePublicKeyPEM(trustKey(2))
	q := func(s string) string { return strconv.Quote(s) }
	rep := func(old, new string) []byte {
		if !strings.Contains(b, old) {
			t.Fatalf("sample lacks %q", old)
		}
		return []byte(strings.Replace(b, old, new, 1))
	}
	return map[string][]byte{
		"unknown top member":    rep(`"format"`, `"comment": "x", "format"`),
		"unknown key member":    rep(`"key_id"`, `"current": true, "key_id"`),
		"duplicate member":      rep(`"format"`, `"format": "amnesia.trust/v1", "format"`),
		"duplicate key member":  rep(`"retired"`, `"retired": "2000-01-01T00:00:00Z", "retired"`),
		"null retired":          rep(`"retired": "2026-06-01T00:00:00Z"`, `"retired": null`),
		"empty retired":         rep(`"retired": "2026-06-01T00:00:00Z"`, `"retired": ""`),
		"bad retired":           rep(`"retired": "2026-06-01T00:00:00Z"`, `"retired": "2026-06-01"`),
		"bad created":           rep(`"created": "2026-01-02T03:04:05Z"`, `"created": "yesterday"`),
		"other format":          rep(`amnesia.trust/v1`, `amnesia.trust/v2`),
		"wrong key id":          rep(id1, KeyID(trustKey(3))),
		"key id of other key":   rep(q(string(pem1)), q(string(pem2))),
		"no keys":               []byte(`{"format": "amnesia.trust/v1", "keys": []}`),
		"keys missing":          []byte(`{"format": "amnesia.trust/v1"}`),
		"trailing data":         []byte(b + "{}"),
		"two PEM blocks":        rep(q(string(pem1)), q(string(pem1)+string(pem1))),
		"text before PEM":       rep(q(string(pem1)), q("key:\n"+string(pem1))),
		"private key PEM":       rep(q(string(pem1)), q(strings.ReplaceAll(string(pem1), "PUBLIC", "PRIVATE"))),
		"not an object":         []byte(`["amnesia.trust/v1"]`),
		"not JSON":              []byte("format: amnesia.trust/v1\n"),
		"not UTF-8":             append([]byte(b[:len(b)-3]), 0xff, '}', '\n'),
		"same key twice":        []byte(`{"format":"amnesia.trust/v1","keys":[{"key_id":` + q(id1) + `,"public_key":` + q(string(pem1)) + `},{"key_id":` + q(id1) + `,"public_key":` + q(string(pem1)) + `}]}`),
		"string for key list":   []byte(`{"format":"amnesia.trust/v1","keys":"all"}`),
		"too large":             append([]byte(b), bytes.Repeat([]byte(" "), maxTrustFileSize)...),
		"retired number":        rep(`"retired": "2026-06-01T00:00:00Z"`, `"retired": 1780272000`),
		"case-folded member":    rep(`"key_id"`, `"KEY_ID"`),
		"zero time":             rep(`"retired": "2026-06-01T00:00:00Z"`, `"retired": "0001-01-01T00:00:00Z"`),
		"empty public key":      rep(q(string(pem1)), `""`),
		"public key with CRLFs": rep(q(string(pem1)), q(strings.ReplaceAll(string(pem1), "\n", "\r\n"))),
	}
}

func TestTrustFileRefusals(t *testing.T) {
	for name, b := range trustFileRefusals(t) {
		if tf, err := ParseTrustFile(b); !errors.Is(err, ErrTrustFile) {
			t.Errorf("%s: parsed (%v, %+v)\n%s", name, err, tf, b)
		}
	}
}

// A hand-written trust file (compact, members in another order, a key's
// PEM as openssl writes it) parses.
func TestTrustFileHandWritten(t *testing.T) {
	pem1, _ := EncodePublicKeyPEM(trustKey(1))
	b := fmt.Sprintf(`{"keys":[{"public_key":%q,"retired":"2026-06-01T02:00:00+02:00","key_id":%q}],"format":"amnesia.trust/v1"}`, pem1, KeyID(trustKey(1)))
	tf, err := ParseTrustFile([]byte(b))
	if err != nil {
		t.Fatal(err)
	}
	if !tf.Keys[0].Retired.Equal(time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("retired %v", tf.Keys[0].Retired)
	}
}

// The seed corpus under testdata/fuzz/FuzzParseTrustFile holds the sample
// and each refusal; AMNESIA_WRITE_FUZZ_SEEDS=1 rewrites it.
func TestTrustFileSeedCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzParseTrustFile")
	seeds := trustFileRefusals(t)
	delete(seeds, "too large") // over a megabyte: kept out of the repository
	seeds["sample"] = sampleTrustFile(t)
	for name, b := range seeds {
		file := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		want := "go test fuzz v1\n[]byte(" + strconv.Quote(string(b)) + ")\n"
		if os.Getenv("AMNESIA_WRITE_FUZZ_SEEDS") == "1" {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(file)
		if err != nil || string(got) != want {
			t.Errorf("seed %s is missing or stale (%v): run with AMNESIA_WRITE_FUZZ_SEEDS=1", file, err)
		}
	}
}

func FuzzParseTrustFile(f *testing.F) {
	f.Add(sampleTrustFile(f))
	f.Fuzz(func(t *testing.T, b []byte) {
		tf, err := ParseTrustFile(b)
		if err != nil {
			if !errors.Is(err, ErrTrustFile) {
				t.Fatalf("error does not wrap ErrTrustFile: %v", err)
			}
			return
		}
		// Whatever parses encodes, parses back to the same keys, and then
		// encodes to the same bytes.
		enc, err := EncodeTrustFile(tf)
		if err != nil {
			t.Fatalf("parsed but does not encode: %v", err)
		}
		tf2, err := ParseTrustFile(enc)
		if err != nil {
			t.Fatalf("encoded form does not parse: %v\n%s", err, enc)
		}
		if len(tf2.Keys) != len(tf.Keys) {
			t.Fatalf("%d keys, re-parsed %d", len(tf.Keys), len(tf2.Keys))
		}
		for i, k := range tf.Keys {
			k2 := tf2.Keys[i]
			if k.KeyID != KeyID(k.Public) || k2.KeyID != k.KeyID || !k2.Public.Equal(k.Public) || !k2.Created.Equal(k.Created) || !k2.Retired.Equal(k.Retired) {
				t.Fatalf("key %d: %+v re-parsed as %+v", i, k, k2)
			}
		}
		enc2, _ := EncodeTrustFile(tf2)
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding is not stable:\n%s\n%s", enc, enc2)
		}
	})
}
