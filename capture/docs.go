package capture

import (
	"context"
	"fmt"

	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store/pgdoc"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
)

// Document kinds (Doc.Kind).
const (
	KindDocument = sqlitedoc.KindDocument // a source document: lineage kind "source"
	KindChunk    = sqlitedoc.KindChunk    // a chunk of a document: lineage kind "chunk"
	KindChat     = sqlitedoc.KindChat     // a chat turn: lineage kind "log"
)

// Docs wraps a document store: sqlite-doc or postgres.
type Docs struct {
	r *Recorder
	s docBackend
}

// Doc is one write.
type Doc struct {
	ID       string
	Kind     string // KindDocument, KindChunk or KindChat
	Subject  string // raw subject id; a chunk may leave it empty and inherit from Parent
	Parent   string // for chunks: the document id
	Text     string
	Mentions []string // raw ids of other people this text is about
	// Metadata is stored with the record in a postgres store (jsonb; the
	// key "parent" is reserved for Parent). A sqlite-doc store has no
	// metadata column and refuses it.
	Metadata map[string]any
}

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

// Docs wraps a sqlite-doc store; its configured name is the ledger's store name.
func (r *Recorder) Docs(s *sqlitedoc.Store) *Docs { return r.wrapDocs(sqliteDocs{s}) }

// PostgresDocs wraps a postgres document store (store/pgdoc).
func (r *Recorder) PostgresDocs(s *pgdoc.Store) *Docs { return r.wrapDocs(postgresDocs{s}) }

func (r *Recorder) wrapDocs(b docBackend) *Docs {
	r.addDocStore(b.name())
	return &Docs{r: r, s: b}
}

// Store returns the wrapped store's configured name.
func (d *Docs) Store() string { return d.s.name() }

func docKind(k string) (lineage.Kind, error) {
	switch k {
	case KindDocument:
		return lineage.KindSource, nil
	case KindChunk:
		return lineage.KindChunk, nil
	case KindChat:
		return lineage.KindLog, nil
	}
	return "", fmt.Errorf("capture document: unknown kind %q (want %q, %q or %q)", k, KindDocument, KindChunk, KindChat)
}

// Put records the write in the ledger, then writes the record. The store's
// subject tag holds the subject's keyed digest, never the raw id.
func (d *Docs) Put(ctx context.Context, doc Doc) error {
	kind, err := docKind(doc.Kind)
	if err != nil {
		return err
	}
	rec := Record{ID: doc.ID, Kind: doc.Kind, Parent: doc.Parent, Text: doc.Text, Metadata: doc.Metadata}
	if err := d.s.check(rec); err != nil {
		return err
	}
	name := d.s.name()
	owner, parent, err := d.r.owner(ctx, doc.Subject, doc.ID, doc.Parent, []string{name})
	if err != nil {
		return fmt.Errorf("capture document: %w", err)
	}
	if err := d.r.checkKeys(doc.ID, doc.Parent, doc.Subject, owner, doc.Mentions); err != nil {
		return fmt.Errorf("capture document: %w", err)
	}
	var parents []string
	if parent != "" {
		parents = []string{parent}
	}
	id, err := d.r.record(ctx, owner, kind, name, doc.ID, []byte(doc.Text), parents...)
	if err != nil {
		return err
	}
	if err := d.r.mention(ctx, id, doc.Mentions); err != nil {
		return err
	}
	rec.Subject = owner.String()
	return d.s.put(ctx, rec)
}

// Get returns the record, or nil when it does not exist or is suppressed.
func (d *Docs) Get(ctx context.Context, id string) (*Record, error) {
	ok, err := d.r.visible(ctx, d.s.name(), id)
	if err != nil || !ok {
		return nil, err
	}
	return d.s.get(ctx, id)
}

// BySubject returns the visible records of a raw subject id.
func (d *Docs) BySubject(ctx context.Context, raw string) ([]Record, error) {
	k, err := d.r.SubjectKey(raw)
	if err != nil {
		return nil, err
	}
	rs, err := d.s.bySubject(ctx, k.String())
	if err != nil {
		return nil, err
	}
	return d.filter(ctx, rs)
}

// All returns every visible record (sqlite-doc stores only).
func (d *Docs) All(ctx context.Context) ([]Record, error) {
	rs, err := d.s.all(ctx)
	if err != nil {
		return nil, err
	}
	return d.filter(ctx, rs)
}

func (d *Docs) filter(ctx context.Context, rs []Record) ([]Record, error) {
	out := rs[:0]
	for _, r := range rs {
		ok, err := d.r.visible(ctx, d.s.name(), r.ID)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, r)
		}
	}
	return out, nil
}
