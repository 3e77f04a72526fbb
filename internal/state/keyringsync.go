package state

import (
	"context"
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
				return WriteFileAtomic(d.KeyringPath(), []byte(v))
			}
		}
	}
	if _, err := m.RecordInstallationValue(ctx, keyringKey, string(mine), ok); err != nil {
		return fmt.Errorf("record keyring: %w", err)
	}
	return nil
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
