package secrets

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/amnesia-dev/amnesia/internal/atomicfile"
)

// DirProvider is a file-based secret store with rotation: a directory that
// holds one file per version, named by a positive decimal number (1, 2,
// …); the highest number is the current version. Put writes the next
// number (atomically, mode 0600, with O_EXCL semantics through a link so
// that two concurrent rotations never both win one number). Earlier
// versions stay readable (Get) until the operator removes them. Files
// whose name is not a number (a README, a temporary file) are ignored.
//
// It is the layout a secret manager's file mount gives (Kubernetes
// projected secrets, Vault Agent templates, systemd credentials): one
// directory, mounted read-only on every host, rotated in one place.
type DirProvider struct{ Path string }

// Describe implements Provider.
func (d *DirProvider) Describe() string { return "dir:" + d.Path }

// Versions implements Rotator: the versions, oldest first.
func (d *DirProvider) Versions(context.Context) ([]string, error) {
	ents, err := os.ReadDir(d.Path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.Describe(), err)
	}
	var ns []uint64
	for _, e := range ents {
		n, err := strconv.ParseUint(e.Name(), 10, 63)
		if err != nil || n == 0 || strconv.FormatUint(n, 10) != e.Name() || e.IsDir() {
			continue
		}
		ns = append(ns, n)
	}
	sort.Slice(ns, func(i, j int) bool { return ns[i] < ns[j] })
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = strconv.FormatUint(n, 10)
	}
	return out, nil
}

// Current implements Provider: the highest version.
func (d *DirProvider) Current(ctx context.Context) (Secret, error) {
	vs, err := d.Versions(ctx)
	if err != nil {
		return Secret{}, err
	}
	if len(vs) == 0 {
		return Secret{}, fmt.Errorf("%s: no version (files named 1, 2, …): %w", d.Describe(), ErrNotFound)
	}
	return d.Get(ctx, vs[len(vs)-1])
}

// Get implements Rotator.
func (d *DirProvider) Get(_ context.Context, version string) (Secret, error) {
	if n, err := strconv.ParseUint(version, 10, 63); err != nil || n == 0 {
		return Secret{}, fmt.Errorf("%s: version %q: want a positive number", d.Describe(), version)
	}
	b, err := os.ReadFile(filepath.Join(d.Path, version))
	if errors.Is(err, os.ErrNotExist) {
		return Secret{}, fmt.Errorf("%s: version %s: %w", d.Describe(), version, ErrNotFound)
	}
	if err != nil {
		return Secret{}, fmt.Errorf("%s: %w", d.Describe(), err)
	}
	return Secret{Version: version, Value: b}, nil
}

// Put implements Rotator: value becomes the next version.
func (d *DirProvider) Put(ctx context.Context, value []byte) (Secret, error) {
	if err := os.MkdirAll(d.Path, 0o700); err != nil {
		return Secret{}, fmt.Errorf("%s: %w", d.Describe(), err)
	}
	for range 100 {
		vs, err := d.Versions(ctx)
		if err != nil {
			return Secret{}, err
		}
		next := uint64(1)
		if len(vs) > 0 {
			last, _ := strconv.ParseUint(vs[len(vs)-1], 10, 63)
			next = last + 1
		}
		v := strconv.FormatUint(next, 10)
		// WriteNew fails when the name exists: a concurrent Put took it.
		err = atomicfile.WriteNew(filepath.Join(d.Path, v), value, 0o600)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return Secret{}, fmt.Errorf("%s: %w", d.Describe(), err)
		}
		return Secret{Version: v, Value: value}, nil
	}
	return Secret{}, fmt.Errorf("%s: could not take a new version number", d.Describe())
}
