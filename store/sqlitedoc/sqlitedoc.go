// Package sqlitedoc is a document store on an embedded SQLite file:
// documents, chunks and chat turns, each with an id, a subject tag and text.
//
// What it proves: deletion by key; that no lookup by id or by subject tag
// returns the record; and, after reclaim (secure_delete, VACUUM, WAL
// checkpoint with truncation), that none of the record's text windows is left
// anywhere in the database file, its -wal, -journal or -shm file.
package sqlitedoc

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/internal/sqlitex"
)

// Type is the adapter type name used in configuration.
const Type = "sqlite-doc"

// Record kinds.
const (
	KindDocument = "document"
	KindChunk    = "chunk"
	KindChat     = "chat"
)

// Record is one row.
type Record struct {
	ID      string
	Kind    string // document, chunk or chat
	Subject string // subject tag: capture writes the subject's keyed digest here
	Parent  string // for chunks: the document id
	Text    string
}

const schema = `
CREATE TABLE IF NOT EXISTS documents (
	id      TEXT PRIMARY KEY,
	kind    TEXT NOT NULL,
	subject TEXT NOT NULL DEFAULT '',
	parent  TEXT NOT NULL DEFAULT '',
	text    TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS documents_subject ON documents (subject);
`

// Store is the adapter.
type Store struct {
	name string
	path string
	db   *sql.DB
}

var (
	_ store.Store          = (*Store)(nil)
	_ store.EvidenceReader = (*Store)(nil)
	_ store.Reclaimer      = (*Store)(nil)
	_ store.PhysicalProber = (*Store)(nil)
)

// Open opens the store at path, creating it when create is true.
func Open(ctx context.Context, name, path string, create bool) (*Store, error) {
	db, err := sqlitex.Open(ctx, path, create)
	if err != nil {
		return nil, err
	}
	if _, err := db.ExecContext(ctx, schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return &Store{name: name, path: path, db: db}, nil
}

// Path returns the database file.
func (s *Store) Path() string { return s.path }

// Info implements store.Store.
func (s *Store) Info() store.Info {
	return store.Info{Name: s.name, Type: Type, Capabilities: []store.Capability{
		store.CapDelete, store.CapProbeByID, store.CapProbeByFilter, store.CapReclaim, store.CapProbePhysical,
	}}
}

// Close implements store.Store.
func (s *Store) Close() error { return s.db.Close() }

// Put inserts or replaces a record.
func (s *Store) Put(ctx context.Context, r Record) error {
	if r.ID == "" {
		return errors.New("put document: empty id")
	}
	switch r.Kind {
	case KindDocument, KindChunk, KindChat:
	default:
		return fmt.Errorf("put document: unknown kind %q", r.Kind)
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO documents (id, kind, subject, parent, text) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET kind = excluded.kind, subject = excluded.subject, parent = excluded.parent, text = excluded.text`,
		r.ID, r.Kind, r.Subject, r.Parent, r.Text)
	if err != nil {
		return fmt.Errorf("put document: %w", err)
	}
	return nil
}

// Get returns the record with id, or nil when there is none.
func (s *Store) Get(ctx context.Context, id string) (*Record, error) {
	rs, err := s.query(ctx, `WHERE id = ?`, id)
	if err != nil || len(rs) == 0 {
		return nil, err
	}
	return &rs[0], nil
}

// BySubject returns the records tagged with subject, ordered by id.
func (s *Store) BySubject(ctx context.Context, subject string) ([]Record, error) {
	return s.query(ctx, `WHERE subject = ? ORDER BY id`, subject)
}

// All returns every record, ordered by id.
func (s *Store) All(ctx context.Context) ([]Record, error) {
	return s.query(ctx, `ORDER BY id`)
}

func (s *Store) query(ctx context.Context, where string, args ...any) ([]Record, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, kind, subject, parent, text FROM documents `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("query documents: %w", err)
	}
	defer rows.Close()
	var out []Record
	for rows.Next() {
		var r Record
		if err := rows.Scan(&r.ID, &r.Kind, &r.Subject, &r.Parent, &r.Text); err != nil {
			return nil, fmt.Errorf("query documents: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Delete implements store.Store. Rows are deleted with secure_delete on, so
// their cells are zeroed in the page.
func (s *Store) Delete(ctx context.Context, keys []string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("delete documents: %w", err)
	}
	defer tx.Rollback()
	for _, k := range keys {
		if _, err := tx.ExecContext(ctx, `DELETE FROM documents WHERE id = ?`, k); err != nil {
			return fmt.Errorf("delete documents: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("delete documents: %w", err)
	}
	return nil
}

// ReadEvidence implements store.EvidenceReader: windows tiling the text.
// Windows that another live record (outside keys) also holds are skipped
// and counted as Shared, and that record is named in SharedWith: finding
// them later would prove nothing about this record, but it may be a copy.
func (s *Store) ReadEvidence(ctx context.Context, keys []string) (map[string]*store.Evidence, error) {
	batch := map[string]bool{}
	out := map[string]*store.Evidence{}
	for _, k := range keys {
		batch[k] = true
		r, err := s.Get(ctx, k)
		if err != nil {
			return nil, fmt.Errorf("read evidence: %w", err)
		}
		if r != nil {
			e := &store.Evidence{Key: k, Filter: map[string]string{"subject": r.Subject}}
			e.AddWindows([]byte(r.Text))
			out[k] = e
		}
	}
	err := store.DropShared(ctx, out, sqlitex.Others(ctx, s.db, `SELECT id, text FROM documents`, batch))
	if err != nil {
		return nil, fmt.Errorf("read evidence: %w", err)
	}
	return out, nil
}

// ProbeLogical implements store.Store: by id, and by the subject tag the
// record carried.
func (s *Store) ProbeLogical(ctx context.Context, keys []string, ev map[string]*store.Evidence) ([]store.LogicalResult, error) {
	out := make([]store.LogicalResult, 0, len(keys))
	bySubject := map[string]map[string]bool{}
	for _, k := range keys {
		res := store.LogicalResult{Key: k, Methods: []string{"by-id"}}
		r, err := s.Get(ctx, k)
		if err != nil {
			return nil, fmt.Errorf("probe: %w", err)
		}
		res.ByID = r != nil
		if e := ev[k]; e != nil && e.Filter["subject"] != "" {
			res.Methods = append(res.Methods, "by-filter:subject")
			tag := e.Filter["subject"]
			if _, ok := bySubject[tag]; !ok { // one filter query per subject tag
				rs, err := s.BySubject(ctx, tag)
				if err != nil {
					return nil, fmt.Errorf("probe: %w", err)
				}
				bySubject[tag] = map[string]bool{}
				for _, r := range rs {
					bySubject[tag][r.ID] = true
				}
			}
			res.ByFilter = bySubject[tag][k]
		}
		out = append(out, res)
	}
	return out, nil
}

// Reclaim implements store.Reclaimer.
func (s *Store) Reclaim(ctx context.Context) (store.ReclaimReport, error) {
	return sqlitex.Reclaim(ctx, s.db)
}

// ProbePhysical implements store.PhysicalProber.
func (s *Store) ProbePhysical(ctx context.Context, set *store.NeedleSet) (store.ScanReport, error) {
	return sqlitex.Scan(ctx, s.path, set)
}

func init() {
	store.Register(Type, store.Adapter{
		Open: func(ctx context.Context, c store.Config, create bool) (store.Store, error) {
			return Open(ctx, c.Name, c.Path, create)
		},
		Validate: func(c store.Config) error {
			if c.Path == "" {
				return fmt.Errorf("path is required")
			}
			return nil
		},
	})
}
