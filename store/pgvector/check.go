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
	lay, err := resolve(c)
	if err != nil {
		return []store.Problem{{Severity: store.SeverityError, Key: "mapping", Message: err.Error()}}
	}
	return pg.Check(ctx, c, lay.Table, func(k pg.Checked) []store.Problem {
		key := "table"
		if c.Mapping != nil {
			key = "mapping"
		}
		if err := lay.bind(k.Columns); err != nil {
			return []store.Problem{{Severity: store.SeverityError, Key: key, Message: fmt.Sprintf("%s: %v", k.Where, err)}}
		}
		if err := lay.BindCollections(ctx, k.Conn); err != nil {
			return []store.Problem{{Severity: store.SeverityError, Key: "mapping", Message: fmt.Sprintf("%s: %v", k.Where, err)}}
		}
		if d := k.Columns[lay.vector].Typmod; d > 0 && c.Dimensions != 0 && d != c.Dimensions {
			return []store.Problem{{Severity: store.SeverityError, Key: "dimensions", Message: fmt.Sprintf("column %s of %s has %d dimensions, the configuration says %d: set dimensions: %d (or point table at the right store)", pg.Display(lay.vector), k.Where, d, c.Dimensions, d)}}
		}
		return nil
	})
}

func init() {
	store.RegisterCheck(Type, []string{"name", "type", "dsn", "table", "schema", "preset", "mapping", "dimensions", "reclaim", "lock_timeout", "statement_timeout", "retries", "data_dir"}, Check)
}
