package certificate

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"
)

// jsonEnvelope and jsonBundle are the file forms as encoding/json writes
// them, which appendEnvelope and Signed.EncodeBundle must give byte for
// byte.
func jsonEnvelope(t *testing.T, env *dsse.Envelope) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(env); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func jsonBundle(t *testing.T, b *Bundle) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(b); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// randString draws strings that JSON writes as they are (base64) and ones
// it must escape: quotes, backslashes, control bytes, HTML characters,
// U+2028, other UTF-8 and invalid UTF-8.
func randString(r *rand.Rand) string {
	if r.IntN(3) == 0 {
		b := make([]byte, r.IntN(300))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return base64.StdEncoding.EncodeToString(b)
	}
	pieces := []string{"a", "Z", "09", "+/=", `"`, `\`, "\n", "\t", "\x00", "\x1f", "\x7f", "<", ">", "&", "\u2028", "é", "日本", "\xff", "\xc3", " "}
	var s string
	for range r.IntN(12) {
		s += pieces[r.IntN(len(pieces))]
	}
	return s
}

func TestEnvelopeAndBundleEncodingsMatchEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 7))
	for i := range 2000 {
		env := &dsse.Envelope{PayloadType: randString(r), Payload: randString(r)}
		switch n := r.IntN(4); n {
		case 0: // nil
		case 1:
			env.Signatures = []dsse.Signature{}
		default:
			for range n - 1 {
				env.Signatures = append(env.Signatures, dsse.Signature{KeyID: randString(r), Sig: randString(r)})
			}
		}
		want := jsonEnvelope(t, env)
		got, err := encodeEnvelope(env)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("case %d: envelope\n%s\nwant\n%s", i, got, want)
		}
		var entry *LogEntry
		if r.IntN(8) > 0 {
			entry = &LogEntry{LogIndex: r.Int64N(1 << 40), Checkpoint: randString(r)}
			switch r.IntN(3) {
			case 0:
			case 1:
				entry.InclusionProof = []string{}
			default:
				for range r.IntN(20) + 1 {
					entry.InclusionProof = append(entry.InclusionProof, randString(r))
				}
			}
			if r.IntN(2) == 0 {
				entry.Timestamp = randString(r)
			}
		}
		s := &Signed{Envelope: got, env: env}
		gotB, err := s.EncodeBundle(entry)
		if err != nil {
			t.Fatal(err)
		}
		if wantB := jsonBundle(t, &Bundle{MediaType: BundleMediaType, DSSEEnvelope: got, LogEntry: entry}); !bytes.Equal(gotB, wantB) {
			t.Fatalf("case %d: bundle\n%s\nwant\n%s", i, gotB, wantB)
		}
		if wantE, err := EncodeBundle(&Bundle{MediaType: BundleMediaType, DSSEEnvelope: got, LogEntry: entry}); err != nil || !bytes.Equal(gotB, wantE) {
			t.Fatalf("case %d: Signed.EncodeBundle differs from EncodeBundle (%v)", i, err)
		}
	}
}

// SignStatement's envelope is Sign's, its payload the one the envelope
// carries, and its bundle decodes as the canonical bundle of that envelope.
func TestSignStatementIsSign(t *testing.T) {
	_, priv := otherKey()
	s, err := SignStatement(context.Background(), goldenStatement(), priv)
	if err != nil {
		t.Fatal(err)
	}
	env, err := Sign(context.Background(), goldenStatement(), priv)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(s.Envelope, env) {
		t.Fatal("SignStatement's envelope differs from Sign's")
	}
	p, err := Payload(env)
	if err != nil || !bytes.Equal(p, s.Payload) {
		t.Fatalf("SignStatement's payload is not the envelope's (%v)", err)
	}
	bundle, err := s.EncodeBundle(&LogEntry{LogIndex: 3, InclusionProof: []string{"AAAA"}, Checkpoint: "origin\n4\nhash\n"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeBundle(bundle); err != nil {
		t.Fatalf("the bundle is not canonical: %v", err)
	}
}
