package sqliteledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/mattn/go-sqlite3"

	"github.com/amnesia-dev/amnesia/lineage"
)

const sqliteRequestsSchema = `
CREATE TABLE IF NOT EXISTS requests (
	n        INTEGER PRIMARY KEY AUTOINCREMENT,
	id       TEXT NOT NULL UNIQUE,
	scope    TEXT NOT NULL,
	state    TEXT NOT NULL,
	trace_id TEXT NOT NULL DEFAULT '',
	version  INTEGER NOT NULL,
	body     TEXT NOT NULL
);
`

var _ lineage.RequestStore = (*Ledger)(nil)

// InsertRequest implements lineage.RequestStore.
func (l *Ledger) InsertRequest(ctx context.Context, r lineage.RequestRow) error {
	if err := lineage.CheckRequestRow(r); err != nil {
		return err
	}
	_, err := l.db.ExecContext(ctx, `INSERT INTO requests (id, scope, state, trace_id, version, body) VALUES (?, ?, ?, ?, 1, ?)`,
		r.ID, r.Scope, r.State, r.TraceID, string(r.Body))
	var se sqlite3.Error
	if errors.As(err, &se) && (se.ExtendedCode == sqlite3.ErrConstraintUnique || se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey) {
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
	err := l.db.QueryRowContext(ctx, `SELECT id, scope, state, trace_id, version, body FROM requests WHERE id = ?`, id).
		Scan(&r.ID, &r.Scope, &r.State, &r.TraceID, &r.Version, &body)
	if errors.Is(err, sql.ErrNoRows) {
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
	res, err := l.db.ExecContext(ctx, `UPDATE requests SET scope = ?, state = ?, trace_id = ?, version = version + 1, body = ? WHERE id = ? AND version = ?`,
		r.Scope, r.State, r.TraceID, string(r.Body), r.ID, r.Version)
	if err != nil {
		return fmt.Errorf("update erasure request: %w", err)
	}
	n, err := res.RowsAffected()
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
	rows, err := l.db.QueryContext(ctx, `SELECT id, scope, state, trace_id, version, body FROM requests ORDER BY n`)
	if err != nil {
		return nil, fmt.Errorf("list erasure requests: %w", err)
	}
	defer rows.Close()
	var out []lineage.RequestRow
	for rows.Next() {
		var r lineage.RequestRow
		var body string
		if err := rows.Scan(&r.ID, &r.Scope, &r.State, &r.TraceID, &r.Version, &body); err != nil {
			return nil, fmt.Errorf("list erasure requests: %w", err)
		}
		r.Body = []byte(body)
		out = append(out, r)
	}
	return out, rows.Err()
}
