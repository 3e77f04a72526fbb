package capture

import (
	"context"
	"fmt"

	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/sqlitevec"
)

// Vectors wraps a sqlite-vec store.
type Vectors struct {
	r *Recorder
	s *sqlitevec.Store
}

// Vectors wraps s.
func (r *Recorder) Vectors(s *sqlitevec.Store) *Vectors { return &Vectors{r: r, s: s} }

// Vector is one write.
type Vector struct {
	ID        string
	Embedding []float32
	// Of is the key of the chunk (in a wrapped document store) this vector
	// embeds. Empty means ID: the usual RAG convention of one id per chunk.
	Of string
	// Subject is needed only when no captured chunk is found.
	Subject string
}

// Put records an embedding artifact derived from its chunk, then writes it.
func (v *Vectors) Put(ctx context.Context, vec Vector) error {
	of := vec.Of
	if of == "" {
		of = vec.ID
	}
	owner, parent, err := v.r.owner(ctx, vec.Subject, vec.ID, of, v.r.docs)
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
	name := v.s.Info().Name
	if _, err := v.r.record(ctx, owner, lineage.KindEmbedding, name, vec.ID, store.Float32LE(vec.Embedding), parents...); err != nil {
		return err
	}
	return v.s.Put(ctx, sqlitevec.Record{ID: vec.ID, Subject: owner.String(), Embedding: vec.Embedding})
}

// Search returns the k nearest visible vectors. Suppressed vectors are
// dropped after the search, so fewer than k may come back.
func (v *Vectors) Search(ctx context.Context, q []float32, k int) ([]sqlitevec.Neighbor, error) {
	ns, err := v.s.Search(ctx, q, k)
	if err != nil {
		return nil, err
	}
	out := ns[:0]
	for _, n := range ns {
		ok, err := v.r.visible(ctx, v.s.Info().Name, n.ID)
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
func (v *Vectors) Get(ctx context.Context, id string) (*sqlitevec.Record, error) {
	ok, err := v.r.visible(ctx, v.s.Info().Name, id)
	if err != nil || !ok {
		return nil, err
	}
	return v.s.Get(ctx, id)
}
