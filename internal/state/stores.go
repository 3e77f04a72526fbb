package state

import (
	"context"
	"fmt"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
	"github.com/amnesia-dev/amnesia/store/sqlitevec"
)

// OpenStore opens one configured store. With create false a missing store
// is an error wrapping store.ErrUnavailable.
func (c *Config) OpenStore(ctx context.Context, sc StoreConfig, create bool) (store.Store, error) {
	path := c.StorePath(sc)
	switch sc.Type {
	case sqlitedoc.Type:
		return sqlitedoc.Open(ctx, sc.Name, path, create)
	case sqlitevec.Type:
		return sqlitevec.Open(ctx, sc.Name, path, sc.Dimensions, create)
	}
	return nil, fmt.Errorf("open store %q: unknown type %q", sc.Name, sc.Type)
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
