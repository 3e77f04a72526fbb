package pgledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/amnesia-dev/amnesia/lineage"
)

// pgRequestsSchema is created on every open (IF NOT EXISTS), under the
// ledger's write lock, so that ledgers created before it get it too.
const pgRequestsSchema = `
CREATE TABLE IF NOT EXISTS requests (
	n        BIGINT GENERATED ALWAYS AS IDENTITY,
	id       TEXT PRIMARY KEY,
	scope    TEXT NOT NULL,
	state    TEXT NOT NULL,
	trace_id TEXT NOT NULL DEFAULT '',
	version  BIGINT NOT NULL,
	body     TEXT NOT NULL
);
`

var _ lineage.RequestStore = (*Ledger)(nil)

// InsertRequest implements lineage.RequestStore.
func (l *Ledger) InsertRequest(ctx context.Context, r lineage.RequestRow) error {
	if err := lineage.CheckRequestRow(r); err != nil {
		return err
	}
	err := l.pool.with(ctx, func(c *pgx.Conn) error {
		_, err := c.Exec(ctx, `INSERT INTO requests (id, scope, state, trace_id, version, body) VALUES ($1, $2, $3, $4, 1, $5)`,
			r.ID, r.Scope, r.State, r.TraceID, string(r.Body))
		return err
	})
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" {
		return lineage.ErrRequestExists
	}
	if err != nil {
		return fmt.Errorf("store erasure request: %w", err)
	}
	return nil
}

// GetRequest implements lineage.RequestStore.
func (l *Ledger) GetRequest(ctx context.Context, id string) (*lineage.RequestRow, error) {
	var r lineage.RequestRow
	var body string
	err := l.pool.with(ctx, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, `SELECT id, scope, state, trace_id, version, body FROM requests WHERE id = $1`, id).
			Scan(&r.ID, &r.Scope, &r.State, &r.TraceID, &r.Version, &body)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, lineage.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read erasure request: %w", err)
	}
	r.Body = []byte(body)
	return &r, nil
}

// UpdateRequest implements lineage.RequestStore.
func (l *Ledger) UpdateRequest(ctx context.Context, r lineage.RequestRow) error {
	if err := lineage.CheckRequestRow(r); err != nil {
		return err
	}
	var n int64
	err := l.pool.with(ctx, func(c *pgx.Conn) error {
		tag, err := c.Exec(ctx, `UPDATE requests SET scope = $1, state = $2, trace_id = $3, version = version + 1, body = $4 WHERE id = $5 AND version = $6`,
			r.Scope, r.State, r.TraceID, string(r.Body), r.ID, r.Version)
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return fmt.Errorf("update erasure request: %w", err)
	}
	if n == 0 {
		return lineage.ErrRequestChanged
	}
	return nil
}

// ListRequests implements lineage.RequestStore.
func (l *Ledger) ListRequests(ctx context.Context) ([]lineage.RequestRow, error) {
	var out []lineage.RequestRow
	err := l.pool.with(ctx, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT id, scope, state, trace_id, version, body FROM requests ORDER BY n`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r lineage.RequestRow
			var body string
			if err := rows.Scan(&r.ID, &r.Scope, &r.State, &r.TraceID, &r.Version, &body); err != nil {
				return err
			}
			r.Body = []byte(body)
			out = append(out, r)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("list erasure requests: %w", err)
	}
	return out, nil
}
