package state

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/internal/pgtest"
	"github.com/amnesia-dev/amnesia/lineage"
)

// With a PostgreSQL ledger the keyring's public half is the ledger's:
// a rotation and a retirement on host A reach host B's keyring.json at its
// next open. With a SQLite ledger keyring.json stays the state directory's
// own and nothing is recorded.
func TestKeyringSharedThroughTheLedger(t *testing.T) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			root := t.TempDir()
			ledger := filepath.Join(root, "ledger.db")
			if kind == "postgres" {
				ledger = pgtest.DB(t)
			}
			pepperDir, keyDir := filepath.Join(root, "secrets", "pepper"), filepath.Join(root, "secrets", "signing")
			a := mustHost(t, withSecrets(ledger, "dir:"+pepperDir, "dir:"+keyDir))
			b := mustHost(t, withSecrets(ledger, "dir:"+pepperDir, "dir:"+keyDir))

			// Host A rotates, as `amnesia keys rotate` does, then retires
			// the earlier key.
			l, err := a.OpenLedger(ctx, LedgerChecked)
			if err != nil {
				t.Fatal(err)
			}
			first := a.SigningKeyID()
			nk, _, err := a.RotateKey(time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if err := a.RecordSigningKey(ctx, l); err != nil {
				t.Fatal(err)
			}
			if err := a.RecordKeyring(ctx, l); err != nil {
				t.Fatal(err)
			}
			if _, _, err := a.RetireKey(first, time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil {
				t.Fatal(err)
			}
			if err := a.RecordKeyring(ctx, l); err != nil {
				t.Fatal(err)
			}
			l.Close()
			mineA, _ := os.ReadFile(a.KeyringPath())

			// Host B restarts (it reads the key's new version) and opens the
			// ledger.
			b2, err := Open(b.Path)
			if err != nil {
				t.Fatal(err)
			}
			l, err = b2.OpenLedger(ctx, LedgerChecked)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			ks, err := b2.Keyring()
			if err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(b2.KeyringPath())
			_, recorded, err := l.(lineage.InstallationMeta).InstallationValue(ctx, keyringKey)
			if err != nil {
				t.Fatal(err)
			}
			switch kind {
			case "postgres":
				if string(got) != string(mineA) {
					t.Fatalf("host B's keyring.json is not host A's:\n%s\nwant\n%s", got, mineA)
				}
				if len(ks) != 2 || !ks[1].Current || ks[1].ID != nk.ID || ks[1].Created.IsZero() || ks[0].Retired.IsZero() {
					t.Errorf("host B's keyring after A's rotation and retirement: %+v", ks)
				}
			case "sqlite":
				if recorded {
					t.Error("a SQLite ledger records the keyring")
				}
				// As before: B lists the new key as current, its creation
				// time unknown, until its keyring file is copied.
				if len(ks) != 2 || !ks[1].Current || !ks[1].Created.IsZero() {
					t.Errorf("host B's own keyring (SQLite ledger): %+v", ks)
				}
			}
		})
	}
}
