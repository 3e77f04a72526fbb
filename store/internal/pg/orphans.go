package pg

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Unreachable reads, through the pg_dirtyread extension, the value of the
// text column col of every tuple in t's heap that no query sees: the dead
// and recently dead versions that DELETE and UPDATE leave until VACUUM
// removes them (pg_dirtyread returns every tuple of the heap; those whose
// ctid a plain SELECT also returns are live and left out). fn receives each
// value; n counts them. reason is not empty, and nothing was read, when
// pg_dirtyread is not installed in the table's database or the role may not
// run it, or when the server refused the read (a value whose TOAST chunks
// are already gone): then nothing can be said about what the heap holds.
// Values are personal data: fn must not log them.
func (t *Target) Unreachable(ctx context.Context, col string, fn func(v []byte)) (n int, reason string, err error) {
	c := Quote(col)
	query := func(tb Table) string {
		return `SELECT d.` + c + ` FROM pg_dirtyread($1::text::regclass) AS d(ctid tid, ` + c + ` text)
		WHERE d.` + c + ` IS NOT NULL AND NOT EXISTS (SELECT 1 FROM ` + tb.Ident() + ` l WHERE l.ctid = d.ctid)`
	}
	err = t.DB.With(ctx, func(c *pgx.Conn) error {
		var ok bool
		if err := c.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_dirtyread')`).Scan(&ok); err != nil {
			return fmt.Errorf("look up pg_dirtyread: %w", err)
		}
		if !ok {
			reason = "pg_dirtyread is not installed in the table's database (CREATE EXTENSION pg_dirtyread), so dead tuples cannot be read"
			return nil
		}
		tables := []Table{t.Table}
		if t.Partitioned { // pg_dirtyread reads one heap: each partition's
			leaves, err := Leaves(ctx, c, t.Table)
			if err != nil {
				return err
			}
			tables = tables[:0]
			for _, l := range leaves {
				tables = append(tables, l.Table)
			}
		}
		for _, tb := range tables {
			rows, err := c.Query(ctx, query(tb), tb.Ident())
			if err != nil {
				return err
			}
			var v []byte
			_, err = pgx.ForEachRow(rows, []any{&v}, func() error {
				n++
				fn(v)
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// Refused by the server: not measured, say why. A data exception's
		// message can quote bytes of a value: its code alone is kept.
		cause := pe.Code + " " + pe.Message
		if strings.HasPrefix(pe.Code, "22") {
			cause = pe.Code + " data exception"
		}
		return 0, "pg_dirtyread could not read " + t.Table.String() + ": " + cause, nil
	}
	if err != nil {
		return 0, "", fmt.Errorf("read dead tuples: %w", err)
	}
	return n, reason, nil
}
