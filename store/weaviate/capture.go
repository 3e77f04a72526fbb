package weaviate

import (
	"context"
	"fmt"

	"github.com/amnesia-dev/amnesia/capture/backend"
	"github.com/amnesia-dev/amnesia/store"
)

// What package capture needs of a Weaviate store (backend.VectorStore): a
// program that imports this package can wrap its stores with capture. A
// record's content goes to the first content property ("content" by
// default), its subject tag to the subject property, its metadata to
// properties of the same names.

func init() {
	backend.RegisterVectorStore(Type, func(s store.Store) (backend.VectorStore, error) {
		if v, ok := s.(*Store); ok {
			return v, nil
		}
		return nil, backend.NotStoreOf(Type, s)
	})
}

var _ backend.VectorStore = (*Store)(nil)

// CaptureCheck refuses what the class cannot keep as given: a missing
// embedding, a wrong dimension, metadata under the subject or content
// property's name.
func (s *Store) CaptureCheck(r backend.VectorRecord) error {
	if len(r.Embedding) == 0 {
		return fmt.Errorf("capture embedding: store %q (%s) needs the embedding: amnesia does not embed text", s.name, Type)
	}
	if s.dims > 0 && len(r.Embedding) != s.dims {
		return fmt.Errorf("capture embedding: store %q (%s): %d dimensions, the store is configured with %d", s.name, Type, len(r.Embedding), s.dims)
	}
	for k := range r.Metadata {
		if k == s.subject || k == s.writeContent() {
			return fmt.Errorf("capture embedding: store %q (%s): metadata key %q is the class's subject or content property: rename it", s.name, Type, k)
		}
		if !propRE.MatchString(k) {
			return fmt.Errorf("capture embedding: store %q (%s): metadata key %q is not a Weaviate property name (letters, digits and _)", s.name, Type, k)
		}
	}
	return nil
}

// CapturePut writes a vector captured by package capture.
func (s *Store) CapturePut(ctx context.Context, r backend.VectorRecord) error {
	if err := s.CaptureCheck(r); err != nil {
		return err
	}
	return s.Put(ctx, Record{ID: r.ID, Subject: r.Subject, Content: r.Content, Properties: r.Metadata, Vector: r.Embedding})
}

// CaptureGet is Get for package capture.
func (s *Store) CaptureGet(ctx context.Context, id string) (*backend.VectorRecord, error) {
	r, err := s.Get(ctx, id)
	if err != nil || r == nil {
		return nil, err
	}
	out := &backend.VectorRecord{ID: id, Subject: r.Subject, Embedding: r.Vector, Content: r.Content}
	if len(r.Properties) > 0 {
		out.Metadata = r.Properties
	}
	return out, nil
}

// CaptureSearch is Search for package capture. IDs are object UUIDs (a
// captured record's key maps to one with KeyUUID); Distance is Weaviate's.
func (s *Store) CaptureSearch(ctx context.Context, q []float32, k int) ([]backend.Neighbor, error) {
	ns, err := s.Search(ctx, q, k)
	var out []backend.Neighbor
	for _, n := range ns {
		out = append(out, backend.Neighbor{ID: n.ID, Subject: n.Subject, Distance: n.Distance})
	}
	return out, err
}
