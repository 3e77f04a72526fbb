package certificate

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"strings"
	"time"
)

// A keyring is the list of keys an installation has signed certificates
// and checkpoints with, oldest first, exactly one of them current (the one
// that signs now). Only public halves are in it. Its file form is a trust
// file (TrustFile, amnesia.trust/v1): keyring.json in the state directory,
// which `amnesia keys export` hands to verifiers as it is. Which key is
// current is not in the file: it is the key of signing-key.pem.
//
// This file holds the keyring's format and rules; reading and writing the
// files, and locking them, is the state directory's business.

// ErrKeyNotFound: no key of the keyring has that id.
var ErrKeyNotFound = errors.New("no such key in the keyring")

// ErrCurrentKey: the operation needs a key other than the current one.
var ErrCurrentKey = errors.New("the current signing key")

// KeyInfo is one key of a keyring.
type KeyInfo struct {
	ID      string // KeyID(Public)
	Public  ed25519.PublicKey
	Created time.Time // zero: not known (a key from before the keyring)
	Retired time.Time // zero: not retired
	Current bool      // the key that signs now
}

// Keyring is every key of an installation, oldest first.
type Keyring []KeyInfo

// NewKeyring is the keyring of a new installation: pub, created now, current.
func NewKeyring(pub ed25519.PublicKey, now time.Time) Keyring {
	return Keyring{{ID: KeyID(pub), Public: pub, Created: now.UTC().Truncate(time.Second), Current: true}}
}

// ParseKeyring reads a keyring file (a trust file; nil when there is none)
// and marks current's key Current. A key current that the file does not
// list (an installation from before keyring files, or a signing key
// replaced by hand) is listed all the same, last, creation time unknown.
// A nil current marks none.
func ParseKeyring(data []byte, current ed25519.PublicKey) (Keyring, error) {
	var ks Keyring
	if data != nil {
		tf, err := ParseTrustFile(data)
		if err != nil {
			return nil, err
		}
		for _, k := range tf.Keys {
			ks = append(ks, KeyInfo{ID: k.KeyID, Public: k.Public, Created: k.Created, Retired: k.Retired, Current: current != nil && k.Public.Equal(current)})
		}
	}
	if current == nil {
		return ks, nil
	}
	for _, k := range ks {
		if k.Current {
			return ks, nil
		}
	}
	return append(ks, KeyInfo{ID: KeyID(current), Public: current, Current: true}), nil
}

// TrustFile returns the keyring as a trust file.
func (ks Keyring) TrustFile() *TrustFile {
	tf := &TrustFile{}
	for _, k := range ks {
		tf.Keys = append(tf.Keys, TrustEntry{KeyID: k.ID, Public: k.Public, Created: k.Created, Retired: k.Retired})
	}
	return tf
}

// Encode returns the keyring's file form (EncodeTrustFile).
func (ks Keyring) Encode() ([]byte, error) { return EncodeTrustFile(ks.TrustFile()) }

// PublicKeys returns the public half of every key, current first: what
// checks a log whose checkpoints each key signed while it was current.
func (ks Keyring) PublicKeys() []ed25519.PublicKey {
	var out []ed25519.PublicKey
	for _, k := range ks {
		if k.Current {
			out = append([]ed25519.PublicKey{k.Public}, out...)
		} else {
			out = append(out, k.Public)
		}
	}
	return out
}

// Find returns the key whose id is id, or the only one whose id starts
// with it (at least 8 hex digits, "sha256:" optional, any case).
func (ks Keyring) Find(id string) (KeyInfo, error) {
	want := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(id), "sha256:"))
	if len(want) < 8 {
		return KeyInfo{}, fmt.Errorf("key id %q: give the id (sha256:…) or at least its first 8 hex digits", id)
	}
	var found []KeyInfo
	for _, k := range ks {
		if strings.HasPrefix(strings.TrimPrefix(k.ID, "sha256:"), want) {
			found = append(found, k)
		}
	}
	switch len(found) {
	case 0:
		return KeyInfo{}, fmt.Errorf("key %s: %w (amnesia keys list shows them)", id, ErrKeyNotFound)
	case 1:
		return found[0], nil
	}
	return KeyInfo{}, fmt.Errorf("key id %q matches %d keys: give more of it", id, len(found))
}

// Rotated returns the keyring with pub added as the current key, created
// now; the keys before it stay, not current and not retired. oldKey is the
// key that was current (zero if none), as it is in next.
func (ks Keyring) Rotated(pub ed25519.PublicKey, now time.Time) (next Keyring, newKey, oldKey KeyInfo) {
	newKey = KeyInfo{ID: KeyID(pub), Public: pub, Created: now.UTC().Truncate(time.Second), Current: true}
	next = make(Keyring, 0, len(ks)+1)
	for _, k := range ks {
		if k.Current {
			oldKey = k
			oldKey.Current = false
		}
		k.Current = false
		next = append(next, k)
	}
	return append(next, newKey), newKey, oldKey
}

// Retired returns the keyring with the key id (see Find) retired from the
// time from on: a verifier given the keyring rejects certificates it signed
// that say they were issued at or after from. The current key cannot be
// retired (ErrCurrentKey). Retiring a retired key again moves its
// retirement time; the key as it was is returned too.
func (ks Keyring) Retired(id string, from time.Time) (next Keyring, now, was KeyInfo, err error) {
	if from.IsZero() {
		return nil, now, was, errors.New("no time given")
	}
	k, err := ks.Find(id)
	if err != nil {
		return nil, now, was, err
	}
	if k.Current {
		return nil, now, was, fmt.Errorf("key %s is %w: rotate first (amnesia keys rotate), then retire it", k.ID, ErrCurrentKey)
	}
	next = append(Keyring(nil), ks...)
	for i := range next {
		if next[i].ID == k.ID {
			next[i].Retired = from.UTC()
			now = next[i]
		}
	}
	return next, now, k, nil
}
