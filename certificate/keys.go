package certificate

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"
)

// PEM block types.
const (
	pemPublicKey  = "PUBLIC KEY"  // PKIX SubjectPublicKeyInfo
	pemPrivateKey = "PRIVATE KEY" // PKCS #8
)

// KeyID returns the identifier of an Ed25519 public key: "sha256:" followed
// by the lowercase hex SHA-256 of the key's PKIX SubjectPublicKeyInfo DER.
// The same value comes from
//
//	openssl pkey -pubin -in key.pem -outform DER | sha256sum
func KeyID(pub ed25519.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		// Unreachable for an ed25519.PublicKey; hash the raw key so the id
		// still never matches a well-formed one.
		der = pub
	}
	sum := sha256.Sum256(der)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// EncodePublicKeyPEM encodes pub as a PKIX "PUBLIC KEY" PEM block.
func EncodePublicKeyPEM(pub ed25519.PublicKey) ([]byte, error) {
	if len(pub) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("encode public key: key has %d bytes, want %d", len(pub), ed25519.PublicKeySize)
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("encode public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemPublicKey, Bytes: der}), nil
}

// ParsePublicKeyPEM decodes the first PEM block of b, which must be a PKIX
// "PUBLIC KEY" holding an Ed25519 key. Anything after the block is ignored.
func ParsePublicKeyPEM(b []byte) (ed25519.PublicKey, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New("parse public key: no PEM block found")
	}
	if block.Type != pemPublicKey {
		return nil, fmt.Errorf("parse public key: PEM block is %q, want %q", block.Type, pemPublicKey)
	}
	key, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse public key: invalid PKIX DER: %w", err)
	}
	pub, ok := key.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("parse public key: key is %s, want Ed25519", keyKind(key))
	}
	return pub, nil
}

// EncodePrivateKeyPEM encodes priv as a PKCS #8 "PRIVATE KEY" PEM block.
func EncodePrivateKeyPEM(priv ed25519.PrivateKey) ([]byte, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("encode private key: key has %d bytes, want %d", len(priv), ed25519.PrivateKeySize)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("encode private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemPrivateKey, Bytes: der}), nil
}

// ParsePrivateKeyPEM decodes the first PEM block of b, which must be a
// PKCS #8 "PRIVATE KEY" holding an Ed25519 key.
func ParsePrivateKeyPEM(b []byte) (ed25519.PrivateKey, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New("parse private key: no PEM block found")
	}
	if block.Type != pemPrivateKey {
		return nil, fmt.Errorf("parse private key: PEM block is %q, want %q", block.Type, pemPrivateKey)
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse private key: invalid PKCS #8 DER: %w", err)
	}
	priv, ok := key.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("parse private key: key is %s, want Ed25519", keyKind(key))
	}
	return priv, nil
}

// keyKind names a parsed key's algorithm without printing the key.
func keyKind(key any) string {
	switch key.(type) {
	case ed25519.PublicKey, ed25519.PrivateKey:
		return "Ed25519"
	default:
		return fmt.Sprintf("%T", key)
	}
}

// Signer is a dsse.Signer over an Ed25519 private key.
type Signer struct {
	priv ed25519.PrivateKey
}

// Verifier is a dsse.Verifier over an Ed25519 public key.
type Verifier struct {
	pub ed25519.PublicKey
}

var (
	_ dsse.Signer   = (*Signer)(nil)
	_ dsse.Verifier = (*Verifier)(nil)
)

// NewSigner returns a Signer for priv.
func NewSigner(priv ed25519.PrivateKey) (*Signer, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("new signer: private key has %d bytes, want %d", len(priv), ed25519.PrivateKeySize)
	}
	return &Signer{priv: priv}, nil
}

// Sign returns the Ed25519 signature of data (the DSSE PAE).
func (s *Signer) Sign(_ context.Context, data []byte) ([]byte, error) {
	return ed25519.Sign(s.priv, data), nil
}

// KeyID returns KeyID of the signer's public key.
func (s *Signer) KeyID() (string, error) {
	return KeyID(s.priv.Public().(ed25519.PublicKey)), nil
}

// NewVerifier returns a Verifier for pub.
func NewVerifier(pub ed25519.PublicKey) (*Verifier, error) {
	if len(pub) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("new verifier: public key has %d bytes, want %d", len(pub), ed25519.PublicKeySize)
	}
	return &Verifier{pub: pub}, nil
}

// Verify checks an Ed25519 signature of data (the DSSE PAE).
func (v *Verifier) Verify(_ context.Context, data, sig []byte) error {
	if !ed25519.Verify(v.pub, data, sig) {
		return errors.New("verify signature: ed25519 signature does not match")
	}
	return nil
}

// KeyID returns KeyID of the verifier's public key.
func (v *Verifier) KeyID() (string, error) {
	return KeyID(v.pub), nil
}

// Public returns the verifier's public key.
func (v *Verifier) Public() crypto.PublicKey {
	return v.pub
}
