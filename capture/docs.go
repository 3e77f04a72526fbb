package capture

import (
	"context"
	"fmt"

	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
)

// Docs wraps a SQLite document store.
type Docs struct {
	r *Recorder
	s *sqlitedoc.Store
}

// Doc is one write.
type Doc struct {
	ID       string
	Kind     string // sqlitedoc.KindDocument, KindChunk or KindChat
	Subject  string // raw subject id; a chunk may leave it empty and inherit from Parent
	Parent   string // for chunks: the document id
	Text     string
	Mentions []string // raw ids of other people this text is about
}

// Docs wraps s; its configured name is the ledger's store name.
func (r *Recorder) Docs(s *sqlitedoc.Store) *Docs {
	r.docs = append(r.docs, s.Info().Name)
	return &Docs{r: r, s: s}
}

func docKind(k string) (lineage.Kind, error) {
	switch k {
	case sqlitedoc.KindDocument:
		return lineage.KindSource, nil
	case sqlitedoc.KindChunk:
		return lineage.KindChunk, nil
	case sqlitedoc.KindChat:
		return lineage.KindLog, nil
	}
	return "", fmt.Errorf("capture document: unknown kind %q", k)
}

// Put records the write in the ledger, then writes the record. The store's
// subject tag holds the subject's keyed digest, never the raw id.
func (d *Docs) Put(ctx context.Context, doc Doc) error {
	kind, err := docKind(doc.Kind)
	if err != nil {
		return err
	}
	name := d.s.Info().Name
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
	return d.s.Put(ctx, sqlitedoc.Record{ID: doc.ID, Kind: doc.Kind, Subject: owner.String(), Parent: doc.Parent, Text: doc.Text})
}

// Get returns the record, or nil when it does not exist or is suppressed.
func (d *Docs) Get(ctx context.Context, id string) (*sqlitedoc.Record, error) {
	ok, err := d.r.visible(ctx, d.s.Info().Name, id)
	if err != nil || !ok {
		return nil, err
	}
	return d.s.Get(ctx, id)
}

// BySubject returns the visible records of a raw subject id.
func (d *Docs) BySubject(ctx context.Context, raw string) ([]sqlitedoc.Record, error) {
	k, err := d.r.SubjectKey(raw)
	if err != nil {
		return nil, err
	}
	rs, err := d.s.BySubject(ctx, k.String())
	if err != nil {
		return nil, err
	}
	return d.filter(ctx, rs)
}

// All returns every visible record.
func (d *Docs) All(ctx context.Context) ([]sqlitedoc.Record, error) {
	rs, err := d.s.All(ctx)
	if err != nil {
		return nil, err
	}
	return d.filter(ctx, rs)
}

func (d *Docs) filter(ctx context.Context, rs []sqlitedoc.Record) ([]sqlitedoc.Record, error) {
	out := rs[:0]
	for _, r := range rs {
		ok, err := d.r.visible(ctx, d.s.Info().Name, r.ID)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, r)
		}
	}
	return out, nil
}
