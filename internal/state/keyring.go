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
	"github.com/amnesia-dev/amnesia/lineage"
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

// pendingKeyPath is a rotation's new private key while the ledger has not
// recorded it yet (PrepareRotation until it is committed or undone):
// beside signing-key.pem, or in the dir: source's directory (a name that
// is not a number, which is never a version), so that the key stays in
// its source.
func (d *Dir) pendingKeyPath() string {
	if p, ok := d.keySrc.(*secrets.DirProvider); ok {
		return filepath.Join(p.Path, "next.pem")
	}
	return filepath.Join(d.Path, "signing-key.next.pem")
}

// RotateKey makes a new Ed25519 key the current signing key, as of now:
// PrepareRotation, then CommitRotation, for an installation whose ledger
// does not record the key yet. With a ledger, `amnesia keys rotate` runs
// the two apart, recording the new key's id in the ledger between them.
func (d *Dir) RotateKey(now time.Time) (newKey, oldKey certificate.KeyInfo, err error) {
	if newKey, oldKey, err = d.PrepareRotation(now); err != nil {
		return newKey, oldKey, err
	}
	return newKey, oldKey, d.CommitRotation()
}

// PrepareRotation is a rotation's first phase: it generates a new key,
// writes its private half to the pending file (pendingKeyPath; the earlier
// key's files are not touched), adds it to keyring.json as the current key, and makes
// it d's key in memory (what SigningKeyID and the ledger's record then
// name). The earlier key stays in the keyring, trusted and not retired
// (RetireKey does that).
//
// Then the caller records the new key's id in the ledger, and runs
// CommitRotation once that is committed; when it failed (or the process
// ended first), ResolveRotation, which every open of the ledger runs
// (CheckSecrets), finishes or undoes it by what the ledger records. So a
// rotation whose ledger write failed leaves the earlier key current, not
// destroyed.
func (d *Dir) PrepareRotation(now time.Time) (newKey, oldKey certificate.KeyInfo, err error) {
	unlock, err := d.lockKeyring()
	if err != nil {
		return newKey, oldKey, err
	}
	defer unlock()
	if d.prepared != nil {
		// Run again in the same process (a retried ledger transaction).
		return d.prepared.newKey, d.prepared.oldKey, nil
	}
	if _, err := os.Lstat(d.pendingKeyPath()); err == nil {
		return newKey, oldKey, fmt.Errorf("rotate: an earlier rotation is not finished (%s exists): open the ledger (any command that uses it, e.g. amnesia keys list) to finish or undo it by what the ledger records", d.pendingKeyPath())
	}
	if err := d.reloadKey(); err != nil {
		return newKey, oldKey, err
	}
	if d.keySrc != nil {
		if _, ok := d.keySrc.(secrets.Rotator); !ok {
			return newKey, oldKey, fmt.Errorf("rotate: the signing key is read from %s: put the new key there (and update every host), or use a dir: source, which rotate writes", d.keySrc.Describe())
		}
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
	next, newKey, oldKey := ks.Rotated(pub, now)
	if err := WriteFileAtomic(d.pendingKeyPath(), privPEM); err != nil {
		return newKey, oldKey, fmt.Errorf("rotate: %w", err)
	}
	if err := d.writeKeyring(next); err != nil {
		return newKey, oldKey, errors.Join(fmt.Errorf("rotate: %w", err), d.abortLocked())
	}
	d.Key = priv
	d.prepared = &preparedRotation{newKey: newKey, oldKey: oldKey}
	return newKey, oldKey, nil
}

// preparedRotation is the rotation PrepareRotation began in this process.
type preparedRotation struct {
	newKey, oldKey certificate.KeyInfo
}

// CommitRotation is a rotation's second phase, once the ledger records the
// new key: signing-key.pem is replaced by the pending key and the earlier
// private key's file is overwritten with zeros and unlinked (with a dir:
// source, the pending key becomes the source's next version; earlier
// versions stay there until the operator removes them), then
// signing-key.pub.pem is replaced. A crash in between leaves either the
// pending file, which the next open of the ledger commits, or
// signing-key.pem.old, which the next rotation destroys. Without a pending
// key it does nothing.
//
// Processes that opened the state before the rotation keep signing with
// the earlier key until they reopen it.
func (d *Dir) CommitRotation() error {
	unlock, err := d.lockKeyring()
	if err != nil {
		return err
	}
	defer unlock()
	return d.commitLocked()
}

func (d *Dir) commitLocked() error {
	pending := d.pendingKeyPath()
	privPEM, priv, err := d.readPending()
	if err != nil {
		return fmt.Errorf("rotate: %w", err)
	}
	if privPEM == nil {
		d.prepared = nil
		return nil
	}
	pubPEM, err := certificate.EncodePublicKeyPEM(priv.Public().(ed25519.PublicKey))
	if err != nil {
		return fmt.Errorf("rotate: %w", err)
	}
	if d.keySrc != nil {
		rot, ok := d.keySrc.(secrets.Rotator)
		if !ok {
			return fmt.Errorf("rotate: the signing key is read from %s, which rotate does not write", d.keySrc.Describe())
		}
		// A crash after Put and before the pending file was removed: the
		// source's current version is the pending key already.
		k, v, err := loadKey(context.Background(), d.Path, d.keySrc)
		if err != nil || !k.Equal(priv) {
			s, err := rot.Put(context.Background(), privPEM)
			if err != nil {
				return fmt.Errorf("rotate: %w", err)
			}
			v = s.Version
		}
		d.Key, d.KeyVersion = priv, v
		if err := atomicfile.Shred(pending); err != nil {
			return fmt.Errorf("rotate: destroy the pending key's copy %s: %w", pending, err)
		}
	} else {
		// Keep a second link to the earlier private key while
		// signing-key.pem is replaced, so that its bytes can be
		// overwritten after.
		cur, old := d.privateKeyPath(), d.privateKeyPath()+".old"
		if err := discardOldKeyFile(cur, old); err != nil {
			return fmt.Errorf("rotate: %w", err)
		}
		if err := os.Link(cur, old); err != nil {
			return fmt.Errorf("rotate: %w", err)
		}
		if err := os.Rename(pending, cur); err != nil {
			return fmt.Errorf("rotate: %w", err)
		}
		if err := SyncDir(d.Path); err != nil {
			return fmt.Errorf("rotate: %w", err)
		}
		d.Key = priv
		if err := discardOldKeyFile(cur, old); err != nil {
			return fmt.Errorf("rotate: destroy the earlier private key: %w", err)
		}
	}
	d.prepared = nil
	if err := WriteFileAtomic(d.PublicKeyPath(), pubPEM); err != nil {
		return fmt.Errorf("rotate: %w", err)
	}
	return nil
}

// abortLocked undoes PrepareRotation once the ledger is known not to
// record the new key: the pending key's file is overwritten and unlinked,
// keyring.json no longer lists it, and the earlier key is d's again.
// Without a pending key it only reads the earlier key again.
func (d *Dir) abortLocked() error {
	pending := d.pendingKeyPath()
	b, k, err := d.readPending()
	if b == nil {
		if err != nil {
			return fmt.Errorf("undo the rotation: %w", err)
		}
		d.prepared = nil
		return d.reloadKey()
	}
	// A pending key that does not parse is destroyed all the same; the
	// keyring cannot list it (PrepareRotation lists a key it generated).
	if err := d.reloadKey(); err != nil {
		return fmt.Errorf("undo the rotation: %w", err)
	}
	ks, err := d.Keyring()
	if err != nil {
		return fmt.Errorf("undo the rotation: %w", err)
	}
	if k != nil {
		id := certificate.KeyID(k.Public().(ed25519.PublicKey))
		kept := ks[:0]
		for _, x := range ks {
			if x.ID != id {
				kept = append(kept, x)
			}
		}
		if err := d.writeKeyring(kept); err != nil {
			return fmt.Errorf("undo the rotation: %w", err)
		}
	}
	if err := atomicfile.Shred(pending); err != nil {
		return fmt.Errorf("undo the rotation: destroy the pending key %s: %w", pending, err)
	}
	d.prepared = nil
	return nil
}

// ResolveRotation finishes or undoes a rotation whose pending key
// (PrepareRotation) is still here, by the signing key id the ledger l
// records: the pending key's, it is committed (CommitRotation); the earlier
// key's (or none), it is undone (the pending key destroyed, the keyring as
// before). It returns which it did ("" when there was nothing
// pending), or an error when the ledger cannot be read or records a third
// key.
func (d *Dir) ResolveRotation(ctx context.Context, l lineage.Ledger) (string, error) {
	if _, err := os.Lstat(d.pendingKeyPath()); errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	unlock, err := d.lockKeyring()
	if err != nil {
		return "", err
	}
	defer unlock()
	b, k, err := d.readPending()
	if err != nil {
		return "", fmt.Errorf("rotation: %w", err)
	}
	if b == nil {
		return "", nil // another process resolved it meanwhile
	}
	pendingID := certificate.KeyID(k.Public().(ed25519.PublicKey))
	recorded, ok := "", false
	if m, meta := l.(lineage.InstallationMeta); meta {
		if recorded, ok, err = m.InstallationValue(ctx, signingKeyIDKey); err != nil {
			return "", fmt.Errorf("rotation: read the ledger's signing key: %w", err)
		}
	} else {
		recorded, ok = pendingID, true // a ledger that records no key: nothing to wait for
	}
	if ok && recorded == pendingID {
		return "committed", d.commitLocked()
	}
	if err := d.reloadKey(); err != nil {
		return "", err
	}
	if !ok || recorded == d.SigningKeyID() {
		return "undone", d.abortLocked()
	}
	return "", fmt.Errorf("%w: the ledger records signing key %s, neither this host's key %s nor the pending key %s of an unfinished rotation (%s)", ErrSecretsMismatch, recorded, d.SigningKeyID(), pendingID, d.pendingKeyPath())
}

// readPending reads the pending key of an unfinished rotation
// (PrepareRotation): its PEM, nil when there is none, and the key, nil with
// an error when the PEM does not parse.
func (d *Dir) readPending() ([]byte, ed25519.PrivateKey, error) {
	b, err := os.ReadFile(d.pendingKeyPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	k, err := certificate.ParsePrivateKeyPEM(b)
	if err != nil {
		return b, nil, fmt.Errorf("the pending key %s: %w", d.pendingKeyPath(), err)
	}
	return b, k, nil
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
