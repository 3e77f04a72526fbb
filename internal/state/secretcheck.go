package state

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/lineage"
)

// ErrSecretsMismatch: this host's pepper or signing key is not the one the
// ledger expects. amnesia refuses to start: with another pepper every
// subject digest would differ (erasures would find nothing), and with
// another key certificates would be signed by a key no verifier trusts.
var ErrSecretsMismatch = errors.New("this host's secrets are not the installation's")

// Installation values (lineage.InstallationMeta) of the secrets check.
const (
	pepperCheckKey     = "pepper_check"
	signingKeyIDKey    = "signing_key_id"
	pepperCheckPurpose = "amnesia.installation-check/v1"
)

// PepperCheck is the keyed check value of the pepper: HMAC-SHA256 under
// the pepper of a fixed label, hex. It proves that two hosts hold the same
// pepper without revealing it.
func (d *Dir) PepperCheck() string {
	sum := d.Keyer.Digest(pepperCheckPurpose, "pepper")
	return hex.EncodeToString(sum[:])
}

// SigningKeyID is the key id (certificate.KeyID) of the current signing key.
func (d *Dir) SigningKeyID() string {
	return certificate.KeyID(d.Key.Public().(ed25519.PublicKey))
}

// CheckSecrets compares this host's pepper and signing key with the check
// values the ledger holds (recorded by `amnesia init`, or by the first
// open of a ledger made before the check existed) and returns
// ErrSecretsMismatch when either differs. A ledger without installation
// values (lineage.InstallationMeta) is not checked.
//
// A rotation left unfinished here (its new key pending: PrepareRotation) is
// first finished or undone by the key the ledger records (ResolveRotation).
func (d *Dir) CheckSecrets(ctx context.Context, l lineage.Ledger) error {
	if _, err := d.ResolveRotation(ctx, l); err != nil {
		return fmt.Errorf("check secrets: %w", err)
	}
	m, ok := l.(lineage.InstallationMeta)
	if !ok {
		return nil
	}
	got, err := expect(ctx, m, pepperCheckKey, d.PepperCheck())
	if err != nil {
		return fmt.Errorf("check secrets: %w", err)
	}
	if got != d.PepperCheck() {
		return fmt.Errorf("%w: its pepper (%s) does not match the check value the ledger (%s) recorded at init. Give this host the installation's pepper (the same secret as every other host), or point it at its own ledger; nothing was changed", ErrSecretsMismatch, d.pepperSource(), d.ledgerName())
	}
	id := d.SigningKeyID()
	got, err = expect(ctx, m, signingKeyIDKey, id)
	if err != nil {
		return fmt.Errorf("check secrets: %w", err)
	}
	if got != id {
		return fmt.Errorf("%w: its signing key %s (%s) is not the installation's current signing key %s recorded in the ledger (%s). Give this host the current key (after `amnesia keys rotate` on another host, every host reads the new version), or point it at its own ledger; nothing was changed", ErrSecretsMismatch, id, d.keySource(), got, d.ledgerName())
	}
	return nil
}

// expect returns the value the ledger records for key, recording mine when
// there is none (read first: the record takes the ledger's write lock).
func expect(ctx context.Context, m lineage.InstallationMeta, key, mine string) (string, error) {
	v, ok, err := m.InstallationValue(ctx, key)
	if err != nil || ok {
		return v, err
	}
	return m.RecordInstallationValue(ctx, key, mine, false)
}

// RecordSigningKey records the current signing key as the one every host
// must hold (after `amnesia keys rotate`).
func (d *Dir) RecordSigningKey(ctx context.Context, l lineage.Ledger) error {
	m, ok := l.(lineage.InstallationMeta)
	if !ok {
		return nil
	}
	if _, err := m.RecordInstallationValue(ctx, signingKeyIDKey, d.SigningKeyID(), true); err != nil {
		return fmt.Errorf("record signing key: %w", err)
	}
	return nil
}

func (d *Dir) pepperSource() string {
	if d.Config != nil && d.Config.Secrets.Pepper != "" {
		return "read from " + d.Config.Secrets.Pepper
	}
	return "read from " + d.Path + "/pepper"
}

func (d *Dir) keySource() string {
	if d.keySrc != nil {
		s := "read from " + d.keySrc.Describe()
		if d.KeyVersion != "" {
			s += " version " + d.KeyVersion
		}
		return s
	}
	return "read from " + d.privateKeyPath()
}
