package state

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/internal/pgtest"
	"github.com/amnesia-dev/amnesia/internal/secrets"
	"github.com/amnesia-dev/amnesia/lineage"
)

// host inits (or joins) an installation in a state directory of its own
// with cfg, opens its ledger and returns the error of that open.
func host(t *testing.T, cfg *Config) (*Dir, error) {
	t.Helper()
	d, err := Init(filepath.Join(t.TempDir(), "state"), cfg)
	if err != nil {
		return nil, err
	}
	l, err := d.OpenLedger(context.Background(), LedgerCreate)
	if err == nil {
		l.Close()
	}
	return d, err
}

func mustHost(t *testing.T, cfg *Config) *Dir {
	t.Helper()
	d, err := host(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func withSecrets(ledger, pepper, key string) *Config {
	c := DefaultConfig()
	c.Ledger, c.Secrets = ledger, SecretsConfig{Pepper: pepper, SigningKey: key}
	return c
}

// Every host proves at start that it holds the installation's pepper and
// signing key; a host with another pepper or another key is refused, on
// both ledgers. The secrets never reach the ledger in clear.
func TestHostsShareSecretsThroughTheLedger(t *testing.T) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			root := t.TempDir()
			ledger := filepath.Join(root, "ledger.db")
			if kind == "postgres" {
				ledger = pgtest.DB(t)
			}
			pepperDir, keyDir := filepath.Join(root, "secrets", "pepper"), filepath.Join(root, "secrets", "signing")
			// Host A: init fills the versioned directories.
			a := mustHost(t, withSecrets(ledger, "dir:"+pepperDir, "dir:"+keyDir))
			for _, f := range []string{"pepper", "signing-key.pem"} {
				if _, err := os.Stat(filepath.Join(a.Path, f)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s was written into the state directory (%v): secrets stay in their source", f, err)
				}
			}
			pv, _ := (&secrets.DirProvider{Path: pepperDir}).Current(ctx)
			if pv.Version != "1" || len(pv.Value) != 32 {
				t.Fatalf("pepper source after init: version %q, %d bytes", pv.Version, len(pv.Value))
			}
			// Host B joins with the same sources, and host C with the same
			// pepper given as base64 in a variable: both accepted.
			b := mustHost(t, withSecrets(ledger, "dir:"+pepperDir, "dir:"+keyDir))
			if b.PepperCheck() != a.PepperCheck() || b.SigningKeyID() != a.SigningKeyID() {
				t.Fatal("host B does not hold host A's secrets")
			}
			t.Setenv("AMNESIA_TEST_PEPPER", base64.StdEncoding.EncodeToString(pv.Value))
			mustHost(t, withSecrets(ledger, "env:AMNESIA_TEST_PEPPER", "dir:"+keyDir))

			// Host D: its own pepper. Refused.
			_, err := host(t, withSecrets(ledger, "dir:"+filepath.Join(root, "other-pepper"), "dir:"+keyDir))
			if !errors.Is(err, ErrSecretsMismatch) || !strings.Contains(err.Error(), "pepper") {
				t.Fatalf("host with another pepper: %v, want ErrSecretsMismatch about the pepper", err)
			}
			// Host E: the right pepper, its own signing key. Refused.
			_, err = host(t, withSecrets(ledger, "dir:"+pepperDir, "dir:"+filepath.Join(root, "other-key")))
			if !errors.Is(err, ErrSecretsMismatch) || !strings.Contains(err.Error(), "signing key") {
				t.Fatalf("host with another signing key: %v, want ErrSecretsMismatch about the key", err)
			}

			// Rotation on host A: the new key is the source's version 2
			// and the ledger expects it; host B reopened reads it and is
			// accepted; a host pinned to version 1 is refused.
			old := a.SigningKeyID()
			if _, _, err := a.RotateKey(time.Now()); err != nil {
				t.Fatal(err)
			}
			if a.KeyVersion != "2" || a.SigningKeyID() == old {
				t.Fatalf("rotation: key version %q", a.KeyVersion)
			}
			l, err := a.OpenLedger(ctx, LedgerUnchecked)
			if !errors.Is(err, ErrSecretsMismatch) {
				t.Fatalf("before the ledger records the rotated key: %v, want ErrSecretsMismatch", err)
			}
			l, err = lineage.OpenExisting(ctx, a.LedgerSpec())
			if err != nil {
				t.Fatal(err)
			}
			if err := a.RecordSigningKey(ctx, l); err != nil {
				t.Fatal(err)
			}
			l.Close()
			b2, err := Open(b.Path)
			if err != nil {
				t.Fatal(err)
			}
			if l, err := b2.OpenLedger(ctx, LedgerChecked); err != nil {
				t.Fatalf("host B after the rotation: %v", err)
			} else {
				l.Close()
			}
			_, err = host(t, withSecrets(ledger, "dir:"+pepperDir, "file:"+filepath.Join(keyDir, "1")))
			if !errors.Is(err, ErrSecretsMismatch) {
				t.Fatalf("host on the earlier key: %v, want ErrSecretsMismatch", err)
			}

			// No secret in the ledger in clear (SQLite: the file's bytes).
			if kind == "sqlite" {
				raw, err := os.ReadFile(ledger)
				if err != nil {
					t.Fatal(err)
				}
				key, _ := os.ReadFile(filepath.Join(keyDir, "2"))
				for what, s := range map[string][]byte{"pepper": pv.Value, "pepper hex": []byte(hex.EncodeToString(pv.Value)), "pepper base64": []byte(base64.StdEncoding.EncodeToString(pv.Value)), "signing key": key[30:60]} {
					if bytes.Contains(raw, s) {
						t.Errorf("the ledger file holds the %s", what)
					}
				}
			}
		})
	}
}

// A state directory keeping its secrets as files (the default) is checked
// too: its pepper replaced by another is refused at the next open.
func TestDefaultSecretsAreChecked(t *testing.T) {
	ctx := context.Background()
	d := mustHost(t, nil)
	other := bytes.Repeat([]byte{7}, 32)
	if err := WriteFileAtomic(filepath.Join(d.Path, "pepper"), other); err != nil {
		t.Fatal(err)
	}
	d2, err := Open(d.Path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d2.OpenLedger(ctx, LedgerChecked); !errors.Is(err, ErrSecretsMismatch) {
		t.Fatalf("replaced pepper: %v, want ErrSecretsMismatch", err)
	}
}

func TestSecretSourceErrors(t *testing.T) {
	root := t.TempDir()
	// A variable that holds nothing: init says what to put there.
	_, err := Init(filepath.Join(root, "s1"), withSecrets("", "env:AMNESIA_TEST_UNSET_PEPPER", ""))
	if err == nil || !strings.Contains(err.Error(), "holds no pepper") {
		t.Fatalf("empty env source: %v", err)
	}
	// A pepper of the wrong size.
	t.Setenv("AMNESIA_TEST_SHORT_PEPPER", "c2hvcnQ=")
	_, err = Init(filepath.Join(root, "s2"), withSecrets("", "env:AMNESIA_TEST_SHORT_PEPPER", ""))
	if err == nil || !strings.Contains(err.Error(), "not 32 bytes") {
		t.Fatalf("short pepper: %v", err)
	}
	// Rotation cannot write to a file: source.
	kd := &secrets.DirProvider{Path: filepath.Join(root, "k")}
	d, err := Init(filepath.Join(root, "s3"), withSecrets("", "", "dir:"+kd.Path))
	if err != nil {
		t.Fatal(err)
	}
	cfg := withSecrets("", "", "file:"+filepath.Join(kd.Path, "1"))
	d2, err := Init(filepath.Join(root, "s4"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d2.SigningKeyID() != d.SigningKeyID() {
		t.Fatal("file: source does not read the key")
	}
	if _, _, err := d2.RotateKey(time.Now()); err == nil || !strings.Contains(err.Error(), "dir: source") {
		t.Fatalf("rotate with a file: source: %v", err)
	}
	// Configuration errors name the key.
	for yaml, want := range map[string]string{
		"secrets:\n  pepper: vault:x\n":                     "secrets.pepper",
		"secrets:\n  signing_key: file:rel/key.pem\n":       "absolute path",
		"secrets:\n  pepper: env:P\n  signing_key: env:P\n": "two sources",
		"secrets:\n  peper: env:P\n":                        "did you mean pepper",
	} {
		p := filepath.Join(t.TempDir(), "amnesia.yaml")
		os.WriteFile(p, []byte("version: 1\n"+yaml), 0o600)
		if _, err := LoadConfig(p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", yaml, err, want)
		}
	}
}
