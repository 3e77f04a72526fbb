package pgdoc

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/store"
)

var _ store.OrphanProber = (*Store)(nil)

// ProbeOrphans implements store.OrphanProber: the keyed digest of the
// content of every tuple of the table's heap that no query sees (read with
// pg_dirtyread) is compared with want. The bytes digested are the content
// as stored (UTF-8), which is what capture digests for a document. A
// match's evidence holds the windows of that content, less those a live
// row also holds. Without pg_dirtyread the report is not measured.
func (s *Store) ProbeOrphans(ctx context.Context, digest func([]byte) string, want map[string]string) (store.OrphanReport, error) {
	byDigest := map[string][]string{}
	for k, d := range want {
		if d != "" {
			byDigest[d] = append(byDigest[d], k)
		}
	}
	found := map[string]*store.Evidence{}
	n, reason, err := s.t.Unreachable(ctx, s.m.Content[0], func(v []byte) {
		for _, k := range byDigest[digest(v)] {
			found[k] = &store.Evidence{Key: k, Needles: store.Windows(v)}
		}
	})
	if err != nil {
		return store.OrphanReport{}, fmt.Errorf("orphan probe: %w", err)
	}
	if reason != "" {
		return store.OrphanReport{Method: reason}, nil
	}
	others := func(fn func(key string, b []byte) error) error {
		return s.db.With(ctx, func(c *pgx.Conn) error {
			return s.eachContent(ctx, c, func(ids [][]byte, content []byte) error { return fn(string(ids[len(ids)-1]), content) })
		})
	}
	if err := store.DropShared(ctx, found, others); err != nil {
		return store.OrphanReport{}, fmt.Errorf("orphan probe: %w", err)
	}
	return store.OrphanReport{Measured: true, Scanned: n, Found: found,
		Method: fmt.Sprintf("keyed content digest of each tuple of %s that no query sees, read with pg_dirtyread (%d tuples), compared with the ledger's", s.tbl, n)}, nil
}
