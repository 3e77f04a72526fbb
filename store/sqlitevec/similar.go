package sqlitevec

import (
	"context"
	"fmt"

	"github.com/amnesia-dev/amnesia/store"
)

var _ store.SimilarSearcher = (*Store)(nil)

// Similar implements store.SimilarSearcher: the k nearest vectors by the
// vec0 index (L2 distance), each with its cosine similarity to vec.
func (s *Store) Similar(ctx context.Context, vec []float32, k int) ([]store.Neighbour, error) {
	ns, err := s.Search(ctx, vec, k)
	if err != nil {
		return nil, err
	}
	out := make([]store.Neighbour, 0, len(ns))
	for _, n := range ns {
		r, err := s.Get(ctx, n.ID)
		if err != nil {
			return nil, err
		}
		if r == nil {
			continue
		}
		out = append(out, store.Neighbour{Key: n.ID, Similarity: store.Cosine(vec, r.Embedding)})
	}
	return out, nil
}

// Vectors implements store.SimilarSearcher.
func (s *Store) Vectors(ctx context.Context, keys []string) (map[string][]float32, error) {
	out := map[string][]float32{}
	for _, k := range keys {
		r, err := s.Get(ctx, k)
		if err != nil {
			return nil, err
		}
		if r != nil {
			out[k] = r.Embedding
		}
	}
	return out, nil
}

// SampleKeys implements store.SimilarSearcher: the n lowest ids.
func (s *Store) SampleKeys(ctx context.Context, n int) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id FROM vectors ORDER BY id LIMIT ?`, n)
	if err != nil {
		return nil, fmt.Errorf("sample vectors: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("sample vectors: %w", err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}
