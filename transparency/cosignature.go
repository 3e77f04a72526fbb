package transparency

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
)

// Witness cosignatures follow C2SP tlog-cosignature (cosignature/v1, the
// Ed25519 type): a note signature line whose key hash is
// SHA-256(name || "\n" || 0x04 || Ed25519 public key)[:4] and whose
// signature is an 8-byte big-endian POSIX timestamp followed by the Ed25519
// signature of
//
//	cosignature/v1\n
//	time <timestamp, decimal>\n
//	<the checkpoint's note body>
//
// The signer and verifier are github.com/transparency-dev/formats/note's;
// this file names the key forms amnesia reads and writes.

// Signature algorithm bytes of C2SP signed-note verifier keys.
const (
	algEd25519       = 0x01 // plain Ed25519 note signature (the log's key)
	algCosignatureV1 = 0x04 // Ed25519 cosignature/v1 (a witness's key)
)

// CosignatureKeyHash is the key id of an Ed25519 cosignature/v1 key.
func CosignatureKeyHash(name string, pub ed25519.PublicKey) uint32 {
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte{'\n', algCosignatureV1})
	h.Write(pub)
	return binary.BigEndian.Uint32(h.Sum(nil))
}

// validKeyName is the signed-note rule for key names: non-empty UTF-8,
// without Unicode spaces or '+'.
func validKeyName(name string) error {
	if name == "" || !utf8.ValidString(name) || strings.IndexFunc(name, unicode.IsSpace) >= 0 || strings.Contains(name, "+") {
		return fmt.Errorf("key name %q: %w: must be non-empty, without spaces or '+'", name, ErrMalformed)
	}
	return nil
}

// CosignatureVerifierKey returns the verifier key text of a witness's
// cosignature/v1 key: "<name>+<key hash, 8 hex>+<base64(0x04 || pub)>".
func CosignatureVerifierKey(name string, pub ed25519.PublicKey) (string, error) {
	if err := validKeyName(name); err != nil {
		return "", err
	}
	if len(pub) != ed25519.PublicKeySize {
		return "", fmt.Errorf("witness key: %d bytes, want an Ed25519 public key", len(pub))
	}
	return fmt.Sprintf("%s+%08x+%s", name, CosignatureKeyHash(name, pub),
		base64.StdEncoding.EncodeToString(append([]byte{algCosignatureV1}, pub...))), nil
}

// cosignatureSignerKey is the private key text the formats library reads:
// "PRIVATE+KEY+<name>+<key hash>+<base64(0x04 || seed)>".
func cosignatureSignerKey(name string, priv ed25519.PrivateKey) string {
	pub := priv.Public().(ed25519.PublicKey)
	return fmt.Sprintf("PRIVATE+KEY+%s+%08x+%s", name, CosignatureKeyHash(name, pub),
		base64.StdEncoding.EncodeToString(append([]byte{algCosignatureV1}, priv.Seed()...)))
}

// NewCosigner returns the cosignature/v1 note signer of a witness key.
func NewCosigner(name string, priv ed25519.PrivateKey) (note.Signer, error) {
	if err := validKeyName(name); err != nil {
		return nil, err
	}
	if len(priv) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("witness key: %d bytes, want an Ed25519 private key", len(priv))
	}
	s, err := fnote.NewSignerForCosignatureV1(cosignatureSignerKey(name, priv))
	if err != nil {
		return nil, fmt.Errorf("witness key: %w", err)
	}
	return s, nil
}

// witnessVerifier is a witness's note verifier with the Ed25519 public key
// it checks, so that one key counts as one witness whatever name or form
// (cosignature/v1 or plain Ed25519) it is given in.
type witnessVerifier struct {
	note.Verifier
	pub ed25519.PublicKey
}

// WitnessIdentity names the witness a verifier checks signatures of: its
// Ed25519 public key (hex) for a verifier NewWitnessVerifier returned, so
// the same key given in both of its forms, or under two names, is one
// witness; name and key hash for any other verifier.
func WitnessIdentity(v note.Verifier) string {
	if w, ok := v.(witnessVerifier); ok {
		return "ed25519:" + hex.EncodeToString(w.pub)
	}
	return fmt.Sprintf("%s+%08x", v.Name(), v.KeyHash())
}

// NewWitnessVerifier parses a witness's verifier key text. A cosignature/v1
// key (algorithm 0x04) verifies C2SP cosignatures; a plain Ed25519 note key
// (0x01) verifies plain note signatures, for witnesses that sign that way.
// The key hash in the text must be the one the name and key give.
func NewWitnessVerifier(vkey string) (note.Verifier, error) {
	name, rest, _ := strings.Cut(vkey, "+")
	hash16, key64, _ := strings.Cut(rest, "+")
	if err := validKeyName(name); err != nil {
		return nil, fmt.Errorf("witness key: %w", err)
	}
	hash, err := strconv.ParseUint(hash16, 16, 32)
	if err != nil || len(hash16) != 8 {
		return nil, fmt.Errorf("witness key %s: %w: key hash is not 8 hex digits", name, ErrMalformed)
	}
	key, err := base64.StdEncoding.Strict().DecodeString(key64)
	if err != nil || len(key) != 1+ed25519.PublicKeySize {
		return nil, fmt.Errorf("witness key %s: %w: not base64 of an algorithm byte and an Ed25519 key", name, ErrMalformed)
	}
	switch key[0] {
	case algCosignatureV1:
		if uint32(hash) != CosignatureKeyHash(name, key[1:]) {
			return nil, fmt.Errorf("witness key %s: %w: key hash %s is not the key's", name, ErrMalformed, hash16)
		}
		v, err := fnote.NewVerifierForCosignatureV1(vkey)
		if err != nil {
			return nil, fmt.Errorf("witness key %s: %v: %w", name, err, ErrMalformed)
		}
		if v.KeyHash() != uint32(hash) || v.Name() != name {
			return nil, fmt.Errorf("witness key %s: %w: the cosignature library reads another key", name, ErrMalformed)
		}
		return witnessVerifier{v, ed25519.PublicKey(key[1:])}, nil
	case algEd25519:
		v, err := note.NewVerifier(vkey) // checks the hash itself
		if err != nil {
			return nil, fmt.Errorf("witness key %s: %v: %w", name, err, ErrMalformed)
		}
		return witnessVerifier{v, ed25519.PublicKey(key[1:])}, nil
	default:
		return nil, fmt.Errorf("witness key %s: %w: algorithm 0x%02x (want 0x04, cosignature/v1, or 0x01, Ed25519)", name, ErrMalformed, key[0])
	}
}

// CosignatureTime returns the timestamp of a cosignature/v1 signature (the
// note signature line's base64, key hash included).
func CosignatureTime(sig note.Signature) (time.Time, error) {
	b, err := base64.StdEncoding.DecodeString(sig.Base64)
	if err != nil || len(b) != 4+8+ed25519.SignatureSize {
		return time.Time{}, fmt.Errorf("cosignature by %s: %w: not a key hash, timestamp and Ed25519 signature", sig.Name, ErrMalformed)
	}
	t := binary.BigEndian.Uint64(b[4:12])
	if t > 1<<63-1 {
		return time.Time{}, fmt.Errorf("cosignature by %s: %w: timestamp beyond 2^63-1", sig.Name, ErrMalformed)
	}
	return time.Unix(int64(t), 0).UTC(), nil
}
