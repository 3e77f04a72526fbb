package pgvector

import (
	"context"
	"fmt"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/internal/pg"
	"github.com/jackc/pgx/v5"
)

var _ store.SimilarSearcher = (*Store)(nil)

// Similar implements store.SimilarSearcher: the k nearest records by cosine
// distance (<=>; the planner may use a cosine index), each with its cosine
// similarity, 1 − distance.
func (s *Store) Similar(ctx context.Context, vec []float32, k int) ([]store.Neighbour, error) {
	ns, err := s.search(ctx, vec, k, "<=>", false)
	if err != nil {
		return nil, err
	}
	out := make([]store.Neighbour, 0, len(ns))
	for _, n := range ns {
		out = append(out, store.Neighbour{Key: n.ID, Similarity: 1 - n.Distance})
	}
	return out, nil
}

// Vectors implements store.SimilarSearcher: the vector of the first row
// (by the ids it answers to) each key answers to, read with one query for
// all of the keys; a key whose first row has no vector has none.
func (s *Store) Vectors(ctx context.Context, keys []string) (map[string][]float32, error) {
	rows, err := s.rowsOf(ctx, keys)
	if err != nil {
		return nil, err
	}
	out := map[string][]float32{}
	for _, k := range keys {
		if rs := rows[k]; len(rs) > 0 && len(rs[0].Embedding) > 0 {
			out[k] = rs[0].Embedding
		}
	}
	return out, nil
}

// SampleKeys implements store.SimilarSearcher: the n lowest keys of the
// records with a vector in the mapped collections.
func (s *Store) SampleKeys(ctx context.Context, n int) ([]string, error) {
	var out []string
	err := s.db.With(ctx, func(c *pgx.Conn) error {
		a := pg.Args{n}
		q := `SELECT ids FROM (SELECT ` + s.lay.IDs() + ` AS ids FROM ` + s.tbl.Ident() + ` WHERE ` + pg.Quote(s.lay.vector) +
			` IS NOT NULL AND ` + s.lay.Scope(&a) + `) r ORDER BY ids[cardinality(ids)] LIMIT $1`
		rows, err := c.Query(ctx, q, a...)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[[]string])
		for _, x := range ids {
			if len(x) > 0 {
				out = append(out, x[len(x)-1])
			}
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sample vectors: %w", err)
	}
	return out, nil
}
