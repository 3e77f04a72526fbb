package chroma

import (
	"context"
	"fmt"

	"github.com/amnesia-dev/amnesia/capture/backend"
	"github.com/amnesia-dev/amnesia/store"
)

// What package capture needs of a chroma store (backend.VectorStore): a
// program that imports this package can wrap its stores with capture. A
// record keeps its document, metadata (strings, numbers, booleans) and
// embedding; the subject tag is the metadata under the subject key.

func init() {
	backend.RegisterVectorStore(Type, func(s store.Store) (backend.VectorStore, error) {
		if v, ok := s.(*Store); ok {
			return v, nil
		}
		return nil, backend.NotStoreOf(Type, s)
	})
}

var _ backend.VectorStore = (*Store)(nil)

// CaptureCheck refuses what Chroma cannot keep: a missing embedding, the
// reserved subject key, metadata values that are not strings, numbers or
// booleans.
func (s *Store) CaptureCheck(r backend.VectorRecord) error {
	if len(r.Embedding) == 0 {
		return fmt.Errorf("capture embedding: store %q (%s) needs the embedding: amnesia does not embed text", s.opt.Name, Type)
	}
	for k, v := range r.Metadata {
		if k == s.subj {
			return fmt.Errorf("capture embedding: store %q (%s): metadata key %q is reserved for the subject tag: rename it", s.opt.Name, Type, k)
		}
		if _, ok := metadataValue(v); !ok {
			return fmt.Errorf("capture embedding: store %q (%s): metadata %q is a %T, Chroma keeps strings, numbers and booleans: convert it", s.opt.Name, Type, k, v)
		}
	}
	return nil
}

// CapturePut writes a vector captured by package capture.
func (s *Store) CapturePut(ctx context.Context, r backend.VectorRecord) error {
	if err := s.CaptureCheck(r); err != nil {
		return err
	}
	return s.Put(ctx, Record{ID: r.ID, Subject: r.Subject, Document: r.Content, Metadata: r.Metadata, Embedding: r.Embedding})
}

// CaptureGet is Get for package capture.
func (s *Store) CaptureGet(ctx context.Context, id string) (*backend.VectorRecord, error) {
	r, err := s.Get(ctx, id)
	if err != nil || r == nil {
		return nil, err
	}
	out := &backend.VectorRecord{ID: r.ID, Subject: r.Subject, Embedding: r.Embedding, Content: r.Document}
	if len(r.Metadata) > 0 {
		out.Metadata = r.Metadata
	}
	return out, nil
}

// CaptureSearch is Search for package capture; Distance is Chroma's, in
// the collection's space.
func (s *Store) CaptureSearch(ctx context.Context, q []float32, k int) ([]backend.Neighbor, error) {
	ns, err := s.Search(ctx, q, k)
	var out []backend.Neighbor
	for _, n := range ns {
		out = append(out, backend.Neighbor{ID: n.ID, Subject: n.Subject, Distance: n.Distance})
	}
	return out, err
}
