package sqlitex

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/amnesia-dev/amnesia/store"
)

// CheckFile is the read-only start of the SQLite adapters' checks: the file
// at path exists (it is never created), is a regular file this process may
// write (delete and VACUUM write it, and its directory for the -wal and
// -journal files), and opens as a SQLite database. It returns the database
// opened read-only (mode=ro: no statement can write it; immutable when it
// has no -wal file, so that not even SQLite's -shm is created) for the adapter's
// own catalog checks, or nil and the problems that stop it.
func CheckFile(ctx context.Context, path string) (*sql.DB, []store.Problem) {
	bad := func(format string, a ...any) (*sql.DB, []store.Problem) {
		return nil, []store.Problem{{Severity: store.SeverityError, Key: "path", Message: fmt.Sprintf(format, a...)}}
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return bad("%s does not exist (amnesia never creates a store it is to erase from: check the path; a relative path is resolved against the directory of the configuration file)", path)
	case err != nil:
		return bad("%s: %v", path, err)
	case !fi.Mode().IsRegular():
		return bad("%s is not a regular file", path)
	}
	var probs []store.Problem
	if syscall.Access(path, 2 /* W_OK */) != nil {
		probs = append(probs, store.Problem{Severity: store.SeverityError, Key: "path", Message: path + " is not writable by this process: the erasure could not delete from it"})
	}
	if syscall.Access(filepath.Dir(path), 2|1 /* W_OK|X_OK */) != nil {
		probs = append(probs, store.Problem{Severity: store.SeverityError, Key: "path", Message: "the directory of " + path + " is not writable by this process: SQLite writes its -wal and -journal files there"})
	}
	q := url.Values{}
	q.Set("mode", "ro")
	q.Set("_busy_timeout", "5000")
	if _, err := os.Stat(walFile(path)); errors.Is(err, fs.ErrNotExist) {
		// No WAL: no connection has the database open in WAL mode and every
		// page is in the main file. immutable=1 reads it without creating
		// the -wal and -shm files a read-only WAL open leaves behind.
		q.Set("immutable", "1")
	}
	db, err := sql.Open("sqlite3", "file:"+path+"?"+q.Encode())
	if err != nil {
		return bad("%s: %v", path, err)
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master`).Scan(&n); err != nil {
		db.Close()
		if ctx.Err() != nil {
			return bad("%s: %v", path, ctx.Err())
		}
		return bad("%s does not open as a SQLite database: %v", path, err)
	}
	if len(probs) > 0 {
		db.Close()
		return nil, probs
	}
	return db, nil
}

// TableSQL returns the CREATE statement of table, "" when there is none.
func TableSQL(ctx context.Context, db *sql.DB, table string) (string, error) {
	var ddl string
	err := db.QueryRowContext(ctx, `SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?`, table).Scan(&ddl)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return ddl, err
}

// TableColumns returns the column names of table (a virtual table's
// included: sqlite-vec is loaded on every connection).
func TableColumns(ctx context.Context, db *sql.DB, table string) (map[string]bool, error) {
	rows, err := db.QueryContext(ctx, `SELECT name FROM pragma_table_info(?)`, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		out[strings.ToLower(name)] = true
	}
	return out, rows.Err()
}

// MissingColumns returns the columns of want that have is missing.
func MissingColumns(have map[string]bool, want ...string) []string {
	var out []string
	for _, c := range want {
		if !have[c] {
			out = append(out, c)
		}
	}
	return out
}
