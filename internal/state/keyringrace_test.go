package state

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/pgtest"
	"github.com/amnesia-dev/amnesia/lineage"
)

// Two hosts of one PostgreSQL installation rotate the signing key at the
// same moment, several rounds: in each round exactly one rotation is
// recorded and the other is refused with ErrKeyringRaced before it writes
// anything; the refused host then reopens and rotates again. No key is
// ever lost: the ledger's keyring lists every key the secret source holds,
// and its current key, and the recorded signing key id, are the source's
// newest version.
func TestConcurrentRotationsLoseNoKey(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	ledger := pgtest.DB(t)
	pepperDir, keyDir := filepath.Join(root, "secrets", "pepper"), filepath.Join(root, "secrets", "signing")
	hosts := []*Dir{
		mustHost(t, withSecrets(ledger, "dir:"+pepperDir, "dir:"+keyDir)),
		mustHost(t, withSecrets(ledger, "dir:"+pepperDir, "dir:"+keyDir)),
	}
	rotated := map[string]bool{hosts[0].SigningKeyID(): true}
	for round := range 4 {
		ls := make([]lineage.Ledger, len(hosts))
		for i, h := range hosts {
			d, err := Open(h.Path) // a restart: reads the source's newest version
			if err != nil {
				t.Fatal(err)
			}
			hosts[i] = d
			if ls[i], err = d.OpenLedger(ctx, LedgerChecked); err != nil {
				t.Fatalf("round %d, host %d: %v", round, i, err)
			}
		}
		start := make(chan struct{})
		errs := make([]error, len(hosts))
		ids := make([]string, len(hosts))
		var wg sync.WaitGroup
		for i, h := range hosts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs[i] = h.ChangeKeyring(ctx, ls[i], true, func() error {
					nk, _, err := h.RotateKey(time.Now())
					ids[i] = nk.ID
					return err
				})
			}()
		}
		close(start)
		wg.Wait()
		won := 0
		for i, err := range errs {
			switch {
			case err == nil:
				won++
				rotated[ids[i]] = true
			case errors.Is(err, ErrKeyringRaced):
				if ids[i] != "" {
					t.Fatalf("round %d: host %d was refused after it rotated (%s)", round, i, ids[i])
				}
			default:
				t.Fatalf("round %d, host %d: %v", round, i, err)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d of 2 concurrent rotations recorded, want exactly 1 (errors %v)", round, won, errs)
		}
		defer func() {
			for _, l := range ls {
				l.Close()
			}
		}()

		// The ledger's keyring lists every key ever current; its current
		// key is the one the source's newest version holds.
		m := ls[0].(lineage.InstallationMeta)
		v, _, err := m.InstallationValue(ctx, keyringKey)
		if err != nil {
			t.Fatal(err)
		}
		tf, err := certificate.ParseTrustFile([]byte(v))
		if err != nil {
			t.Fatal(err)
		}
		listed := map[string]bool{}
		for _, k := range tf.Keys {
			listed[k.KeyID] = true
		}
		for id := range rotated {
			if !listed[id] {
				t.Fatalf("round %d: key %s was lost from the ledger's keyring (%d keys listed)", round, id, len(tf.Keys))
			}
		}
		if len(tf.Keys) != len(rotated) {
			t.Fatalf("round %d: the ledger's keyring lists %d keys, %d were made", round, len(tf.Keys), len(rotated))
		}
		fresh, err := Open(hosts[0].Path)
		if err != nil {
			t.Fatal(err)
		}
		cur, _, err := m.InstallationValue(ctx, signingKeyIDKey)
		if err != nil || cur != fresh.SigningKeyID() {
			t.Fatalf("round %d: the ledger expects key %s, the source's newest version is %s (%v)", round, cur, fresh.SigningKeyID(), err)
		}
	}
}
