package certificate

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"
)

// goldenEnvelope reads the committed golden envelope and decodes it.
func goldenEnvelope(t *testing.T) ([]byte, *dsse.Envelope) {
	t.Helper()
	b, err := os.ReadFile(goldenEnvelopeFile)
	if err != nil {
		t.Fatal(err)
	}
	var env dsse.Envelope
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatal(err)
	}
	return b, &env
}

func marshalEnvelope(t *testing.T, env *dsse.Envelope) []byte {
	t.Helper()
	b, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func wantErr(t *testing.T, what string, err, kind error) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("%s: err = %v, want %v", what, err, kind)
	}
	if !strings.HasPrefix(err.Error(), "verify certificate: ") && !strings.HasPrefix(err.Error(), "parse certificate: ") {
		t.Fatalf("%s: error %q lacks the operation prefix", what, err)
	}
}

func TestTamperPayloadEveryByte(t *testing.T) {
	ctx := context.Background()
	pub, _ := goldenKey()
	_, env := goldenEnvelope(t)
	payload, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		t.Fatal(err)
	}
	for i := range payload {
		for _, mask := range []byte{0x01, 0x80} {
			bad := append([]byte(nil), payload...)
			bad[i] ^= mask
			e := *env
			e.Payload = base64.StdEncoding.EncodeToString(bad)
			st, err := Verify(ctx, marshalEnvelope(t, &e), pub)
			if st != nil || !errors.Is(err, ErrSignature) {
				t.Fatalf("payload byte %d ^ %#x: err = %v, want ErrSignature", i, mask, err)
			}
		}
	}
	for _, bad := range [][]byte{payload[:len(payload)-1], append(append([]byte(nil), payload...), ' ')} {
		e := *env
		e.Payload = base64.StdEncoding.EncodeToString(bad)
		_, err := Verify(ctx, marshalEnvelope(t, &e), pub)
		wantErr(t, "resized payload", err, ErrSignature)
	}
}

func TestTamperSignatureEveryByte(t *testing.T) {
	ctx := context.Background()
	pub, _ := goldenKey()
	_, env := goldenEnvelope(t)
	sig, err := base64.StdEncoding.DecodeString(env.Signatures[0].Sig)
	if err != nil {
		t.Fatal(err)
	}
	for i := range sig {
		for _, mask := range []byte{0x01, 0x80} {
			bad := append([]byte(nil), sig...)
			bad[i] ^= mask
			e := *env
			e.Signatures = []dsse.Signature{{KeyID: env.Signatures[0].KeyID, Sig: base64.StdEncoding.EncodeToString(bad)}}
			st, err := Verify(ctx, marshalEnvelope(t, &e), pub)
			if st != nil || !errors.Is(err, ErrSignature) {
				t.Fatalf("signature byte %d ^ %#x: err = %v, want ErrSignature", i, mask, err)
			}
		}
	}
	e := *env
	e.Signatures = []dsse.Signature{{KeyID: env.Signatures[0].KeyID, Sig: base64.StdEncoding.EncodeToString(sig[:63])}}
	_, err = Verify(ctx, marshalEnvelope(t, &e), pub)
	wantErr(t, "short signature", err, ErrSignature)
}

func TestWrongKey(t *testing.T) {
	ctx := context.Background()
	b, env := goldenEnvelope(t)
	other, otherPriv := otherKey()
	_, err := Verify(ctx, b, other)
	wantErr(t, "other key", err, ErrWrongKey)

	// The signature must name its key: an empty keyid is not accepted.
	pub, _ := goldenKey()
	e := *env
	e.Signatures = []dsse.Signature{{Sig: env.Signatures[0].Sig}}
	_, err = Verify(ctx, marshalEnvelope(t, &e), pub)
	wantErr(t, "empty keyid", err, ErrWrongKey)

	// Forged keyid: claims the other key but keeps the golden signature.
	e = *env
	e.Signatures = []dsse.Signature{{KeyID: KeyID(other), Sig: env.Signatures[0].Sig}}
	_, err = Verify(ctx, marshalEnvelope(t, &e), other)
	wantErr(t, "forged keyid", err, ErrSignature)

	// A statement the other key signed, verified with the golden key.
	envOther, err := Sign(ctx, goldenStatement(), otherPriv)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Verify(ctx, envOther, pub)
	wantErr(t, "signed by other key", err, ErrWrongKey)
	if _, err := Verify(ctx, envOther, other); err != nil {
		t.Fatalf("other key's own certificate: %v", err)
	}
}

func TestExtraSignatures(t *testing.T) {
	ctx := context.Background()
	pub, _ := goldenKey()
	other, _ := otherKey()
	_, env := goldenEnvelope(t)
	junk := base64.StdEncoding.EncodeToString(make([]byte, 64))

	// A certificate carries exactly one signature: a foreign one next to
	// the good one is refused, and so is a bad one under our key id.
	e := *env
	e.Signatures = []dsse.Signature{{KeyID: KeyID(other), Sig: junk}, env.Signatures[0]}
	_, err := Verify(ctx, marshalEnvelope(t, &e), pub)
	wantErr(t, "extra foreign signature", err, ErrMalformed)
	e.Signatures = []dsse.Signature{{KeyID: KeyID(pub), Sig: junk}, env.Signatures[0]}
	_, err = Verify(ctx, marshalEnvelope(t, &e), pub)
	wantErr(t, "extra bad signature", err, ErrMalformed)
	// URL-safe base64, which DSSE allows, verifies in a bare envelope.
	e = *env
	payload, _ := base64.StdEncoding.DecodeString(env.Payload)
	e.Payload = base64.URLEncoding.EncodeToString(payload)
	if _, err := Verify(ctx, marshalEnvelope(t, &e), pub); err != nil {
		t.Fatalf("url-safe base64: %v", err)
	}
}

func TestMalformed(t *testing.T) {
	ctx := context.Background()
	pub, _ := goldenKey()
	golden, env := goldenEnvelope(t)
	sig := env.Signatures[0]
	mk := func(f func(m map[string]any)) string {
		m := map[string]any{"payloadType": env.PayloadType, "payload": env.Payload,
			"signatures": []any{map[string]any{"keyid": sig.KeyID, "sig": sig.Sig}}}
		f(m)
		b, _ := json.Marshal(m)
		return string(b)
	}
	cases := map[string]string{
		"empty":             "",
		"null":              "null",
		"array":             "[]",
		"object":            "{}",
		"not json":          "certificate",
		"truncated":         string(golden[:len(golden)/2]),
		"trailing data":     string(golden) + "{}",
		"no payloadType":    mk(func(m map[string]any) { delete(m, "payloadType") }),
		"wrong payloadType": mk(func(m map[string]any) { m["payloadType"] = "application/json" }),
		"no payload":        mk(func(m map[string]any) { delete(m, "payload") }),
		"empty payload":     mk(func(m map[string]any) { m["payload"] = "" }),
		"payload number":    mk(func(m map[string]any) { m["payload"] = 7 }),
		"no signatures":     mk(func(m map[string]any) { delete(m, "signatures") }),
		"zero signatures":   mk(func(m map[string]any) { m["signatures"] = []any{} }),
		"bad base64":        mk(func(m map[string]any) { m["payload"] = "***" }),
		"bad sig base64":    mk(func(m map[string]any) { m["signatures"] = []any{map[string]any{"keyid": sig.KeyID, "sig": "%%"}} }),
		"empty sig":         mk(func(m map[string]any) { m["signatures"] = []any{map[string]any{"keyid": sig.KeyID}} }),
	}
	for name, in := range cases {
		st, err := Verify(ctx, []byte(in), pub)
		if st != nil {
			t.Errorf("%s: Verify returned a statement", name)
		}
		wantErr(t, name+": Verify", err, ErrMalformed)
		st, err = Parse([]byte(in))
		if st != nil {
			t.Errorf("%s: Parse returned a statement", name)
		}
		wantErr(t, name+": Parse", err, ErrMalformed)
	}
	if _, err := Verify(ctx, golden, pub[:31]); err == nil {
		t.Error("Verify accepted a 31-byte public key")
	}
}

func TestParse(t *testing.T) {
	golden, env := goldenEnvelope(t)
	st, err := Parse(golden)
	if err != nil {
		t.Fatal(err)
	}
	if st.Predicate.CertificateID != goldenPredicate().CertificateID {
		t.Errorf("Parse: certificate id = %q", st.Predicate.CertificateID)
	}
	// Parse does not verify: a forged signature still parses.
	e := *env
	e.Signatures = []dsse.Signature{{KeyID: "x", Sig: base64.StdEncoding.EncodeToString([]byte("sig"))}}
	if _, err := Parse(marshalEnvelope(t, &e)); err != nil {
		t.Errorf("Parse(unsigned) = %v", err)
	}
	e.Payload = base64.StdEncoding.EncodeToString([]byte("not json"))
	_, err = Parse(marshalEnvelope(t, &e))
	wantErr(t, "Parse(non-JSON payload)", err, ErrMalformed)
}

// fuzzSeeds returns the committed FuzzVerify seed corpus, by file name,
// made from the golden envelope; go test -update writes it.
func fuzzSeeds(golden []byte) map[string][]byte {
	return map[string][]byte{
		"golden":            golden,
		"truncated":         golden[:len(golden)/2],
		"wrong-type":        bytes.Replace(golden, []byte(PayloadType), []byte("application/json"), 1),
		"bad-base64":        bytes.Replace(golden, []byte(`"payload": "`), []byte(`"payload": "!`), 1),
		"empty-signatures":  []byte(`{"payloadType":"` + PayloadType + `","payload":"e30=","signatures":[]}`),
		"unsigned-empty":    []byte(`{"payloadType":"` + PayloadType + `","payload":"e30=","signatures":[{"keyid":"","sig":"AA=="}]}`),
		"not-json":          []byte("\x00\xff{"),
		"trailing-garbage":  append(append([]byte(nil), golden...), "[]"...),
		"keyid-other-empty": bytes.Replace(golden, []byte(goldenKeyID), nil, 1),
	}
}

func FuzzVerify(f *testing.F) {
	// Seeds come from testdata/fuzz/FuzzVerify.
	ctx := context.Background()
	pub, _ := goldenKey()
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := Verify(ctx, b, pub)
		if err == nil {
			if st == nil {
				t.Fatal("Verify returned no error and no statement")
			}
			if _, err := Parse(b); err != nil {
				t.Fatalf("Verify accepted what Parse rejects: %v", err)
			}
		} else {
			if st != nil {
				t.Fatal("Verify returned a statement with an error")
			}
			n := 0
			for _, kind := range []error{ErrMalformed, ErrWrongKey, ErrSignature, ErrSchema} {
				if errors.Is(err, kind) {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("Verify error %q wraps %d kinds, want 1", err, n)
			}
		}
		if st, err := Parse(b); (err == nil) != (st != nil) {
			t.Fatalf("Parse returned statement %v with error %v", st != nil, err)
		}
	})
}
