package pinecone

import (
	"context"
	"fmt"

	"github.com/amnesia-dev/amnesia/capture/backend"
	"github.com/amnesia-dev/amnesia/store"
)

// What package capture needs of a Pinecone index (backend.VectorStore): a
// program that imports this package can wrap its index with capture. The
// subject tag is the metadata key "subject", the content "text".

func init() {
	backend.RegisterVectorStore(Type, func(s store.Store) (backend.VectorStore, error) {
		if v, ok := s.(*Store); ok {
			return v, nil
		}
		return nil, backend.NotStoreOf(Type, s)
	})
}

var _ backend.VectorStore = (*Store)(nil)

// CaptureCheck refuses what Pinecone or the layout cannot keep.
func (s *Store) CaptureCheck(r backend.VectorRecord) error {
	if err := s.check(Record{ID: r.ID, Embedding: r.Embedding, Content: r.Content, Metadata: r.Metadata}); err != nil {
		return fmt.Errorf("capture embedding: store %q (%s): %w", s.name, Type, err)
	}
	return nil
}

// CapturePut writes a vector captured by package capture.
func (s *Store) CapturePut(ctx context.Context, r backend.VectorRecord) error {
	return s.Put(ctx, Record{ID: r.ID, Subject: r.Subject, Content: r.Content, Metadata: r.Metadata, Embedding: r.Embedding})
}

// CaptureGet is Get for package capture.
func (s *Store) CaptureGet(ctx context.Context, id string) (*backend.VectorRecord, error) {
	r, err := s.Get(ctx, id)
	if err != nil || r == nil {
		return nil, err
	}
	return &backend.VectorRecord{ID: r.ID, Subject: r.Subject, Embedding: r.Embedding, Content: r.Content, Metadata: r.Metadata}, nil
}

// CaptureSearch is Search for package capture. Distance is 1 - score
// (cosine distance on a cosine index).
func (s *Store) CaptureSearch(ctx context.Context, q []float32, k int) ([]backend.Neighbor, error) {
	ns, err := s.Search(ctx, q, k, nil)
	var out []backend.Neighbor
	for _, n := range ns {
		out = append(out, backend.Neighbor{ID: n.ID, Subject: n.Subject, Distance: 1 - n.Score})
	}
	return out, err
}
