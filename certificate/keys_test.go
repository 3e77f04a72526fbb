package certificate

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
)

func pemDER(t *testing.T, b []byte) []byte {
	t.Helper()
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatal("no PEM block")
	}
	return block.Bytes
}

func TestPEMRoundTrip(t *testing.T) {
	pub, priv := goldenKey()
	pubPEM, err := EncodePublicKeyPEM(pub)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(pubPEM, []byte("-----BEGIN PUBLIC KEY-----\n")) {
		t.Errorf("public PEM starts %q", pubPEM[:27])
	}
	gotPub, err := ParsePublicKeyPEM(pubPEM)
	if err != nil {
		t.Fatal(err)
	}
	if !gotPub.Equal(pub) {
		t.Error("public key changed in the round trip")
	}

	privPEM, err := EncodePrivateKeyPEM(priv)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(privPEM, []byte("-----BEGIN PRIVATE KEY-----\n")) {
		t.Error("private PEM is not PKCS #8 PRIVATE KEY")
	}
	gotPriv, err := ParsePrivateKeyPEM(privPEM)
	if err != nil {
		t.Fatal(err)
	}
	if !gotPriv.Equal(priv) {
		t.Error("private key changed in the round trip")
	}

	if _, err := EncodePublicKeyPEM(pub[:31]); err == nil {
		t.Error("encoded a 31-byte public key")
	}
	if _, err := EncodePrivateKeyPEM(priv[:63]); err == nil {
		t.Error("encoded a 63-byte private key")
	}
}

func TestParseKeyErrors(t *testing.T) {
	pub, priv := goldenKey()
	pubPEM, _ := EncodePublicKeyPEM(pub)
	privPEM, _ := EncodePrivateKeyPEM(priv)
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecPubDER, _ := x509.MarshalPKIXPublicKey(&ec.PublicKey)
	ecPrivDER, _ := x509.MarshalPKCS8PrivateKey(ec)
	ecPub := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: ecPubDER})
	ecPriv := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: ecPrivDER})
	junkPub := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: []byte("junk")})
	junkPriv := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("junk")})

	for _, c := range []struct {
		in   []byte
		want string
	}{
		{nil, "parse public key: no PEM block found"},
		{[]byte("not pem"), "parse public key: no PEM block found"},
		{privPEM, `parse public key: PEM block is "PRIVATE KEY", want "PUBLIC KEY"`},
		{ecPub, "parse public key: key is *ecdsa.PublicKey, want Ed25519"},
		{junkPub, "parse public key: invalid PKIX DER: "},
	} {
		_, err := ParsePublicKeyPEM(c.in)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("ParsePublicKeyPEM(%.20q) = %v, want %q", c.in, err, c.want)
		}
	}
	for _, c := range []struct {
		in   []byte
		want string
	}{
		{nil, "parse private key: no PEM block found"},
		{pubPEM, `parse private key: PEM block is "PUBLIC KEY", want "PRIVATE KEY"`},
		{ecPriv, "parse private key: key is *ecdsa.PrivateKey, want Ed25519"},
		{junkPriv, "parse private key: invalid PKCS #8 DER: "},
	} {
		_, err := ParsePrivateKeyPEM(c.in)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("ParsePrivateKeyPEM(%.20q) = %v, want %q", c.in, err, c.want)
		}
	}
}

func TestSignerVerifier(t *testing.T) {
	ctx := context.Background()
	pub, priv := goldenKey()
	s, err := NewSigner(priv)
	if err != nil {
		t.Fatal(err)
	}
	v, err := NewVerifier(pub)
	if err != nil {
		t.Fatal(err)
	}
	sid, _ := s.KeyID()
	vid, _ := v.KeyID()
	if sid != goldenKeyID || vid != goldenKeyID {
		t.Errorf("key ids %s, %s, want %s", sid, vid, goldenKeyID)
	}
	if !v.Public().(ed25519.PublicKey).Equal(pub) {
		t.Error("Public() is not the key")
	}
	sig, _ := s.Sign(ctx, []byte("data"))
	if err := v.Verify(ctx, []byte("data"), sig); err != nil {
		t.Error(err)
	}
	if err := v.Verify(ctx, []byte("date"), sig); err == nil {
		t.Error("verified a signature over other data")
	}
	if _, err := NewSigner(priv[:32]); err == nil {
		t.Error("NewSigner accepted a seed")
	}
	if _, err := NewVerifier(pub[:16]); err == nil {
		t.Error("NewVerifier accepted a short key")
	}
}

func FuzzParsePublicKeyPEM(f *testing.F) {
	pub, priv := goldenKey()
	pubPEM, _ := EncodePublicKeyPEM(pub)
	privPEM, _ := EncodePrivateKeyPEM(priv)
	f.Add(pubPEM)
	f.Add(privPEM)
	f.Add([]byte("-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA\n-----END PUBLIC KEY-----\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, b []byte) {
		pub, err := ParsePublicKeyPEM(b)
		if err != nil {
			return
		}
		if len(pub) != ed25519.PublicKeySize {
			t.Fatalf("parsed a %d-byte key", len(pub))
		}
		again, err := EncodePublicKeyPEM(pub)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParsePublicKeyPEM(again)
		if err != nil || !back.Equal(pub) || KeyID(back) != KeyID(pub) {
			t.Fatalf("round trip: %v", err)
		}
	})
}
