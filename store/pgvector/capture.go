package pgvector

import (
	"context"
	"fmt"

	"github.com/amnesia-dev/amnesia/capture/backend"
	"github.com/amnesia-dev/amnesia/store"
)

// What package capture needs of a pgvector store (backend.VectorStore): a
// program that imports this package can wrap its stores with capture. The
// subject tag is kept in the mapped JSON key (metadata "subject" in the
// default and langchain presets).

func init() {
	backend.RegisterVectorStore(Type, func(s store.Store) (backend.VectorStore, error) {
		if v, ok := s.(*Store); ok {
			return v, nil
		}
		return nil, backend.NotStoreOf(Type, s)
	})
}

var _ backend.VectorBatchStore = (*Store)(nil)

// CaptureCheck refuses a layout capture cannot write (the subject tag
// outside one key of a JSON column), metadata under the key that holds the
// subject tag, and in the llamaindex layout metadata under the keys
// LlamaIndex writes itself (ref_doc_id is the source document's id and is
// allowed).
func (s *Store) CaptureCheck(r backend.VectorRecord) error {
	k := s.subjectKey()
	if k == "" || !s.writable() {
		return fmt.Errorf("capture embedding: store %q keeps the subject tag in %s, not in one key of a JSON column: capture writes the default, langchain, langchaingo and llamaindex layouts with the subject in a JSON key", s.name, s.lay.Subject.String())
	}
	if _, ok := r.Metadata[k]; ok {
		return fmt.Errorf("capture embedding: metadata key %q is where store %q keeps the subject tag: use another key", k, s.name)
	}
	if s.lay.preset == PresetLlamaIndex {
		for _, x := range LlamaIndexKeys {
			if _, ok := r.Metadata[x]; ok && x != "ref_doc_id" {
				return fmt.Errorf("capture embedding: metadata key %q is one LlamaIndex writes itself (store %q): use another key", x, s.name)
			}
		}
		if v, ok := r.Metadata["ref_doc_id"]; ok {
			if _, isStr := v.(string); !isStr {
				return fmt.Errorf("capture embedding: metadata ref_doc_id is a %T: LlamaIndex's ref_doc_id is the source document's id, a string", v)
			}
		}
	}
	if s.lay.langchain() && len(s.lay.Collections) > 1 {
		return fmt.Errorf("capture embedding: store %q maps %d collections: capture writes into one; configure mapping.collections with the one the application adds to", s.name, len(s.lay.Collections))
	}
	return nil
}

// CapturePut writes a vector captured by package capture.
func (s *Store) CapturePut(ctx context.Context, r backend.VectorRecord) error {
	return s.Put(ctx, Record{ID: r.ID, Subject: r.Subject, Embedding: r.Embedding, Content: r.Content, Metadata: r.Metadata})
}

// CapturePutBatch writes vectors captured by package capture in one
// transaction (backend.VectorBatchStore).
func (s *Store) CapturePutBatch(ctx context.Context, rs []backend.VectorRecord) error {
	out := make([]Record, len(rs))
	for i, r := range rs {
		out[i] = Record{ID: r.ID, Subject: r.Subject, Embedding: r.Embedding, Content: r.Content, Metadata: r.Metadata}
	}
	return s.PutBatch(ctx, out)
}

// CaptureGet is Get for package capture, without the subject tag in
// Metadata.
func (s *Store) CaptureGet(ctx context.Context, id string) (*backend.VectorRecord, error) {
	r, err := s.Get(ctx, id)
	if err != nil || r == nil {
		return nil, err
	}
	meta := map[string]any{}
	for k, v := range r.Metadata {
		if k != s.subjectKey() {
			meta[k] = v
		}
	}
	if s.lay.preset == PresetLlamaIndex {
		ref := meta["ref_doc_id"]
		for _, x := range LlamaIndexKeys {
			delete(meta, x)
		}
		if ref != nil {
			meta["ref_doc_id"] = ref // what the application gave
		}
	}
	if len(meta) == 0 {
		meta = nil
	}
	return &backend.VectorRecord{ID: r.ID, Subject: r.Subject, Embedding: r.Embedding, Content: r.Content, Metadata: meta}, nil
}

// CaptureSearch is Search through the vector index when there is one
// (approximate), as an application's read path would.
func (s *Store) CaptureSearch(ctx context.Context, q []float32, k int) ([]backend.Neighbor, error) {
	ns, err := s.Search(ctx, q, k, false)
	var out []backend.Neighbor
	for _, n := range ns {
		out = append(out, backend.Neighbor{ID: n.ID, Subject: n.Subject, Distance: n.Distance})
	}
	return out, err
}

// subjectKey is the metadata key holding the subject tag, "" when the
// mapping keeps it elsewhere than one key of a JSON column.
func (s *Store) subjectKey() string {
	if s.lay.Subject.JSON == "" || len(s.lay.Subject.Path) != 1 {
		return ""
	}
	return s.lay.Subject.Path[0]
}
