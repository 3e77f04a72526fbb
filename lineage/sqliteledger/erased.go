package sqliteledger

import (
	"context"
	"fmt"

	"github.com/amnesia-dev/amnesia/lineage"
)

var _ lineage.ErasureReader = (*Ledger)(nil)

const erasedByQuery = `SELECT a.id, a.scope, a.subject, a.kind, a.store, a.key, a.digest, e.outcome
	FROM erasures e JOIN artifacts a ON a.id = e.artifact WHERE e.erasure = ?`

// ErasedBy implements lineage.ErasureReader.
func (l *Ledger) ErasedBy(ctx context.Context, erasure string) ([]lineage.ErasedArtifact, error) {
	rows, err := l.db.QueryContext(ctx, erasedByQuery, erasure)
	if err != nil {
		return nil, fmt.Errorf("read erased artifacts: %w", err)
	}
	defer rows.Close()
	var out []lineage.ErasedArtifact
	for rows.Next() {
		var outcome string
		a, err := scanArtifact(scanFunc(func(dest ...any) error { return rows.Scan(append(dest, &outcome)...) }))
		if err != nil {
			return nil, fmt.Errorf("read erased artifacts: %w", err)
		}
		out = append(out, lineage.ErasedArtifact{Artifact: *a, Outcome: outcome})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read erased artifacts: %w", err)
	}
	lineage.SortErased(out)
	return out, nil
}

type scanFunc func(dest ...any) error

func (f scanFunc) Scan(dest ...any) error { return f(dest...) }
