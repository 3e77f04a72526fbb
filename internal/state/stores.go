package state

import (
	"context"
	"path/filepath"

	"github.com/amnesia-dev/amnesia/store"
)

// The store adapters and ledger backends are not imported here: the
// program that composes amnesia (cmd/amnesia/adapters.go, or an
// application) imports the ones it uses, and they register themselves.

// Resolve returns sc with its path and data_dir resolved against the
// configuration file's directory.
func (c *Config) Resolve(sc StoreConfig) StoreConfig {
	sc.Path = c.StorePath(sc)
	if sc.DataDir != "" && !filepath.IsAbs(sc.DataDir) && c.dir != "" {
		sc.DataDir = filepath.Join(c.dir, sc.DataDir)
	}
	return sc
}

// OpenStore opens one configured store, with its paths resolved against
// the configuration file's directory. With create false a missing store is
// an error wrapping store.ErrUnavailable.
func (c *Config) OpenStore(ctx context.Context, sc StoreConfig, create bool) (store.Store, error) {
	return store.Open(ctx, c.Resolve(sc), create)
}

// OpenStores opens every configured store that exists. Stores that fail to
// open are returned in failed, not as an error: an erasure goes on with the
// others and reports them.
func (c *Config) OpenStores(ctx context.Context) (open map[string]store.Store, failed map[string]error) {
	return c.OpenStoresExcept(ctx, nil)
}

// OpenStoresExcept is OpenStores that does not open the stores named in
// skip (a check found them not ready): they are returned in failed with
// skip's error, and nothing is done to them.
func (c *Config) OpenStoresExcept(ctx context.Context, skip map[string]error) (open map[string]store.Store, failed map[string]error) {
	open, failed = map[string]store.Store{}, map[string]error{}
	for _, sc := range c.Stores {
		if err, ok := skip[sc.Name]; ok {
			failed[sc.Name] = err
			continue
		}
		s, err := c.OpenStore(ctx, sc, false)
		if err != nil {
			failed[sc.Name] = err
			continue
		}
		open[sc.Name] = s
	}
	return open, failed
}

// CheckStore runs the store's read-only readiness check (store.Check) with
// its paths resolved.
func (c *Config) CheckStore(ctx context.Context, sc StoreConfig) []store.Problem {
	return store.Check(ctx, c.Resolve(sc))
}

// StoreTarget names where a store is, for people: its resolved path, or
// where its adapter says its DSN points (host:port/database and table for
// PostgreSQL; never the user's password).
func (c *Config) StoreTarget(sc StoreConfig) string {
	sc = c.Resolve(sc)
	if sc.DSN == "" && sc.Host == "" { // a managed store (host:) is named by its adapter
		if p, err := filepath.Abs(sc.Path); err == nil {
			return p
		}
		return sc.Path
	}
	// The adapter parses its DSN: this package links no database driver.
	if t, ok := store.Location(sc); ok {
		return t
	}
	return "(dsn of type " + sc.Type + ", not shown: its adapter is not linked)"
}
