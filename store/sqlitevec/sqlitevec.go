// Package sqlitevec is a vector store on sqlite-vec's vec0 virtual table in
// an embedded SQLite file: id, embedding (float32) and a subject tag.
//
// sqlite-vec's DELETE only clears a validity bit: the vector stays inside a
// live chunk blob, where neither VACUUM nor secure_delete reaches it. This
// adapter therefore overwrites the vector with zeros before it deletes the
// row, then reclaims like any SQLite file (secure_delete, WAL checkpoint with
// truncation, a free-space audit, then the non-zero unused bytes it finds
// zeroed in place, or, when that is refused, REINDEX of indexes holding
// stale cells or VACUUM: docs/sqlite.md).
//
// What it proves: deletion by key; that neither a lookup by id, a filter on
// the subject tag, nor a nearest-neighbour search with the record's own
// vector returns it; and that no window of the record's float32 encoding is
// left in the database file, its -wal, -journal or -shm file.
package sqlitevec

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/internal/sqlitex"
)

// Type is the adapter type name used in configuration.
const Type = "sqlite-vec"

// SimilarityK is how many neighbours the similarity probe asks for.
const SimilarityK = 10

// Record is one vector.
type Record struct {
	ID        string
	Subject   string // subject tag: capture writes the subject's keyed digest here
	Embedding []float32
}

// Store is the adapter.
type Store struct {
	name string
	path string
	dim  int
	db   *sql.DB
}

var (
	_ store.Store          = (*Store)(nil)
	_ store.EvidenceReader = (*Store)(nil)
	_ store.Reclaimer      = (*Store)(nil)
	_ store.PhysicalProber = (*Store)(nil)
)

// Open opens the store at path with vectors of dim dimensions, creating it
// when create is true.
func Open(ctx context.Context, name, path string, dim int, create bool) (*Store, error) {
	if dim <= 0 || dim > 8192 {
		return nil, fmt.Errorf("open %s: dimensions must be 1..8192, got %d", path, dim)
	}
	db, err := sqlitex.Open(ctx, path, create)
	if err != nil {
		return nil, err
	}
	ddl := fmt.Sprintf(`CREATE VIRTUAL TABLE IF NOT EXISTS vectors USING vec0(id TEXT PRIMARY KEY, embedding float[%d], subject TEXT)`, dim)
	if _, err := db.ExecContext(ctx, ddl); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return &Store{name: name, path: path, dim: dim, db: db}, nil
}

// Path returns the database file.
func (s *Store) Path() string { return s.path }

// Dimensions returns the vector size.
func (s *Store) Dimensions() int { return s.dim }

// Info implements store.Store.
func (s *Store) Info() store.Info {
	return store.Info{Name: s.name, Type: Type, Capabilities: []store.Capability{
		store.CapDelete, store.CapProbeByID, store.CapProbeByFilter, store.CapProbeBySimilarity, store.CapReclaim, store.CapProbePhysical,
	}}
}

// Close implements store.Store.
func (s *Store) Close() error { return s.db.Close() }

// Put inserts or replaces a vector.
func (s *Store) Put(ctx context.Context, r Record) error {
	return s.put(ctx, []Record{r}, "put vector")
}

// PutBatch inserts or replaces vectors in one transaction: all of them or,
// on an error, none. A vector whose id comes twice is written as the last
// one says, as Puts in that order would.
func (s *Store) PutBatch(ctx context.Context, rs []Record) error {
	if len(rs) == 0 {
		return nil
	}
	return s.put(ctx, rs, "put vectors")
}

func (s *Store) put(ctx context.Context, rs []Record, what string) error {
	for _, r := range rs {
		if r.ID == "" {
			return fmt.Errorf("%s: empty id", what)
		}
		if len(r.Embedding) != s.dim {
			return fmt.Errorf("%s: %d dimensions, store has %d", what, len(r.Embedding), s.dim)
		}
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer tx.Rollback()
	for _, r := range rs {
		// vec0 has no upsert: replace = delete + insert.
		if _, err := tx.ExecContext(ctx, `DELETE FROM vectors WHERE id = ?`, r.ID); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO vectors (id, embedding, subject) VALUES (?, ?, ?)`, r.ID, store.Float32LE(r.Embedding), r.Subject); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// Get returns the vector with id, or nil.
func (s *Store) Get(ctx context.Context, id string) (*Record, error) {
	var r Record
	var blob []byte
	err := s.db.QueryRowContext(ctx, `SELECT id, subject, embedding FROM vectors WHERE id = ?`, id).Scan(&r.ID, &r.Subject, &blob)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get vector: %w", err)
	}
	r.Embedding = decode(blob)
	return &r, nil
}

// Neighbor is one search result.
type Neighbor struct {
	ID       string
	Subject  string
	Distance float64
}

// Search returns the k nearest vectors to q, nearest first.
func (s *Store) Search(ctx context.Context, q []float32, k int) ([]Neighbor, error) {
	if len(q) != s.dim {
		return nil, fmt.Errorf("search vectors: %d dimensions, store has %d", len(q), s.dim)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT id, subject, distance FROM vectors WHERE embedding MATCH ? AND k = ? ORDER BY distance`, store.Float32LE(q), k)
	if err != nil {
		return nil, fmt.Errorf("search vectors: %w", err)
	}
	defer rows.Close()
	var out []Neighbor
	for rows.Next() {
		var n Neighbor
		if err := rows.Scan(&n.ID, &n.Subject, &n.Distance); err != nil {
			return nil, fmt.Errorf("search vectors: %w", err)
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// BySubject returns the ids tagged with subject.
func (s *Store) BySubject(ctx context.Context, subject string) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id FROM vectors WHERE subject = ?`, subject)
	if err != nil {
		return nil, fmt.Errorf("query vectors: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("query vectors: %w", err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// Delete implements store.Store: zero the vector in place, then delete the row.
func (s *Store) Delete(ctx context.Context, keys []string) error {
	zero := make([]byte, 4*s.dim)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("delete vectors: %w", err)
	}
	defer tx.Rollback()
	for _, k := range keys {
		if _, err := tx.ExecContext(ctx, `UPDATE vectors SET embedding = ?, subject = '' WHERE id = ?`, zero, k); err != nil {
			return fmt.Errorf("delete vectors: overwrite: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM vectors WHERE id = ?`, k); err != nil {
			return fmt.Errorf("delete vectors: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("delete vectors: %w", err)
	}
	return nil
}

// ReadEvidence implements store.EvidenceReader: the vector's windows in its
// stored float32 encoding, its subject tag, and the vector itself. Windows
// that another live vector (outside keys) also holds are counted as Shared;
// no holder is named (see store.DropShared: an identical vector cannot tell
// a copy from an identical boilerplate chunk).
func (s *Store) ReadEvidence(ctx context.Context, keys []string) (map[string]*store.Evidence, error) {
	batch := map[string]bool{}
	out := map[string]*store.Evidence{}
	for _, k := range keys {
		batch[k] = true
		r, err := s.Get(ctx, k)
		if err != nil {
			return nil, fmt.Errorf("read evidence: %w", err)
		}
		if r == nil {
			continue
		}
		e := &store.Evidence{Key: k, Filter: map[string]string{"subject": r.Subject}, Vector: r.Embedding}
		e.AddWindows(store.Float32LE(r.Embedding))
		out[k] = e
	}
	err := store.DropShared(ctx, out, s.liveVectors(ctx, batch))
	if err != nil {
		return nil, fmt.Errorf("read evidence: %w", err)
	}
	return out, nil
}

// ProbeLogical implements store.Store.
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
		e := ev[k]
		if e != nil && e.Filter["subject"] != "" {
			res.Methods = append(res.Methods, "by-filter:subject")
			tag := e.Filter["subject"]
			if _, ok := bySubject[tag]; !ok { // one filter query per subject tag
				ids, err := s.BySubject(ctx, tag)
				if err != nil {
					return nil, fmt.Errorf("probe: %w", err)
				}
				bySubject[tag] = map[string]bool{}
				for _, id := range ids {
					bySubject[tag][id] = true
				}
			}
			res.ByFilter = bySubject[tag][k]
		}
		if e != nil && len(e.Vector) == s.dim && !res.ByID {
			// vec0's KNN reads the same table: with no row for the key, no
			// search can return it (see store/pgvector: by-rank).
			res.Methods = append(res.Methods, fmt.Sprintf("by-similarity:k=%d:by-rank", SimilarityK))
		} else if e != nil && len(e.Vector) == s.dim {
			res.Methods = append(res.Methods, fmt.Sprintf("by-similarity:k=%d", SimilarityK))
			ns, err := s.Search(ctx, e.Vector, SimilarityK)
			if err != nil {
				return nil, fmt.Errorf("probe: %w", err)
			}
			for _, n := range ns {
				res.BySimilarity = res.BySimilarity || n.ID == k
			}
		}
		out = append(out, res)
	}
	return out, nil
}

// Reclaim implements store.Reclaimer: it first zeroes every invalidated
// vec0 slot that still holds a vector (rows deleted by plain SQL, which
// leaves the vector in its chunk), then reclaims the file.
func (s *Store) Reclaim(ctx context.Context) (store.ReclaimReport, error) {
	n, err := s.zeroInvalidSlots(ctx)
	if err != nil {
		return store.ReclaimReport{}, fmt.Errorf("reclaim: %w", err)
	}
	rep, err := sqlitex.Reclaim(ctx, s.db, s.path)
	rep.Method = "vector zeroed before DELETE; invalidated vec0 slots zeroed; " + rep.Method
	rep.Steps = append([]string{fmt.Sprintf("zeroed %d invalidated vec0 slots", n)}, rep.Steps...)
	return rep, err
}

// ProbePhysical implements store.PhysicalProber.
func (s *Store) ProbePhysical(ctx context.Context, set *store.NeedleSet) (store.ScanReport, error) {
	return sqlitex.Scan(ctx, s.path, set)
}

func decode(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

func init() {
	store.Register(Type, store.Adapter{
		Open: func(ctx context.Context, c store.Config, create bool) (store.Store, error) {
			return Open(ctx, c.Name, c.Path, c.Dimensions, create)
		},
		Validate: func(c store.Config) error {
			if c.Path == "" {
				return fmt.Errorf("path is required")
			}
			if c.Dimensions <= 0 {
				return fmt.Errorf("sqlite-vec needs dimensions > 0")
			}
			return nil
		},
		List: func(ctx context.Context, c store.Config, fn func(store.Listed) error) error {
			return sqlitex.ListTable(ctx, c.Path, "vectors", "id", []string{"embedding"}, fn)
		},
		Proof: func(store.Config) (string, string) {
			return "physical", "the database file and its -wal, -journal and -shm files are read byte by byte after reclaim (secure_delete, WAL truncation, a free-space audit, then the non-zero unused bytes it finds zeroed in place or, when that is refused, REINDEX of indexes whose pages hold stale cells, or VACUUM: docs/sqlite.md)"
		},
	})
}

// Identity implements store.Identifier: the database file's device and
// inode.
func (s *Store) Identity(ctx context.Context) (string, error) { return sqlitex.FileIdentity(s.path) }
