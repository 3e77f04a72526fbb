package pg

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ByKey returns, for each of keys that rows of rs answer to (ids gives a
// row's ids), those rows in the order of rs, each once per key: a row may
// answer to a key twice (its uuid and custom_id).
func ByKey[R any](keys []string, rs []R, ids func(*R) []string) map[string][]*R {
	out := map[string][]*R{}
	set := NewKeySet(keys)
	for i := range rs {
		r := &rs[i]
		set.Of(ids(r), func(k string) {
			if n := len(out[k]); n == 0 || out[k][n-1] != r {
				out[k] = append(out[k], r)
			}
		})
	}
	return out
}

// Holder is the key that names a row of EachRaw as the holder of shared
// windows (store.DropShared): its last key that is not NULL (a custom_id
// when a mapping has one), or "" for a row with no key, which is searched
// and named by none.
func Holder(ids [][]byte) string {
	if len(ids) == 0 {
		return ""
	}
	return string(ids[len(ids)-1])
}

// EachRaw runs the SELECT of cols from t, whose first nk columns are a
// row's keys, and calls fn for each row with those of its keys that are
// not NULL (in column order) and its other values (NULL as nil), as the
// server sent them: valid until fn returns, no string made of them. fds
// describes the other values: their Format is the one the server used,
// which formats asks for (pgx.QueryResultFormats; nil: pgx's default) but a
// connection on the simple protocol sends as text.
func EachRaw(ctx context.Context, c *pgx.Conn, t Table, cols []string, nk int, formats pgx.QueryResultFormats,
	fn func(ids, vals [][]byte, fds []pgconn.FieldDescription) error) error {
	var args []any
	if formats != nil {
		args = append(args, formats)
	}
	rows, err := c.Query(ctx, `SELECT `+strings.Join(cols, ", ")+` FROM `+t.Ident(), args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	ids := make([][]byte, 0, nk)
	for rows.Next() {
		vals := rows.RawValues()
		fds := rows.FieldDescriptions()
		if len(vals) != len(cols) || len(fds) != len(cols) {
			return fmt.Errorf("read %s: %d columns, want %d", t, len(vals), len(cols))
		}
		ids = ids[:0]
		for _, v := range vals[:nk] {
			if v != nil {
				ids = append(ids, v)
			}
		}
		if err := fn(ids, vals[nk:], fds[nk:]); err != nil {
			return err
		}
	}
	return rows.Err()
}
