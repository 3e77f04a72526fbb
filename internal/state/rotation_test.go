package state

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/internal/pgtest"
	"github.com/amnesia-dev/amnesia/lineage"
)

// errLost is the ledger write failing: a connection lost, a disk full.
var errLost = errors.New("connection lost (injected)")

// lostWrites is a real ledger whose installation writes fail: reads go to
// the ledger; an update runs its fn (the rotation's first phase) and then
// fails before recording anything.
type lostWrites struct {
	lineage.Ledger
	m lineage.InstallationMeta
}

func (l lostWrites) InstallationValue(ctx context.Context, key string) (string, bool, error) {
	return l.m.InstallationValue(ctx, key)
}

func (l lostWrites) RecordInstallationValue(context.Context, string, string, bool) (string, error) {
	return "", errLost
}

func (l lostWrites) UpdateInstallationValues(ctx context.Context, keys []string, fn func(cur map[string]string) (map[string]string, error)) error {
	cur := map[string]string{}
	for _, k := range keys {
		if v, ok, err := l.m.InstallationValue(ctx, k); err != nil {
			return err
		} else if ok {
			cur[k] = v
		}
	}
	if _, err := fn(cur); err != nil {
		return err
	}
	return errLost
}

// rotationHost is one installation (ledger kind, key source) for the
// rotation tests, its ledger open.
type rotationHost struct {
	d      *Dir
	l      lineage.Ledger
	keyDir string // the dir: source, or "" for signing-key.pem
}

func rotationHosts(t *testing.T, fn func(t *testing.T, h *rotationHost)) {
	for _, kind := range []string{"sqlite", "postgres"} {
		for _, src := range []string{"file", "dir"} {
			t.Run(kind+"/"+src, func(t *testing.T) {
				root := t.TempDir()
				cfg := DefaultConfig()
				cfg.Ledger = filepath.Join(root, "ledger.db")
				if kind == "postgres" {
					cfg.Ledger = pgtest.DB(t)
				}
				h := &rotationHost{}
				if src == "dir" {
					h.keyDir = filepath.Join(root, "signing")
					cfg.Secrets = SecretsConfig{SigningKey: "dir:" + h.keyDir}
				}
				h.d = mustHost(t, cfg)
				h.l = h.open(t, h.d)
				fn(t, h)
			})
		}
	}
}

func (h *rotationHost) open(t *testing.T, d *Dir) lineage.Ledger {
	t.Helper()
	l, err := d.OpenLedger(context.Background(), LedgerChecked)
	if err != nil {
		t.Fatalf("open the ledger: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// keyFiles returns the private key files of the source: signing-key.pem,
// or each version of the dir: source.
func (h *rotationHost) keyFiles(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	paths := []string{filepath.Join(h.d.Path, "signing-key.pem")}
	if h.keyDir != "" {
		paths, _ = filepath.Glob(filepath.Join(h.keyDir, "*"))
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[p] = b
	}
	return out
}

func prepare(d *Dir) func() error {
	return func() error {
		_, _, err := d.PrepareRotation(time.Now())
		return err
	}
}

// A rotation whose ledger write fails is undone: the earlier key stays
// current, its files as they were, the keyring without the new key, and
// the installation opens (exit 23 and a destroyed earlier key before).
func TestRotationWhoseLedgerWriteFailsIsUndone(t *testing.T) {
	rotationHosts(t, func(t *testing.T, h *rotationHost) {
		ctx := context.Background()
		before, oldID := h.keyFiles(t), h.d.SigningKeyID()
		keyring, _ := os.ReadFile(h.d.KeyringPath())
		err := h.d.ChangeKeyring(ctx, lostWrites{h.l, h.l.(lineage.InstallationMeta)}, true, prepare(h.d))
		if !errors.Is(err, errLost) {
			t.Fatalf("rotation with the ledger write lost: %v, want the injected error", err)
		}
		newID := h.d.SigningKeyID()
		if newID == oldID {
			t.Fatal("the first phase did not make the new key current in memory")
		}
		did, err := h.d.ResolveRotation(ctx, h.l)
		if err != nil || did != "undone" {
			t.Fatalf("resolve: %q, %v; want undone", did, err)
		}
		h.checkEarlierKeyKept(t, h.d, before, oldID, newID, keyring)
	})
}

// A process that ends between the phases: before the ledger write, the
// next open undoes the rotation; after it, the next open finishes it.
func TestRotationInterruptedIsResolvedAtTheNextOpen(t *testing.T) {
	rotationHosts(t, func(t *testing.T, h *rotationHost) {
		ctx := context.Background()
		before, oldID := h.keyFiles(t), h.d.SigningKeyID()
		keyring, _ := os.ReadFile(h.d.KeyringPath())
		if err := prepare(h.d)(); err != nil {
			t.Fatal(err)
		}
		newID := h.d.SigningKeyID()
		if _, err := os.Stat(h.d.pendingKeyPath()); err != nil {
			t.Fatalf("no pending key after the first phase: %v", err)
		}
		if h.keyDir != "" && filepath.Dir(h.d.pendingKeyPath()) != h.keyDir {
			t.Errorf("the pending key %s is outside its dir: source %s", h.d.pendingKeyPath(), h.keyDir)
		}
		// The process ends here; another opens the state directory.
		d2, err := Open(h.d.Path)
		if err != nil {
			t.Fatal(err)
		}
		h.open(t, d2)
		h.checkEarlierKeyKept(t, d2, before, oldID, newID, keyring)

		// Again, this time ending after the ledger recorded the new key.
		d3, err := Open(h.d.Path)
		if err != nil {
			t.Fatal(err)
		}
		l3 := h.open(t, d3)
		if err := d3.ChangeKeyring(ctx, l3, true, prepare(d3)); err != nil {
			t.Fatal(err)
		}
		newID = d3.SigningKeyID()
		d4, err := Open(h.d.Path)
		if err != nil {
			t.Fatal(err)
		}
		if d4.SigningKeyID() != oldID {
			t.Fatalf("before the next open: key %s, want the earlier %s still read", d4.SigningKeyID(), oldID)
		}
		h.open(t, d4)
		if d4.SigningKeyID() != newID {
			t.Fatalf("after the next open: key %s, want the rotation finished (%s)", d4.SigningKeyID(), newID)
		}
		if _, err := os.Lstat(d4.pendingKeyPath()); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the pending key is still there after the rotation was finished (%v)", err)
		}
		d5, err := Open(h.d.Path)
		if err != nil {
			t.Fatal(err)
		}
		if h.open(t, d5); d5.SigningKeyID() != newID {
			t.Fatalf("a later open reads key %s, want %s", d5.SigningKeyID(), newID)
		}
		// The earlier private key's bytes are in no file of the state
		// directory (a file source destroys it; a dir: source keeps its
		// versions, outside the state directory, for the operator).
		for _, old := range before {
			err := filepath.WalkDir(h.d.Path, func(p string, e fs.DirEntry, err error) error {
				if err != nil || e.IsDir() {
					return err
				}
				b, err := os.ReadFile(p)
				if err == nil && bytes.Contains(b, old[40:80]) {
					t.Errorf("%s holds the earlier private key", p)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	})
}

// checkEarlierKeyKept checks that d, after a rotation to newID was undone,
// signs with oldID again, from the same files, with no pending key and a
// keyring that does not list newID, and that the ledger accepts it.
func (h *rotationHost) checkEarlierKeyKept(t *testing.T, d *Dir, before map[string][]byte, oldID, newID string, keyring []byte) {
	t.Helper()
	if d.SigningKeyID() != oldID {
		t.Fatalf("key %s after the rotation was undone, want the earlier %s", d.SigningKeyID(), oldID)
	}
	after := h.keyFiles(t)
	if len(after) != len(before) {
		t.Errorf("key files %d, were %d", len(after), len(before))
	}
	for p, b := range before {
		if !bytes.Equal(after[p], b) {
			t.Errorf("%s changed", p)
		}
	}
	if _, err := os.Lstat(d.pendingKeyPath()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the pending key is still there (%v)", err)
	}
	ks, err := os.ReadFile(d.KeyringPath())
	if err != nil && len(keyring) > 0 {
		t.Fatal(err)
	}
	if strings.Contains(string(ks), strings.TrimPrefix(newID, "sha256:")) {
		t.Errorf("keyring.json still lists the discarded key %s", newID)
	}
	h.open(t, d)
}
