package pgvector

import (
	"context"
	"fmt"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/internal/pg"
)

// Check implements store.CheckFunc: the server answers, the table exists
// with the columns of its layout, the embedding column has the configured
// dimensions, the role may SELECT and DELETE (errors otherwise), and what
// reclaim and the physical probe lack is named (warnings). Read-only:
// catalogs and privileges, never a row.
func Check(ctx context.Context, c store.Config) []store.Problem {
	lay := layouts[c.Schema]
	table := c.Table
	if table == "" {
		table = lay.defaultTable
	}
	return pg.Check(ctx, c, table, func(k pg.Checked) []store.Problem {
		if err := lay.check(k.Columns); err != nil {
			return []store.Problem{{Severity: store.SeverityError, Key: "table", Message: fmt.Sprintf("%s: %v", k.Where, err)}}
		}
		if d := k.Columns[lay.embedding].Typmod; d > 0 && c.Dimensions != 0 && d != c.Dimensions {
			return []store.Problem{{Severity: store.SeverityError, Key: "dimensions", Message: fmt.Sprintf("column %s of %s has %d dimensions, the configuration says %d: set dimensions: %d (or point table at the right store)", lay.embedding, k.Where, d, c.Dimensions, d)}}
		}
		return nil
	})
}

func init() {
	store.RegisterCheck(Type, []string{"name", "type", "dsn", "table", "schema", "dimensions", "reclaim", "lock_timeout", "statement_timeout", "retries", "data_dir"}, Check)
}
