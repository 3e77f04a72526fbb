package chromem

import (
	"context"
	"fmt"

	"github.com/amnesia-dev/amnesia/capture/backend"
	"github.com/amnesia-dev/amnesia/store"
)

// What package capture needs of a chromem store (backend.VectorStore): a
// program that imports this package can wrap its stores with capture. A
// document keeps its content and string metadata; the subject tag is the
// metadata key "subject".

func init() {
	backend.RegisterVectorStore(Type, func(s store.Store) (backend.VectorStore, error) {
		if v, ok := s.(*Store); ok {
			return v, nil
		}
		return nil, backend.NotStoreOf(Type, s)
	})
}

var _ backend.VectorStore = (*Store)(nil)

// CaptureCheck refuses what chromem-go cannot keep: metadata values that
// are not strings, the reserved metadata key, a missing embedding.
func (s *Store) CaptureCheck(r backend.VectorRecord) error {
	if len(r.Embedding) == 0 {
		return fmt.Errorf("capture embedding: store %q (%s) needs the embedding: amnesia does not embed text", s.name, Type)
	}
	for k, v := range r.Metadata {
		if k == SubjectKey {
			return fmt.Errorf("capture embedding: store %q (%s): metadata key %q is reserved for the subject tag: rename it", s.name, Type, k)
		}
		if _, ok := v.(string); !ok {
			return fmt.Errorf("capture embedding: store %q (%s): metadata %q is a %T, chromem-go keeps strings only: convert it", s.name, Type, k, v)
		}
	}
	return nil
}

// CapturePut writes a vector captured by package capture.
func (s *Store) CapturePut(ctx context.Context, r backend.VectorRecord) error {
	if err := s.CaptureCheck(r); err != nil {
		return err
	}
	md := map[string]string{}
	for k, v := range r.Metadata {
		md[k] = v.(string)
	}
	return s.Put(ctx, Record{ID: r.ID, Subject: r.Subject, Content: r.Content, Metadata: md, Embedding: r.Embedding})
}

// CaptureGet is Get for package capture.
func (s *Store) CaptureGet(ctx context.Context, id string) (*backend.VectorRecord, error) {
	r, err := s.Get(ctx, id)
	if err != nil || r == nil {
		return nil, err
	}
	out := &backend.VectorRecord{ID: r.ID, Subject: r.Subject, Embedding: r.Embedding, Content: r.Content}
	if len(r.Metadata) > 0 {
		out.Metadata = map[string]any{}
		for k, v := range r.Metadata {
			out.Metadata[k] = v
		}
	}
	return out, nil
}

// CaptureSearch is Search for package capture. Distance is 1 - cosine
// similarity.
func (s *Store) CaptureSearch(ctx context.Context, q []float32, k int) ([]backend.Neighbor, error) {
	ns, err := s.Search(ctx, q, k, nil)
	var out []backend.Neighbor
	for _, n := range ns {
		out = append(out, backend.Neighbor{ID: n.ID, Subject: n.Subject, Distance: float64(1 - n.Similarity)})
	}
	return out, err
}
