// Package backend is what a store adapter implements so that package
// capture can wrap it, and the registry through which capture.App finds the
// wrapper of a configured store type. It is a leaf: it imports neither
// capture nor any adapter, so an adapter that imports it links none of
// capture's erasure machinery, and capture links only the adapters the
// program imports (as with database/sql/driver and a SQL driver).
//
// Applications use the aliases in package capture (capture.DocStore,
// capture.Record, …); an adapter registers its types from init:
//
//	func init() { backend.RegisterDocStore(Type, wrapDocs) }
package backend

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/amnesia-dev/amnesia/store"
)

// MetadataParent is the metadata key under which a document store without a
// parent column (PostgreSQL) keeps a chunk's Parent.
const MetadataParent = "parent"

// Record is a document as a read returns it. Subject is the subject tag the
// store holds: the subject's keyed digest (hmac:…), never the raw id.
type Record struct {
	ID       string
	Kind     string
	Subject  string
	Parent   string
	Text     string
	Metadata map[string]any // postgres stores only
}

// VectorRecord is a vector as a read returns it. Subject is the subject
// tag: the keyed digest (hmac:…), never the raw id.
type VectorRecord struct {
	ID        string
	Subject   string
	Embedding []float32
	Content   string         // pgvector only
	Metadata  map[string]any // pgvector only, without the subject tag
}

// Neighbor is one search result.
type Neighbor struct {
	ID       string
	Subject  string // subject tag
	Distance float64
}

// DocStore is what capture's Docs wrapper needs of a document store. The
// ledger's store name is Info().Name. store/sqlitedoc and store/pgdoc
// implement it on their *Store.
type DocStore interface {
	Info() store.Info
	// CaptureCheck returns what CapturePut would refuse in r, checked
	// before the ledger records anything.
	CaptureCheck(r Record) error
	// CapturePut writes r; r.Subject is already the subject tag.
	CapturePut(ctx context.Context, r Record) error
	// CaptureGet returns the record, or nil when it does not exist.
	CaptureGet(ctx context.Context, id string) (*Record, error)
	// CaptureBySubject returns the records whose subject tag is tag.
	CaptureBySubject(ctx context.Context, tag string) ([]Record, error)
	// CaptureAll returns every record, or an error saying that the store
	// cannot list them.
	CaptureAll(ctx context.Context) ([]Record, error)
}

// VectorStore is what capture's Vectors wrapper needs of a vector store.
// store/sqlitevec and store/pgvector implement it on their *Store.
type VectorStore interface {
	Info() store.Info
	// CaptureCheck returns what CapturePut would refuse in r, checked
	// before the ledger records anything.
	CaptureCheck(r VectorRecord) error
	// CapturePut writes r; r.Subject is already the subject tag.
	CapturePut(ctx context.Context, r VectorRecord) error
	// CaptureGet returns the vector, or nil when it does not exist.
	CaptureGet(ctx context.Context, id string) (*VectorRecord, error)
	// CaptureSearch returns the k nearest vectors, nearest first, as the
	// application's read path would find them.
	CaptureSearch(ctx context.Context, q []float32, k int) ([]Neighbor, error)
}

// DocBatchStore is a DocStore that writes many records in one transaction:
// capture's PutBatch then writes a batch's documents with one call, all of
// them or none, where it otherwise calls CapturePut once per record.
type DocBatchStore interface {
	DocStore
	// CapturePutBatch writes rs, in order, in one transaction; the
	// Subject of each is already the subject tag.
	CapturePutBatch(ctx context.Context, rs []Record) error
}

// VectorBatchStore is DocBatchStore for vector stores.
type VectorBatchStore interface {
	VectorStore
	// CapturePutBatch writes rs, in order, in one transaction.
	CapturePutBatch(ctx context.Context, rs []VectorRecord) error
}

// DocWrapper returns the DocStore of a store that a registered adapter
// type opened (store.Open), or an error when s is not one of its stores.
type DocWrapper func(s store.Store) (DocStore, error)

// VectorWrapper is DocWrapper for vector stores.
type VectorWrapper func(s store.Store) (VectorStore, error)

var (
	mu      sync.RWMutex
	docs    = map[string]DocWrapper{}
	vectors = map[string]VectorWrapper{}
)

// RegisterDocStore makes stores of adapter type typ available to
// capture.App.Docs. Adapters call it from init, next to store.Register;
// registering a type twice, or as both kinds, panics.
func RegisterDocStore(typ string, w DocWrapper) {
	mu.Lock()
	defer mu.Unlock()
	mustBeNew(typ)
	docs[typ] = w
}

// RegisterVectorStore makes stores of adapter type typ available to
// capture.App.Vectors. Adapters call it from init, next to store.Register;
// registering a type twice, or as both kinds, panics.
func RegisterVectorStore(typ string, w VectorWrapper) {
	mu.Lock()
	defer mu.Unlock()
	mustBeNew(typ)
	vectors[typ] = w
}

func mustBeNew(typ string) {
	_, d := docs[typ]
	_, v := vectors[typ]
	if d || v {
		panic("capture/backend: type registered twice: " + typ)
	}
}

// Docs returns the wrapper registered for a document store type.
func Docs(typ string) (DocWrapper, bool) {
	mu.RLock()
	defer mu.RUnlock()
	w, ok := docs[typ]
	return w, ok
}

// Vectors returns the wrapper registered for a vector store type.
func Vectors(typ string) (VectorWrapper, bool) {
	mu.RLock()
	defer mu.RUnlock()
	w, ok := vectors[typ]
	return w, ok
}

// Types returns the registered document and vector store types, sorted.
func Types() (docTypes, vectorTypes []string) {
	mu.RLock()
	defer mu.RUnlock()
	for t := range docs {
		docTypes = append(docTypes, t)
	}
	for t := range vectors {
		vectorTypes = append(vectorTypes, t)
	}
	sort.Strings(docTypes)
	sort.Strings(vectorTypes)
	return docTypes, vectorTypes
}

// NotStoreOf is the error a wrapper returns for a store that is not one of
// its adapter's.
func NotStoreOf(typ string, s store.Store) error {
	return fmt.Errorf("capture: a %s wrapper cannot wrap %T", typ, s)
}
