// Package pgdoc is a document and chat-history store on a plain PostgreSQL
// table: id text primary key, subject text (the subject tag), kind text,
// content text, metadata jsonb.
//
// Erasure is a DELETE by id. In reclaim mode "full" (the default) the table
// is then rewritten under bounded locks (VACUUM (INDEX_CLEANUP ON), VACUUM
// FULL, CHECKPOINT, WAL rotation: see package store/internal/pg and
// docs/postgres.md); in "delete-only" the reclaim is deferred and reported
// as PENDING-reclaim-deferred, and the adapter declares no reclaim.
//
// What it proves: deletion by key; that neither a lookup by id nor a filter
// on the subject tag returns the record; and, for a role that may read the
// relation files and CHECKPOINT, that no window of the record's content is
// left in the table's heap, TOAST and index files or in pg_wal.
package pgdoc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/internal/pg"
)

// Type is the adapter type name used in configuration.
const Type = "postgres"

// DefaultTable is the table used when the configuration names none.
const DefaultTable = "documents"

// Record is one row.
type Record struct {
	ID       string
	Subject  string // subject tag: capture writes the subject's keyed digest here
	Kind     string // e.g. document, chunk, chat; "document" when empty
	Content  string
	Metadata map[string]any // stored as jsonb; nil is {}
}

// Store is the adapter.
type Store struct {
	name    string
	tbl     pg.Table
	db      *pg.DB
	t       *pg.Target
	storage string // attstorage of content: "e" external, "x" extended (compressible), ...
}

var (
	_ store.Store          = (*Store)(nil)
	_ store.EvidenceReader = (*Store)(nil)
	_ store.Reclaimer      = (*Store)(nil)
	_ store.PhysicalProber = (*Store)(nil)
)

// Open connects to c.DSN and opens c.Table (DefaultTable when empty). With
// create true a missing table is created with content stored EXTERNAL (out
// of line, never compressed, so the byte scan can see long content); with
// create false it is an error wrapping store.ErrUnavailable.
func Open(ctx context.Context, c store.Config, create bool) (*Store, error) {
	if c.Table == "" {
		c.Table = DefaultTable
	}
	if err := pg.ValidateConfig(c); err != nil {
		return nil, fmt.Errorf("open %s: %w", c.Name, err)
	}
	opts, _ := pg.ParseOptions(c)
	tbl, _ := pg.ParseTable(c.Table)
	db, err := pg.Connect(ctx, c.DSN)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", c.Name, err)
	}
	s := &Store{name: c.Name, tbl: tbl, db: db}
	if err := s.ensureTable(ctx, create); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", c.Name, err)
	}
	if s.t, err = pg.NewTarget(ctx, db, tbl, opts); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", c.Name, err)
	}
	return s, nil
}

func (s *Store) ensureTable(ctx context.Context, create bool) error {
	return s.db.With(ctx, func(c *pgx.Conn) error {
		var exists bool
		if err := c.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, s.tbl.Ident()).Scan(&exists); err != nil {
			return fmt.Errorf("look up table: %w", err)
		}
		if !exists && !create {
			return fmt.Errorf("table %s: %w: it does not exist", s.tbl, store.ErrUnavailable)
		}
		if !exists {
			t := s.tbl.Ident()
			for _, q := range []string{
				`CREATE TABLE IF NOT EXISTS ` + t + ` (id text PRIMARY KEY, subject text NOT NULL DEFAULT '', kind text NOT NULL DEFAULT 'document', content text NOT NULL DEFAULT '', metadata jsonb NOT NULL DEFAULT '{}')`,
				`ALTER TABLE ` + t + ` ALTER COLUMN content SET STORAGE EXTERNAL`,
				`CREATE INDEX IF NOT EXISTS ` + pg.Quote(s.tbl.Name+"_subject") + ` ON ` + t + ` (subject)`,
			} {
				if _, err := c.Exec(ctx, q); err != nil {
					return fmt.Errorf("create table: %w", err)
				}
			}
		}
		cols, err := pg.Columns(ctx, c, s.tbl)
		if err != nil {
			return err
		}
		for _, col := range []string{"id", "subject", "kind", "content", "metadata"} {
			if _, ok := cols[col]; !ok {
				return fmt.Errorf("table %s has no column %q (want id, subject, kind, content, metadata)", s.tbl, col)
			}
		}
		s.storage = cols["content"].Storage
		return nil
	})
}

// Table returns the table name, quoted.
func (s *Store) Table() string { return s.tbl.Ident() }

// Info implements store.Store.
func (s *Store) Info() store.Info {
	caps := []store.Capability{store.CapDelete, store.CapProbeByID, store.CapProbeByFilter}
	return store.Info{Name: s.name, Type: Type, Capabilities: append(caps, s.t.Capabilities()...)}
}

// Privileges returns what the connected role may do, as read at open.
func (s *Store) Privileges() pg.Privileges { return s.t.Priv }

// Close implements store.Store.
func (s *Store) Close() error { return s.db.Close() }

// Exec runs one statement on the store's connection.
func (s *Store) Exec(ctx context.Context, sql string, args ...any) error {
	return s.db.Exec(ctx, sql, args...)
}

// Put inserts or replaces a record.
func (s *Store) Put(ctx context.Context, r Record) error {
	if r.ID == "" {
		return errors.New("put document: empty id")
	}
	if r.Kind == "" {
		r.Kind = "document"
	}
	meta, err := json.Marshal(r.Metadata)
	if err != nil || r.Metadata == nil {
		meta = []byte("{}")
	}
	err = s.db.Exec(ctx, `INSERT INTO `+s.tbl.Ident()+` (id, subject, kind, content, metadata) VALUES ($1, $2, $3, $4, $5::text::jsonb)
		ON CONFLICT (id) DO UPDATE SET subject = excluded.subject, kind = excluded.kind, content = excluded.content, metadata = excluded.metadata`,
		r.ID, r.Subject, r.Kind, r.Content, string(meta))
	if err != nil {
		return fmt.Errorf("put document: %w", err)
	}
	return nil
}

// Get returns the record with id, or nil when there is none.
func (s *Store) Get(ctx context.Context, id string) (*Record, error) {
	rs, err := s.query(ctx, `WHERE id = $1`, id)
	if err != nil || len(rs) == 0 {
		return nil, err
	}
	return &rs[0], nil
}

// BySubject returns the records tagged with subject, ordered by id.
func (s *Store) BySubject(ctx context.Context, subject string) ([]Record, error) {
	return s.query(ctx, `WHERE subject = $1 ORDER BY id`, subject)
}

func (s *Store) query(ctx context.Context, where string, args ...any) ([]Record, error) {
	var out []Record
	err := s.db.With(ctx, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT id, subject, kind, content, metadata::text FROM `+s.tbl.Ident()+` `+where, args...)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Record, error) {
			var r Record
			var meta string
			if err := row.Scan(&r.ID, &r.Subject, &r.Kind, &r.Content, &meta); err != nil {
				return r, err
			}
			return r, json.Unmarshal([]byte(meta), &r.Metadata)
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("query documents: %w", err)
	}
	return out, nil
}
