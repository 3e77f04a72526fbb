package saga

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/subject"
)

// Evidence (text windows, vector bytes) is personal data. It lives in memory
// while an erasure runs; so that a crash between deletion and the final
// probe can still be resumed to the same certificate, it is also kept on
// disk (or in the ledger: Durable), sealed with AES-256-GCM under a key
// derived from the installation pepper and the erasure id, and destroyed
// when the certificate is published (a file: overwritten, fsynced,
// unlinked; rows of the ledger: deleted and their table rewritten). It
// never exists in clear outside memory.

func sealKey(k *subject.Keyer, erasure, storeName string) []byte {
	key := k.DeriveKey("amnesia.evidence/v1", erasure+"\x00"+storeName)
	return key[:]
}

// sealAAD is the additional data sealed evidence is bound to: its name
// (evidence-<store>.sealed), as a file in the erasure's directory or a row
// of the ledger. The key already binds the erasure and the store; the name
// keeps one store's evidence from being swapped for another's. It does not
// depend on where the evidence is kept, so a resume from anywhere (another
// spelling of the state directory, another host) opens it.
func sealAAD(name string) []byte {
	return []byte("amnesia.evidence/v1\x00" + name)
}

// sealedVersion marks sealed evidence that carries its evidence step's
// journal result (sealedWithResult); sealed evidence without one is the
// evidence map alone.
const sealedVersion = "amnesia.sealed-evidence/v2"

// sealedWithResult is sealed evidence with the result its evidence step
// journals: after a power loss that took the step's journal entries (the
// journal is not fsynced before the first delete), a rerun of the step
// returns that result instead of reading a store whose records are gone.
type sealedWithResult struct {
	Version  string                     `json:"sealed"`
	Evidence map[string]*store.Evidence `json:"evidence"`
	Result   json.RawMessage            `json:"result"`
}

// sealEvidence returns ev sealed under key, bound to name, with result
// (nil: none).
func sealEvidence(name string, key []byte, ev map[string]*store.Evidence, result json.RawMessage) ([]byte, error) {
	var plain []byte
	var err error
	if result == nil {
		plain, err = json.Marshal(ev)
	} else {
		plain, err = json.Marshal(sealedWithResult{Version: sealedVersion, Evidence: ev, Result: result})
	}
	if err != nil {
		return nil, fmt.Errorf("seal evidence: %w", err)
	}
	defer clear(plain)
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("seal evidence: %w", err)
	}
	return aead.Seal(nonce, nonce, plain, sealAAD(name)), nil
}

// unsealEvidence opens b, sealed under key and bound to name. legacyAAD is
// the path such evidence had in a state directory: evidence sealed by
// amnesia before 2026-12 bound the path as it was spelled then.
func unsealEvidence(name, legacyAAD string, b, key []byte) (map[string]*store.Evidence, error) {
	ev, _, err := unsealEvidenceResult(name, legacyAAD, b, key)
	return ev, err
}

// unsealEvidenceResult is unsealEvidence that also returns the result
// sealed with the evidence (nil when none was).
func unsealEvidenceResult(name, legacyAAD string, b, key []byte) (map[string]*store.Evidence, json.RawMessage, error) {
	aead, err := newAEAD(key)
	if err != nil {
		return nil, nil, err
	}
	if len(b) < aead.NonceSize() {
		return nil, nil, errors.New("unseal evidence: file is truncated")
	}
	plain, err := aead.Open(nil, b[:aead.NonceSize()], b[aead.NonceSize():], sealAAD(name))
	if err != nil && legacyAAD != "" {
		plain, err = aead.Open(nil, b[:aead.NonceSize()], b[aead.NonceSize():], []byte(legacyAAD))
	}
	if err != nil {
		return nil, nil, fmt.Errorf("unseal evidence: %w", err)
	}
	defer clear(plain)
	var w sealedWithResult
	if json.Unmarshal(plain, &w) == nil && w.Version == sealedVersion {
		return w.Evidence, w.Result, nil
	}
	var ev map[string]*store.Evidence
	if err := json.Unmarshal(plain, &ev); err != nil {
		return nil, nil, fmt.Errorf("unseal evidence: %w", err)
	}
	return ev, nil, nil
}

// putEvidence seals ev under key as name and keeps it (Durable).
func (r *runner) putEvidence(ctx context.Context, name string, key []byte, ev map[string]*store.Evidence) error {
	return r.putEvidenceResult(ctx, name, key, ev, nil)
}

// putEvidenceResult is putEvidence with the evidence step's result sealed
// with ev (sealedWithResult).
func (r *runner) putEvidenceResult(ctx context.Context, name string, key []byte, ev map[string]*store.Evidence, result json.RawMessage) error {
	b, err := sealEvidence(name, key, ev, result)
	if err != nil {
		return err
	}
	return r.dur.putSealed(ctx, r.id, name, b)
}

// getEvidence unseals the evidence kept as name; ok is false when there is
// none.
func (r *runner) getEvidence(ctx context.Context, name string, key []byte) (ev map[string]*store.Evidence, ok bool, err error) {
	ev, _, ok, err = r.getEvidenceResult(ctx, name, key)
	return ev, ok, err
}

// getEvidenceResult is getEvidence that also returns the evidence step's
// result sealed with the evidence (nil when none was).
func (r *runner) getEvidenceResult(ctx context.Context, name string, key []byte) (ev map[string]*store.Evidence, result json.RawMessage, ok bool, err error) {
	b, err := r.dur.sealed(ctx, r.id, name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, false, nil
	}
	if err != nil {
		return nil, nil, false, fmt.Errorf("unseal evidence: %w", err)
	}
	ev, result, err = unsealEvidenceResult(name, filepath.Join(r.Dir.ErasureDir(r.id), name), b, key)
	return ev, result, err == nil, err
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("seal evidence: %w", err)
	}
	return cipher.NewGCM(block)
}
