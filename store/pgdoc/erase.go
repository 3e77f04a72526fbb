package pgdoc

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/internal/pg"
)

// Delete implements store.Store: one DELETE by id, under the configured
// lock and statement timeouts.
func (s *Store) Delete(ctx context.Context, keys []string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(keys) == 0 {
		return nil
	}
	var a pg.Args
	if err := s.t.Delete(ctx, keys, s.m.IDs(), `DELETE FROM `+s.tbl.Ident()+` WHERE `+s.m.Where(&a, keys), a...); err != nil {
		return fmt.Errorf("delete documents: %w", err)
	}
	return nil
}

// ReadEvidence implements store.EvidenceReader: windows of the content,
// and the subject tag. Windows that another live row (outside keys) also
// holds are counted as Shared, and that row's id is named in SharedWith.
// The rows of keys are read with one query, which of their content values
// are stored compressed with another (pg.CompressedRows), and each row of
// the table is told apart from them by one lookup (pg.KeySet), not one
// comparison per key.
func (s *Store) ReadEvidence(ctx context.Context, keys []string) (map[string]*store.Evidence, error) {
	rows, err := s.rowsOf(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("read evidence: %w", err)
	}
	comps, err := pg.CompressedRows(ctx, s.db, s.tbl, s.m, s.storage, s.t.Priv.ServerVersion, keys)
	if err != nil {
		return nil, fmt.Errorf("read evidence: %w", err)
	}
	out := map[string]*store.Evidence{}
	for j, k := range keys {
		rs := rows[k]
		if len(rs) == 0 {
			continue
		}
		// Every row the key answers to, as Delete removes them all: the
		// evidence of one alone would leave the others' bytes unsearched.
		comp := comps[j]
		e := &store.Evidence{Key: k, Filter: map[string]string{"subject": rs[0].Subject}}
		for _, r := range rs {
			if e.Filter["subject"] == "" {
				e.Filter["subject"] = r.Subject
			}
			for i, c := range r.contents {
				if i < len(comp) && comp[i] {
					e.AddUnsearchable([]byte(c))
				} else {
					e.AddWindows([]byte(c))
				}
			}
		}
		out[k] = e
	}
	batch := pg.NewKeySet(keys)
	others := func(fn func(key string, b []byte) error) error {
		return s.db.With(ctx, func(c *pgx.Conn) error {
			return s.eachContent(ctx, c, func(ids [][]byte, content []byte) error {
				if batch.HoldsRaw(ids) {
					return nil
				}
				return fn(pg.Holder(ids), content)
			})
		})
	}
	if err := store.DropShared(ctx, out, others); err != nil {
		return nil, fmt.Errorf("read evidence: %w", err)
	}
	return out, nil
}

// rowsOf returns, for each of keys that rows of the mapped collections
// answer to, every such row (a key several rows share: all of them, as
// Delete removes them all), read with one query for all of the keys.
func (s *Store) rowsOf(ctx context.Context, keys []string) (map[string][]*row, error) {
	out := map[string][]*row{}
	if len(keys) == 0 {
		return out, nil
	}
	var a pg.Args
	where := `WHERE ` + s.m.Where(&a, keys) // before the call that reads a
	rs, err := s.query(ctx, where, a)
	if err != nil {
		return nil, err
	}
	return pg.ByKey(keys, rs, func(r *row) []string { return r.ids }), nil
}

// ProbeLogical implements store.Store: by id, and by the subject tag the
// record carried. The ids are looked up with one query for all keys, and
// the subject tag's rows with one query per tag.
func (s *Store) ProbeLogical(ctx context.Context, keys []string, ev map[string]*store.Evidence) ([]store.LogicalResult, error) {
	rows, err := s.rowsOf(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	byTag := map[string]map[string]bool{} // subject tag -> the ids its rows answer to
	out := make([]store.LogicalResult, 0, len(keys))
	for _, k := range keys {
		res := store.LogicalResult{Key: k, Methods: []string{"by-id"}, ByID: len(rows[k]) > 0}
		if e := ev[k]; e != nil && e.Filter["subject"] != "" {
			res.Methods = append(res.Methods, "by-filter:"+s.m.Subject.String())
			tag := e.Filter["subject"]
			ids, ok := byTag[tag]
			if !ok {
				rs, err := s.bySubject(ctx, tag)
				if err != nil {
					return nil, fmt.Errorf("probe: %w", err)
				}
				ids = map[string]bool{}
				for _, x := range rs {
					for _, id := range x.ids {
						ids[id] = true
					}
				}
				byTag[tag] = ids
			}
			u, isUUID := pg.CanonicalUUID(k)
			res.ByFilter = ids[k] || isUUID && ids[u] // pg.Matches, over every row of the tag
		}
		out = append(out, res)
	}
	return out, nil
}

// Reclaim implements store.Reclaimer (see package store/internal/pg). In
// delete-only mode it reclaims nothing and reports PENDING-reclaim-deferred;
// the adapter then does not declare store.CapReclaim.
func (s *Store) Reclaim(ctx context.Context) (store.ReclaimReport, error) {
	return s.t.Reclaim(ctx)
}

// ProbePhysical implements store.PhysicalProber. It is declared only when
// the role may read the relation files and CHECKPOINT.
func (s *Store) ProbePhysical(ctx context.Context, set *store.NeedleSet) (store.ScanReport, error) {
	rep, err := s.t.Probe(ctx, set)
	if err == nil {
		for _, c := range s.m.Content {
			if n := pg.StorageNote(c, s.storage[c]); n != "" {
				rep.Method += "; " + n
			}
		}
	}
	return rep, err
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
			return pg.List(ctx, s.db, s.tbl, s.m, "", fn)
		},
	})
}

// eachContent calls fn with the keys of every row of the table (every
// collection: the files hold them all; the row's key columns that are not
// NULL, in the mapping's order; none for a row with no key) and each of its
// content values. The bytes are the reader's: valid until fn returns. They
// are the values as the server sent them, not decoded into strings or
// arrays (pgx's array decoding was about half of this read's CPU time in a
// profile at 300,000 rows).
func (s *Store) eachContent(ctx context.Context, c *pgx.Conn, fn func(ids [][]byte, content []byte) error) error {
	cols := make([]string, 0, len(s.m.Keys)+len(s.m.Content))
	for _, k := range s.m.Keys {
		cols = append(cols, pg.Quote(k)+"::text")
	}
	for _, col := range s.m.Content {
		cols = append(cols, "COALESCE("+pg.Quote(col)+"::text, '')")
	}
	return pg.EachRaw(ctx, c, s.tbl, cols, len(s.m.Keys), nil, func(ids, contents [][]byte, _ []pgconn.FieldDescription) error {
		for _, v := range contents {
			if err := fn(ids, v); err != nil {
				return err
			}
		}
		return nil
	})
}

// DeleteMark implements store.DeleteMarker: the newest deleting
// transaction's id, which a resumed reclaim's pin check needs.
func (s *Store) DeleteMark() string { return s.t.DeleteMark() }

// SetDeleteMark implements store.DeleteMarker.
func (s *Store) SetDeleteMark(mark string) error { return s.t.SetDeleteMark(mark) }

// Identity implements store.Identifier: the server and the table.
func (s *Store) Identity(ctx context.Context) (string, error) { return s.t.Identity(ctx) }
