package transparency_test

import (
	"bytes"
	"crypto/ed25519"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/transparency"
)

// Seeds: a real signed checkpoint of the test key, committed under
// testdata/fuzz/FuzzOpenCheckpoint, plus the ones added here.
func FuzzOpenCheckpoint(f *testing.F) {
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	origin := transparency.DefaultOrigin(priv.Public().(ed25519.PublicKey))
	s, _ := transparency.NewSigner(origin, priv)
	v, _ := transparency.NewVerifier(origin, priv.Public().(ed25519.PublicKey))
	var h [32]byte
	good, _ := transparency.Sign(transparency.Checkpoint{Origin: origin, Size: 3, Hash: h}, s)
	f.Add(good)
	f.Add([]byte(origin + "\n3\nAAAA\n\n— x AAAA\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := transparency.OpenCheckpoint(b, v)
		if err != nil {
			return
		}
		// Whatever opens re-serialises to its own signed body.
		if !bytes.Equal(c.Checkpoint.Body(), []byte(c.Note.Text)) {
			t.Fatalf("body %q, note text %q", c.Checkpoint.Body(), c.Note.Text)
		}
	})
}

func FuzzParseCheckpoint(f *testing.F) {
	f.Add([]byte("amnesia.local/log/x\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n"))
	f.Add([]byte("o\n-1\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := transparency.ParseCheckpoint(b)
		if err != nil {
			return
		}
		if !bytes.Equal(c.Body(), b) {
			t.Fatalf("parse %q: body %q", b, c.Body())
		}
	})
}

func FuzzDecodeProof(f *testing.F) {
	f.Add("47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		parts := strings.Split(s, "\n")
		p, err := transparency.DecodeProof(parts)
		if err != nil {
			return
		}
		enc := transparency.EncodeProof(p)
		for i := range enc {
			if enc[i] != parts[i] {
				t.Fatalf("hash %d: %q re-encodes as %q", i, parts[i], enc[i])
			}
		}
	})
}
