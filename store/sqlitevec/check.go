package sqlitevec

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/internal/sqlitex"
)

// embeddingDim finds the embedding column's size in the vec0 table's DDL.
var embeddingDim = regexp.MustCompile(`(?i)\bembedding\s+float\s*\[\s*(\d+)\s*\]`)

// Check implements store.CheckFunc: the file exists (it is not created),
// opens read-only as SQLite, holds the vec0 table vectors with id,
// embedding and subject, and its embeddings have the configured number of
// dimensions. It reads the schema only, never a row.
func Check(ctx context.Context, c store.Config) []store.Problem {
	db, probs := sqlitex.CheckFile(ctx, c.Path)
	if db == nil {
		return probs
	}
	defer db.Close()
	bad := func(key, format string, a ...any) []store.Problem {
		return []store.Problem{{Severity: store.SeverityError, Key: key, Message: fmt.Sprintf(format, a...)}}
	}
	ddl, err := sqlitex.TableSQL(ctx, db, "vectors")
	if err != nil {
		return bad("path", "%s: read the schema: %v", c.Path, err)
	}
	if ddl == "" {
		return bad("path", "%s has no vectors table: it is not a %s store (is the path right?)", c.Path, Type)
	}
	if !strings.Contains(strings.ToLower(ddl), "using vec0") {
		return bad("path", "%s: table vectors is not a sqlite-vec vec0 table", c.Path)
	}
	cols, err := sqlitex.TableColumns(ctx, db, "vectors")
	if err != nil {
		return bad("path", "%s: read the columns of vectors: %v", c.Path, err)
	}
	if miss := sqlitex.MissingColumns(cols, "id", "embedding", "subject"); len(miss) > 0 {
		return bad("path", "%s: table vectors has no column %s (a %s store has id, embedding, subject)", c.Path, strings.Join(miss, ", "), Type)
	}
	m := embeddingDim.FindStringSubmatch(ddl)
	if m == nil {
		return bad("dimensions", "%s: cannot tell the dimensions of vectors.embedding from its definition", c.Path)
	}
	if d, _ := strconv.Atoi(m[1]); d != c.Dimensions {
		return bad("dimensions", "the vectors in %s have %d dimensions, the configuration says %d: set dimensions: %d (or point path at the right store)", c.Path, d, c.Dimensions, d)
	}
	return nil
}

func init() { store.RegisterCheck(Type, []string{"name", "type", "path", "dimensions"}, Check) }
