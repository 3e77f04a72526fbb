// Package subject turns a person's identifier into the only form amnesia
// ever stores: a keyed digest.
//
// # Normalisation
//
// Before keying, an identifier is normalised so that trivially different
// spellings of the same identifier map to the same subject:
//
//  1. Unicode NFKC normalisation (full-width and compatibility forms fold);
//  2. leading and trailing white space removed;
//  3. every run of inner white space collapsed to one ASCII space;
//  4. Unicode case folding (lower case).
//
// Nothing else is changed: amnesia does not guess that "+44 20 7946 0000" and
// "020 7946 0000" are the same person. Applications that know better should
// pass a canonical identifier (for example their own user id).
//
// # Keys
//
// A subject key is HMAC-SHA256(pepper, "amnesia.subject/v1" 0x00 scope 0x00
// normalised-id), where the pepper is a random per-installation secret. The
// scope (a tenant) is part of the keyed input, so the same identifier in two
// scopes yields two unrelated subjects. A key is written as 64 lower-case hex
// digits; for display it is shortened to a Ref, "hmac:" followed by its first
// 8 hex digits and an ellipsis.
package subject

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strings"
	"sync"
	"unicode"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// PepperSize is the size in bytes of an installation pepper.
const PepperSize = 32

// DefaultScope is the scope used when none is given.
const DefaultScope = "default"

// ErrEmpty is returned for an identifier that is empty after normalisation.
var ErrEmpty = errors.New("subject: identifier is empty after normalisation")

var folder = cases.Fold()

// Normalize applies the documented normalisation rules to a raw identifier.
func Normalize(raw string) string {
	s := norm.NFKC.String(raw)
	s = strings.Join(strings.FieldsFunc(s, unicode.IsSpace), " ")
	return folder.String(s)
}

// Key is a keyed subject digest. Its zero value is invalid.
type Key [sha256.Size]byte

// String returns the key as 64 lower-case hex digits.
func (k Key) String() string { return hex.EncodeToString(k[:]) }

// Ref returns the short display form, "hmac:ab12cd34…".
func (k Key) Ref() string { return "hmac:" + hex.EncodeToString(k[:4]) + "…" }

// IsZero reports whether k is the zero key.
func (k Key) IsZero() bool { return k == Key{} }

// ParseKey parses the 64-hex-digit form of a key.
func ParseKey(s string) (Key, error) {
	var k Key
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(k) {
		return k, fmt.Errorf("subject: parse key: want %d hex digits", 2*len(k))
	}
	copy(k[:], b)
	return k, nil
}

// Keyer derives subject keys under one installation pepper.
type Keyer struct {
	pepper []byte
	// macs holds HMAC-SHA256 states keyed with pepper, reused by mac: a
	// reset costs one SHA-256 block, a new HMAC the key schedule and five
	// allocations (capture keys every token of every key it checks).
	macs sync.Pool
}

// NewKeyer returns a Keyer for pepper, which must be PepperSize bytes.
func NewKeyer(pepper []byte) (*Keyer, error) {
	if len(pepper) != PepperSize {
		return nil, fmt.Errorf("subject: pepper must be %d bytes, got %d", PepperSize, len(pepper))
	}
	return &Keyer{pepper: append([]byte(nil), pepper...)}, nil
}

// Key normalises raw and returns its key in scope. An empty scope is DefaultScope.
func (k *Keyer) Key(scope, raw string) (Key, error) {
	n := Normalize(raw)
	if n == "" {
		return Key{}, ErrEmpty
	}
	if scope == "" {
		scope = DefaultScope
	}
	return Key(k.mac("amnesia.subject/v1", scope, n)), nil
}

// Digest returns a keyed digest of data under a purpose label. It is used for
// anything amnesia must recognise later without storing it (content digests,
// artifact ids).
func (k *Keyer) Digest(purpose string, parts ...string) [sha256.Size]byte {
	return k.mac(purpose, parts...)
}

// DeriveKey returns 32 bytes of key material for a purpose, for example the
// one-time key that seals erasure evidence.
func (k *Keyer) DeriveKey(purpose, id string) [sha256.Size]byte {
	return k.mac("amnesia.derive/v1", purpose, id)
}

func (k *Keyer) mac(purpose string, parts ...string) [sha256.Size]byte {
	m, ok := k.macs.Get().(hash.Hash)
	if ok {
		m.Reset()
	} else {
		m = hmac.New(sha256.New, k.pepper)
	}
	m.Write([]byte(purpose))
	for _, p := range parts {
		m.Write([]byte{0})
		m.Write([]byte(p))
	}
	var out [sha256.Size]byte
	m.Sum(out[:0])
	k.macs.Put(m)
	return out
}
