package sqlitedoc

import (
	"context"
	"fmt"
	"strings"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/internal/sqlitex"
)

// columns are the columns of the documents table.
var columns = []string{"id", "kind", "subject", "parent", "text"}

// Check implements store.CheckFunc: the file exists (it is not created),
// opens read-only as SQLite, and holds the documents table with its
// columns. It reads the schema only, never a row.
func Check(ctx context.Context, c store.Config) []store.Problem {
	db, probs := sqlitex.CheckFile(ctx, c.Path)
	if db == nil {
		return probs
	}
	defer db.Close()
	bad := func(key, format string, a ...any) []store.Problem {
		return []store.Problem{{Severity: store.SeverityError, Key: key, Message: fmt.Sprintf(format, a...)}}
	}
	if c.Mapping != nil {
		m := defaultMapping()
		if err := m.Apply(c.Mapping); err != nil {
			return bad("mapping", "%v", err)
		}
		if err := m.Bind(ctx, db); err != nil {
			return bad("mapping", "%s: %v", c.Path, err)
		}
		return nil
	}
	ddl, err := sqlitex.TableSQL(ctx, db, "documents")
	if err != nil {
		return bad("path", "%s: read the schema: %v", c.Path, err)
	}
	if ddl == "" {
		return bad("path", "%s has no documents table: it is not a %s store (is the path right?)", c.Path, Type)
	}
	cols, err := sqlitex.TableColumns(ctx, db, "documents")
	if err != nil {
		return bad("path", "%s: read the columns of documents: %v", c.Path, err)
	}
	if miss := sqlitex.MissingColumns(cols, columns...); len(miss) > 0 {
		return bad("path", "%s: table documents has no column %s (a %s store has %s)", c.Path, strings.Join(miss, ", "), Type, strings.Join(columns, ", "))
	}
	return nil
}

func init() { store.RegisterCheck(Type, []string{"name", "type", "path", "mapping"}, Check) }
