package saga

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/subject"
)

// Evidence (text windows, vector bytes) is personal data. It lives in memory
// while an erasure runs; so that a crash between deletion and the final
// probe can still be resumed to the same certificate, it is also kept on
// disk, sealed with AES-256-GCM under a key derived from the installation
// pepper and the erasure id, and destroyed (overwritten, fsynced, unlinked)
// when the certificate is published. It never exists in clear on disk.

func sealKey(k *subject.Keyer, erasure, storeName string) []byte {
	key := k.DeriveKey("amnesia.evidence/v1", erasure+"\x00"+storeName)
	return key[:]
}

// sealAAD is the additional data a sealed evidence file is bound to: its
// file name (evidence-<store>.sealed). The key already binds the erasure
// and the store; the name keeps one store's file from being swapped for
// another's. It does not depend on how the state directory is spelled
// (relative, absolute, moved), so a resume from anywhere opens it.
func sealAAD(path string) []byte {
	return []byte("amnesia.evidence/v1\x00" + filepath.Base(path))
}

func sealEvidence(path string, key []byte, ev map[string]*store.Evidence) error {
	plain, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("seal evidence: %w", err)
	}
	defer clear(plain)
	aead, err := newAEAD(key)
	if err != nil {
		return err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return fmt.Errorf("seal evidence: %w", err)
	}
	return state.WriteFileAtomic(path, aead.Seal(nonce, nonce, plain, sealAAD(path)))
}

func unsealEvidence(path string, key []byte) (map[string]*store.Evidence, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("unseal evidence: %w", err)
	}
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	if len(b) < aead.NonceSize() {
		return nil, errors.New("unseal evidence: file is truncated")
	}
	plain, err := aead.Open(nil, b[:aead.NonceSize()], b[aead.NonceSize():], sealAAD(path))
	if err != nil {
		// Evidence sealed by amnesia before 2026-12 bound the path as it
		// was spelled then; try it as given.
		plain, err = aead.Open(nil, b[:aead.NonceSize()], b[aead.NonceSize():], []byte(path))
	}
	if err != nil {
		return nil, fmt.Errorf("unseal evidence: %w", err)
	}
	defer clear(plain)
	var ev map[string]*store.Evidence
	if err := json.Unmarshal(plain, &ev); err != nil {
		return nil, fmt.Errorf("unseal evidence: %w", err)
	}
	return ev, nil
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("seal evidence: %w", err)
	}
	return cipher.NewGCM(block)
}
