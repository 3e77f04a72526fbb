package lineage

import (
	"context"
	"fmt"
	"sort"

	"github.com/jackc/pgx/v5"
)

// ErasedArtifact is an artifact that one erasure marked, with the outcome
// the erasure recorded for it.
type ErasedArtifact struct {
	Artifact
	Outcome string
}

// ErasureReader is implemented by ledgers that can list the artifacts one
// erasure marked ([SQLite] and [Postgres] do). Re-verification reads it:
// the ledger is append-only, so an erased artifact keeps its scope, store
// and key, and an erasure can be probed again by id with nothing kept
// beyond the ledger.
type ErasureReader interface {
	// ErasedBy returns the artifacts the erasure marked (MarkErased),
	// sorted by store then key, without their parents. None is not an error.
	ErasedBy(ctx context.Context, erasure string) ([]ErasedArtifact, error)
}

const erasedByQuery = `SELECT a.id, a.scope, a.subject, a.kind, a.store, a.key, a.digest, e.outcome
	FROM erasures e JOIN artifacts a ON a.id = e.artifact WHERE e.erasure = %s`

func scanErased(r scanner) (ErasedArtifact, error) {
	var outcome string
	a, err := scanArtifact(scanFunc(func(dest ...any) error {
		return r.Scan(append(dest, &outcome)...)
	}))
	if err != nil {
		return ErasedArtifact{}, err
	}
	return ErasedArtifact{Artifact: *a, Outcome: outcome}, nil
}

type scanFunc func(dest ...any) error

func (f scanFunc) Scan(dest ...any) error { return f(dest...) }

// ErasedBy implements ErasureReader.
func (l *SQLite) ErasedBy(ctx context.Context, erasure string) ([]ErasedArtifact, error) {
	rows, err := l.db.QueryContext(ctx, fmt.Sprintf(erasedByQuery, "?"), erasure)
	if err != nil {
		return nil, fmt.Errorf("read erased artifacts: %w", err)
	}
	defer rows.Close()
	var out []ErasedArtifact
	for rows.Next() {
		a, err := scanErased(rows)
		if err != nil {
			return nil, fmt.Errorf("read erased artifacts: %w", err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read erased artifacts: %w", err)
	}
	sortErased(out)
	return out, nil
}

// ErasedBy implements ErasureReader.
func (l *Postgres) ErasedBy(ctx context.Context, erasure string) ([]ErasedArtifact, error) {
	var out []ErasedArtifact
	err := l.pool.with(ctx, func(c *pgx.Conn) error {
		rows, _ := c.Query(ctx, fmt.Sprintf(erasedByQuery, "$1"), erasure)
		var err error
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (ErasedArtifact, error) { return scanErased(r) })
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read erased artifacts: %w", err)
	}
	sortErased(out)
	return out, nil
}

// sortErased orders by store then key, bytewise (as traces do), whatever
// the database's collation.
func sortErased(as []ErasedArtifact) {
	sort.Slice(as, func(i, j int) bool {
		if as[i].Store != as[j].Store {
			return as[i].Store < as[j].Store
		}
		return as[i].Key < as[j].Key
	})
}

var (
	_ ErasureReader = (*SQLite)(nil)
	_ ErasureReader = (*Postgres)(nil)
)
