package pg

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Index is one index on the store's table.
type Index struct {
	Schema, Name string
	Method       string // access method: btree, hnsw, ivfflat, ...
	OpClass      string // operator class of the first column, e.g. vector_l2_ops
	Valid        bool   // pg_index.indisvalid
	Leftover     bool   // named like the copies REINDEX CONCURRENTLY makes (_ccnew, _ccold): safe to drop
}

// Ident is the quoted, schema-qualified name for SQL text.
func (i Index) Ident() string { return pgx.Identifier{i.Schema, i.Name}.Sanitize() }

// String is the schema-qualified name for messages.
func (i Index) String() string { return Display(i.Schema) + "." + Display(i.Name) }

// VectorMethods are the access methods whose indexes hold vectors.
var VectorMethods = []string{"hnsw", "ivfflat"}

// Indexes lists t's indexes, its TOAST table's included.
func Indexes(ctx context.Context, c *pgx.Conn, t Table) ([]Index, error) {
	rows, err := c.Query(ctx, `SELECT n.nspname::text, ic.relname::text, am.amname::text,
		COALESCE((SELECT opcname::text FROM pg_opclass WHERE oid = i.indclass[0]), ''), i.indisvalid
		FROM pg_index i
		JOIN pg_class ic ON ic.oid = i.indexrelid
		JOIN pg_namespace n ON n.oid = ic.relnamespace
		JOIN pg_am am ON am.oid = ic.relam
		JOIN pg_class tc ON tc.oid = $1::text::regclass
		WHERE i.indrelid = tc.oid OR i.indrelid = tc.reltoastrelid
		ORDER BY 1, 2`, t.Ident())
	if err != nil {
		return nil, fmt.Errorf("list indexes: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Index, error) {
		var i Index
		err := r.Scan(&i.Schema, &i.Name, &i.Method, &i.OpClass, &i.Valid)
		i.Leftover = isLeftover(i.Name)
		return i, err
	})
	if err != nil {
		return nil, fmt.Errorf("list indexes: %w", err)
	}
	return out, nil
}

// isLeftover reports whether name is one REINDEX CONCURRENTLY gives its
// transient copies: <name>_ccnew[N] or <name>_ccold[N].
func isLeftover(name string) bool {
	for _, suf := range []string{"_ccnew", "_ccold"} {
		i := strings.LastIndex(name, suf)
		if i <= 0 {
			continue
		}
		rest := name[i+len(suf):]
		if strings.Trim(rest, "0123456789") == "" {
			return true
		}
	}
	return false
}

// Invalid returns the invalid indexes of list.
func Invalid(list []Index) []Index {
	var out []Index
	for _, i := range list {
		if !i.Valid {
			out = append(out, i)
		}
	}
	return out
}

// names joins index names for evidence.
func names(list []Index) string {
	s := make([]string, 0, len(list))
	for _, i := range list {
		s = append(s, i.Schema+"."+i.Name)
	}
	return strings.Join(s, ", ")
}

// IsVector reports whether the index's method holds vectors.
func IsVector(i Index) bool {
	for _, m := range VectorMethods {
		if i.Method == m {
			return true
		}
	}
	return false
}

// Column describes one column of a table.
type Column struct {
	Type    string // format_type, e.g. "text", "vector(384)", "jsonb"
	Typmod  int    // atttypmod: a vector's dimensions, -1 when unset
	Storage string // attstorage: p plain, e external, m main, x extended (compressible)
}

// Columns returns t's live columns by name.
func Columns(ctx context.Context, c *pgx.Conn, t Table) (map[string]Column, error) {
	rows, err := c.Query(ctx, `SELECT attname::text, format_type(atttypid, atttypmod), atttypmod, attstorage::text
		FROM pg_attribute WHERE attrelid = $1::text::regclass AND attnum > 0 AND NOT attisdropped`, t.Ident())
	if err != nil {
		return nil, fmt.Errorf("read columns: %w", err)
	}
	out := map[string]Column{}
	var name string
	var col Column
	_, err = pgx.ForEachRow(rows, []any{&name, &col.Type, &col.Typmod, &col.Storage}, func() error {
		out[name] = col
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read columns: %w", err)
	}
	return out, nil
}

// StorageNote says what a column's storage means for the byte scan, or "".
func StorageNote(col string, storage string) string {
	if storage == "x" || storage == "m" {
		return "column " + col + " has compressible storage: values over about 2 KB may be compressed (pglz/lz4) and then invisible to this scan (ALTER TABLE ... ALTER COLUMN " + col + " SET STORAGE EXTERNAL prevents it for new values)"
	}
	return ""
}

// Compressed reports, for the row of tbl that where (with args) selects,
// which of the content columns hold a value PostgreSQL keeps compressed
// (pg_column_compression; pglz or lz4, inline or in TOAST): those bytes are
// not in the relation's files as written, so no byte scan finds them. Only
// columns whose storage allows compression ("x" extended, "m" main) are
// asked about; the others are never compressed. Before PostgreSQL 14
// (serverVersion, as server_version_num) the function does not exist:
// every such value over MinCompressible bytes is then reported as
// compressed, which may under-claim, never over-claim. A row that where
// does not select reports none. CompressedRows answers for the rows of
// many keys at once.
func Compressed(ctx context.Context, db *DB, tbl Table, content []string, storage map[string]string, serverVersion int, where string, args Args) ([]bool, error) {
	out := make([]bool, len(content))
	exprs, idx := compressedExprs(content, storage, serverVersion)
	if len(exprs) == 0 {
		return out, nil
	}
	err := db.With(ctx, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT ARRAY[`+strings.Join(exprs, ", ")+`]::bool[] FROM `+tbl.Ident()+` WHERE `+where+` LIMIT 1`, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var got []bool
			if err := rows.Scan(&got); err != nil {
				return err
			}
			for j, i := range idx {
				out[i] = j < len(got) && got[j]
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("ask which content values are stored compressed: %w", err)
	}
	return out, nil
}

// compressedChunk is how many keys one query of CompressedRows asks about
// (a variable for tests).
var compressedChunk = 1000

// CompressedRows is Compressed for the rows of many keys: out[j] says, for
// the content columns of m (m.Content, in order), which values PostgreSQL
// may keep compressed in the rows that m.Where selects for keys[j]. It
// fails safe, as the evidence read that uses it must (a value reported
// compressed is kept out of the byte scan's coverage; one reported not
// compressed counts as searchable): when several rows answer to a key, a
// column is reported compressed if it is in any of them (the evidence may
// have been read from any one); and a key no row answers to here (its row
// went, or matched the key in SQL but not by exact text, as under a
// case-insensitive collation) reports every column of compressible storage
// compressed. It asks one query per compressedChunk keys, not one per key:
// an erasure's evidence read used to cost a round trip per row.
func CompressedRows(ctx context.Context, db *DB, tbl Table, m Mapping, storage map[string]string, serverVersion int, keys []string) ([][]bool, error) {
	out := make([][]bool, len(keys))
	for j := range out {
		out[j] = make([]bool, len(m.Content))
	}
	exprs, idx := compressedExprs(m.Content, storage, serverVersion)
	if len(exprs) == 0 || len(keys) == 0 {
		return out, nil
	}
	at := map[string][]int{} // key -> its places in keys
	for j, k := range keys {
		at[k] = append(at[k], j)
		for _, i := range idx {
			out[j][i] = true // until a row answers for k
		}
	}
	answered := map[string]bool{} // keys a row answered for already
	err := db.With(ctx, func(c *pgx.Conn) error {
		for lo := 0; lo < len(keys); lo += compressedChunk {
			chunk := keys[lo:min(lo+compressedChunk, len(keys))]
			set := NewKeySet(chunk)
			var a Args
			where := m.Where(&a, chunk) // before the query that reads a
			rows, err := c.Query(ctx, `SELECT `+m.IDs()+`, ARRAY[`+strings.Join(exprs, ", ")+`]::bool[] FROM `+tbl.Ident()+` WHERE `+where, a...)
			if err != nil {
				return err
			}
			var ids []string
			var got []bool
			_, err = pgx.ForEachRow(rows, []any{&ids, &got}, func() error {
				set.Of(ids, func(k string) {
					first := !answered[k]
					answered[k] = true
					for _, j := range at[k] {
						for x, i := range idx {
							c := x < len(got) && got[x]
							if first {
								out[j][i] = c // the first row's answer
							} else {
								out[j][i] = out[j][i] || c // compressed in any row
							}
						}
					}
				})
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ask which content values are stored compressed: %w", err)
	}
	return out, nil
}

// compressedExprs returns Compressed's test of each content column whose
// storage allows compression, as SQL, and that column's index in content.
func compressedExprs(content []string, storage map[string]string, serverVersion int) (exprs []string, idx []int) {
	for i, c := range content {
		if st := storage[c]; st == "x" || st == "m" {
			if serverVersion >= 140000 {
				exprs = append(exprs, "pg_column_compression("+Quote(c)+") IS NOT NULL")
			} else {
				exprs = append(exprs, fmt.Sprintf("COALESCE(octet_length(%s::text) > %d, false)", Quote(c), MinCompressible))
			}
			idx = append(idx, i)
		}
	}
	return exprs, idx
}

// MinCompressible is the size from which Compressed takes a value of
// compressible storage as compressed where the server cannot say (before
// PostgreSQL 14): PostgreSQL compresses a row's values only when the row
// is over about 2 KB (TOAST_TUPLE_THRESHOLD), and a value under that size
// may still be compressed in a wider row, so this threshold is below it.
const MinCompressible = 1024
