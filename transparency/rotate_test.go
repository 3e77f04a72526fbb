package transparency_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"path/filepath"
	"testing"

	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/transparency"
)

// After a key rotation the log is opened with the new key and the earlier
// one: checkpoints signed by the earlier key still open and audit, new ones
// are signed by the new key only. Opened without the earlier key, the
// audit rejects the old checkpoints.
func TestKeyRotation(t *testing.T) {
	ctx := context.Background()
	l, err := sqliteledger.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	oldKey := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32))
	newKey := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, 32))
	oldPub := oldKey.Public().(ed25519.PublicKey)

	lg1, err := transparency.Open(ctx, l, oldKey, "")
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, lg1, 0, 3)
	cp1, err := lg1.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// Rotated: the new key signs, the old one still verifies. The origin
	// stays the one fixed on first use (DefaultOrigin of the old key).
	lg2, err := transparency.Open(ctx, l, newKey, "", oldPub, newKey.Public().(ed25519.PublicKey), oldPub)
	if err != nil {
		t.Fatal(err)
	}
	if lg2.Origin() != lg1.Origin() {
		t.Fatalf("origin changed on rotation: %s, was %s", lg2.Origin(), lg1.Origin())
	}
	if n := len(lg2.Verifiers()); n != 2 {
		t.Fatalf("%d verifiers, want 2 (repeated keys are dropped)", n)
	}
	if lg2.Verifier().KeyHash() == lg1.Verifier().KeyHash() {
		t.Fatal("the current verifier is still the old key's")
	}
	// The stored checkpoint of the same size is returned, signed by the old key.
	again, err := lg2.Checkpoint(ctx)
	if err != nil {
		t.Fatalf("checkpoint of the old key after rotation: %v", err)
	}
	if !bytes.Equal(again.Raw, cp1.Raw) {
		t.Error("a checkpoint of an unchanged log was re-signed")
	}
	appendN(t, lg2, 3, 5)
	cp2, err := lg2.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(cp2.Note.Sigs) != 1 || cp2.Note.Sigs[0].Hash != lg2.Verifier().KeyHash() {
		t.Errorf("new checkpoint signatures %+v, want one by the new key", cp2.Note.Sigs)
	}
	if _, err := transparency.OpenCheckpoint(cp2.Raw, lg1.Verifier()); !errors.Is(err, transparency.ErrCheckpointSignature) {
		t.Errorf("a checkpoint of the new key opened with the old key only: %v", err)
	}
	rep, err := lg2.Audit(ctx, cp1.Raw)
	if err != nil {
		t.Fatalf("audit after rotation: %v", err)
	}
	if rep.Checkpoints != 2 || rep.Size != 5 || rep.Since == nil {
		t.Errorf("audit report %+v", rep)
	}
	// The witness path: the old checkpoint takes cosignatures after rotation.
	if _, err := lg2.AddSignatures(ctx, cp1.Raw); err != nil {
		t.Errorf("add signatures to the old key's checkpoint: %v", err)
	}

	// Without the earlier key, the old checkpoints do not verify.
	lg3, err := transparency.Open(ctx, l, newKey, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lg3.Audit(ctx, nil); !errors.Is(err, transparency.ErrCheckpointSignature) {
		t.Errorf("audit without the earlier key: %v, want %v", err, transparency.ErrCheckpointSignature)
	}
}

func TestOpenCheckpointKeyList(t *testing.T) {
	if _, err := transparency.OpenCheckpoint([]byte("x\n")); !errors.Is(err, transparency.ErrCheckpointSignature) {
		t.Errorf("no keys: %v", err)
	}
	a, _ := transparency.NewVerifier("log-a", ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32)).Public().(ed25519.PublicKey))
	b, _ := transparency.NewVerifier("log-b", ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, 32)).Public().(ed25519.PublicKey))
	if _, err := transparency.OpenCheckpoint([]byte("x\n"), a, b); err == nil {
		t.Error("keys of two names accepted")
	}
}
