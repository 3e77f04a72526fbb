package state

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/certificate"
)

func TestKeyringInitRotateRetire(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "st")
	d, err := Init(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := d.Keyring()
	if err != nil {
		t.Fatal(err)
	}
	if len(ks) != 1 || !ks[0].Current || ks[0].Created.IsZero() || ks[0].ID != certificate.KeyID(ks[0].Public) {
		t.Fatalf("initial keyring %+v", ks)
	}
	oldPriv, _ := os.ReadFile(filepath.Join(dir, "signing-key.pem"))
	oldKey := d.Key

	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	nk, ok, err := d.RotateKey(now)
	if err != nil {
		t.Fatal(err)
	}
	if ok.ID != ks[0].ID || nk.ID == ok.ID || !nk.Created.Equal(now) || d.Key.Equal(oldKey) {
		t.Fatalf("rotate: new %+v old %+v", nk, ok)
	}
	// The state reopens with the new key current and both in the keyring.
	d2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !d2.Key.Equal(d.Key) {
		t.Fatal("reopened state signs with another key")
	}
	pubPEM, _ := os.ReadFile(d2.PublicKeyPath())
	if pub, err := certificate.ParsePublicKeyPEM(pubPEM); err != nil || certificate.KeyID(pub) != nk.ID {
		t.Errorf("signing-key.pub.pem is not the new key (%v)", err)
	}
	ks, err = d2.Keyring()
	if err != nil {
		t.Fatal(err)
	}
	if len(ks) != 2 || ks[0].ID != ok.ID || ks[0].Current || ks[1].ID != nk.ID || !ks[1].Current {
		t.Fatalf("keyring after rotation %+v", ks)
	}
	pubs, _ := d2.PublicKeys()
	if len(pubs) != 2 || certificate.KeyID(pubs[0]) != nk.ID {
		t.Errorf("PublicKeys: current first, got %d keys", len(pubs))
	}
	// No file of the state directory holds the earlier private key.
	filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			b, _ := os.ReadFile(p)
			if bytes.Contains(b, bytes.TrimSpace(oldPriv)) {
				t.Errorf("%s still holds the earlier private key", p)
			}
		}
		return nil
	})
	for _, f := range []string{"signing-key.pem", "keyring.json"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want mode 0600", f, fi.Mode(), err)
		}
	}

	if _, _, err := d2.RetireKey(nk.ID, now); !errors.Is(err, certificate.ErrCurrentKey) {
		t.Errorf("retiring the current key: %v", err)
	}
	if _, _, err := d2.RetireKey("sha256:ffffffffff", now); !errors.Is(err, certificate.ErrKeyNotFound) {
		t.Errorf("retiring an unknown key: %v", err)
	}
	r, was, err := d2.RetireKey(strings.ToUpper(ok.ID[7:19]), now)
	if err != nil {
		t.Fatal(err)
	}
	if r.ID != ok.ID || !r.Retired.Equal(now) || !was.Retired.IsZero() {
		t.Errorf("retire: %+v (was %+v)", r, was)
	}
	tf, err := d2.TrustFile()
	if err != nil {
		t.Fatal(err)
	}
	if len(tf.Keys) != 2 || !tf.Keys[0].Retired.Equal(now) || !tf.Keys[1].Retired.IsZero() {
		t.Errorf("trust file %+v", tf)
	}
}

// A state directory from before the keyring (no keyring.json) keeps
// working: its key is the keyring, and the first rotation keeps it.
func TestKeyringLegacyState(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "st")
	d, err := Init(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(d.KeyringPath()); err != nil {
		t.Fatal(err)
	}
	d, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := d.Keyring()
	if err != nil {
		t.Fatal(err)
	}
	if len(ks) != 1 || !ks[0].Current || !ks[0].Created.IsZero() {
		t.Fatalf("legacy keyring %+v", ks)
	}
	legacy := ks[0].ID
	if _, _, err := d.RotateKey(time.Now()); err != nil {
		t.Fatal(err)
	}
	ks, err = d.Keyring()
	if err != nil {
		t.Fatal(err)
	}
	if len(ks) != 2 || ks[0].ID != legacy || ks[0].Current || !ks[1].Current {
		t.Fatalf("keyring after rotating a legacy state %+v", ks)
	}
}

func TestKeyringCorrupt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "st")
	d, err := Init(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(d.KeyringPath(), []byte(`{"format":"amnesia.trust/v1","keys":[]}`), 0o600)
	if _, err := d.Keyring(); !errors.Is(err, certificate.ErrTrustFile) {
		t.Errorf("corrupt keyring: %v", err)
	}
	if _, _, err := d.RotateKey(time.Now()); err == nil {
		t.Error("rotated over a corrupt keyring")
	}
}

// A leftover link to an earlier private key (a rotation that stopped after
// replacing signing-key.pem) is overwritten and removed by the next
// rotation; one that is still the current key (stopped before) is only
// unlinked.
func TestRotateCleansLeftover(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "st")
	d, err := Init(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	cur := filepath.Join(dir, "signing-key.pem")
	if err := os.Link(cur, cur+".old"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.RotateKey(time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cur + ".old"); err == nil {
		t.Error("signing-key.pem.old left")
	}
	if _, err := Open(dir); err != nil {
		t.Fatalf("state after rotation: %v", err)
	}
	stale := []byte("-----BEGIN PRIVATE KEY-----\nstale\n-----END PRIVATE KEY-----\n")
	os.WriteFile(cur+".old", stale, 0o600)
	if _, _, err := d.RotateKey(time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cur + ".old"); err == nil {
		t.Error("signing-key.pem.old left")
	}
	if ks, _ := d.Keyring(); len(ks) != 3 {
		t.Errorf("%d keys after three keys' life", len(ks))
	}
}
