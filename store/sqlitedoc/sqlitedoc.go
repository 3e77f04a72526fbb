// Package sqlitedoc is a document store on an embedded SQLite file:
// documents, chunks and chat turns, each with an id, a subject tag and text.
//
// What it proves: deletion by key; that no lookup by id or by subject tag
// returns the record; and, after reclaim (secure_delete, WAL checkpoint with
// truncation, a free-space audit, then the non-zero unused bytes it finds
// zeroed in place, or, when that is refused, REINDEX of indexes holding
// stale cells or VACUUM: docs/sqlite.md), that none of the record's text windows is left
// anywhere in the database file, its -wal, -journal or -shm file.
package sqlitedoc

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

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
	name  string
	path  string
	db    *sql.DB
	m     sqlitex.Mapping // the documents layout unless a mapping is configured
	fixed bool            // the documents layout: Put writes it, Open creates it
}

// defaultMapping is the documents table as a mapping.
func defaultMapping() sqlitex.Mapping {
	return sqlitex.Mapping{Table: "documents", Key: "id", Subject: store.Field{Column: "subject"}, Content: []string{"text"}, Parent: &store.Field{Column: "parent"}}
}

// OpenConfig opens c.Path with c.Mapping (an application's own table) or,
// without one, amnesia's documents table (created with create set).
func OpenConfig(ctx context.Context, c store.Config, create bool) (*Store, error) {
	if c.Mapping == nil {
		return Open(ctx, c.Name, c.Path, create)
	}
	m := defaultMapping()
	if err := m.Apply(c.Mapping); err != nil {
		return nil, fmt.Errorf("open %s: %w", c.Name, err)
	}
	db, err := sqlitex.Open(ctx, c.Path, false)
	if err != nil {
		return nil, err
	}
	if err := m.Bind(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", c.Name, err)
	}
	return &Store{name: c.Name, path: c.Path, db: db, m: m}, nil
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
	return &Store{name: name, path: path, db: db, m: defaultMapping(), fixed: true}, nil
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
	if err := s.checkPut(r); err != nil {
		return err
	}
	if _, err := s.db.ExecContext(ctx, putSQL, r.ID, r.Kind, r.Subject, r.Parent, r.Text); err != nil {
		return fmt.Errorf("put document: %w", err)
	}
	return nil
}

// PutBatch inserts or replaces records in one transaction: all of them or,
// on an error, none. A record whose id comes twice is written as the last
// one says, as Puts in that order would.
func (s *Store) PutBatch(ctx context.Context, rs []Record) error {
	for _, r := range rs {
		if err := s.checkPut(r); err != nil {
			return err
		}
	}
	if len(rs) == 0 {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("put documents: %w", err)
	}
	defer tx.Rollback()
	st, err := tx.PrepareContext(ctx, putSQL)
	if err != nil {
		return fmt.Errorf("put documents: %w", err)
	}
	defer st.Close()
	for _, r := range rs {
		if _, err := st.ExecContext(ctx, r.ID, r.Kind, r.Subject, r.Parent, r.Text); err != nil {
			return fmt.Errorf("put documents: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("put documents: %w", err)
	}
	return nil
}

const putSQL = `INSERT INTO documents (id, kind, subject, parent, text) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET kind = excluded.kind, subject = excluded.subject, parent = excluded.parent, text = excluded.text`

// checkPut returns what Put would refuse in r before writing.
func (s *Store) checkPut(r Record) error {
	if r.ID == "" {
		return errors.New("put document: empty id")
	}
	if !s.fixed {
		return errors.New("put document: a mapped table is written by its application, not by amnesia")
	}
	switch r.Kind {
	case KindDocument, KindChunk, KindChat:
	default:
		return fmt.Errorf("put document: unknown kind %q", r.Kind)
	}
	return nil
}

// Get returns the record with id, or nil when there is none.
func (s *Store) Get(ctx context.Context, id string) (*Record, error) {
	rs, err := s.query(ctx, `WHERE `+sqlitex.Quote(s.m.Key)+` = ?`, id)
	if err != nil || len(rs) == 0 {
		return nil, err
	}
	return &rs[0], nil
}

// BySubject returns the records tagged with subject, ordered by id.
func (s *Store) BySubject(ctx context.Context, subject string) ([]Record, error) {
	return s.query(ctx, `WHERE `+sqlitex.Expr(s.m.Subject)+` = ? ORDER BY 1`, subject)
}

// All returns every record, ordered by id.
func (s *Store) All(ctx context.Context) ([]Record, error) {
	return s.query(ctx, `ORDER BY 1`)
}

func (s *Store) query(ctx context.Context, where string, args ...any) ([]Record, error) {
	rs, err := s.rows(ctx, where, args...)
	out := make([]Record, len(rs))
	for i, r := range rs {
		out[i] = r.Record
	}
	return out, err
}

// row is a record with each mapped content column's value.
type row struct {
	Record
	contents []string
}

func (s *Store) rows(ctx context.Context, where string, args ...any) ([]row, error) {
	kind, parent := "'"+KindDocument+"'", "''"
	if s.fixed {
		kind = "kind"
	}
	if s.m.Parent != nil {
		parent = "COALESCE(CAST(" + sqlitex.Expr(*s.m.Parent) + " AS TEXT), '')"
	}
	cs := make([]string, len(s.m.Content))
	for i, c := range s.m.Content {
		cs[i] = "COALESCE(CAST(" + sqlitex.Quote(c) + " AS TEXT), '')"
	}
	rows, err := s.db.QueryContext(ctx, `SELECT CAST(`+sqlitex.Quote(s.m.Key)+` AS TEXT), `+kind+`, COALESCE(CAST(`+sqlitex.Expr(s.m.Subject)+` AS TEXT), ''), `+parent+`, `+
		strings.Join(cs, `, `)+` FROM `+sqlitex.Quote(s.m.Table)+` `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("query documents: %w", err)
	}
	defer rows.Close()
	var out []row
	for rows.Next() {
		r := row{contents: make([]string, len(cs))}
		dst := []any{&r.ID, &r.Kind, &r.Subject, &r.Parent}
		for i := range r.contents {
			dst = append(dst, &r.contents[i])
		}
		if err := rows.Scan(dst...); err != nil {
			return nil, fmt.Errorf("query documents: %w", err)
		}
		r.Text = strings.Join(r.contents, "\n") // the mapped content columns, in order
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
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+sqlitex.Quote(s.m.Table)+` WHERE `+sqlitex.Quote(s.m.Key)+` = ?`, k); err != nil {
			return fmt.Errorf("delete documents: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("delete documents: %w", err)
	}
	return nil
}

// readFile: ReadEvidence reads the other rows from the database file
// (tests turn it off to compare with the rows read through SQL).
var readFile = true

// ReadEvidence implements store.EvidenceReader: windows tiling the text.
// Windows that another live record (outside keys) also holds are skipped
// and counted as Shared, and that record is named in SharedWith: finding
// them later would prove nothing about this record, but it may be a copy.
// The other records are read from the database file (sqlitex.FileRows),
// or through SQL where the file cannot be read so.
func (s *Store) ReadEvidence(ctx context.Context, keys []string) (map[string]*store.Evidence, error) {
	batch := map[string]bool{}
	out := map[string]*store.Evidence{}
	for _, k := range keys {
		batch[k] = true
		rs, err := s.rows(ctx, `WHERE `+sqlitex.Quote(s.m.Key)+` = ?`, k)
		if err != nil {
			return nil, fmt.Errorf("read evidence: %w", err)
		}
		if len(rs) > 0 {
			e := &store.Evidence{Key: k, Filter: map[string]string{"subject": rs[0].Subject}}
			for _, part := range rs[0].contents { // each content column's windows
				e.AddWindows([]byte(part))
			}
			out[k] = e
		}
	}
	var others []string
	for _, c := range s.m.Content {
		others = append(others, `SELECT CAST(`+sqlitex.Quote(s.m.Key)+` AS TEXT), CAST(`+sqlitex.Quote(c)+` AS BLOB) FROM `+sqlitex.Quote(s.m.Table)+` WHERE `+sqlitex.Quote(c)+` IS NOT NULL`)
	}
	// The other rows are read from the database file (sqlitex.FileRows),
	// or through SQL when the file cannot be read so.
	spec := sqlitex.RowsSpec{Table: s.m.Table, Key: s.m.Key, Content: s.m.Content}
	var err error = &sqlitex.NotRead{Reason: "not tried"}
	if readFile {
		err = store.DropShared(ctx, out, sqlitex.FileOthers(ctx, s.db, s.path, spec, batch))
	}
	if nr := (*sqlitex.NotRead)(nil); errors.As(err, &nr) {
		err = store.DropShared(ctx, out, sqlitex.Others(ctx, s.db, strings.Join(others, " UNION ALL "), batch))
	}
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
			res.Methods = append(res.Methods, "by-filter:"+s.m.Subject.String())
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
	return sqlitex.Reclaim(ctx, s.db, s.path)
}

// ProbePhysical implements store.PhysicalProber.
func (s *Store) ProbePhysical(ctx context.Context, set *store.NeedleSet) (store.ScanReport, error) {
	return sqlitex.Scan(ctx, s.path, set)
}

func init() {
	store.Register(Type, store.Adapter{
		Open: func(ctx context.Context, c store.Config, create bool) (store.Store, error) {
			return OpenConfig(ctx, c, create)
		},
		Validate: func(c store.Config) error {
			if c.Path == "" {
				return fmt.Errorf("path is required")
			}
			m := defaultMapping()
			return m.Apply(c.Mapping)
		},
		List: func(ctx context.Context, c store.Config, fn func(store.Listed) error) error {
			m := defaultMapping()
			if err := m.Apply(c.Mapping); err != nil {
				return err
			}
			return sqlitex.ListTable(ctx, c.Path, m.Table, m.Key, m.Content, fn)
		},
		Proof: func(store.Config) (string, string) {
			return "physical", "the database file and its -wal, -journal and -shm files are read byte by byte after reclaim (secure_delete, WAL truncation, a free-space audit, then the non-zero unused bytes it finds zeroed in place or, when that is refused, REINDEX of indexes whose pages hold stale cells, or VACUUM: docs/sqlite.md)"
		},
	})
}

// Identity implements store.Identifier: the database file's device and
// inode.
func (s *Store) Identity(ctx context.Context) (string, error) { return sqlitex.FileIdentity(s.path) }
