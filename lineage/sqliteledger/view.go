package sqliteledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/mattn/go-sqlite3"

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

// reader is a second handle on the ledger file, for View alone: its
// transactions are deferred (a WAL snapshot that takes no write lock; the
// write handle's are BEGIN IMMEDIATE), it refuses writes (query_only), and
// View's statements are prepared once per ledger (and by database/sql once
// per connection), not once per trace.
type reader struct {
	db                                 *sql.DB
	owned, mentions, artifacts, linked *sql.Stmt
}

// The set-based reads of a view. The subject's own and mentioning
// artifacts come whole from the subject's index (they were recorded
// together, so their rows share a few pages); each breadth-first level
// then costs at most two statements, each taking the level's ids as one
// JSON array (one bound parameter, so the statement text never changes).
const (
	// viewOwned reads neither scope nor subject: they are its arguments
	// (readOwned fills them in, without a string or a key parsed a row).
	viewOwned    = `SELECT id, kind, store, key, digest FROM artifacts WHERE scope = ? AND subject = ?`
	viewMentions = `SELECT a.id, a.scope, a.subject, a.kind, a.store, a.key, a.digest FROM mentions m CROSS JOIN artifacts a ON a.id = m.artifact WHERE m.subject = ? AND a.scope = ?`
	// CROSS JOIN keeps mentions as the outer loop: driven from artifacts,
	// SQLite would scan every artifact of the scope (seen: 11M rows a trace).
	// The level's ids (never repeated) drive each join: an index lookup
	// an id, without first building a temporary index of the ids (seen: a
	// fifth faster than id IN (SELECT value FROM json_each(?))).
	viewArtifacts = `SELECT a.id, a.scope, a.subject, a.kind, a.store, a.key, a.digest FROM json_each(?) j CROSS JOIN artifacts a ON a.id = j.value`
	// viewLinked reads a level's parents (0), children (1) and erasure
	// marks (2) in one statement.
	viewLinked = `SELECT 0, e.child, e.parent, '', 0 FROM json_each(?1) j CROSS JOIN edges e ON e.child = j.value
UNION ALL SELECT 1, e.parent, e.child, '', 0 FROM json_each(?1) j CROSS JOIN edges e ON e.parent = j.value
UNION ALL SELECT 2, m.artifact, m.outcome, m.erasure, m.seq FROM json_each(?1) j CROSS JOIN erasures m ON m.artifact = j.value`
)

// readerDriver is the reader's driver: the ledger's, but reading through
// pread into SQLite's page cache instead of a memory map. Out of the page
// cache, each fault on a mapped page reads the device's whole readahead
// window (read_ahead_kb; 8 MiB on the test machine), so a trace's few
// hundred scattered pages cost hundreds of megabytes (seen at 3 million
// edges: 0.58 s to read one subject's edges cold through the map, 17 ms
// through pread; a whole trace out of the cache: 582 ms p50 through the
// map, 28 ms through pread). Warm, pread costs a trace about 0.2 ms more
// CPU (system time; seen at 3 million edges), which a 64 MiB page cache
// (PRAGMA cache_size) holding the indexes' upper levels keeps small.
const readerDriver = "sqlite3-amnesia-ledger-reader"

func init() {
	sql.Register(readerDriver, &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		_, err := c.Exec("PRAGMA mmap_size = 0; PRAGMA temp_store = MEMORY; PRAGMA cache_size = -65536", nil)
		return err
	}})
}

// openReader opens the reader of the ledger at path (which exists).
func openReader(ctx context.Context, path string) (*reader, error) {
	db, err := sql.Open(readerDriver, "file:"+path+"?mode=rw&_busy_timeout=10000&_txlock=deferred&_query_only=1&_stmt_cache_size="+stmtCacheSize)
	if err != nil {
		return nil, err
	}
	r := &reader{db: db}
	for _, p := range []struct {
		s **sql.Stmt
		q string
	}{{&r.owned, viewOwned}, {&r.mentions, viewMentions}, {&r.artifacts, viewArtifacts}, {&r.linked, viewLinked}} {
		if *p.s, err = db.PrepareContext(ctx, p.q); err != nil {
			r.close()
			return nil, err
		}
	}
	return r, nil
}

func (r *reader) close() error {
	for _, s := range []*sql.Stmt{r.owned, r.mentions, r.artifacts, r.linked} {
		if s != nil {
			s.Close()
		}
	}
	return r.db.Close()
}

// View implements lineage.Ledger. It reads inside one transaction, so the
// view is consistent.
func (l *Ledger) View(ctx context.Context, scope string, s subject.Key) (*lineage.View, error) {
	tx, err := l.rd.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("read ledger: %w", err)
	}
	defer tx.Rollback()
	v := &lineage.View{Scope: scope, Subject: s, Artifacts: map[string]*lineage.Artifact{}, Children: map[string][]string{}, Erased: map[string]string{}, ErasedBy: map[string]string{}}
	// The head first: the transaction's snapshot starts with this read.
	if err := tx.QueryRowContext(ctx, qHead).Scan(&v.HeadSeq, &v.HeadHash); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("read ledger: %w", err)
	}
	known := map[string]*lineage.Artifact{} // read whole already
	if v.Owned, err = readOwned(ctx, tx.StmtContext(ctx, l.rd.owned), known, scope, s); err != nil {
		return nil, fmt.Errorf("read ledger: %w", err)
	}
	if v.Mentions, err = readArtifacts(ctx, tx.StmtContext(ctx, l.rd.mentions), known, s.String(), scope); err != nil {
		return nil, fmt.Errorf("read ledger: %w", err)
	}
	if err := l.rd.loadLevels(ctx, tx, v, known); err != nil {
		return nil, fmt.Errorf("read ledger: %w", err)
	}
	return v, nil
}

// readOwned runs viewOwned: the artifacts of subject s in scope, added to
// known, and their ids sorted (byte order, as ORDER BY id).
func readOwned(ctx context.Context, st *sql.Stmt, known map[string]*lineage.Artifact, scope string, s subject.Key) ([]string, error) {
	rows, err := st.QueryContext(ctx, scope, s.String())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		a := &lineage.Artifact{Scope: scope, Subject: s}
		var kind string
		if err := rows.Scan(&a.ID, &kind, &a.Store, &a.Key, &a.Digest); err != nil {
			return nil, err
		}
		a.Kind = lineage.Kind(kind)
		known[a.ID] = a
		ids = append(ids, a.ID)
	}
	sort.Strings(ids)
	return ids, rows.Err()
}

// readArtifacts runs a statement that returns whole artifacts, adds them to
// known, and returns their ids sorted (byte order, as ORDER BY id).
func readArtifacts(ctx context.Context, st *sql.Stmt, known map[string]*lineage.Artifact, args ...any) ([]string, error) {
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		a, err := scanArtifact(rows)
		if err != nil {
			return nil, err
		}
		known[a.ID] = a
		ids = append(ids, a.ID)
	}
	sort.Strings(ids)
	return ids, rows.Err()
}

// loadLevels loads the owned and mentioning artifacts and all their
// descendants, one breadth-first level at a time: at most two statements a
// level, however many artifacts it holds.
func (r *reader) loadLevels(ctx context.Context, tx *sql.Tx, v *lineage.View, known map[string]*lineage.Artifact) error {
	artifacts, linked := tx.StmtContext(ctx, r.artifacts), tx.StmtContext(ctx, r.linked)
	frontier := lineage.NewFrontier(v, append(append([]string{}, v.Owned...), v.Mentions...))
	for len(frontier) > 0 {
		level, missing := lineage.SplitKnown(frontier, known)
		if len(missing) > 0 {
			ids, err := jsonIDs(missing)
			if err != nil {
				return err
			}
			if _, err := readArtifacts(ctx, artifacts, level, ids); err != nil {
				return err
			}
		}
		ids, err := jsonIDs(frontier)
		if err != nil {
			return err
		}
		children, err := readLinks(ctx, linked, ids, v, level)
		if err != nil {
			return err
		}
		if frontier, err = lineage.AddLevel(v, frontier, level, children); err != nil {
			return err
		}
	}
	return nil
}

// jsonIDs is ids as one JSON array, sorted: neighbouring keys are looked up
// one after the other, on pages just read.
func jsonIDs(ids []string) (string, error) {
	s := append([]string(nil), ids...)
	sort.Strings(s)
	b, err := json.Marshal(s)
	return string(b), err
}

// readLinks runs viewLinked on a level's ids: it adds each artifact's
// parents to level, the latest erasure mark of each to v, and returns
// each artifact's children.
func readLinks(ctx context.Context, st *sql.Stmt, ids string, v *lineage.View, level map[string]*lineage.Artifact) (map[string][]string, error) {
	rows, err := st.QueryContext(ctx, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	children := map[string][]string{}
	type mark struct {
		seq              int64
		outcome, erasure string
	}
	latest := map[string]mark{}
	for rows.Next() {
		var what int
		var id, other, erasure string
		var seq int64
		if err := rows.Scan(&what, &id, &other, &erasure, &seq); err != nil {
			return nil, err
		}
		switch what {
		case 0, 1:
			a, ok := level[id]
			if !ok {
				return nil, fmt.Errorf("edge of artifact %s, which is not recorded", id)
			}
			if what == 0 {
				a.Parents = append(a.Parents, other)
			} else {
				children[id] = append(children[id], other)
			}
		case 2:
			// The latest mark: the highest seq, then the highest erasure
			// id (as ORDER BY seq DESC, erasure DESC).
			if m, ok := latest[id]; !ok || seq > m.seq || (seq == m.seq && erasure > m.erasure) {
				latest[id] = mark{seq, other, erasure}
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for id, m := range latest {
		v.Erased[id] = strings.TrimSpace(m.outcome)
		v.ErasedBy[id] = strings.TrimSpace(m.erasure)
	}
	return children, nil
}

// sqlQuerier is a *sql.Tx or a *sql.Conn.
type sqlQuerier interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}
