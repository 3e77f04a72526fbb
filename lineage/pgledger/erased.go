package pgledger

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/lineage"
)

var _ lineage.ErasureReader = (*Ledger)(nil)

const erasedByQuery = `SELECT a.id, a.scope, a.subject, a.kind, a.store, a.key, a.digest, e.outcome
	FROM erasures e JOIN artifacts a ON a.id = e.artifact WHERE e.erasure = $1`

// ErasedBy implements lineage.ErasureReader.
func (l *Ledger) ErasedBy(ctx context.Context, erasure string) ([]lineage.ErasedArtifact, error) {
	var out []lineage.ErasedArtifact
	err := l.pool.with(ctx, func(c *pgx.Conn) error {
		rows, _ := c.Query(ctx, erasedByQuery, erasure)
		var err error
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (lineage.ErasedArtifact, error) {
			var outcome string
			a, err := scanArtifact(scanFunc(func(dest ...any) error { return r.Scan(append(dest, &outcome)...) }))
			if err != nil {
				return lineage.ErasedArtifact{}, err
			}
			return lineage.ErasedArtifact{Artifact: *a, Outcome: outcome}, nil
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read erased artifacts: %w", err)
	}
	lineage.SortErased(out)
	return out, nil
}

type scanFunc func(dest ...any) error

func (f scanFunc) Scan(dest ...any) error { return f(dest...) }
