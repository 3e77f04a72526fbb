package capture

import (
	"context"
	"fmt"

	"github.com/amnesia-dev/amnesia/lineage"
)

// Document kinds (Doc.Kind).
const (
	KindDocument = "document" // a source document: lineage kind "source"
	KindChunk    = "chunk"    // a chunk of a document: lineage kind "chunk"
	KindChat     = "chat"     // a chat turn: lineage kind "log"
)

// Docs wraps a document store: sqlite-doc or postgres.
type Docs struct {
	r    *Recorder
	s    DocStore
	name string // the store's configured name: its name in the ledger
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

// Docs wraps a document store (a *sqlitedoc.Store or *pgdoc.Store, or any
// DocStore); its configured name is the ledger's store name.
func (r *Recorder) Docs(s DocStore) *Docs {
	name := s.Info().Name
	r.addDocStore(name)
	return &Docs{r: r, s: s, name: name}
}

// PostgresDocs wraps a postgres document store (store/pgdoc).
//
// Deprecated: use Docs, which wraps any DocStore.
func (r *Recorder) PostgresDocs(s DocStore) *Docs { return r.Docs(s) }

// Store returns the wrapped store's configured name.
func (d *Docs) Store() string { return d.name }

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
	if err := d.s.CaptureCheck(rec); err != nil {
		return err
	}
	name := d.name
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
	text, sealed, err := d.r.seal(ctx, owner, name, doc.ID, "text", doc.Text)
	if err != nil {
		return err
	}
	id, err := d.r.recordMentioned(ctx, owner, kind, name, doc.ID, []byte(doc.Text), doc.Mentions, parents...)
	if err != nil {
		return err
	}
	if sealed {
		if err := d.r.markSealed(ctx, []string{id}); err != nil {
			return err
		}
	}
	rec.Subject, rec.Text = owner.String(), text
	return d.s.CapturePut(ctx, rec)
}

// Get returns the record, or nil when it does not exist or is suppressed.
func (d *Docs) Get(ctx context.Context, id string) (*Record, error) {
	ok, err := d.r.visible(ctx, d.name, id)
	if err != nil || !ok {
		return nil, err
	}
	rec, err := d.s.CaptureGet(ctx, id)
	if err != nil || rec == nil {
		return rec, err
	}
	if rec.Text, err = d.r.unseal(ctx, rec.Subject, d.name, rec.ID, "text", rec.Text); err != nil {
		return nil, err
	}
	return rec, nil
}

// BySubject returns the visible records of a raw subject id.
func (d *Docs) BySubject(ctx context.Context, raw string) ([]Record, error) {
	k, err := d.r.SubjectKey(raw)
	if err != nil {
		return nil, err
	}
	rs, err := d.s.CaptureBySubject(ctx, k.String())
	if err != nil {
		return nil, err
	}
	return d.filter(ctx, rs)
}

// All returns every visible record (sqlite-doc stores only).
func (d *Docs) All(ctx context.Context) ([]Record, error) {
	rs, err := d.s.CaptureAll(ctx)
	if err != nil {
		return nil, err
	}
	return d.filter(ctx, rs)
}

func (d *Docs) filter(ctx context.Context, rs []Record) ([]Record, error) {
	out := rs[:0]
	for _, r := range rs {
		ok, err := d.r.visible(ctx, d.name, r.ID)
		if err != nil {
			return nil, err
		}
		if ok {
			if r.Text, err = d.r.unseal(ctx, r.Subject, d.name, r.ID, "text", r.Text); err != nil {
				return nil, err
			}
			out = append(out, r)
		}
	}
	return out, nil
}
