package pgvector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Put inserts or replaces a record (a replace is a delete and an insert in
// one transaction).
func (s *Store) Put(ctx context.Context, r Record) error {
	if r.ID == "" {
		return errors.New("put vector: empty id")
	}
	if len(r.Embedding) == 0 || s.dim != 0 && len(r.Embedding) != s.dim {
		return fmt.Errorf("put vector: %d dimensions, store has %d", len(r.Embedding), s.dim)
	}
	meta := map[string]any{}
	for k, v := range r.Metadata {
		meta[k] = v
	}
	if r.Subject != "" {
		meta["subject"] = r.Subject
	}
	mj, err := json.Marshal(meta)
	if err != nil {
		return fmt.Errorf("put vector: metadata: %w", err)
	}
	t := s.tbl.Ident()
	var ins string
	var args []any
	if s.lay.name == SchemaLangChain {
		u, isUUID := canonicalUUID(r.ID)
		if !isUUID && !s.lay.customID {
			return errors.New("put vector: this langchain table has no custom_id column, so keys must be uuids")
		}
		var uuid, coll, custom any
		if isUUID {
			uuid = u
		}
		if r.Collection != "" {
			coll = r.Collection
		}
		cols, vals := "uuid, collection_id, embedding, document, cmetadata", "COALESCE($1::uuid, gen_random_uuid()), $2::uuid, $3::text::vector, $4, $5::text::"+s.metaType()
		if s.lay.customID {
			custom = r.ID
			cols, vals = cols+", custom_id", vals+", $6"
		}
		ins = `INSERT INTO ` + t + ` (` + cols + `) VALUES (` + vals + `)`
		args = []any{uuid, coll, vectorText(r.Embedding), r.Content, string(mj)}
		if s.lay.customID {
			args = append(args, custom)
		}
	} else {
		ins = `INSERT INTO ` + t + ` (id, embedding, content, metadata) VALUES ($1, $2::text::vector, $3, $4::text::jsonb)`
		args = []any{r.ID, vectorText(r.Embedding), r.Content, string(mj)}
	}
	where, wargs := s.lay.match([]string{r.ID})
	err = s.db.With(ctx, func(c *pgx.Conn) error {
		return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `DELETE FROM `+t+` WHERE `+where, wargs...); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, ins, args...)
			return err
		})
	})
	if err != nil {
		return fmt.Errorf("put vector: %w", err)
	}
	return nil
}

// metaType is the metadata column's type as a cast target.
func (s *Store) metaType() string {
	if s.lay.name == SchemaLangChain && s.lay.metaJSON {
		return "json"
	}
	return "jsonb"
}

// row is one selected record with the keys it answers to.
type row struct {
	ids []string
	Record
}

func (s *Store) selectList() string {
	return s.lay.idsExpr() + `, ` + s.lay.embedding + `::text, COALESCE(` + s.lay.content + `, ''), COALESCE(` + s.lay.metadata + `::text, '{}')`
}

func scanRow(r pgx.CollectableRow) (row, error) {
	var x row
	var vec, meta string
	if err := r.Scan(&x.ids, &vec, &x.Content, &meta); err != nil {
		return x, err
	}
	v, err := parseVector(vec)
	if err != nil {
		return x, err
	}
	x.Embedding = v
	if err := json.Unmarshal([]byte(meta), &x.Metadata); err != nil {
		return x, fmt.Errorf("parse metadata: %w", err)
	}
	if sub, ok := x.Metadata["subject"].(string); ok {
		x.Subject = sub
	}
	if len(x.ids) > 0 {
		x.ID = x.ids[len(x.ids)-1] // custom_id when there is one
	}
	return x, nil
}

func (s *Store) query(ctx context.Context, tail string, args ...any) ([]row, error) {
	var out []row
	err := s.db.With(ctx, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT `+s.selectList()+` FROM `+s.tbl.Ident()+` `+tail, args...)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, scanRow)
		return err
	})
	return out, err
}

// Get returns the record with key id, or nil.
func (s *Store) Get(ctx context.Context, id string) (*Record, error) {
	where, args := s.lay.match([]string{id})
	rs, err := s.query(ctx, `WHERE `+where+` LIMIT 1`, args...)
	if err != nil {
		return nil, fmt.Errorf("get vector: %w", err)
	}
	if len(rs) == 0 {
		return nil, nil
	}
	return &rs[0].Record, nil
}

// BySubject returns the keys of the records tagged with subject; a record
// in the langchain layout with a custom_id answers to both keys.
func (s *Store) BySubject(ctx context.Context, subject string) ([][]string, error) {
	var out [][]string
	err := s.db.With(ctx, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT `+s.lay.idsExpr()+` FROM `+s.tbl.Ident()+` WHERE `+s.lay.metadata+`->>'subject' = $1`, subject)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, pgx.RowTo[[]string])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("query vectors: %w", err)
	}
	return out, nil
}

// Neighbor is one search result.
type Neighbor struct {
	ID       string
	Subject  string
	Distance float64
	ids      []string
}

// Search returns the k nearest records to q by L2 distance, nearest first.
// With exact true the vector index is not used (a sequential scan: every
// row is compared); otherwise the planner may use an approximate index.
func (s *Store) Search(ctx context.Context, q []float32, k int, exact bool) ([]Neighbor, error) {
	return s.search(ctx, q, k, "<->", exact)
}

func (s *Store) search(ctx context.Context, q []float32, k int, op string, exact bool) ([]Neighbor, error) {
	if s.dim != 0 && len(q) != s.dim {
		return nil, fmt.Errorf("search vectors: %d dimensions, store has %d", len(q), s.dim)
	}
	where := ""
	if s.dim == 0 { // a column without fixed dimensions may mix sizes
		where = fmt.Sprintf(`WHERE vector_dims(%s) = %d`, s.lay.embedding, len(q))
	}
	qs := `SELECT ` + s.lay.idsExpr() + `, COALESCE(` + s.lay.metadata + `->>'subject', ''), (` + s.lay.embedding + ` ` + op + ` $1::text::vector)::float8 AS d FROM ` +
		s.tbl.Ident() + ` ` + where + ` ORDER BY ` + s.lay.embedding + ` ` + op + ` $1::text::vector LIMIT $2`
	var out []Neighbor
	err := s.db.With(ctx, func(c *pgx.Conn) error {
		return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
			settings := []string{"SET LOCAL enable_seqscan = off"}
			if exact {
				settings = []string{"SET LOCAL enable_indexscan = off", "SET LOCAL enable_bitmapscan = off"}
			}
			for _, q := range settings {
				if _, err := tx.Exec(ctx, q); err != nil {
					return err
				}
			}
			rows, err := tx.Query(ctx, qs, vectorText(q), k)
			if err != nil {
				return err
			}
			out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Neighbor, error) {
				var n Neighbor
				err := r.Scan(&n.ids, &n.Subject, &n.Distance)
				if len(n.ids) > 0 {
					n.ID = n.ids[len(n.ids)-1]
				}
				return n, err
			})
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("search vectors: %w", err)
	}
	return out, nil
}
