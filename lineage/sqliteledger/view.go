package sqliteledger

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
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
	if err := loadLevels(ctx, tx, v); err != nil {
		return nil, fmt.Errorf("read ledger: %w", err)
	}
	return v, nil
}

// The set-based reads of a view: each takes the ids of one BFS level as a
// JSON array (one bound parameter, so the statement text never changes).
const (
	viewArtifacts = `SELECT id, scope, subject, kind, store, key, digest FROM artifacts WHERE id IN (SELECT value FROM json_each(?))`
	viewParents   = `SELECT child, parent FROM edges WHERE child IN (SELECT value FROM json_each(?))`
	viewChildren  = `SELECT parent, child FROM edges WHERE parent IN (SELECT value FROM json_each(?))`
	viewErased    = `SELECT artifact, outcome, erasure FROM erasures WHERE artifact IN (SELECT value FROM json_each(?)) ORDER BY artifact, seq DESC, erasure DESC`
)

// loadLevels loads the owned and mentioning artifacts and all their
// descendants, one breadth-first level at a time: four statements a level
// instead of four per artifact.
func loadLevels(ctx context.Context, c *sql.Conn, v *lineage.View) error {
	var st [4]*sql.Stmt
	for i, q := range []string{viewArtifacts, viewParents, viewChildren, viewErased} {
		s, err := c.PrepareContext(ctx, q)
		if err != nil {
			return err
		}
		defer s.Close()
		st[i] = s
	}
	frontier := lineage.NewFrontier(v, append(append([]string{}, v.Owned...), v.Mentions...))
	for len(frontier) > 0 {
		b, err := json.Marshal(frontier)
		if err != nil {
			return err
		}
		ids := string(b)
		level := map[string]*lineage.Artifact{}
		rows, err := st[0].QueryContext(ctx, ids)
		if err != nil {
			return err
		}
		for rows.Next() {
			a, err := scanArtifact(rows)
			if err != nil {
				rows.Close()
				return err
			}
			level[a.ID] = a
		}
		if err := closeRows(rows); err != nil {
			return err
		}
		if err := pairs(ctx, st[1], ids, level, func(child, parent string) { level[child].Parents = append(level[child].Parents, parent) }); err != nil {
			return err
		}
		children := map[string][]string{}
		if err := pairs(ctx, st[2], ids, level, func(parent, child string) { children[parent] = append(children[parent], child) }); err != nil {
			return err
		}
		rows, err = st[3].QueryContext(ctx, ids)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id, outcome, erasure string
			if err := rows.Scan(&id, &outcome, &erasure); err != nil {
				rows.Close()
				return err
			}
			if _, ok := v.Erased[id]; !ok { // the latest: rows come seq DESC
				v.Erased[id] = strings.TrimSpace(outcome)
				v.ErasedBy[id] = strings.TrimSpace(erasure)
			}
		}
		if err := closeRows(rows); err != nil {
			return err
		}
		if frontier, err = lineage.AddLevel(v, frontier, level, children); err != nil {
			return err
		}
	}
	return nil
}

// pairs reads (id, other) rows, where id is of the level.
func pairs(ctx context.Context, s *sql.Stmt, ids string, level map[string]*lineage.Artifact, add func(id, other string)) error {
	rows, err := s.QueryContext(ctx, ids)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id, other string
		if err := rows.Scan(&id, &other); err != nil {
			rows.Close()
			return err
		}
		if _, ok := level[id]; !ok {
			rows.Close()
			return fmt.Errorf("edge of artifact %s, which is not recorded", id)
		}
		add(id, other)
	}
	return closeRows(rows)
}

func closeRows(rows *sql.Rows) error {
	err := rows.Err()
	rows.Close()
	return err
}

// sqlQuerier is a *sql.Tx or a *sql.Conn.
type sqlQuerier interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
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
