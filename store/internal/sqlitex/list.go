package sqlitex

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strconv"

	"github.com/amnesia-dev/amnesia/store"
)

// OpenReadOnly opens the database at path read-only (mode=ro): no journal
// mode change, no schema, no write. A database with no -wal file (no
// connection has it open in WAL mode, or it is not in WAL mode) is opened
// immutable, so that SQLite creates no -wal or -shm file beside it either;
// otherwise SQLite reads the WAL through the -shm file that is there.
func OpenReadOnly(ctx context.Context, path string) (*sql.DB, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("open %s: %w: %v", path, store.ErrUnavailable, err)
	}
	q := url.Values{}
	q.Set("mode", "ro")
	if _, err := os.Stat(walFile(path)); errors.Is(err, fs.ErrNotExist) {
		q.Set("immutable", "1")
	}
	q.Set("_busy_timeout", "10000")
	db, err := sql.Open("sqlite3", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w: %v", path, store.ErrUnavailable, err)
	}
	return db, nil
}

// ListTable enumerates table's rows read-only as store.Listed: key is the
// key column; the content columns' values, concatenated, are the content;
// every other scalar column is a field, and a text column holding a JSON
// object adds its scalar members (store.AddFields).
func ListTable(ctx context.Context, path, table, key string, content []string, fn func(store.Listed) error) error {
	db, err := OpenReadOnly(ctx, path)
	if err != nil {
		return err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT * FROM `+Quote(table))
	if err != nil {
		return fmt.Errorf("list %s: %w", table, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	isContent := map[string]bool{}
	for _, c := range content {
		isContent[c] = true
	}
	keyAt := -1
	for i, c := range cols {
		if c == key {
			keyAt = i
		}
	}
	if keyAt < 0 {
		return fmt.Errorf("list %s: no column %q (the key)", table, key)
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		r := store.Listed{Fields: map[string]string{}}
		r.Key, _ = scalarText(vals[keyAt])
		for i, c := range cols {
			if i == keyAt {
				continue
			}
			if isContent[c] {
				switch v := vals[i].(type) {
				case []byte:
					r.Content = append(r.Content, v...)
				case string:
					r.Content = append(r.Content, v...)
				}
				continue
			}
			if t, ok := scalarText(vals[i]); ok {
				if _, taken := r.Fields[c]; !taken {
					r.Fields[c] = t
				}
				store.AddFields(r.Fields, c, []byte(t))
			}
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return rows.Err()
}

// scalarText is a column value as text: text, numbers; false for NULL and
// blobs that are not UTF-8 text.
func scalarText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case []byte:
		if isText(x) {
			return string(x), true
		}
	case int64:
		return strconv.FormatInt(x, 10), true
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

func isText(b []byte) bool {
	for _, c := range b {
		if c < 0x09 || (c > 0x0d && c < 0x20) {
			return false
		}
	}
	return len(b) > 0
}
