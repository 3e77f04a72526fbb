package sqliteledger

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"

	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/subject"
)

// Events implements lineage.EventLog.
func (l *Ledger) Events(ctx context.Context) ([]lineage.Event, error) {
	rows, err := l.db.QueryContext(ctx, `SELECT seq, kind, body, hash FROM events ORDER BY seq`)
	if err != nil {
		return nil, fmt.Errorf("read ledger events: %w", err)
	}
	defer rows.Close()
	var out []lineage.Event
	for rows.Next() {
		var e lineage.Event
		if err := rows.Scan(&e.Seq, &e.Kind, &e.Body, &e.Hash); err != nil {
			return nil, fmt.Errorf("read ledger events: %w", err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// lineage.View implements lineage.Ledger. It reads inside one transaction, so the view is
// consistent.
func (l *Ledger) View(ctx context.Context, scope string, s subject.Key) (*lineage.View, error) {
	// A deferred transaction: a WAL snapshot that takes no write lock (the
	// pool's transactions are BEGIN IMMEDIATE, which would block writers).
	tx, err := l.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("read ledger: %w", err)
	}
	defer tx.Close()
	if _, err := tx.ExecContext(ctx, "BEGIN DEFERRED"); err != nil {
		return nil, fmt.Errorf("read ledger: %w", err)
	}
	defer func() {
		if _, err := tx.ExecContext(context.Background(), "ROLLBACK"); err != nil {
			tx.Raw(func(any) error { return driver.ErrBadConn }) // never pool a connection left inside a transaction
		}
	}()
	v := &lineage.View{Scope: scope, Subject: s, Artifacts: map[string]*lineage.Artifact{}, Children: map[string][]string{}, Erased: map[string]string{}, ErasedBy: map[string]string{}}
	if v.Owned, err = queryIDs(ctx, tx, `SELECT id FROM artifacts WHERE scope = ? AND subject = ? ORDER BY id`, scope, s.String()); err != nil {
		return nil, fmt.Errorf("read ledger: %w", err)
	}
	// CROSS JOIN keeps mentions as the outer loop: driven from artifacts,
	// SQLite would scan every artifact of the scope (seen: 11M rows a trace).
	if v.Mentions, err = queryIDs(ctx, tx, `SELECT m.artifact FROM mentions m CROSS JOIN artifacts a ON a.id = m.artifact WHERE m.subject = ? AND a.scope = ? ORDER BY m.artifact`, s.String(), scope); err != nil {
		return nil, fmt.Errorf("read ledger: %w", err)
	}
	frontier := append(append([]string{}, v.Owned...), v.Mentions...)
	for len(frontier) > 0 {
		var next []string
		for _, id := range frontier {
			if _, ok := v.Artifacts[id]; ok {
				continue
			}
			if err := loadArtifact(ctx, tx, v, id); err != nil {
				return nil, fmt.Errorf("read ledger: %w", err)
			}
			next = append(next, v.Children[id]...)
		}
		frontier = next
	}
	return v, nil
}

// sqlQuerier is a *sql.Tx or a *sql.Conn.
type sqlQuerier interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}

func loadArtifact(ctx context.Context, tx sqlQuerier, v *lineage.View, id string) error {
	a, err := scanArtifact(tx.QueryRowContext(ctx, `SELECT id, scope, subject, kind, store, key, digest FROM artifacts WHERE id = ?`, id))
	if err != nil {
		return err
	}
	if a.Parents, err = queryIDs(ctx, tx, `SELECT parent FROM edges WHERE child = ? ORDER BY parent`, id); err != nil {
		return err
	}
	if v.Children[id], err = queryIDs(ctx, tx, `SELECT child FROM edges WHERE parent = ? ORDER BY child`, id); err != nil {
		return err
	}
	var outcome, erasure sql.NullString
	if err := tx.QueryRowContext(ctx, `SELECT outcome, erasure FROM erasures WHERE artifact = ? ORDER BY seq DESC LIMIT 1`, id).Scan(&outcome, &erasure); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	if outcome.Valid {
		v.Erased[id] = strings.TrimSpace(outcome.String)
		v.ErasedBy[id] = strings.TrimSpace(erasure.String)
	}
	v.Artifacts[id] = a
	return nil
}

func queryIDs(ctx context.Context, tx sqlQuerier, q string, args ...any) ([]string, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}
