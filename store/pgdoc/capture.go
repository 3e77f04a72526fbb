package pgdoc

import (
	"context"
	"fmt"

	"github.com/amnesia-dev/amnesia/capture/backend"
	"github.com/amnesia-dev/amnesia/store"
)

// What package capture needs of a postgres document store
// (backend.DocStore): a program that imports this package can wrap its
// stores with capture. The table has no parent column: a chunk's Parent is
// kept in metadata under backend.MetadataParent.

func init() {
	backend.RegisterDocStore(Type, func(s store.Store) (backend.DocStore, error) {
		if d, ok := s.(*Store); ok {
			return d, nil
		}
		return nil, backend.NotStoreOf(Type, s)
	})
}

var _ backend.DocBatchStore = (*Store)(nil)

// CaptureCheck refuses metadata under the key that holds Parent.
func (s *Store) CaptureCheck(r backend.Record) error {
	if _, ok := r.Metadata[backend.MetadataParent]; ok {
		return fmt.Errorf("capture document: metadata key %q is where capture keeps Parent in store %q: use another key", backend.MetadataParent, s.name)
	}
	return nil
}

// CapturePut writes a record captured by package capture, its Parent in
// metadata.
func (s *Store) CapturePut(ctx context.Context, r backend.Record) error {
	return s.Put(ctx, captureToRecord(r))
}

// CapturePutBatch writes records captured by package capture in one
// transaction (backend.DocBatchStore).
func (s *Store) CapturePutBatch(ctx context.Context, rs []backend.Record) error {
	out := make([]Record, len(rs))
	for i, r := range rs {
		out[i] = captureToRecord(r)
	}
	return s.PutBatch(ctx, out)
}

// captureToRecord is the record capture's r is written as: its Parent in
// metadata.
func captureToRecord(r backend.Record) Record {
	meta := map[string]any{}
	for k, v := range r.Metadata {
		meta[k] = v
	}
	if r.Parent != "" {
		meta[backend.MetadataParent] = r.Parent
	}
	return Record{ID: r.ID, Subject: r.Subject, Kind: r.Kind, Content: r.Text, Metadata: meta}
}

// CaptureGet is Get for package capture.
func (s *Store) CaptureGet(ctx context.Context, id string) (*backend.Record, error) {
	r, err := s.Get(ctx, id)
	if err != nil || r == nil {
		return nil, err
	}
	out := captureRecord(*r)
	return &out, nil
}

// CaptureBySubject is BySubject for package capture.
func (s *Store) CaptureBySubject(ctx context.Context, tag string) ([]backend.Record, error) {
	rs, err := s.BySubject(ctx, tag)
	var out []backend.Record
	for _, r := range rs {
		out = append(out, captureRecord(r))
	}
	return out, err
}

// CaptureAll is not available: a postgres document store is read by id or
// subject.
func (s *Store) CaptureAll(context.Context) ([]backend.Record, error) {
	return nil, fmt.Errorf("capture: All is not available for store %q (%s): use Get or BySubject", s.name, Type)
}

func captureRecord(r Record) backend.Record {
	out := backend.Record{ID: r.ID, Kind: r.Kind, Subject: r.Subject, Text: r.Content, Metadata: r.Metadata}
	if p, ok := r.Metadata[backend.MetadataParent].(string); ok {
		out.Parent = p
		delete(out.Metadata, backend.MetadataParent)
		if len(out.Metadata) == 0 {
			out.Metadata = nil
		}
	}
	return out
}
