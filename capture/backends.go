package capture

import (
	"context"
	"fmt"

	"github.com/amnesia-dev/amnesia/store/pgdoc"
	"github.com/amnesia-dev/amnesia/store/pgvector"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
	"github.com/amnesia-dev/amnesia/store/sqlitevec"
)

// docBackend is what Docs needs of a document store adapter.
type docBackend interface {
	name() string
	typ() string
	check(r Record) error // what put would refuse, checked before the ledger records anything
	put(ctx context.Context, r Record) error
	get(ctx context.Context, id string) (*Record, error)
	bySubject(ctx context.Context, tag string) ([]Record, error)
	all(ctx context.Context) ([]Record, error)
}

// vecBackend is what Vectors needs of a vector store adapter.
type vecBackend interface {
	name() string
	typ() string
	check(r VectorRecord) error
	put(ctx context.Context, r VectorRecord) error
	get(ctx context.Context, id string) (*VectorRecord, error)
	search(ctx context.Context, q []float32, k int) ([]Neighbor, error)
}

// sqliteDocs: store/sqlitedoc. It has a parent column and no metadata.
type sqliteDocs struct{ s *sqlitedoc.Store }

func (b sqliteDocs) name() string { return b.s.Info().Name }
func (b sqliteDocs) typ() string  { return sqlitedoc.Type }

func (b sqliteDocs) check(r Record) error {
	if len(r.Metadata) > 0 {
		return fmt.Errorf("capture document: store %q (%s) has no metadata column: leave Metadata empty", b.name(), b.typ())
	}
	return nil
}

func (b sqliteDocs) put(ctx context.Context, r Record) error {
	return b.s.Put(ctx, sqlitedoc.Record{ID: r.ID, Kind: r.Kind, Subject: r.Subject, Parent: r.Parent, Text: r.Text})
}

func (b sqliteDocs) get(ctx context.Context, id string) (*Record, error) {
	r, err := b.s.Get(ctx, id)
	if err != nil || r == nil {
		return nil, err
	}
	out := fromSQLiteDoc(*r)
	return &out, nil
}

func (b sqliteDocs) bySubject(ctx context.Context, tag string) ([]Record, error) {
	rs, err := b.s.BySubject(ctx, tag)
	return fromSQLiteDocs(rs), err
}

func (b sqliteDocs) all(ctx context.Context) ([]Record, error) {
	rs, err := b.s.All(ctx)
	return fromSQLiteDocs(rs), err
}

func fromSQLiteDoc(r sqlitedoc.Record) Record {
	return Record{ID: r.ID, Kind: r.Kind, Subject: r.Subject, Parent: r.Parent, Text: r.Text}
}

func fromSQLiteDocs(rs []sqlitedoc.Record) []Record {
	var out []Record
	for _, r := range rs {
		out = append(out, fromSQLiteDoc(r))
	}
	return out
}

// MetadataParent is the metadata key under which a PostgreSQL document
// store (which has no parent column) keeps a chunk's Parent.
const MetadataParent = "parent"

// postgresDocs: store/pgdoc. The parent is kept in metadata (MetadataParent).
type postgresDocs struct{ s *pgdoc.Store }

func (b postgresDocs) name() string { return b.s.Info().Name }
func (b postgresDocs) typ() string  { return pgdoc.Type }

func (b postgresDocs) check(r Record) error {
	if _, ok := r.Metadata[MetadataParent]; ok {
		return fmt.Errorf("capture document: metadata key %q is where capture keeps Parent in store %q: use another key", MetadataParent, b.name())
	}
	return nil
}

func (b postgresDocs) put(ctx context.Context, r Record) error {
	meta := map[string]any{}
	for k, v := range r.Metadata {
		meta[k] = v
	}
	if r.Parent != "" {
		meta[MetadataParent] = r.Parent
	}
	return b.s.Put(ctx, pgdoc.Record{ID: r.ID, Subject: r.Subject, Kind: r.Kind, Content: r.Text, Metadata: meta})
}

func (b postgresDocs) get(ctx context.Context, id string) (*Record, error) {
	r, err := b.s.Get(ctx, id)
	if err != nil || r == nil {
		return nil, err
	}
	out := fromPostgresDoc(*r)
	return &out, nil
}

func (b postgresDocs) bySubject(ctx context.Context, tag string) ([]Record, error) {
	rs, err := b.s.BySubject(ctx, tag)
	var out []Record
	for _, r := range rs {
		out = append(out, fromPostgresDoc(r))
	}
	return out, err
}

func (b postgresDocs) all(context.Context) ([]Record, error) {
	return nil, fmt.Errorf("capture: All is not available for store %q (%s): use Get or BySubject", b.name(), b.typ())
}

func fromPostgresDoc(r pgdoc.Record) Record {
	out := Record{ID: r.ID, Kind: r.Kind, Subject: r.Subject, Text: r.Content, Metadata: r.Metadata}
	if p, ok := r.Metadata[MetadataParent].(string); ok {
		out.Parent = p
		delete(out.Metadata, MetadataParent)
		if len(out.Metadata) == 0 {
			out.Metadata = nil
		}
	}
	return out
}

// sqliteVectors: store/sqlitevec. It keeps id, subject tag and vector only.
type sqliteVectors struct{ s *sqlitevec.Store }

func (b sqliteVectors) name() string { return b.s.Info().Name }
func (b sqliteVectors) typ() string  { return sqlitevec.Type }

func (b sqliteVectors) check(r VectorRecord) error {
	if r.Content != "" || len(r.Metadata) > 0 {
		return fmt.Errorf("capture embedding: store %q (%s) keeps only the vector: leave Content and Metadata empty", b.name(), b.typ())
	}
	return nil
}

func (b sqliteVectors) put(ctx context.Context, r VectorRecord) error {
	return b.s.Put(ctx, sqlitevec.Record{ID: r.ID, Subject: r.Subject, Embedding: r.Embedding})
}

func (b sqliteVectors) get(ctx context.Context, id string) (*VectorRecord, error) {
	r, err := b.s.Get(ctx, id)
	if err != nil || r == nil {
		return nil, err
	}
	return &VectorRecord{ID: r.ID, Subject: r.Subject, Embedding: r.Embedding}, nil
}

func (b sqliteVectors) search(ctx context.Context, q []float32, k int) ([]Neighbor, error) {
	ns, err := b.s.Search(ctx, q, k)
	var out []Neighbor
	for _, n := range ns {
		out = append(out, Neighbor{ID: n.ID, Subject: n.Subject, Distance: n.Distance})
	}
	return out, err
}

// pgVectors: store/pgvector. Search goes through the vector index when
// there is one (approximate), as an application's read path would.
type pgVectors struct{ s *pgvector.Store }

func (b pgVectors) name() string { return b.s.Info().Name }
func (b pgVectors) typ() string  { return pgvector.Type }

func (b pgVectors) check(r VectorRecord) error {
	if _, ok := r.Metadata["subject"]; ok {
		return fmt.Errorf("capture embedding: metadata key \"subject\" is where store %q keeps the subject tag: use another key", b.name())
	}
	return nil
}

func (b pgVectors) put(ctx context.Context, r VectorRecord) error {
	return b.s.Put(ctx, pgvector.Record{ID: r.ID, Subject: r.Subject, Embedding: r.Embedding, Content: r.Content, Metadata: r.Metadata})
}

func (b pgVectors) get(ctx context.Context, id string) (*VectorRecord, error) {
	r, err := b.s.Get(ctx, id)
	if err != nil || r == nil {
		return nil, err
	}
	meta := map[string]any{}
	for k, v := range r.Metadata {
		if k != "subject" {
			meta[k] = v
		}
	}
	if len(meta) == 0 {
		meta = nil
	}
	return &VectorRecord{ID: r.ID, Subject: r.Subject, Embedding: r.Embedding, Content: r.Content, Metadata: meta}, nil
}

func (b pgVectors) search(ctx context.Context, q []float32, k int) ([]Neighbor, error) {
	ns, err := b.s.Search(ctx, q, k, false)
	var out []Neighbor
	for _, n := range ns {
		out = append(out, Neighbor{ID: n.ID, Subject: n.Subject, Distance: n.Distance})
	}
	return out, err
}
