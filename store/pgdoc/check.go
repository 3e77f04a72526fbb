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
	m, err := resolve(c)
	if err != nil {
		return []store.Problem{{Severity: store.SeverityError, Key: "mapping", Message: err.Error()}}
	}
	return pg.Check(ctx, c, m.Table, func(k pg.Checked) []store.Problem {
		if c.Mapping != nil {
			if err := m.BindColumns(k.Columns); err != nil {
				return []store.Problem{{Severity: store.SeverityError, Key: "mapping", Message: fmt.Sprintf("%s: %v", k.Where, err)}}
			}
			if err := m.BindCollections(ctx, k.Conn); err != nil {
				return []store.Problem{{Severity: store.SeverityError, Key: "mapping", Message: fmt.Sprintf("%s: %v", k.Where, err)}}
			}
			return nil
		}
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
	store.RegisterCheck(Type, []string{"name", "type", "dsn", "table", "mapping", "reclaim", "lock_timeout", "statement_timeout", "retries", "data_dir"}, Check)
}
