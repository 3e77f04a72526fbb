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
	"strings"

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
	Parent   string         // the mapped parent link, when there is one (read only)
}

// Store is the adapter.
type Store struct {
	name    string
	m       pg.Mapping // the table's mapping (the default layout when none is configured)
	fixed   bool       // the default layout, unmapped: Put writes it, and the table may be created
	tbl     pg.Table
	db      *pg.DB
	t       *pg.Target
	storage map[string]string // attstorage of each content column: "e" external, "x" extended (compressible), ...
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
	if err := validate(c); err != nil {
		return nil, fmt.Errorf("open %s: %w", c.Name, err)
	}
	m, _ := resolve(c)
	opts, _ := pg.ParseOptions(c)
	tbl, _ := pg.ParseTable(m.Table)
	db, err := pg.Connect(ctx, c.DSN)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", c.Name, err)
	}
	s := &Store{name: c.Name, tbl: tbl, db: db, m: m, fixed: c.Mapping == nil}
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
		if !exists && (!create || !s.fixed) {
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
		if s.fixed {
			for _, col := range columns {
				if _, ok := cols[col]; !ok {
					return fmt.Errorf("table %s has no column %q (want id, subject, kind, content, metadata)", s.tbl, col)
				}
			}
		}
		if err := s.m.BindColumns(cols); err != nil {
			return fmt.Errorf("table %s: %w", s.tbl, err)
		}
		if err := s.m.BindCollections(ctx, c); err != nil {
			return err
		}
		s.storage = map[string]string{}
		for _, c := range s.m.Content {
			s.storage[c] = cols[c].Storage
		}
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
	args, err := s.putArgs(r)
	if err != nil {
		return err
	}
	if err := s.db.Exec(ctx, s.putSQL(), args...); err != nil {
		return fmt.Errorf("put document: %w", err)
	}
	return nil
}

// PutBatch inserts or replaces records in one transaction (one round trip):
// all of them or, on an error, none. A record whose id comes twice is
// written as the last one says, as Puts in that order would.
func (s *Store) PutBatch(ctx context.Context, rs []Record) error {
	var b pgx.Batch
	sql := s.putSQL()
	for _, r := range rs {
		args, err := s.putArgs(r)
		if err != nil {
			return err
		}
		b.Queue(sql, args...)
	}
	if len(rs) == 0 {
		return nil
	}
	// BEGIN, the statements and COMMIT in one round trip (pg.DB.SendTx).
	if err := s.db.SendTx(ctx, &b); err != nil {
		return fmt.Errorf("put documents: %w", err)
	}
	return nil
}

func (s *Store) putSQL() string {
	return `INSERT INTO ` + s.tbl.Ident() + ` (id, subject, kind, content, metadata) VALUES ($1, $2, $3, $4, $5::text::jsonb)
		ON CONFLICT (id) DO UPDATE SET subject = excluded.subject, kind = excluded.kind, content = excluded.content, metadata = excluded.metadata`
}

// putArgs checks r as Put does and returns the statement's arguments.
func (s *Store) putArgs(r Record) ([]any, error) {
	if r.ID == "" {
		return nil, errors.New("put document: empty id")
	}
	if !s.fixed {
		return nil, errors.New("put document: a mapped table is written by its application, not by amnesia")
	}
	if r.Kind == "" {
		r.Kind = "document"
	}
	meta, err := json.Marshal(r.Metadata)
	if err != nil || r.Metadata == nil {
		meta = []byte("{}")
	}
	return []any{r.ID, r.Subject, r.Kind, r.Content, string(meta)}, nil
}

// Get returns the record with id, or nil when there is none.
func (s *Store) Get(ctx context.Context, id string) (*Record, error) {
	rs, err := s.get(ctx, id)
	if err != nil || rs == nil {
		return nil, err
	}
	return &rs.Record, nil
}

// row is a selected record with the keys it answers to and every mapped
// content column.
type row struct {
	ids      []string
	contents []string
	Record
}

func (s *Store) get(ctx context.Context, id string) (*row, error) {
	var a pg.Args
	rs, err := s.query(ctx, `WHERE `+s.m.Where(&a, []string{id})+` LIMIT 1`, a)
	if err != nil || len(rs) == 0 {
		return nil, err
	}
	return &rs[0], nil
}

// BySubject returns the records tagged with subject (in the mapped
// collections), by key.
func (s *Store) BySubject(ctx context.Context, subject string) ([]Record, error) {
	rs, err := s.bySubject(ctx, subject)
	out := make([]Record, len(rs))
	for i, r := range rs {
		out[i] = r.Record
	}
	return out, err
}

func (s *Store) bySubject(ctx context.Context, subject string) ([]row, error) {
	a := pg.Args{subject}
	return s.query(ctx, `WHERE `+s.m.Subject.Expr()+` = $1 AND `+s.m.Scope(&a)+` ORDER BY 1`, a)
}

func (s *Store) selectList() string {
	cs := make([]string, len(s.m.Content))
	for i, c := range s.m.Content {
		cs[i] = "COALESCE(" + pg.Quote(c) + "::text, '')"
	}
	kind, meta := "'document'", "'{}'"
	if s.fixed {
		kind, meta = "kind", "metadata::text"
	}
	parent := "''"
	if s.m.Parent != nil {
		parent = "COALESCE(" + s.m.Parent.Expr() + ", '')"
	}
	return s.m.IDs() + ", COALESCE(" + s.m.Subject.Expr() + ", ''), " + kind + ", ARRAY[" + strings.Join(cs, ", ") + "]::text[], " + meta + ", " + parent
}

func (s *Store) query(ctx context.Context, where string, args pg.Args) ([]row, error) {
	var out []row
	err := s.db.With(ctx, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT `+s.selectList()+` FROM `+s.tbl.Ident()+` `+where, args...)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
			var x row
			var meta string
			if err := r.Scan(&x.ids, &x.Subject, &x.Kind, &x.contents, &meta, &x.Parent); err != nil {
				return x, err
			}
			if len(x.ids) > 0 {
				x.ID = x.ids[len(x.ids)-1]
			}
			if len(x.contents) > 0 {
				x.Content = x.contents[0]
			}
			return x, json.Unmarshal([]byte(meta), &x.Metadata)
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("query documents: %w", err)
	}
	return out, nil
}

// resolve is c's mapping: the default layout (id, subject, kind, content,
// metadata), with the configured mapping's fields over it.
func resolve(c store.Config) (pg.Mapping, error) {
	m := pg.Mapping{Label: "default", Table: DefaultTable, Key: "id", Subject: pg.Field{Column: "subject"}, Content: []string{"content"}}
	if err := m.Apply(c.Table, c.Mapping); err != nil {
		return m, err
	}
	if c.Mapping != nil && c.Mapping.Vector != "" {
		return m, fmt.Errorf("mapping.vector: a %s store has no vector column (use type pgvector)", Type)
	}
	return m, m.Validate()
}

func validate(c store.Config) error {
	if err := pg.ValidateConfig(c); err != nil {
		return err
	}
	_, err := resolve(c)
	return err
}
