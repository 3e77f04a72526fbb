package state

import (
	"context"
	"errors"
	"fmt"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/lineage"
)

// keyringKey is the installation value (lineage.InstallationMeta) that
// holds the keyring's public half, as a trust file (certificate.TrustFile),
// in a PostgreSQL ledger: every host of the installation reads the same
// keyring, and its keyring.json is a copy.
const keyringKey = "keyring"

// sharesKeyring reports whether the keyring's public half is kept in the
// ledger l: a PostgreSQL ledger, shared by hosts that share nothing else. A
// SQLite ledger's installation keeps keyring.json alone, as before.
func (d *Dir) sharesKeyring(l lineage.Ledger) (lineage.InstallationMeta, bool) {
	m, ok := l.(lineage.InstallationMeta)
	return m, ok && lineage.IsPostgresDSN(d.LedgerSpec())
}

// SyncKeyring makes this host's keyring.json the ledger's keyring, with a
// PostgreSQL ledger (it does nothing otherwise). OpenLedger calls it after
// CheckSecrets, so this host's signing key is the installation's current
// one. The ledger's keyring is taken when it lists this host's current
// key; otherwise (a ledger that has none yet, or one recorded before this
// host's key was) this host's keyring is recorded there.
func (d *Dir) SyncKeyring(ctx context.Context, l lineage.Ledger) error {
	m, ok := d.sharesKeyring(l)
	if !ok {
		return nil
	}
	unlock, err := d.lockKeyring()
	if err != nil {
		return err
	}
	defer unlock()
	ks, err := d.Keyring()
	if err != nil {
		return err
	}
	mine, err := ks.Encode()
	if err != nil {
		return fmt.Errorf("keyring: %w", err)
	}
	v, ok, err := m.InstallationValue(ctx, keyringKey)
	if err != nil {
		return fmt.Errorf("keyring: %w", err)
	}
	if ok && v == string(mine) {
		d.keyringSeen = v
		return nil
	}
	if ok {
		tf, err := certificate.ParseTrustFile([]byte(v))
		if err != nil {
			return fmt.Errorf("the keyring recorded in the ledger: %w", err)
		}
		cur := d.SigningKeyID()
		for _, k := range tf.Keys {
			if k.KeyID == cur {
				d.keyringSeen = v
				return WriteFileAtomic(d.KeyringPath(), []byte(v))
			}
		}
	}
	got, err := m.RecordInstallationValue(ctx, keyringKey, string(mine), ok)
	if err != nil {
		return fmt.Errorf("record keyring: %w", err)
	}
	// got is another host's keyring when it recorded one first: kept as
	// seen, so that a change from here is refused until the next open.
	d.keyringSeen = got
	return nil
}

// ErrKeyringRaced: the ledger's keyring changed (another host rotated or
// retired a key) after this host read it; the change was refused before
// anything was written.
var ErrKeyringRaced = errors.New("the installation's keyring changed on another host since this host read it")

// ChangeKeyring runs change (RotateKey or RetireKey, which write this
// host's keyring.json and, for a rotation, the key's source) and records
// the resulting keyring in the ledger, and with signingKey the new current
// key's id. With a PostgreSQL ledger this is one compare-and-swap: under
// the installation lock (lineage.InstallationUpdater), the ledger's keyring
// must still be the one this host synced when it opened the ledger;
// otherwise change is not run and ErrKeyringRaced is returned, so that a
// rotation never drops a key another host added. Other ledgers: change,
// then the signing key's id is recorded, as before.
func (d *Dir) ChangeKeyring(ctx context.Context, l lineage.Ledger, signingKey bool, change func() error) error {
	_, shared := d.sharesKeyring(l)
	u, locks := l.(lineage.InstallationUpdater)
	if !shared || !locks {
		if err := change(); err != nil {
			return err
		}
		if signingKey {
			if err := d.RecordSigningKey(ctx, l); err != nil {
				return err
			}
		}
		if shared {
			return d.RecordKeyring(ctx, l)
		}
		return nil
	}
	keys := []string{keyringKey, signingKeyIDKey}
	var recorded string
	defer func() {
		if recorded != "" {
			d.keyringSeen = recorded
		}
	}()
	return u.UpdateInstallationValues(ctx, keys, func(cur map[string]string) (map[string]string, error) {
		if cur[keyringKey] != d.keyringSeen {
			return nil, fmt.Errorf("%w (a rotation or retirement there finished first); nothing was changed here: run the same command again, which reads the new keyring", ErrKeyringRaced)
		}
		if err := change(); err != nil {
			return nil, err
		}
		ks, err := d.Keyring()
		if err != nil {
			return nil, err
		}
		b, err := ks.Encode()
		if err != nil {
			return nil, fmt.Errorf("keyring: %w", err)
		}
		recorded = string(b)
		next := map[string]string{keyringKey: string(b)}
		if signingKey {
			next[signingKeyIDKey] = d.SigningKeyID()
		}
		return next, nil
	})
}

// RecordKeyring records this host's keyring in the ledger, with a
// PostgreSQL ledger (after `amnesia keys rotate` or `retire`); it does
// nothing otherwise.
func (d *Dir) RecordKeyring(ctx context.Context, l lineage.Ledger) error {
	m, ok := d.sharesKeyring(l)
	if !ok {
		return nil
	}
	ks, err := d.Keyring()
	if err != nil {
		return err
	}
	b, err := ks.Encode()
	if err != nil {
		return fmt.Errorf("keyring: %w", err)
	}
	if _, err := m.RecordInstallationValue(ctx, keyringKey, string(b), true); err != nil {
		return fmt.Errorf("record keyring: %w", err)
	}
	return nil
}
