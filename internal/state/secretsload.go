package state

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/secrets"
	"github.com/amnesia-dev/amnesia/subject"
)

// pepperSource and keySource return the configured providers; nil means
// the state directory's file (pepper, signing-key.pem).
func sources(path string, cfg *Config) (pepper, key secrets.Provider, err error) {
	base := cfg.Dir()
	if base == "" {
		base = path
	}
	if cfg.Secrets.Pepper != "" {
		if pepper, err = secrets.Parse(cfg.Secrets.Pepper, base); err != nil {
			return nil, nil, err
		}
	}
	if cfg.Secrets.SigningKey != "" {
		if key, err = secrets.Parse(cfg.Secrets.SigningKey, base); err != nil {
			return nil, nil, err
		}
	}
	return pepper, key, nil
}

// decodePepper reads a pepper as kept by a source: 32 raw bytes, or 64 hex
// digits, or base64 of 32 bytes (surrounding white space ignored).
func decodePepper(b []byte, from string) ([]byte, error) {
	if len(b) == subject.PepperSize {
		return b, nil
	}
	t := strings.TrimSpace(string(b))
	if p, err := hex.DecodeString(t); err == nil && len(p) == subject.PepperSize {
		return p, nil
	}
	if p, err := base64.StdEncoding.DecodeString(t); err == nil && len(p) == subject.PepperSize {
		return p, nil
	}
	return nil, fmt.Errorf("the pepper from %s is not %d bytes (raw, as 64 hex digits or as base64): write it with `head -c 32 /dev/urandom | base64`", from, subject.PepperSize)
}

// loadPepper reads the pepper from its source (nil: <path>/pepper).
func loadPepper(ctx context.Context, path string, src secrets.Provider) ([]byte, error) {
	if src == nil {
		b, err := os.ReadFile(filepath.Join(path, "pepper"))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, ErrNotInitialized
		}
		return b, err
	}
	s, err := src.Current(ctx)
	if err != nil {
		return nil, fmt.Errorf("pepper (secrets.pepper in amnesia.yaml): %w", err)
	}
	return decodePepper(s.Value, src.Describe())
}

// loadKey reads the signing key from its source (nil: signing-key.pem).
func loadKey(ctx context.Context, path string, src secrets.Provider) (ed25519.PrivateKey, string, error) {
	if src == nil {
		b, err := os.ReadFile(filepath.Join(path, "signing-key.pem"))
		if err != nil {
			return nil, "", err
		}
		k, err := certificate.ParsePrivateKeyPEM(b)
		if err != nil {
			return nil, "", fmt.Errorf("signing key: %w", err)
		}
		return k, "", nil
	}
	s, err := src.Current(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("signing key (secrets.signing_key in amnesia.yaml): %w", err)
	}
	k, err := certificate.ParsePrivateKeyPEM(s.Value)
	if err != nil {
		return nil, "", fmt.Errorf("signing key from %s: %w", src.Describe(), err)
	}
	return k, s.Version, nil
}

// initSecret returns the secret held by src, or, when it holds none and
// is a versioned directory, stores make() there as version 1. A file or
// variable that holds nothing is an error: amnesia does not write there.
func initSecret(ctx context.Context, src secrets.Provider, what, how string, make func() ([]byte, error)) ([]byte, error) {
	s, err := src.Current(ctx)
	if err == nil {
		return s.Value, nil
	}
	if !errors.Is(err, secrets.ErrNotFound) {
		return nil, err
	}
	r, ok := src.(secrets.Rotator)
	if !ok {
		return nil, fmt.Errorf("%s holds no %s: put one there first (%s), or name a dir: source, which init fills", src.Describe(), what, how)
	}
	v, err := make()
	if err != nil {
		return nil, err
	}
	if _, err := r.Put(ctx, v); err != nil {
		return nil, err
	}
	return v, nil
}

func newPepper() ([]byte, error) {
	p := make([]byte, subject.PepperSize)
	_, err := rand.Read(p)
	return p, err
}
