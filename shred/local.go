package shred

import (
	"context"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/amnesia-dev/amnesia/internal/atomicfile"
)

// LocalWrapper wraps data keys with AES-256-GCM under a 32-byte master key
// kept in a file (mode 0600) of amnesia's state directory.
type LocalWrapper struct {
	id   string
	aead cipher.AEAD
}

// masterKeySize is the master key file's size: the key, raw.
const masterKeySize = 32

// LoadOrCreateLocal reads the master key at path, creating it (0600,
// fsynced) when it does not exist.
func LoadOrCreateLocal(path string) (*LocalWrapper, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		b = make([]byte, masterKeySize)
		if _, err := io.ReadFull(rand.Reader, b); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			return LoadOrCreateLocal(path) // another process created it first
		}
		if err != nil {
			return nil, fmt.Errorf("shred: create master key: %w", err)
		}
		if _, err := f.Write(b); err != nil {
			f.Close()
			return nil, fmt.Errorf("shred: create master key: %w", err)
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, fmt.Errorf("shred: create master key: %w", err)
		}
		if err := f.Close(); err != nil {
			return nil, err
		}
		if err := atomicfile.SyncDir(filepath.Dir(path)); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, fmt.Errorf("shred: read master key: %w", err)
	}
	if len(b) != masterKeySize {
		return nil, fmt.Errorf("shred: master key %s: %d bytes, want %d", path, len(b), masterKeySize)
	}
	return NewLocalWrapper(b)
}

// NewLocalWrapper returns a wrapper over a 32-byte master key.
func NewLocalWrapper(master []byte) (*LocalWrapper, error) {
	if len(master) != masterKeySize {
		return nil, fmt.Errorf("shred: master key of %d bytes, want %d", len(master), masterKeySize)
	}
	a, err := newGCM(master)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(append([]byte("amnesia.masterkey/v1\x00"), master...))
	return &LocalWrapper{id: "local:" + hex.EncodeToString(sum[:8]), aead: a}, nil
}

// ID implements Wrapper: a digest of the master key, not the key.
func (w *LocalWrapper) ID() string { return w.id }

// Wrap implements Wrapper.
func (w *LocalWrapper) Wrap(_ context.Context, dataKey, aad []byte) ([]byte, error) {
	nonce := make([]byte, w.aead.NonceSize(), w.aead.NonceSize()+len(dataKey)+w.aead.Overhead())
	if _, err := io.ReadFull(rand.Reader, nonce); err != nil {
		return nil, err
	}
	return w.aead.Seal(nonce, nonce, dataKey, aad), nil
}

// Unwrap implements Wrapper.
func (w *LocalWrapper) Unwrap(_ context.Context, wrapped, aad []byte) ([]byte, error) {
	n := w.aead.NonceSize()
	if len(wrapped) < n+w.aead.Overhead() {
		return nil, errors.New("wrapped key too short")
	}
	dk, err := w.aead.Open(nil, wrapped[:n], wrapped[n:], aad)
	if err != nil {
		return nil, errors.New("the wrapped key does not open with this master key")
	}
	return dk, nil
}
