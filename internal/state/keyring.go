package state

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/atomicfile"
)

// The keyring. signing-key.pem is the current key, the one that signs
// certificates and checkpoints; keyring.json (a trust file, format
// amnesia.trust/v1, see certificate.TrustFile) lists the public half of every
// key the installation has signed with, current included, with the time it
// was created and, for a retired key, the time it is retired from. Only the
// current key's private half is kept: a rotation replaces signing-key.pem
// and overwrites the earlier private key's file before unlinking it.
//
// A state directory made before the keyring existed has no keyring.json:
// its keyring is the current key alone, creation time unknown, and the
// first rotation or retirement writes keyring.json.

// ErrKeyNotFound: no key of the keyring has that id.
var ErrKeyNotFound = errors.New("no such key in the keyring")

// ErrCurrentKey: the operation needs a key other than the current one.
var ErrCurrentKey = errors.New("the current signing key")

// KeyInfo is one key of the keyring.
type KeyInfo struct {
	ID      string // certificate.KeyID(Public)
	Public  ed25519.PublicKey
	Created time.Time // zero: not known (a key from before the keyring)
	Retired time.Time // zero: not retired
	Current bool      // the key in signing-key.pem
}

// KeyringPath is keyring.json.
func (d *Dir) KeyringPath() string { return filepath.Join(d.Path, "keyring.json") }

func (d *Dir) privateKeyPath() string { return filepath.Join(d.Path, "signing-key.pem") }

// Keyring returns every key of the installation, oldest first; exactly one
// is Current (d.Key's).
func (d *Dir) Keyring() ([]KeyInfo, error) {
	var cur ed25519.PublicKey
	if len(d.Key) == ed25519.PrivateKeySize {
		cur = d.Key.Public().(ed25519.PublicKey)
	}
	var out []KeyInfo
	b, err := os.ReadFile(d.KeyringPath())
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("keyring: %w", err)
	default:
		tf, err := certificate.ParseTrustFile(b)
		if err != nil {
			return nil, fmt.Errorf("keyring %s: %w", d.KeyringPath(), err)
		}
		for _, k := range tf.Keys {
			out = append(out, KeyInfo{ID: k.KeyID, Public: k.Public, Created: k.Created, Retired: k.Retired, Current: cur != nil && k.Public.Equal(cur)})
		}
	}
	if cur == nil {
		return out, nil
	}
	for _, k := range out {
		if k.Current {
			return out, nil
		}
	}
	// No keyring.json (an installation from before it), or one that does
	// not list signing-key.pem's key (replaced by hand): the current key is
	// listed all the same.
	return append(out, KeyInfo{ID: certificate.KeyID(cur), Public: cur, Current: true}), nil
}

// PublicKeys returns the public half of every key of the keyring, current
// first: what checks the installation's own transparency log, whose
// checkpoints each key signed while it was current.
func (d *Dir) PublicKeys() ([]ed25519.PublicKey, error) {
	ks, err := d.Keyring()
	if err != nil {
		return nil, err
	}
	var out []ed25519.PublicKey
	for _, k := range ks {
		if k.Current {
			out = append([]ed25519.PublicKey{k.Public}, out...)
		} else {
			out = append(out, k.Public)
		}
	}
	return out, nil
}

// TrustFile returns the keyring as a trust file, for `amnesia keys export`.
func (d *Dir) TrustFile() (*certificate.TrustFile, error) {
	ks, err := d.Keyring()
	if err != nil {
		return nil, err
	}
	return trustFileOf(ks), nil
}

func trustFileOf(ks []KeyInfo) *certificate.TrustFile {
	tf := &certificate.TrustFile{}
	for _, k := range ks {
		tf.Keys = append(tf.Keys, certificate.TrustEntry{KeyID: k.ID, Public: k.Public, Created: k.Created, Retired: k.Retired})
	}
	return tf
}

// FindKey returns the key whose id is id, or the only one whose id starts
// with it (at least 8 hex digits, "sha256:" optional).
func FindKey(ks []KeyInfo, id string) (KeyInfo, error) {
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

// lockKeyring serialises keyring changes between processes: an exclusive
// flock on keys.lock, released by the returned function.
func (d *Dir) lockKeyring() (func(), error) {
	f, err := os.OpenFile(filepath.Join(d.Path, "keys.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("keyring lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("keyring lock: %w", err)
	}
	return func() { f.Close() }, nil
}

// reloadKey reads signing-key.pem again, so that a change by another
// process under the lock is seen.
func (d *Dir) reloadKey() error {
	b, err := os.ReadFile(d.privateKeyPath())
	if err != nil {
		return fmt.Errorf("signing key: %w", err)
	}
	priv, err := certificate.ParsePrivateKeyPEM(b)
	if err != nil {
		return fmt.Errorf("signing key: %w", err)
	}
	d.Key = priv
	return nil
}

func (d *Dir) writeKeyring(ks []KeyInfo) error {
	b, err := certificate.EncodeTrustFile(trustFileOf(ks))
	if err != nil {
		return fmt.Errorf("keyring: %w", err)
	}
	if err := WriteFileAtomic(d.KeyringPath(), b); err != nil {
		return fmt.Errorf("keyring: %w", err)
	}
	return nil
}

// RotateKey makes a new Ed25519 key the current signing key, as of now.
// The earlier key stays in the keyring, trusted and not retired (RetireKey
// does that); its private key is destroyed. In order: the keyring is
// written with the new key, then signing-key.pem is replaced, then the
// earlier private key's file is overwritten with zeros and unlinked, then
// signing-key.pub.pem is replaced. A crash before signing-key.pem is
// replaced leaves an unused key in the keyring (retire it); one after
// leaves signing-key.pem.old, which the next rotation destroys.
//
// Processes that opened the state before the rotation keep signing with
// the earlier key until they reopen it.
func (d *Dir) RotateKey(now time.Time) (newKey, oldKey KeyInfo, err error) {
	unlock, err := d.lockKeyring()
	if err != nil {
		return newKey, oldKey, err
	}
	defer unlock()
	if err := d.reloadKey(); err != nil {
		return newKey, oldKey, err
	}
	ks, err := d.Keyring()
	if err != nil {
		return newKey, oldKey, err
	}
	for _, k := range ks {
		if k.Current {
			oldKey = k
		}
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return newKey, oldKey, fmt.Errorf("rotate: %w", err)
	}
	privPEM, err := certificate.EncodePrivateKeyPEM(priv)
	if err != nil {
		return newKey, oldKey, fmt.Errorf("rotate: %w", err)
	}
	pubPEM, err := certificate.EncodePublicKeyPEM(pub)
	if err != nil {
		return newKey, oldKey, fmt.Errorf("rotate: %w", err)
	}
	newKey = KeyInfo{ID: certificate.KeyID(pub), Public: pub, Created: now.UTC().Truncate(time.Second), Current: true}
	next := make([]KeyInfo, 0, len(ks)+1)
	for _, k := range ks {
		k.Current = false
		next = append(next, k)
	}
	next = append(next, newKey)
	if err := d.writeKeyring(next); err != nil {
		return newKey, oldKey, fmt.Errorf("rotate: %w", err)
	}
	// Keep a second link to the earlier private key while signing-key.pem
	// is replaced, so that its bytes can be overwritten after.
	cur, old := d.privateKeyPath(), d.privateKeyPath()+".old"
	if err := discardOldKeyFile(cur, old); err != nil {
		return newKey, oldKey, fmt.Errorf("rotate: %w", err)
	}
	if err := os.Link(cur, old); err != nil {
		return newKey, oldKey, fmt.Errorf("rotate: %w", err)
	}
	if err := WriteFileAtomic(cur, privPEM); err != nil {
		return newKey, oldKey, fmt.Errorf("rotate: %w", err)
	}
	d.Key = priv
	if err := discardOldKeyFile(cur, old); err != nil {
		return newKey, oldKey, fmt.Errorf("rotate: destroy the earlier private key: %w", err)
	}
	if err := WriteFileAtomic(d.PublicKeyPath(), pubPEM); err != nil {
		return newKey, oldKey, fmt.Errorf("rotate: %w", err)
	}
	oldKey.Current = false
	return newKey, oldKey, nil
}

// discardOldKeyFile removes old, a second link to an earlier private key.
// When it is another file than cur (the rotation got past replacing cur),
// its bytes are overwritten with zeros first (atomicfile.Shred). On copy-on-write or
// journaling file systems and on SSDs the old blocks may survive.
func discardOldKeyFile(cur, old string) error {
	oi, err := os.Lstat(old)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	ci, err := os.Stat(cur)
	if err != nil {
		return err
	}
	if !os.SameFile(oi, ci) && oi.Mode().IsRegular() {
		return atomicfile.Shred(old)
	}
	if err := os.Remove(old); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(old))
}

// RetireKey marks the key id (see FindKey) retired from the time from on:
// a verifier given the exported keyring rejects certificates it signed
// that say they were issued at or after from. The current key cannot be
// retired (ErrCurrentKey): rotate first. Retiring a retired key again
// moves its retirement time; the key as it was is returned too.
func (d *Dir) RetireKey(id string, from time.Time) (now, was KeyInfo, err error) {
	if from.IsZero() {
		return now, was, errors.New("retire: no time given")
	}
	unlock, err := d.lockKeyring()
	if err != nil {
		return now, was, err
	}
	defer unlock()
	if err := d.reloadKey(); err != nil {
		return now, was, err
	}
	ks, err := d.Keyring()
	if err != nil {
		return now, was, err
	}
	k, err := FindKey(ks, id)
	if err != nil {
		return now, was, fmt.Errorf("retire: %w", err)
	}
	if k.Current {
		return now, was, fmt.Errorf("retire: key %s is %w: rotate first (amnesia keys rotate), then retire it", k.ID, ErrCurrentKey)
	}
	was = k
	for i := range ks {
		if ks[i].ID == k.ID {
			ks[i].Retired = from.UTC()
			now = ks[i]
		}
	}
	if err := d.writeKeyring(ks); err != nil {
		return now, was, fmt.Errorf("retire: %w", err)
	}
	return now, was, nil
}

// initialKeyring is Init's keyring.json: the first key, created now.
func initialKeyring(pub ed25519.PublicKey, now time.Time) ([]byte, error) {
	return certificate.EncodeTrustFile(&certificate.TrustFile{Keys: []certificate.TrustEntry{
		{Public: pub, Created: now.UTC().Truncate(time.Second)},
	}})
}
