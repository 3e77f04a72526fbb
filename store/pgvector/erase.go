package pgvector

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/internal/pg"
)

// Delete implements store.Store: one DELETE by key, under the configured
// lock and statement timeouts.
func (s *Store) Delete(ctx context.Context, keys []string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(keys) == 0 {
		return nil
	}
	var a pg.Args
	where := s.lay.Where(&a, keys)
	if err := s.t.Delete(ctx, keys, s.lay.IDs(), `DELETE FROM `+s.tbl.Ident()+` WHERE `+where, a...); err != nil {
		return fmt.Errorf("delete vectors: %w", err)
	}
	return nil
}

// ReadEvidence implements store.EvidenceReader: windows of the vector's
// on-disk encoding (OnDisk) and of the content, the subject tag, and the
// vector. Windows that another live row (outside keys) also holds are
// counted as Shared; the rows holding windows of the content are named in
// SharedWith, those holding the vector's are not (see store.DropShared).
func (s *Store) ReadEvidence(ctx context.Context, keys []string) (map[string]*store.Evidence, error) {
	// Which content values are stored compressed: one query for all keys
	// (pg.CompressedRows), not one per key.
	comps, err := pg.CompressedRows(ctx, s.db, s.tbl, s.lay.Mapping, s.storage, s.t.Priv.ServerVersion, keys)
	if err != nil {
		return nil, fmt.Errorf("read evidence: %w", err)
	}
	// Every row each key answers to, as Delete removes them all (a
	// custom_id several rows share, a key one row has as uuid and another as
	// custom_id): the evidence of one row alone would leave the others'
	// bytes unsearched. One query for all keys.
	rows, err := s.rowsOf(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("read evidence: %w", err)
	}
	out := map[string]*store.Evidence{}
	for j, k := range keys {
		rs := rows[k]
		if len(rs) == 0 {
			continue
		}
		comp := comps[j]
		e := &store.Evidence{Key: k, Filter: map[string]string{}}
		for _, r := range rs {
			if len(r.Embedding) > 0 {
				if e.Vector == nil {
					e.Vector = r.Embedding // the similarity probe searches with the first
				}
				e.AddWindows(OnDisk(r.Embedding))
			}
			for i, c := range r.contents {
				if i < len(comp) && comp[i] {
					e.AddUnsearchable([]byte(c))
				} else {
					e.AddWindows([]byte(c))
				}
			}
			if r.Subject != "" && e.Filter["subject"] == "" {
				e.Filter["subject"] = r.Subject
			}
		}
		out[k] = e
	}
	batch := pg.NewKeySet(keys)
	others := func(fn func(key string, b []byte) error) error {
		return s.db.With(ctx, func(c *pgx.Conn) error {
			return s.eachOther(ctx, c, func(ids [][]byte, vec []byte, contents [][]byte) error {
				if batch.HoldsRaw(ids) {
					return nil
				}
				if len(vec) > 0 {
					if err := fn("", vec); err != nil {
						return err
					}
				}
				key := pg.Holder(ids)
				for _, c := range contents {
					if err := fn(key, c); err != nil {
						return err
					}
				}
				return nil
			})
		})
	}
	if err := store.DropShared(ctx, out, others); err != nil {
		return nil, fmt.Errorf("read evidence: %w", err)
	}
	return out, nil
}

// ProbeLogical implements store.Store: by key, by the subject tag, and by
// a k=SimilarityK search with the record's own vector, run twice: exact (no
// index: every row compared) and, when the table has a vector index, through
// it (approximate: HNSW and IVFFlat may miss neighbours, so it can only add
// findings, never clear the exact scan's).
func (s *Store) ProbeLogical(ctx context.Context, keys []string, ev map[string]*store.Evidence) ([]store.LogicalResult, error) {
	present, err := s.present(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	bySubject := map[string][][]string{} // one filter query per subject tag
	out := make([]store.LogicalResult, 0, len(keys))
	for _, k := range keys {
		res := store.LogicalResult{Key: k, Methods: []string{"by-id"}, ByID: present[k]}
		e := ev[k]
		if e != nil && e.Filter["subject"] != "" {
			res.Methods = append(res.Methods, "by-filter:"+s.lay.Subject.String())
			tag := e.Filter["subject"]
			idss, ok := bySubject[tag]
			if !ok {
				if idss, err = s.BySubject(ctx, tag); err != nil {
					return nil, fmt.Errorf("probe: %w", err)
				}
				bySubject[tag] = idss
			}
			for _, ids := range idss {
				res.ByFilter = res.ByFilter || matches(ids, k)
			}
		}
		if e != nil && len(e.Vector) > 0 && (s.dim == 0 || len(e.Vector) == s.dim) {
			if !res.ByID {
				// A search reads the same rows as the by-id query (the mapped
				// collections, visible rows): when no row answers to the key,
				// no nearest-neighbour search can return it. Its rank among
				// the neighbours of its own vector is undefined; recorded as
				// such rather than by one sequential scan per record.
				res.Methods = append(res.Methods, fmt.Sprintf("by-similarity:k=%d:exact:by-rank", SimilarityK))
				out = append(out, res)
				continue
			}
			res.Methods = append(res.Methods, fmt.Sprintf("by-similarity:k=%d:exact", SimilarityK))
			found, err := s.similar(ctx, k, e.Vector, "<->", true)
			if err != nil {
				return nil, err
			}
			res.BySimilarity = found
			if s.vindex.Name != "" {
				res.Methods = append(res.Methods, fmt.Sprintf("by-similarity:k=%d:%s-index-%s(approximate)", SimilarityK, s.vindex.Method, strings.TrimSuffix(s.vindex.OpClass, "_ops")))
				found, err := s.similar(ctx, k, e.Vector, operator(s.vindex.OpClass), false)
				if err != nil {
					return nil, err
				}
				res.BySimilarity = res.BySimilarity || found
			}
		}
		out = append(out, res)
	}
	return out, nil
}

// present reports which keys a row of the mapped collections answers to,
// in one query.
func (s *Store) present(ctx context.Context, keys []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(keys) == 0 {
		return out, nil
	}
	var idss [][]string
	err := s.db.With(ctx, func(c *pgx.Conn) error {
		var a pg.Args
		rows, err := c.Query(ctx, `SELECT `+s.lay.IDs()+` FROM `+s.tbl.Ident()+` WHERE `+s.lay.Where(&a, keys), a...)
		if err != nil {
			return err
		}
		idss, err = pgx.CollectRows(rows, pgx.RowTo[[]string])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("get vectors: %w", err)
	}
	seen := map[string]bool{}
	for _, ids := range idss {
		for _, id := range ids {
			seen[id] = true
		}
	}
	for _, k := range keys {
		u, isUUID := canonicalUUID(k)
		out[k] = seen[k] || isUUID && seen[u] // as matches
	}
	return out, nil
}

func (s *Store) similar(ctx context.Context, k string, v []float32, op string, exact bool) (bool, error) {
	ns, err := s.search(ctx, v, SimilarityK, op, exact)
	if err != nil {
		return false, fmt.Errorf("probe: %w", err)
	}
	for _, n := range ns {
		if matches(n.ids, k) {
			return true, nil
		}
	}
	return false, nil
}

// Reclaim implements store.Reclaimer (see package store/internal/pg):
// VACUUM FULL rebuilds the vector indexes with the rest, once; REINDEX INDEX
// CONCURRENTLY rebuilds them only when VACUUM FULL timed out. In delete-only mode it reclaims nothing and reports
// PENDING-reclaim-deferred; the adapter then does not declare reclaim.
func (s *Store) Reclaim(ctx context.Context) (store.ReclaimReport, error) {
	return s.t.Reclaim(ctx)
}

// ProbePhysical implements store.PhysicalProber. It is declared only when
// the role may read the relation files and CHECKPOINT.
func (s *Store) ProbePhysical(ctx context.Context, set *store.NeedleSet) (store.ScanReport, error) {
	rep, err := s.t.Probe(ctx, set)
	if err == nil {
		for _, c := range s.lay.Content {
			if n := pg.StorageNote(c, s.storage[c]); n != "" {
				rep.Method += "; " + n
			}
		}
	}
	return rep, err
}

// DeleteMark implements store.DeleteMarker: the newest deleting
// transaction's id, which a resumed reclaim's pin check needs.
func (s *Store) DeleteMark() string { return s.t.DeleteMark() }

// SetDeleteMark implements store.DeleteMarker.
func (s *Store) SetDeleteMark(mark string) error { return s.t.SetDeleteMark(mark) }

// Identity implements store.Identifier: the server and the table.
func (s *Store) Identity(ctx context.Context) (string, error) { return s.t.Identity(ctx) }

// eachOther calls fn with every row of the table: its key columns that are
// not NULL (in the layout's order), its vector in its on-disk encoding
// (OnDisk; nil when NULL or of no dimensions) and its content values. The
// bytes are the reader's, valid until fn returns. They are read as the
// server sends them, the vector in pgvector's binary form (turned into the
// on-disk one in place), not parsed from text: at 100,000 vectors of 384
// dimensions parsing their text was most of this read's cost. A vector
// that comes back as text anyway (a connection on the simple protocol) is
// parsed.
func (s *Store) eachOther(ctx context.Context, c *pgx.Conn, fn func(ids [][]byte, vec []byte, contents [][]byte) error) error {
	cols := make([]string, 0, len(s.lay.Keys)+1+len(s.lay.Content))
	for _, k := range s.lay.Keys {
		cols = append(cols, pg.Quote(k)+"::text")
	}
	cols = append(cols, pg.Quote(s.lay.vector))
	for _, col := range s.lay.Content {
		cols = append(cols, "COALESCE("+pg.Quote(col)+"::text, '')")
	}
	formats := make(pgx.QueryResultFormats, len(cols))
	for i := range formats {
		formats[i] = pgx.BinaryFormatCode
	}
	var vec []byte
	return pg.EachRaw(ctx, c, s.tbl, cols, len(s.lay.Keys), formats, func(ids, vals [][]byte, fds []pgconn.FieldDescription) error {
		vec = vec[:0]
		switch v := vals[0]; {
		case v == nil:
		case fds[0].Format == pgx.BinaryFormatCode:
			var err error
			if vec, err = onDiskFromSend(vec, v); err != nil {
				return err
			}
		default:
			f, err := parseVector(string(v))
			if err != nil {
				return err
			}
			if len(f) > 0 {
				vec = append(vec, OnDisk(f)...)
			}
		}
		return fn(ids, vec, vals[1:])
	})
}
