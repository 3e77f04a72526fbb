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
	"golang.org/x/mod/sumdb/note"

	"github.com/amnesia-dev/amnesia/transparency"
)

// A certificate means exactly one thing: each edit below leaves what the
// certificate says unchanged, and each was accepted before verification
// was made strict. Now each is refused with the error (and exit code) of
// the part it edits.

// goldenParts decodes the committed golden bundle and its envelope.
func goldenParts(t *testing.T) (*Bundle, *dsse.Envelope) {
	t.Helper()
	data, err := os.ReadFile(goldenBundleFile)
	if err != nil {
		t.Fatal(err)
	}
	b, err := DecodeBundle(data)
	if err != nil {
		t.Fatal(err)
	}
	var env dsse.Envelope
	if err := json.Unmarshal(b.DSSEEnvelope, &env); err != nil {
		t.Fatal(err)
	}
	return b, &env
}

// rebundle writes b with env as its envelope and checkpoint as its
// checkpoint, in the canonical form (so only the edit differs).
func rebundle(t *testing.T, b *Bundle, env *dsse.Envelope, checkpoint string) []byte {
	t.Helper()
	raw, err := encodeEnvelope(env)
	if err != nil {
		t.Fatal(err)
	}
	le := *b.LogEntry
	le.Checkpoint = checkpoint
	out, err := EncodeBundle(&Bundle{MediaType: b.MediaType, DSSEEnvelope: raw, LogEntry: &le})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func withSigs(env *dsse.Envelope, sigs ...dsse.Signature) *dsse.Envelope {
	e := *env
	e.Signatures = sigs
	return &e
}

// paddingFlipped returns b64 with the unused low bits of its last data
// character changed: the same bytes to a lenient decoder.
func paddingFlipped(t *testing.T, b64 string) string {
	t.Helper()
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	data := strings.TrimRight(b64, "=")
	if len(data) == len(b64) {
		t.Fatalf("no padding, so no unused bits")
	}
	i := strings.IndexByte(alphabet, data[len(data)-1])
	out := data[:len(data)-1] + string(alphabet[i^1]) + b64[len(data):]
	x, err1 := base64.StdEncoding.DecodeString(b64)
	y, err2 := base64.StdEncoding.DecodeString(out)
	if err1 != nil || err2 != nil || !bytes.Equal(x, y) {
		t.Fatal("the flip changed the decoded bytes")
	}
	return out
}

// logLine splits a signed note with one signature line into its signed
// text with the blank line, the line's key name and its base64.
func logLine(t *testing.T, cp string) (text, name, b64 string) {
	t.Helper()
	text, sigs, ok := strings.Cut(cp, "\n\n")
	if !ok || strings.Count(sigs, "\n") != 1 {
		t.Fatalf("the note has not one signature line")
	}
	name, b64, _ = strings.Cut(strings.TrimPrefix(strings.TrimSuffix(sigs, "\n"), "— "), " ")
	return text + "\n\n", name, b64
}

func TestStrictEnvelope(t *testing.T) {
	ctx := context.Background()
	pub, _ := goldenKey()
	other, otherPriv := otherKey()
	b, env := goldenParts(t)
	good := env.Signatures[0]
	cp := b.LogEntry.Checkpoint

	// A valid signature by another key over the same payload.
	payload, _ := base64.StdEncoding.DecodeString(env.Payload)
	otherEnvBytes, err := signPayload(ctx, payload, otherPriv)
	if err != nil {
		t.Fatal(err)
	}
	var otherEnv dsse.Envelope
	if err := json.Unmarshal(otherEnvBytes, &otherEnv); err != nil {
		t.Fatal(err)
	}
	sig, _ := base64.StdEncoding.DecodeString(good.Sig)
	bad := bytes.Clone(sig)
	bad[0] ^= 1
	badSig := dsse.Signature{KeyID: good.KeyID, Sig: base64.StdEncoding.EncodeToString(bad)}
	urlSig := base64.URLEncoding.EncodeToString(sig)
	if urlSig == good.Sig {
		t.Fatal("the golden signature's base64 has no + or /; the URL-safe case tests nothing")
	}

	// Both keys trusted: even a second signature that verifies, by a
	// trusted key, is refused.
	both := VerifyOptions{Keys: []TrustedKey{{Public: pub}, {Public: other}}}
	for _, c := range []struct {
		name string
		env  *dsse.Envelope
	}{
		{"extra signature by another trusted key", withSigs(env, good, otherEnv.Signatures[0])},
		{"extra signature by another key, first", withSigs(env, otherEnv.Signatures[0], good)},
		{"duplicate signature", withSigs(env, good, good)},
		{"bad signature before the good one", withSigs(env, badSig, good)},
		{"bad signature after the good one", withSigs(env, good, badSig)},
		{"line break inside the signature's base64", withSigs(env, dsse.Signature{KeyID: good.KeyID, Sig: good.Sig[:40] + "\n" + good.Sig[40:]})},
		{"padding bits of the signature", withSigs(env, dsse.Signature{KeyID: good.KeyID, Sig: paddingFlipped(t, good.Sig)})},
		{"URL-safe base64 of the signature", withSigs(env, dsse.Signature{KeyID: good.KeyID, Sig: urlSig})},
	} {
		_, err := VerifyBundle(ctx, rebundle(t, b, c.env, cp), both)
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", c.name, err)
		}
	}
	// The bare envelope (Verify) has the same rules, except that DSSE's
	// URL-safe alphabet is allowed there.
	for _, c := range []struct {
		name string
		env  *dsse.Envelope
	}{
		{"duplicate signature", withSigs(env, good, good)},
		{"bad signature before the good one", withSigs(env, badSig, good)},
		{"line break inside the signature's base64", withSigs(env, dsse.Signature{KeyID: good.KeyID, Sig: good.Sig[:40] + "\n" + good.Sig[40:]})},
	} {
		_, err := Verify(ctx, marshalEnvelope(t, c.env), pub)
		wantErr(t, "bare envelope, "+c.name, err, ErrMalformed)
	}
	// The golden bundle, rebuilt without an edit, still verifies.
	if _, err := VerifyBundle(ctx, rebundle(t, b, env, cp), both); err != nil {
		t.Fatalf("unedited: %v", err)
	}
}

func TestStrictCheckpoint(t *testing.T) {
	ctx := context.Background()
	pub, _ := goldenKey()
	other, otherPriv := otherKey()
	b, env := goldenParts(t)
	cp := b.LogEntry.Checkpoint
	text, name, b64 := logLine(t, cp)
	line := "— " + name + " " + b64 + "\n"
	sig, _ := base64.StdEncoding.DecodeString(b64)
	junk := append(bytes.Clone(sig[:4]), make([]byte, len(sig)-4)...)
	junkLine := "— " + name + " " + base64.StdEncoding.EncodeToString(junk) + "\n"

	// A cosignature line by a key the verifier may or may not be given.
	c0, err := transparency.ParseCheckpoint([]byte(strings.TrimSuffix(text, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	ws, err := transparency.NewSigner("witness.test/w", otherPriv)
	if err != nil {
		t.Fatal(err)
	}
	wnote, err := note.Sign(&note.Note{Text: string(c0.Body())}, ws)
	if err != nil {
		t.Fatal(err)
	}
	_, wname, wb64 := logLine(t, string(wnote))
	wline := "— " + wname + " " + wb64 + "\n"

	opts := VerifyOptions{Keys: []TrustedKey{{Public: pub}}}
	for _, c := range []struct{ name, cp string }{
		{"padding bits of the log's signature", text + "— " + name + " " + paddingFlipped(t, b64) + "\n"},
		{"the log's line twice", text + line + line},
		{"a bad line by the log's key after the good one", text + line + junkLine},
		{"a line by a key not given, twice", text + line + wline + wline},
		{"padding bits of a line by a key not given", text + line + "— " + wname + " " + paddingFlipped(t, wb64) + "\n"},
	} {
		_, err := VerifyBundle(ctx, rebundle(t, b, env, c.cp), opts)
		if !errors.Is(err, ErrCheckpoint) {
			t.Errorf("%s: %v, want ErrCheckpoint", c.name, err)
		}
	}

	// What is accepted: a well-formed line by a key not given is not
	// checked and changes nothing verify concludes; it is counted.
	res, err := VerifyBundle(ctx, rebundle(t, b, env, text+line+wline), opts)
	if err != nil {
		t.Fatalf("a cosignature by a key not given: %v", err)
	}
	if res.Unchecked != 1 || len(res.Witnesses) != 0 {
		t.Errorf("unchecked %d, witnesses %v; want 1 and none", res.Unchecked, res.Witnesses)
	}
	// Given as a witness key, the same line is checked and counted.
	wv, err := transparency.NewVerifier("witness.test/w", other)
	if err != nil {
		t.Fatal(err)
	}
	wopts := opts
	wopts.Witnesses, wopts.MinWitnesses = []note.Verifier{wv}, 1
	res, err = VerifyBundle(ctx, rebundle(t, b, env, text+line+wline), wopts)
	if err != nil || res.Unchecked != 0 || len(res.Witnesses) != 1 {
		t.Fatalf("a cosignature by a given key: %v, %+v", err, res)
	}
}

// A timestamp token is canonical base64 even when no TSA root is given to
// check it (it was not decoded at all then).
func TestStrictTimestamp(t *testing.T) {
	ctx := context.Background()
	pub, _ := goldenKey()
	b, env := goldenParts(t)
	opts := VerifyOptions{Keys: []TrustedKey{{Public: pub}}}
	for _, tok := range []string{"QR==", "QQ=\n=", "not base64"} {
		le := *b.LogEntry
		le.Timestamp = tok
		data := rebundle(t, &Bundle{MediaType: b.MediaType, DSSEEnvelope: b.DSSEEnvelope, LogEntry: &le}, env, le.Checkpoint)
		if _, err := VerifyBundle(ctx, data, opts); !errors.Is(err, ErrTimestamp) {
			t.Errorf("timestamp %q: %v, want ErrTimestamp", tok, err)
		}
	}
	le := *b.LogEntry
	le.Timestamp = "QQ=="
	data := rebundle(t, &Bundle{MediaType: b.MediaType, DSSEEnvelope: b.DSSEEnvelope, LogEntry: &le}, env, le.Checkpoint)
	res, err := VerifyBundle(ctx, data, opts)
	if err != nil || res.TimestampNote == "" {
		t.Fatalf("a canonical token, not checked: %v %+v", err, res)
	}
}
