package file

import (
	"context"
	"fmt"

	"github.com/amnesia-dev/amnesia/capture/backend"
	"github.com/amnesia-dev/amnesia/store"
)

// What package capture needs of a file store (backend.DocStore): each
// JSONL line or CSV row is a document whose key is its ID, whose subject
// field holds the subject tag, and whose one content field holds its text;
// a JSONL line also keeps the kind and parent (fields "kind" and
// "parent"), a CSV row when its header has those columns (a parent without
// a column is refused; the kind is then not kept in the file, the ledger
// records it). Parquet files
// are not written by capture.

func init() {
	backend.RegisterDocStore(Type, func(s store.Store) (backend.DocStore, error) {
		if d, ok := s.(*Store); ok {
			if d.o.Format == Parquet {
				return nil, fmt.Errorf("store %q: capture does not write Parquet files (its rows are written by your dataset tooling); capture JSONL or CSV stores", d.o.Name)
			}
			return d, nil
		}
		return nil, backend.NotStoreOf(Type, s)
	})
}

var _ backend.DocStore = (*Store)(nil)

// CaptureCheck refuses what the file cannot keep.
func (s *Store) CaptureCheck(r backend.Record) error {
	if s.o.Format == Parquet {
		return fmt.Errorf("capture document: store %q is a Parquet file: capture does not write it", s.o.Name)
	}
	if len(s.o.Content) != 1 {
		return fmt.Errorf("capture document: store %q (%s) must name exactly one content field for the text (content: [text])", s.o.Name, Type)
	}
	if s.o.Subject == "" {
		return fmt.Errorf("capture document: store %q (%s) must name a subject field for the subject tag (subject: subject)", s.o.Name, Type)
	}
	if len(r.Metadata) > 0 {
		return fmt.Errorf("capture document: store %q (%s) keeps no metadata: leave Metadata empty", s.o.Name, Type)
	}
	if s.o.Format == CSV && r.Parent != "" {
		t, _, err := s.load(context.Background())
		if err != nil {
			return fmt.Errorf("capture document: %w", err)
		}
		has := map[string]bool{}
		for _, c := range t.cols {
			has[c] = true
		}
		if r.Parent != "" && !has["parent"] {
			return fmt.Errorf("capture document: store %q: the CSV header has no parent column: add one or leave Parent empty", s.o.Name)
		}
	}
	return nil
}

// CapturePut appends a document captured by package capture.
func (s *Store) CapturePut(ctx context.Context, r backend.Record) error {
	if err := s.CaptureCheck(r); err != nil {
		return err
	}
	fields := map[string]string{s.o.Key: r.ID, s.o.Subject: r.Subject, s.o.Content[0]: r.Text}
	if r.Kind != "" && s.hasKindField(ctx) {
		fields["kind"] = r.Kind
	}
	if r.Parent != "" {
		fields["parent"] = r.Parent
	}
	return s.Append(ctx, fields)
}

// hasKindField reports whether a row can keep the kind: always in JSONL,
// in CSV when the header has a kind column (the ledger records the kind
// either way).
func (s *Store) hasKindField(ctx context.Context) bool {
	if s.o.Format != CSV {
		return true
	}
	t, _, err := s.load(ctx)
	if err != nil {
		return false
	}
	for _, c := range t.cols {
		if c == "kind" {
			return true
		}
	}
	return false
}

func (s *Store) captureRows(ctx context.Context, keep func(row) bool) ([]backend.Record, error) {
	t, _, err := s.load(ctx)
	if err != nil {
		return nil, err
	}
	var out []backend.Record
	for _, r := range t.rows {
		if !keep(r) {
			continue
		}
		rec := backend.Record{ID: r.key, Subject: r.subject}
		if len(s.o.Content) > 0 {
			rec.Text = r.content[s.o.Content[0]]
		}
		out = append(out, rec)
	}
	return out, nil
}

// CaptureGet returns the last row with key id (an append replaces).
func (s *Store) CaptureGet(ctx context.Context, id string) (*backend.Record, error) {
	rs, err := s.captureRows(ctx, func(r row) bool { return r.key == id })
	if err != nil || len(rs) == 0 {
		return nil, err
	}
	return &rs[len(rs)-1], nil
}

// CaptureBySubject returns the rows whose subject field is tag.
func (s *Store) CaptureBySubject(ctx context.Context, tag string) ([]backend.Record, error) {
	return s.captureRows(ctx, func(r row) bool { return r.subject == tag })
}

// CaptureAll returns every row.
func (s *Store) CaptureAll(ctx context.Context) ([]backend.Record, error) {
	return s.captureRows(ctx, func(row) bool { return true })
}
