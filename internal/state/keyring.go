package state

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/atomicfile"
	"github.com/amnesia-dev/amnesia/internal/secrets"
)

// The keyring (certificate.Keyring: its format and rules). signing-key.pem
// is the current key, the one that signs certificates and checkpoints;
// keyring.json, a trust file, lists the public half of every key the
// installation has signed with, current included. Only the current key's
// private half is kept: a rotation replaces signing-key.pem and overwrites
// the earlier private key's file before unlinking it. This file reads and
// writes those files, under a lock.
//
// A state directory made before the keyring existed has no keyring.json:
// its keyring is the current key alone, creation time unknown, and the
// first rotation or retirement writes keyring.json.

// KeyringPath is keyring.json.
func (d *Dir) KeyringPath() string { return filepath.Join(d.Path, "keyring.json") }

func (d *Dir) privateKeyPath() string { return filepath.Join(d.Path, "signing-key.pem") }

// Keyring returns every key of the installation, oldest first; exactly one
// is Current (d.Key's).
func (d *Dir) Keyring() (certificate.Keyring, error) {
	var cur ed25519.PublicKey
	if len(d.Key) == ed25519.PrivateKeySize {
		cur = d.Key.Public().(ed25519.PublicKey)
	}
	b, err := os.ReadFile(d.KeyringPath())
	switch {
	case errors.Is(err, fs.ErrNotExist):
		b = nil
	case err != nil:
		return nil, fmt.Errorf("keyring: %w", err)
	}
	ks, err := certificate.ParseKeyring(b, cur)
	if err != nil {
		return nil, fmt.Errorf("keyring %s: %w", d.KeyringPath(), err)
	}
	return ks, nil
}

// PublicKeys returns the public half of every key of the keyring, current
// first: what checks the installation's own transparency log, whose
// checkpoints each key signed while it was current.
func (d *Dir) PublicKeys() ([]ed25519.PublicKey, error) {
	ks, err := d.Keyring()
	if err != nil {
		return nil, err
	}
	return ks.PublicKeys(), nil
}

// TrustFile returns the keyring as a trust file, for `amnesia keys export`.
func (d *Dir) TrustFile() (*certificate.TrustFile, error) {
	ks, err := d.Keyring()
	if err != nil {
		return nil, err
	}
	return ks.TrustFile(), nil
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
	if d.keySrc != nil {
		k, v, err := loadKey(context.Background(), d.Path, d.keySrc)
		if err != nil {
			return err
		}
		d.Key, d.KeyVersion = k, v
		return nil
	}
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

func (d *Dir) writeKeyring(ks certificate.Keyring) error {
	b, err := ks.Encode()
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
func (d *Dir) RotateKey(now time.Time) (newKey, oldKey certificate.KeyInfo, err error) {
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
	var rot secrets.Rotator
	if d.keySrc != nil {
		var ok bool
		if rot, ok = d.keySrc.(secrets.Rotator); !ok {
			return newKey, oldKey, fmt.Errorf("rotate: the signing key is read from %s: put the new key there (and update every host), or use a dir: source, which rotate writes", d.keySrc.Describe())
		}
	}
	next, newKey, oldKey := ks.Rotated(pub, now)
	if err := d.writeKeyring(next); err != nil {
		return newKey, oldKey, fmt.Errorf("rotate: %w", err)
	}
	if rot != nil {
		// The new key is the source's next version; earlier versions stay
		// in the source until the operator removes them.
		s, err := rot.Put(context.Background(), privPEM)
		if err != nil {
			return newKey, oldKey, fmt.Errorf("rotate: %w", err)
		}
		d.Key, d.KeyVersion = priv, s.Version
		if err := WriteFileAtomic(d.PublicKeyPath(), pubPEM); err != nil {
			return newKey, oldKey, fmt.Errorf("rotate: %w", err)
		}
		return newKey, oldKey, nil
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

// RetireKey marks the key id (see certificate.Keyring.Find) retired from
// the time from on: a verifier given the exported keyring rejects
// certificates it signed that say they were issued at or after from. The
// current key cannot be retired (certificate.ErrCurrentKey): rotate first.
// Retiring a retired key again moves its retirement time; the key as it
// was is returned too.
func (d *Dir) RetireKey(id string, from time.Time) (now, was certificate.KeyInfo, err error) {
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
	next, now, was, err := ks.Retired(id, from)
	if err != nil {
		return now, was, fmt.Errorf("retire: %w", err)
	}
	if err := d.writeKeyring(next); err != nil {
		return now, was, fmt.Errorf("retire: %w", err)
	}
	return now, was, nil
}
