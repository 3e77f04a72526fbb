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

// A witness pins the log key it first checked a log with: a checkpoint of
// the same log checked with another key is refused, and changes nothing,
// unless the witness's operator accepts the change (a rotation of the log's
// key); the new key is then the pinned one.
func TestWitnessPinsLogKey(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := sqliteledger.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	oldPriv := ed25519.NewKeyFromSeed(seed)
	lg, err := transparency.Open(ctx, l, oldPriv, "")
	if err != nil {
		t.Fatal(err)
	}
	w, err := transparency.InitWitness(filepath.Join(t.TempDir(), "w"), "witness.test/w1")
	if err != nil {
		t.Fatal(err)
	}
	cp3 := grow(t, lg, 3)
	if _, err := w.Cosign(lg.VerifierKey(), cp3.Raw, 0, nil); err != nil {
		t.Fatal(err)
	}
	st, err := w.State(lg.Origin())
	if err != nil || st.LogKey != lg.VerifierKey() {
		t.Fatalf("pinned key %q, %v; want %q", st.LogKey, err, lg.VerifierKey())
	}

	// The log's operator rotates its key: same origin, same tree.
	newPriv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{0x42}, ed25519.SeedSize))
	rotated, err := transparency.Open(ctx, l, newPriv, lg.Origin(), oldPriv.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	cp7 := grow(t, rotated, 7)
	proof := consistency(t, rotated, 3, 7)
	_, err = w.Cosign(rotated.VerifierKey(), cp7.Raw, 3, proof)
	if !errors.Is(err, transparency.ErrWitnessLogKey) {
		t.Fatalf("another log key: %v, want ErrWitnessLogKey", err)
	}
	if st, _ := w.State(lg.Origin()); st.Size != 3 || st.LogKey != lg.VerifierKey() {
		t.Fatalf("a refusal changed the state: %+v", st)
	}

	// Accepted: cosigned (consistency still checked) and the new key pinned.
	r, err := w.CosignReport(rotated.VerifierKey(), cp7.Raw, 3, proof, transparency.CosignOptions{AcceptLogKeyChange: true})
	if err != nil || !r.KeyChanged || r.Previous == nil || r.Previous.Size != 3 {
		t.Fatalf("accepted key change: %+v, %v", r, err)
	}
	if st, _ := w.State(lg.Origin()); st.Size != 7 || st.LogKey != rotated.VerifierKey() {
		t.Fatalf("state after the accepted change: %+v", st)
	}
	// The old key is now the other one: refused.
	if _, err := w.Cosign(lg.VerifierKey(), cp3.Raw, 7, nil); !errors.Is(err, transparency.ErrWitnessLogKey) {
		t.Fatalf("the old key after rotation: %v, want ErrWitnessLogKey", err)
	}
	// Accepting a key change never bypasses consistency: a smaller tree is
	// still a rollback.
	if _, err := w.CosignReport(lg.VerifierKey(), cp3.Raw, 7, nil, transparency.CosignOptions{AcceptLogKeyChange: true}); !errors.Is(err, transparency.ErrWitnessRollback) {
		t.Fatalf("rollback with a key change accepted: %v, want ErrWitnessRollback", err)
	}
}
