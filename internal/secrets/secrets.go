// Package secrets reads the installation's two secrets, the pepper and the
// signing key, from where operators keep them:
//
//	file:PATH   the file's bytes (a secret mounted as a file)
//	env:VAR     the environment variable's value
//	dir:PATH    a versioned directory (DirProvider): PATH/<version>, the
//	            highest version is current; a rotation adds a version
//
// A source never writes a secret anywhere but into its own place (a
// DirProvider, on rotation or at `amnesia init`); amnesia never stores
// either secret in the ledger, only a keyed check value (state.SecretCheck).
package secrets

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
)

// ErrNotFound: the source holds no secret (an unset variable, a missing
// file, a directory without a version).
var ErrNotFound = errors.New("secret not found")

// Secret is one version of a secret.
type Secret struct {
	Version string // "" when the source has no versions (file:, env:)
	Value   []byte
}

// Provider is a secret store: the current version of a secret, and, for
// providers that keep versions, every version and a way to add one.
type Provider interface {
	// Current returns the current version.
	Current(ctx context.Context) (Secret, error)
	// Describe names the source in messages; never its value.
	Describe() string
}

// Rotator is a Provider that can add a new current version (a rotation).
type Rotator interface {
	Provider
	// Put stores value as a new version, which becomes current.
	Put(ctx context.Context, value []byte) (Secret, error)
	// Versions lists the versions, oldest first.
	Versions(ctx context.Context) ([]string, error)
	// Get returns one version.
	Get(ctx context.Context, version string) (Secret, error)
}

// Parse parses a source specification (file:PATH, env:VAR, dir:PATH).
// Relative paths are resolved against base.
func Parse(spec, base string) (Provider, error) {
	kind, arg, ok := strings.Cut(spec, ":")
	if !ok || arg == "" {
		return nil, fmt.Errorf("secret source %q: want file:PATH, env:VAR or dir:PATH", spec)
	}
	switch kind {
	case "file":
		return &File{Path: abs(base, arg)}, nil
	case "env":
		return &Env{Var: arg}, nil
	case "dir":
		return &DirProvider{Path: abs(base, arg)}, nil
	}
	return nil, fmt.Errorf("secret source %q: unknown kind %q: want file:PATH, env:VAR or dir:PATH", spec, kind)
}

func abs(base, p string) string {
	if base == "" || strings.HasPrefix(p, "/") {
		return p
	}
	return base + "/" + p
}

// File reads a secret from a file.
type File struct{ Path string }

// Current implements Provider.
func (f *File) Current(context.Context) (Secret, error) {
	b, err := os.ReadFile(f.Path)
	if errors.Is(err, os.ErrNotExist) {
		return Secret{}, fmt.Errorf("%s: %w", f.Describe(), ErrNotFound)
	}
	if err != nil {
		return Secret{}, fmt.Errorf("%s: %w", f.Describe(), err)
	}
	return Secret{Value: b}, nil
}

// Describe implements Provider.
func (f *File) Describe() string { return "file:" + f.Path }

// Env reads a secret from an environment variable.
type Env struct{ Var string }

// Current implements Provider.
func (e *Env) Current(context.Context) (Secret, error) {
	v, ok := os.LookupEnv(e.Var)
	if !ok || v == "" {
		return Secret{}, fmt.Errorf("%s: the variable is not set: %w", e.Describe(), ErrNotFound)
	}
	return Secret{Value: []byte(v)}, nil
}

// Describe implements Provider.
func (e *Env) Describe() string { return "env:" + e.Var }
