package pg

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/store"
)

// List enumerates the mapped rows of tbl (the mapped collections only) in a
// READ ONLY transaction: the first key a row answers to is its key; its
// content columns' text and its vector's text form (vector column, when
// not empty) are its content; every other column is a field, and a JSON
// object column adds its scalar members (store.AddFields).
func List(ctx context.Context, db *DB, tbl Table, m Mapping, vector string, fn func(store.Listed) error) error {
	skip := append(append([]string(nil), m.Content...), vector)
	var a Args
	content := "''"
	for _, c := range m.Content {
		content += " || COALESCE(" + Quote(c) + "::text, '')"
	}
	if vector != "" {
		content += " || COALESCE(" + Quote(vector) + "::text, '')"
	}
	q := `SELECT ` + m.IDs() + `, to_jsonb(t) - ` + a.Add(skip) + `::text[], ` + content +
		` FROM ` + tbl.Ident() + ` t WHERE ` + m.Scope(&a)
	return db.With(ctx, func(c *pgx.Conn) error {
		return pgx.BeginTxFunc(ctx, c, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, q, a...)
			if err != nil {
				return fmt.Errorf("list %s: %w", tbl, err)
			}
			defer rows.Close()
			for rows.Next() {
				var ids []string
				var row []byte
				var text string
				if err := rows.Scan(&ids, &row, &text); err != nil {
					return err
				}
				r := store.Listed{Fields: map[string]string{}, Content: []byte(text)}
				if len(ids) > 0 {
					r.Key = ids[0]
				}
				var cols map[string]json.RawMessage
				if err := json.Unmarshal(row, &cols); err != nil {
					return fmt.Errorf("list %s: %w", tbl, err)
				}
				names := make([]string, 0, len(cols))
				for n := range cols {
					names = append(names, n)
				}
				sort.Strings(names)
				for _, n := range names {
					var v any
					if json.Unmarshal(cols[n], &v) != nil {
						continue
					}
					if s, ok := store.Scalar(v); ok {
						r.Fields[n] = s
						store.AddFields(r.Fields, n, []byte(s)) // JSON kept as text
						continue
					}
					if _, isObj := v.(map[string]any); isObj {
						store.AddFields(r.Fields, n, cols[n])
					}
				}
				if err := fn(r); err != nil {
					return err
				}
			}
			return rows.Err()
		})
	})
}

// Proof is the PostgreSQL adapters' store.Adapter.Proof, said without
// connecting: the physical level is possible when the relation files can be
// read (data_dir, or pg_read_binary_file) and the role may run CHECKPOINT
// (Privileges.Physical), which only the server can say. With data_dir it
// says physical, with that condition; without, logical, with how the
// physical level is still reached.
func Proof(c store.Config) (level, why string) {
	if c.DataDir != "" {
		return "physical", "the server's data directory (data_dir) is read: the table's heap, TOAST and index files, free space, and pg_wal; needs the file permissions to read it and a role that may run CHECKPOINT (superuser or pg_checkpoint), which `amnesia check` confirms"
	}
	return "logical", "no data_dir is configured: physical only if the role may run pg_read_binary_file and CHECKPOINT (superuser, or the grants `amnesia check` names), which this line cannot know without connecting; otherwise only the query paths are probed"
}
