package capture

import (
	"fmt"

	"github.com/amnesia-dev/amnesia/capture/backend"
	"github.com/amnesia-dev/amnesia/store"
)

// DocStore is what Docs needs of a document store: *sqlitedoc.Store and
// *pgdoc.Store implement it (see package capture/backend).
type DocStore = backend.DocStore

// VectorStore is what Vectors needs of a vector store: *sqlitevec.Store and
// *pgvector.Store implement it (see package capture/backend).
type VectorStore = backend.VectorStore

// Record is a document as a read returns it. Subject is the subject tag the
// store holds: the subject's keyed digest (hmac:…), never the raw id.
type Record = backend.Record

// VectorRecord is a vector as a read returns it. Subject is the subject
// tag: the keyed digest (hmac:…), never the raw id.
type VectorRecord = backend.VectorRecord

// Neighbor is one search result.
type Neighbor = backend.Neighbor

// MetadataParent is the metadata key under which a PostgreSQL document
// store (which has no parent column) keeps a chunk's Parent.
const MetadataParent = backend.MetadataParent

// ownTypes are amnesia's own store types: their family, and the package
// that registers their capture wrapper (the import a program adds). A
// configured store of one of these types is known to be a document or
// vector store even when its adapter is not linked into the program.
var ownTypes = map[string]struct {
	doc bool
	pkg string
}{
	"sqlite-doc": {true, "github.com/amnesia-dev/amnesia/store/sqlitedoc"},
	"postgres":   {true, "github.com/amnesia-dev/amnesia/store/pgdoc"},
	"sqlite-vec": {false, "github.com/amnesia-dev/amnesia/store/sqlitevec"},
	"pgvector":   {false, "github.com/amnesia-dev/amnesia/store/pgvector"},
}

func isDocType(t string) bool {
	if _, ok := backend.Docs(t); ok {
		return true
	}
	o, ok := ownTypes[t]
	return ok && o.doc
}

func isVecType(t string) bool {
	if _, ok := backend.Vectors(t); ok {
		return true
	}
	o, ok := ownTypes[t]
	return ok && !o.doc
}

// wrapperLinked reports whether a capture wrapper is registered for typ.
func wrapperLinked(typ string) bool {
	_, d := backend.Docs(typ)
	_, v := backend.Vectors(typ)
	return d || v
}

// notLinked is the error for a configured store whose type has no capture
// wrapper registered in this program.
func notLinked(name, typ string) error {
	if o, ok := ownTypes[typ]; ok {
		return fmt.Errorf("capture: store %q: type %q is not linked into this program: add import _ %q", name, typ, o.pkg)
	}
	docTypes, vecTypes := backend.Types()
	return fmt.Errorf("capture: store %q: capture cannot wrap stores of type %s: no adapter linked into this program registers a capture wrapper for it (document stores: %v; vector stores: %v)", name, typ, docTypes, vecTypes)
}

// docStore wraps an opened store of a configured type in what Docs needs.
func docStore(name, typ string, s store.Store) (DocStore, error) {
	w, ok := backend.Docs(typ)
	if !ok {
		return nil, notLinked(name, typ)
	}
	d, err := w(s)
	if err != nil {
		return nil, fmt.Errorf("capture: store %q: %w", name, err)
	}
	return d, nil
}

// vectorStore wraps an opened store of a configured type in what Vectors
// needs.
func vectorStore(name, typ string, s store.Store) (VectorStore, error) {
	w, ok := backend.Vectors(typ)
	if !ok {
		return nil, notLinked(name, typ)
	}
	v, err := w(s)
	if err != nil {
		return nil, fmt.Errorf("capture: store %q: %w", name, err)
	}
	return v, nil
}
