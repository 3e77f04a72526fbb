// Package shred is crypto-shredding: content fields are encrypted at
// capture with a data key of their own subject (AES-256-GCM), and an
// erasure destroys that key, so that every copy of those fields written
// through capture, including the copies in backups and replicas that no
// erasure reaches, is ciphertext without a key.
//
// Data keys are random 32-byte keys, one per subject and scope. They are
// kept wrapped (encrypted) by a master key, never in clear: a Wrapper does
// the wrapping (LocalWrapper keeps the master key in a file; a KMS is
// another Wrapper), and a KeyStore keeps the wrapped keys (both ledgers
// are key stores). Destroying a subject's key deletes its wrapped form.
//
// What it does not cover, and certificates say so: vectors computed from
// the plaintext (embeddings are not encrypted), fields the application did
// not write through a sealing capture, plaintext the application keeps
// elsewhere or in memory, and a wrapped key that survives in an old copy
// of the key store together with the master key that unwraps it (keep the
// master key out of the key store's backups, or rotate it).
package shred

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/amnesia-dev/amnesia/subject"
)

// Prefix starts every sealed field: a reader tells sealed text from plain
// text by it.
const Prefix = "amnesia-sealed:v1:"

// Errors.
var (
	// ErrNoKey: the subject has no data key (nothing of theirs was sealed).
	ErrNoKey = errors.New("shred: the subject has no data key")
	// ErrDestroyed: the subject's data key was destroyed by an erasure; what
	// was sealed with it cannot be opened any more.
	ErrDestroyed = errors.New("shred: the subject's data key was destroyed")
	// ErrNotSealed: the text is not a sealed field.
	ErrNotSealed = errors.New("shred: not a sealed field")
	// ErrOpen: a sealed field does not open with the subject's key (another
	// subject's field, a field moved to another record, or tampering).
	ErrOpen = errors.New("shred: the sealed field does not open with this key")
)

// Wrapper wraps and unwraps data keys with a master key. aad binds a
// wrapped key to its subject and scope.
type Wrapper interface {
	// ID names the master key (not secret), recorded with each wrapped key.
	ID() string
	Wrap(ctx context.Context, dataKey, aad []byte) ([]byte, error)
	Unwrap(ctx context.Context, wrapped, aad []byte) ([]byte, error)
}

// KeyStore keeps wrapped data keys, one per (scope, subject key).
type KeyStore interface {
	// PutDataKey stores wrapped as the subject's key unless it has one: it
	// returns the stored wrapped key (the existing one, or wrapped). It
	// returns ErrDestroyed when the subject's key was destroyed and the
	// subject gave no new consent since (a ledger that records consents
	// then allows a new key; what the old one sealed stays unreadable).
	PutDataKey(ctx context.Context, scope string, s subject.Key, wrapped []byte) ([]byte, error)
	// DataKey returns the subject's wrapped key: ErrNoKey if it never had
	// one, ErrDestroyed if it was destroyed.
	DataKey(ctx context.Context, scope string, s subject.Key) ([]byte, error)
	// DestroyDataKey deletes the subject's wrapped key and remembers that
	// it was destroyed; destroyed is false when there was none (or it was
	// destroyed before). Idempotent.
	DestroyDataKey(ctx context.Context, scope string, s subject.Key, erasure string) (destroyed bool, err error)
}

// Keys seals and opens fields with subjects' data keys. It is safe for
// concurrent use; unwrapped keys are cached in memory for the life of Keys.
type Keys struct {
	store KeyStore
	wrap  Wrapper
	mu    sync.Mutex
	cache map[string]cached
}

// NewKeys returns Keys over a key store and a wrapper.
func NewKeys(ks KeyStore, w Wrapper) *Keys {
	return &Keys{store: ks, wrap: w, cache: map[string]cached{}}
}

// Forget drops a subject's unwrapped key from the cache (after an erasure
// destroyed it, a process that keeps Keys open must not go on using it).
func (k *Keys) Forget(scope string, s subject.Key) {
	k.mu.Lock()
	delete(k.cache, scope+"\x00"+s.String())
	k.mu.Unlock()
}

func keyAAD(scope string, s subject.Key) []byte {
	return []byte("amnesia.datakey/v1\x00" + scope + "\x00" + s.String())
}

// aead returns the subject's AEAD, creating the data key when create is
// set and the subject has none. Sealing (create) reads the key store each
// time, so that a key destroyed (or replaced after new consent) since it
// was cached is never used to seal; opening uses the cache.
func (k *Keys) aead(ctx context.Context, scope string, s subject.Key, create bool) (cipher.AEAD, error) {
	id := scope + "\x00" + s.String()
	k.mu.Lock()
	c, ok := k.cache[id]
	k.mu.Unlock()
	if ok && !create {
		return c.aead, nil
	}
	wrapped, err := k.store.DataKey(ctx, scope, s)
	if errors.Is(err, ErrNoKey) && create {
		dk := make([]byte, 32)
		if _, err := io.ReadFull(rand.Reader, dk); err != nil {
			return nil, err
		}
		w, werr := k.wrap.Wrap(ctx, dk, keyAAD(scope, s))
		clear(dk)
		if werr != nil {
			return nil, fmt.Errorf("shred: wrap a data key: %w", werr)
		}
		wrapped, err = k.store.PutDataKey(ctx, scope, s, w)
	}
	if err != nil {
		if errors.Is(err, ErrDestroyed) {
			k.Forget(scope, s)
		}
		return nil, err
	}
	if ok && bytes.Equal(c.wrapped, wrapped) {
		return c.aead, nil
	}
	dk, err := k.wrap.Unwrap(ctx, wrapped, keyAAD(scope, s))
	if err != nil {
		return nil, fmt.Errorf("shred: unwrap the data key of %s: %w", s.Ref(), err)
	}
	a, err := newGCM(dk)
	clear(dk)
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	k.cache[id] = cached{wrapped: wrapped, aead: a}
	k.mu.Unlock()
	return a, nil
}

// cached is an unwrapped key and the wrapped form it came from.
type cached struct {
	wrapped []byte
	aead    cipher.AEAD
}

func newGCM(key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

// Seal encrypts plaintext with the subject's data key (created on first
// use), bound by aad (where the field lives: store, key, field), and
// returns Prefix and base64 of nonce and ciphertext.
func (k *Keys) Seal(ctx context.Context, scope string, s subject.Key, aad, plaintext []byte) (string, error) {
	a, err := k.aead(ctx, scope, s, true)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, a.NonceSize(), a.NonceSize()+len(plaintext)+a.Overhead())
	if _, err := io.ReadFull(rand.Reader, nonce); err != nil {
		return "", err
	}
	return Prefix + base64.RawStdEncoding.EncodeToString(a.Seal(nonce, nonce, plaintext, aad)), nil
}

// Open decrypts a sealed field. It returns ErrNotSealed for text without
// Prefix, ErrDestroyed after the subject's key was destroyed, ErrOpen when
// the field does not open with the key and aad.
func (k *Keys) Open(ctx context.Context, scope string, s subject.Key, aad []byte, sealed string) ([]byte, error) {
	b64, ok := strings.CutPrefix(sealed, Prefix)
	if !ok {
		return nil, ErrNotSealed
	}
	raw, err := base64.RawStdEncoding.Strict().DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("%w: not base64", ErrOpen)
	}
	a, err := k.aead(ctx, scope, s, false)
	if err != nil {
		return nil, err
	}
	if len(raw) < a.NonceSize()+a.Overhead() {
		return nil, fmt.Errorf("%w: too short", ErrOpen)
	}
	pt, err := a.Open(nil, raw[:a.NonceSize()], raw[a.NonceSize():], aad)
	if err != nil {
		return nil, ErrOpen
	}
	return pt, nil
}

// IsSealed reports whether text is a sealed field.
func IsSealed(text string) bool { return strings.HasPrefix(text, Prefix) }

// FieldAAD is the additional data that binds a sealed field to where it
// lives, so that a sealed field copied into another record does not open.
func FieldAAD(store, key, field string) []byte {
	return []byte("amnesia.field/v1\x00" + store + "\x00" + key + "\x00" + field)
}
