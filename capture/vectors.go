package capture

import (
	"context"
	"fmt"

	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store"
)

// Vectors wraps a vector store: sqlite-vec or pgvector.
type Vectors struct {
	r    *Recorder
	s    VectorStore
	name string // the store's configured name: its name in the ledger
}

// Vectors wraps a vector store (a *sqlitevec.Store or *pgvector.Store, or
// any VectorStore).
func (r *Recorder) Vectors(s VectorStore) *Vectors { return &Vectors{r: r, s: s, name: s.Info().Name} }

// PGVectors wraps a pgvector store (store/pgvector).
//
// Deprecated: use Vectors, which wraps any VectorStore.
func (r *Recorder) PGVectors(s VectorStore) *Vectors { return r.Vectors(s) }

// Store returns the wrapped store's configured name.
func (v *Vectors) Store() string { return v.name }

// Vector is one write.
type Vector struct {
	ID        string
	Embedding []float32
	// Of is the key of the chunk (in a wrapped document store) this vector
	// embeds. Empty means ID: the usual RAG convention of one id per chunk.
	Of string
	// Subject is needed only when no captured chunk is found.
	Subject string
	// Content and Metadata are stored with the vector in a pgvector store
	// (the metadata key "subject" is reserved for the subject tag). A
	// sqlite-vec store keeps only the vector and refuses them.
	Content  string
	Metadata map[string]any
}

// Put records an embedding artifact derived from its chunk, then writes it.
func (v *Vectors) Put(ctx context.Context, vec Vector) error {
	rec := VectorRecord{ID: vec.ID, Embedding: vec.Embedding, Content: vec.Content, Metadata: vec.Metadata}
	if err := v.s.CaptureCheck(rec); err != nil {
		return err
	}
	of := vec.Of
	if of == "" {
		of = vec.ID
	}
	owner, parent, err := v.r.owner(ctx, vec.Subject, vec.ID, of, v.r.docStores())
	if err != nil {
		return fmt.Errorf("capture embedding: %w", err)
	}
	if err := v.r.checkKeys(vec.ID, vec.Of, vec.Subject, owner, nil); err != nil {
		return fmt.Errorf("capture embedding: %w", err)
	}
	var parents []string
	if parent != "" {
		parents = []string{parent}
	}
	content, sealed, err := v.r.seal(ctx, owner, v.name, vec.ID, "content", vec.Content)
	if err != nil {
		return err
	}
	id, err := v.r.record(ctx, owner, lineage.KindEmbedding, v.name, vec.ID, store.Float32LE(vec.Embedding), parents...)
	if err != nil {
		return err
	}
	if sealed {
		if err := v.r.markSealed(ctx, []string{id}); err != nil {
			return err
		}
	}
	rec.Subject, rec.Content = owner.String(), content
	return v.s.CapturePut(ctx, rec)
}

// Search returns the k nearest visible vectors, nearest first (on pgvector
// through the vector index when there is one, which is approximate).
// Suppressed vectors are dropped after the search, so fewer than k may come
// back.
func (v *Vectors) Search(ctx context.Context, q []float32, k int) ([]Neighbor, error) {
	ns, err := v.s.CaptureSearch(ctx, q, k)
	if err != nil {
		return nil, err
	}
	out := ns[:0]
	for _, n := range ns {
		ok, err := v.r.visible(ctx, v.name, n.ID)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, n)
		}
	}
	return out, nil
}

// Get returns the vector, or nil when absent or suppressed.
func (v *Vectors) Get(ctx context.Context, id string) (*VectorRecord, error) {
	ok, err := v.r.visible(ctx, v.name, id)
	if err != nil || !ok {
		return nil, err
	}
	rec, err := v.s.CaptureGet(ctx, id)
	if err != nil || rec == nil {
		return rec, err
	}
	if rec.Content, err = v.r.unseal(ctx, rec.Subject, v.name, rec.ID, "content", rec.Content); err != nil {
		return nil, err
	}
	return rec, nil
}
