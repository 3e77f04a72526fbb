package sqlitevec

import (
	"context"
	"fmt"

	"github.com/amnesia-dev/amnesia/capture/backend"
	"github.com/amnesia-dev/amnesia/store"
)

// What package capture needs of a sqlite-vec store (backend.VectorStore): a
// program that imports this package can wrap its stores with capture. The
// store keeps id, subject tag and vector only.

func init() {
	backend.RegisterVectorStore(Type, func(s store.Store) (backend.VectorStore, error) {
		if v, ok := s.(*Store); ok {
			return v, nil
		}
		return nil, backend.NotStoreOf(Type, s)
	})
}

var _ backend.VectorBatchStore = (*Store)(nil)

// CaptureCheck refuses content and metadata, which this store does not keep.
func (s *Store) CaptureCheck(r backend.VectorRecord) error {
	if r.Content != "" || len(r.Metadata) > 0 {
		return fmt.Errorf("capture embedding: store %q (%s) keeps only the vector: leave Content and Metadata empty", s.name, Type)
	}
	return nil
}

// CapturePut writes a vector captured by package capture.
func (s *Store) CapturePut(ctx context.Context, r backend.VectorRecord) error {
	return s.Put(ctx, Record{ID: r.ID, Subject: r.Subject, Embedding: r.Embedding})
}

// CapturePutBatch writes vectors captured by package capture in one
// transaction (backend.VectorBatchStore).
func (s *Store) CapturePutBatch(ctx context.Context, rs []backend.VectorRecord) error {
	out := make([]Record, len(rs))
	for i, r := range rs {
		out[i] = Record{ID: r.ID, Subject: r.Subject, Embedding: r.Embedding}
	}
	return s.PutBatch(ctx, out)
}

// CaptureGet is Get for package capture.
func (s *Store) CaptureGet(ctx context.Context, id string) (*backend.VectorRecord, error) {
	r, err := s.Get(ctx, id)
	if err != nil || r == nil {
		return nil, err
	}
	return &backend.VectorRecord{ID: r.ID, Subject: r.Subject, Embedding: r.Embedding}, nil
}

// CaptureSearch is Search for package capture.
func (s *Store) CaptureSearch(ctx context.Context, q []float32, k int) ([]backend.Neighbor, error) {
	ns, err := s.Search(ctx, q, k)
	var out []backend.Neighbor
	for _, n := range ns {
		out = append(out, backend.Neighbor{ID: n.ID, Subject: n.Subject, Distance: n.Distance})
	}
	return out, err
}
