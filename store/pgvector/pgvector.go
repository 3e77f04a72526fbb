// Package pgvector is a vector store on a PostgreSQL table with pgvector, in
// one of two layouts:
//
//   - the default: a configurable table (id text primary key, embedding
//     vector(n) with an HNSW index, content text, metadata jsonb), the subject
//     tag in metadata->>'subject';
//   - "langchain": the tables langchaingo's pgvector store writes
//     (langchain_pg_embedding: uuid primary key, collection_id, embedding,
//     document, cmetadata json; Python LangChain's variant adds custom_id and
//     uses jsonb). Its Go interface has no delete, so amnesia deletes by key:
//     the uuid, or custom_id where that column exists. The subject tag is
//     cmetadata->>'subject'.
//
// Erasure is a DELETE by key; reclaim mode "full" then runs VACUUM
// (INDEX_CLEANUP ON), VACUUM FULL (which builds each index, the vector
// index included, once), REINDEX INDEX CONCURRENTLY of the vector indexes
// only if VACUUM FULL timed out, CHECKPOINT and WAL rotation under bounded
// locks (package store/internal/pg, docs/postgres.md).
//
// What it proves: deletion by key; that neither a lookup by key, a filter on
// the subject tag, nor a k=10 nearest-neighbour search with the record's own
// vector (exact, and through the vector index, which is approximate) returns
// it; and, for a role that may read the relation files and CHECKPOINT, that
// no window of the vector's on-disk encoding (int16 dim, int16 unused,
// float4 elements in the server's byte order: little-endian on every
// platform amnesia supports) or of the content is left in the heap, TOAST,
// index files or pg_wal.
package pgvector

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/internal/pg"
)

// Type is the adapter type name used in configuration.
const Type = "pgvector"

// Layouts (store.Config.Schema, the older name of Preset).
const (
	SchemaDefault   = PresetDefault
	SchemaLangChain = PresetLangChain
)

// Default table names.
const (
	DefaultTable             = "embeddings"
	LangChainTable           = "langchain_pg_embedding"
	LangChainCollectionTable = "langchain_pg_collection"
)

// SimilarityK is how many neighbours the similarity probe asks for.
const SimilarityK = 10

// MaxDimensions is the most dimensions a vector column may have.
const MaxDimensions = 16000

// Record is one vector row.
type Record struct {
	ID         string // key: id; in the langchain layout the uuid, or custom_id where it exists
	Subject    string // subject tag, stored as metadata->>'subject' (or where the mapping says)
	Embedding  []float32
	Content    string         // content (langchain: document)
	Metadata   map[string]any // other metadata; Subject overrides its "subject"
	Collection string         // langchain: collection_id (a uuid), optional
	Parent     string         // the mapped parent link, when there is one (read only)
}

// Store is the adapter.
type Store struct {
	name     string
	tbl      pg.Table
	lay      layout
	dim      int // 0: the column has no fixed dimensions (langchain without them)
	db       *pg.DB
	t        *pg.Target
	metaJSON bool              // the subject's JSON column is json, not jsonb
	storage  map[string]string // attstorage of each content column
	vindex   pg.Index          // a valid vector index, for the approximate probe; Name "" if none
}

var (
	_ store.Store          = (*Store)(nil)
	_ store.EvidenceReader = (*Store)(nil)
	_ store.Reclaimer      = (*Store)(nil)
	_ store.PhysicalProber = (*Store)(nil)
)

// Open connects to c.DSN and opens the table. With create true, a missing
// table in the default layout is created (with the vector extension if
// needed, an HNSW index, and content stored EXTERNAL so the byte scan sees
// long content uncompressed); langchain tables are the application's and are
// never created. With create false a missing table is an error wrapping
// store.ErrUnavailable.
func Open(ctx context.Context, c store.Config, create bool) (*Store, error) {
	if err := validate(c); err != nil {
		return nil, fmt.Errorf("open %s: %w", c.Name, err)
	}
	lay, _ := resolve(c)
	opts, _ := pg.ParseOptions(c)
	tbl, _ := pg.ParseTable(lay.Table)
	db, err := pg.Connect(ctx, c.DSN)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", c.Name, err)
	}
	s := &Store{name: c.Name, tbl: tbl, lay: lay, dim: c.Dimensions, db: db}
	if err := s.ensure(ctx, create); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", c.Name, err)
	}
	if s.t, err = pg.NewTarget(ctx, db, tbl, opts); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", c.Name, err)
	}
	s.t.Reindex = pg.IsVector
	return s, nil
}

func (s *Store) ensure(ctx context.Context, create bool) error {
	return s.db.With(ctx, func(c *pgx.Conn) error {
		var exists bool
		if err := c.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, s.tbl.Ident()).Scan(&exists); err != nil {
			return fmt.Errorf("look up table: %w", err)
		}
		switch {
		case !exists && (!create || !s.lay.create):
			return fmt.Errorf("table %s: %w: it does not exist", s.tbl, store.ErrUnavailable)
		case !exists:
			if err := s.create(ctx, c); err != nil {
				return err
			}
		}
		cols, err := pg.Columns(ctx, c, s.tbl)
		if err != nil {
			return err
		}
		if err := s.lay.bind(cols); err != nil {
			return fmt.Errorf("table %s: %w", s.tbl, err)
		}
		if err := s.lay.BindCollections(ctx, c); err != nil {
			return err
		}
		s.metaJSON = cols[s.lay.Subject.JSON].Type == "json"
		s.storage = map[string]string{}
		for _, c := range s.lay.Content {
			s.storage[c] = cols[c].Storage
		}
		if d := cols[s.lay.vector].Typmod; d > 0 {
			if s.dim != 0 && s.dim != d {
				return fmt.Errorf("table %s: column %s has %d dimensions, configuration says %d", s.tbl, pg.Display(s.lay.vector), d, s.dim)
			}
			s.dim = d
		}
		idx, err := pg.Indexes(ctx, c, s.tbl)
		if err != nil {
			return err
		}
		for _, i := range idx {
			if pg.IsVector(i) && i.Valid && !i.Leftover && operator(i.OpClass) != "" {
				s.vindex = i
				break
			}
		}
		return nil
	})
}

func (s *Store) create(ctx context.Context, c *pgx.Conn) error {
	if s.dim <= 0 {
		return fmt.Errorf("create table %s: dimensions are required", s.tbl)
	}
	var hasType bool
	if err := c.QueryRow(ctx, `SELECT to_regtype('vector') IS NOT NULL`).Scan(&hasType); err != nil {
		return fmt.Errorf("create table: %w", err)
	}
	t := s.tbl.Ident()
	stmts := []string{
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (id text PRIMARY KEY, embedding vector(%d) NOT NULL, content text NOT NULL DEFAULT '', metadata jsonb NOT NULL DEFAULT '{}')`, t, s.dim),
		`ALTER TABLE ` + t + ` ALTER COLUMN content SET STORAGE EXTERNAL`,
		`CREATE INDEX IF NOT EXISTS ` + s.sibling("_embedding_hnsw") + ` ON ` + t + ` USING hnsw (embedding vector_l2_ops)`,
		`CREATE INDEX IF NOT EXISTS ` + s.sibling("_subject") + ` ON ` + t + ` ((metadata->>'subject'))`,
	}
	if !hasType {
		stmts = append([]string{`CREATE EXTENSION IF NOT EXISTS vector`}, stmts...)
	}
	for _, q := range stmts {
		if _, err := c.Exec(ctx, q); err != nil {
			return fmt.Errorf("create table: %w", err)
		}
	}
	return nil
}

// sibling is the unqualified, quoted name of an index on the table.
func (s *Store) sibling(suffix string) string { return pg.Quote(s.tbl.Name + suffix) }

// Table returns the table name, quoted.
func (s *Store) Table() string { return s.tbl.Ident() }

// Dimensions returns the vector size (0 when the column has none).
func (s *Store) Dimensions() int { return s.dim }

// Info implements store.Store.
func (s *Store) Info() store.Info {
	caps := []store.Capability{store.CapDelete, store.CapProbeByID, store.CapProbeByFilter, store.CapProbeBySimilarity}
	return store.Info{Name: s.name, Type: Type, Capabilities: append(caps, s.t.Capabilities()...)}
}

// Privileges returns what the connected role may do, as read at open.
func (s *Store) Privileges() pg.Privileges { return s.t.Priv }

// Close implements store.Store.
func (s *Store) Close() error { return s.db.Close() }

// Exec runs one statement on the store's connection. PGlite serves one
// connection at a time, so applications and tests that share it with an open
// store go through here.
func (s *Store) Exec(ctx context.Context, sql string, args ...any) error {
	return s.db.Exec(ctx, sql, args...)
}

func validate(c store.Config) error {
	if err := pg.ValidateConfig(c); err != nil {
		return err
	}
	lay, err := resolve(c)
	if err != nil {
		return err
	}
	if c.Dimensions < 0 || c.Dimensions > MaxDimensions {
		return fmt.Errorf("dimensions must be 1..%d, got %d", MaxDimensions, c.Dimensions)
	}
	if lay.create && c.Dimensions == 0 {
		return fmt.Errorf("pgvector needs dimensions > 0")
	}
	return nil
}

func init() {
	store.Register(Type, store.Adapter{
		Open: func(ctx context.Context, c store.Config, create bool) (store.Store, error) {
			return Open(ctx, c, create)
		},
		Validate: validate,
		Location: pg.Location,
		Proof:    pg.Proof,
		List: func(ctx context.Context, c store.Config, fn func(store.Listed) error) error {
			s, err := Open(ctx, c, false)
			if err != nil {
				return err
			}
			defer s.Close()
			return pg.List(ctx, s.db, s.tbl, s.lay.Mapping, s.lay.vector, fn)
		},
	})
}
