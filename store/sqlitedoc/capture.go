package sqlitedoc

import (
	"context"
	"fmt"

	"github.com/amnesia-dev/amnesia/capture/backend"
	"github.com/amnesia-dev/amnesia/store"
)

// What package capture needs of a sqlite-doc store (backend.DocStore): a
// program that imports this package can wrap its stores with capture. The
// store has a parent column and no metadata.

func init() {
	backend.RegisterDocStore(Type, func(s store.Store) (backend.DocStore, error) {
		if d, ok := s.(*Store); ok {
			return d, nil
		}
		return nil, backend.NotStoreOf(Type, s)
	})
}

var _ backend.DocBatchStore = (*Store)(nil)

// CaptureCheck refuses metadata, which this store has no column for.
func (s *Store) CaptureCheck(r backend.Record) error {
	if len(r.Metadata) > 0 {
		return fmt.Errorf("capture document: store %q (%s) has no metadata column: leave Metadata empty", s.name, Type)
	}
	return nil
}

// CapturePut writes a record captured by package capture.
func (s *Store) CapturePut(ctx context.Context, r backend.Record) error {
	return s.Put(ctx, Record{ID: r.ID, Kind: r.Kind, Subject: r.Subject, Parent: r.Parent, Text: r.Text})
}

// CapturePutBatch writes records captured by package capture in one
// transaction (backend.DocBatchStore).
func (s *Store) CapturePutBatch(ctx context.Context, rs []backend.Record) error {
	out := make([]Record, len(rs))
	for i, r := range rs {
		out[i] = Record{ID: r.ID, Kind: r.Kind, Subject: r.Subject, Parent: r.Parent, Text: r.Text}
	}
	return s.PutBatch(ctx, out)
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
	return captureRecords(rs), err
}

// CaptureAll is All for package capture.
func (s *Store) CaptureAll(ctx context.Context) ([]backend.Record, error) {
	rs, err := s.All(ctx)
	return captureRecords(rs), err
}

func captureRecord(r Record) backend.Record {
	return backend.Record{ID: r.ID, Kind: r.Kind, Subject: r.Subject, Parent: r.Parent, Text: r.Text}
}

func captureRecords(rs []Record) []backend.Record {
	var out []backend.Record
	for _, r := range rs {
		out = append(out, captureRecord(r))
	}
	return out
}
