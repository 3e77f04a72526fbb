package state

import (
	"context"
	"path/filepath"

	"github.com/amnesia-dev/amnesia/store"
	// The adapters this binary can open register themselves.
	_ "github.com/amnesia-dev/amnesia/store/pgdoc"
	_ "github.com/amnesia-dev/amnesia/store/pgvector"
	_ "github.com/amnesia-dev/amnesia/store/sqlitedoc"
	_ "github.com/amnesia-dev/amnesia/store/sqlitevec"
)

// OpenStore opens one configured store, with its path resolved against the
// state directory. With create false a missing store is an error wrapping
// store.ErrUnavailable.
func (c *Config) OpenStore(ctx context.Context, sc StoreConfig, create bool) (store.Store, error) {
	sc.Path = c.StorePath(sc)
	if sc.DataDir != "" && !filepath.IsAbs(sc.DataDir) && c.dir != "" {
		sc.DataDir = filepath.Join(c.dir, sc.DataDir)
	}
	return store.Open(ctx, sc, create)
}

// OpenStores opens every configured store that exists. Stores that fail to
// open are returned in failed, not as an error: an erasure goes on with the
// others and reports them.
func (c *Config) OpenStores(ctx context.Context) (open map[string]store.Store, failed map[string]error) {
	open, failed = map[string]store.Store{}, map[string]error{}
	for _, sc := range c.Stores {
		s, err := c.OpenStore(ctx, sc, false)
		if err != nil {
			failed[sc.Name] = err
			continue
		}
		open[sc.Name] = s
	}
	return open, failed
}
