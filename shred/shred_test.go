package shred_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/shred"
	"github.com/amnesia-dev/amnesia/subject"
)

func TestSealOpenDestroy(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l, err := sqliteledger.Open(ctx, filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	w, err := shred.LoadOrCreateLocal(filepath.Join(dir, "master.key"))
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "master.key")); err != nil || fi.Mode().Perm() != 0o600 || fi.Size() != 32 {
		t.Fatalf("master key file: %v %v", fi, err)
	}
	if w2, err := shred.LoadOrCreateLocal(filepath.Join(dir, "master.key")); err != nil || w2.ID() != w.ID() {
		t.Fatalf("reloading the master key: %v", err)
	}
	k := shred.NewKeys(l, w)
	alice, bob := subject.Key{1}, subject.Key{2}
	aad := shred.FieldAAD("docs", "a1", "text")
	sealed, err := k.Seal(ctx, "default", alice, aad, []byte("Alice's secret"))
	if err != nil || !shred.IsSealed(sealed) || strings.Contains(sealed, "secret") {
		t.Fatalf("seal: %q, %v", sealed, err)
	}
	again, _ := k.Seal(ctx, "default", alice, aad, []byte("Alice's secret"))
	if again == sealed {
		t.Error("two seals of the same text are equal (nonce reused)")
	}
	// A fresh Keys (another process) opens it through the ledger.
	k2 := shred.NewKeys(l, w)
	if pt, err := k2.Open(ctx, "default", alice, aad, sealed); err != nil || string(pt) != "Alice's secret" {
		t.Fatalf("open: %q, %v", pt, err)
	}
	for name, c := range map[string]struct {
		s     subject.Key
		aad   []byte
		text  string
		want  error
		scope string
	}{
		"moved to another record": {alice, shred.FieldAAD("docs", "a2", "text"), sealed, shred.ErrOpen, "default"},
		"another subject's key":   {bob, aad, sealed, shred.ErrNoKey, "default"},
		"another scope":           {alice, aad, sealed, shred.ErrNoKey, "tenant"},
		"not sealed":              {alice, aad, "plain text", shred.ErrNotSealed, "default"},
		"flipped byte":            {alice, aad, sealed[:len(sealed)-2] + "AA", shred.ErrOpen, "default"},
	} {
		if _, err := k2.Open(ctx, c.scope, c.s, c.aad, c.text); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	// Another master key cannot unwrap the data key.
	other, _ := shred.NewLocalWrapper(bytes.Repeat([]byte{9}, 32))
	if _, err := shred.NewKeys(l, other).Open(ctx, "default", alice, aad, sealed); err == nil {
		t.Error("another master key opened the field")
	}
	if _, err := l.DestroyDataKey(ctx, "default", alice, "er-1"); err != nil {
		t.Fatal(err)
	}
	// A Keys that cached the key before the destroy does not seal with it.
	if _, err := k.Seal(ctx, "default", alice, aad, []byte("new")); !errors.Is(err, shred.ErrDestroyed) {
		t.Errorf("seal with a key cached before the destroy: %v, want ErrDestroyed", err)
	}
	k3 := shred.NewKeys(l, w)
	if _, err := k3.Open(ctx, "default", alice, aad, sealed); !errors.Is(err, shred.ErrDestroyed) {
		t.Errorf("after destroy: %v, want ErrDestroyed", err)
	}
	if _, err := k3.Seal(ctx, "default", alice, aad, []byte("new")); !errors.Is(err, shred.ErrDestroyed) {
		t.Errorf("seal after destroy: %v, want ErrDestroyed", err)
	}
	if os.WriteFile(filepath.Join(dir, "short.key"), []byte("short"), 0o600) == nil {
		if _, err := shred.LoadOrCreateLocal(filepath.Join(dir, "short.key")); err == nil {
			t.Error("a short master key file was accepted")
		}
	}
}
