package bench

// The pgvector benchmark's connections to the server and its clean-up:
// one connection at a time (PGlite serves no more), tables dropped and
// pg_wal rotated between baselines.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/pgvector"
)

// --- the server ---------------------------------------------------------------

// withConn runs fn on a connection of its own. PGlite serves one connection
// at a time: never call it while a store is open.
func (r *pgvRun) withConn(ctx context.Context, fn func(c *pgx.Conn) error) error {
	cfg, err := pgx.ParseConfig(r.o.DSN)
	if err != nil {
		return errors.New("connect: invalid DSN")
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeDescribeExec // parameter types from the server: vectors are sent binary
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { r.notices = append(r.notices, n.Message) }
	var c *pgx.Conn
	for wait := time.Duration(0); ; wait += pgvRetry {
		if c, err = pgx.ConnectConfig(ctx, cfg.Copy()); err == nil || wait > pgvPatience || ctx.Err() != nil {
			break
		}
		time.Sleep(pgvRetry)
	}
	if err != nil {
		return fmt.Errorf("connect: %v", errors.Unwrap(err))
	}
	defer c.Close(context.Background())
	return fn(c)
}

// A server that serves one connection at a time (PGlite) refuses others
// while another client of it (a test) holds its connection: wait that long.
const (
	pgvRetry    = 250 * time.Millisecond
	pgvPatience = 2 * time.Minute
)

// open opens the adapter on table, waiting for the server like withConn.
func (r *pgvRun) open(ctx context.Context, d *state.Dir, sc store.Config) (*pgvector.Store, error) {
	for wait := time.Duration(0); ; wait += pgvRetry {
		var st store.Store
		var err error
		if d != nil {
			st, err = d.Config.OpenStore(ctx, sc, false)
		} else {
			st, err = store.Open(ctx, sc, false)
		}
		if err == nil {
			return st.(*pgvector.Store), nil
		}
		if !errors.Is(err, store.ErrUnavailable) || wait > pgvPatience || ctx.Err() != nil {
			return nil, err
		}
		time.Sleep(pgvRetry)
	}
}

// drop drops table and makes the server recycle every WAL segment, so that
// the next baseline's files hold only its own table's history.
func (r *pgvRun) drop(ctx context.Context, table string) error {
	return r.withConn(ctx, func(c *pgx.Conn) error {
		if _, err := c.Exec(ctx, `DROP TABLE IF EXISTS `+pgx.Identifier{table}.Sanitize()); err != nil {
			return err
		}
		for i, t := range r.tables {
			if t == table {
				r.tables = append(r.tables[:i], r.tables[i+1:]...)
				break
			}
		}
		var n int
		if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_ls_waldir() WHERE name ~ '^[0-9A-F]{24}$'`).Scan(&n); err != nil {
			return err
		}
		if _, err := c.Exec(ctx, `CHECKPOINT`); err != nil {
			return err
		}
		for i := 0; i < min(n+2, 64); i++ {
			if _, err := c.Exec(ctx, `SELECT pg_switch_wal()`); err != nil {
				return err
			}
			if _, err := c.Exec(ctx, `CHECKPOINT`); err != nil {
				return err
			}
		}
		return nil
	})
}

func (r *pgvRun) dropAll() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, t := range append([]string(nil), r.tables...) {
		r.withConn(ctx, func(c *pgx.Conn) error {
			_, err := c.Exec(ctx, `DROP TABLE IF EXISTS `+pgx.Identifier{t}.Sanitize())
			return err
		})
	}
	r.tables = nil
}

func (r *pgvRun) sizes(ctx context.Context, table string) (PGVectorSizes, error) {
	var z PGVectorSizes
	err := r.withConn(ctx, func(c *pgx.Conn) error {
		t := pgx.Identifier{table}.Sanitize()
		return c.QueryRow(ctx, `SELECT pg_relation_size($1::text::regclass), pg_total_relation_size($1::text::regclass),
			COALESCE((SELECT sum(pg_relation_size(i.indexrelid)) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
				WHERE i.indrelid = $1::text::regclass AND a.amname IN ('hnsw', 'ivfflat')), 0)::bigint,
			(SELECT count(*) FROM pg_ls_waldir() WHERE name ~ '^[0-9A-F]{24}$')::int`, t).Scan(&z.Heap, &z.Total, &z.VectorIndex, &z.WALSegments)
	})
	return z, err
}
