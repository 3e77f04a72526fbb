package transparency_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/transparency"
)

// flipPaddingBits returns b64 with the unused low bits of its last data
// character changed: the same bytes to a lenient decoder, another string.
func flipPaddingBits(t *testing.T, b64 string) string {
	t.Helper()
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	data := strings.TrimRight(b64, "=")
	if len(data) == len(b64) {
		t.Fatalf("%q has no padding, so no unused bits", b64)
	}
	last := strings.IndexByte(alphabet, data[len(data)-1])
	out := data[:len(data)-1] + string(alphabet[last^1]) + b64[len(data):]
	a, err1 := base64.StdEncoding.DecodeString(b64)
	b, err2 := base64.StdEncoding.DecodeString(out)
	if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
		t.Fatalf("flipping the padding bits of %q changed the bytes", b64)
	}
	return out
}

// splitNote returns the signed text (with the blank line) and the one
// signature line of raw.
func splitNote(t *testing.T, raw []byte) (text, line string) {
	t.Helper()
	text, sigs, ok := strings.Cut(string(raw), "\n\n")
	if !ok || strings.Count(sigs, "\n") != 1 {
		t.Fatalf("not a note with one signature line: %q", raw)
	}
	return text + "\n\n", sigs
}

// A signed checkpoint has one written form: each of these re-writings
// opened before (note.Open decodes base64 leniently and skips a second
// line by a key it already saw, unchecked) and is now refused.
func TestCheckpointOneForm(t *testing.T) {
	ctx := context.Background()
	lg, _ := openLog(t)
	appendN(t, lg, 0, 3)
	cp, err := lg.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	text, line := splitNote(t, cp.Raw)
	name, b64, _ := strings.Cut(strings.TrimPrefix(strings.TrimSuffix(line, "\n"), "— "), " ")
	sig, _ := base64.StdEncoding.DecodeString(b64)
	junk := append(bytes.Clone(sig[:4]), make([]byte, len(sig)-4)...) // the log's key hash, a zero signature
	junkLine := "— " + name + " " + base64.StdEncoding.EncodeToString(junk) + "\n"

	for _, c := range []struct{ name, note string }{
		{"padding bits of the log's signature", text + "— " + name + " " + flipPaddingBits(t, b64) + "\n"},
		{"the log's line twice", text + line + line},
		{"a bad line by the log's key after the good one", text + line + junkLine},
		{"a bad line by the log's key before the good one", text + junkLine + line},
		{"a line break inside the base64", text + "— " + name + " " + b64[:40] + "\n" + b64[40:] + "\n"},
	} {
		_, err := transparency.OpenCheckpoint([]byte(c.note), lg.Verifier())
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if err := transparency.CheckSignatureLines([]byte(c.note)); err == nil {
			t.Errorf("%s: CheckSignatureLines accepts it", c.name)
		}
	}
	// The duplicate and non-canonical forms are malformed (not a bad
	// signature: nothing was checked).
	for _, n := range []string{text + line + line, text + "— " + name + " " + flipPaddingBits(t, b64) + "\n"} {
		if _, err := transparency.OpenCheckpoint([]byte(n), lg.Verifier()); !errors.Is(err, transparency.ErrMalformed) {
			t.Errorf("%q: %v, want ErrMalformed", n, err)
		}
	}
	if err := transparency.CheckSignatureLines(cp.Raw); err != nil {
		t.Errorf("the log's own checkpoint: %v", err)
	}
}

// A witness that cosigned a checkpoint twice, at two times, has two valid
// lines; storing both would give the log's checkpoint a key's line twice.
// The log keeps the first.
func TestAddSignaturesKeepsOneLinePerKey(t *testing.T) {
	ctx := context.Background()
	lg, _ := openLog(t)
	appendN(t, lg, 0, 3)
	cp, err := lg.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wpriv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{0x42}, ed25519.SeedSize))
	body := string(cp.Body())
	first := specCosign(wpriv, "witness.test/w", body, 1_700_000_000)
	second := specCosign(wpriv, "witness.test/w", body, 1_700_000_100)
	if _, err := lg.AddSignatures(ctx, append(bytes.Clone(cp.Raw), first...)); err != nil {
		t.Fatal(err)
	}
	got, err := lg.AddSignatures(ctx, append(bytes.Clone(cp.Raw), second...))
	if err != nil {
		t.Fatal(err)
	}
	want := string(cp.Raw) + first
	if string(got.Raw) != want {
		t.Fatalf("stored checkpoint:\n%s\nwant:\n%s", got.Raw, want)
	}
	latest, err := lg.Latest(ctx)
	if err != nil || string(latest.Raw) != want {
		t.Fatalf("latest: %v\n%s", err, latest.Raw)
	}
}
