package pgdoc

import (
	"context"
	"fmt"
	"strings"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/internal/pg"
)

var columns = []string{"id", "subject", "kind", "content", "metadata"}

// Check implements store.CheckFunc: the server answers, the table exists
// with id, subject, kind, content and metadata, the role may SELECT and
// DELETE (errors otherwise), and what reclaim and the physical probe lack is
// named (warnings). Read-only: catalogs and privileges, never a row.
func Check(ctx context.Context, c store.Config) []store.Problem {
	table := c.Table
	if table == "" {
		table = DefaultTable
	}
	return pg.Check(ctx, c, table, func(k pg.Checked) []store.Problem {
		var miss []string
		for _, col := range columns {
			if _, ok := k.Columns[col]; !ok {
				miss = append(miss, col)
			}
		}
		if len(miss) > 0 {
			return []store.Problem{{Severity: store.SeverityError, Key: "table", Message: fmt.Sprintf("%s has no column %s (a %s store has %s)", k.Where, strings.Join(miss, ", "), Type, strings.Join(columns, ", "))}}
		}
		return nil
	})
}

func init() {
	store.RegisterCheck(Type, []string{"name", "type", "dsn", "table", "reclaim", "lock_timeout", "statement_timeout", "retries", "data_dir"}, Check)
}
