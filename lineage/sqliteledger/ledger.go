package sqliteledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mattn/go-sqlite3"

	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/subject"
)

const sqliteSchema = `
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (
	seq  INTEGER PRIMARY KEY,
	kind TEXT NOT NULL,
	body TEXT NOT NULL,
	hash TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS artifacts (
	id      TEXT PRIMARY KEY,
	seq     INTEGER NOT NULL,
	scope   TEXT NOT NULL,
	subject TEXT NOT NULL,
	kind    TEXT NOT NULL,
	store   TEXT NOT NULL,
	key     TEXT NOT NULL,
	digest  TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS artifacts_subject ON artifacts (scope, subject);
CREATE UNIQUE INDEX IF NOT EXISTS artifacts_location ON artifacts (scope, store, key);
CREATE TABLE IF NOT EXISTS edges (
	child  TEXT NOT NULL,
	parent TEXT NOT NULL,
	seq    INTEGER NOT NULL,
	PRIMARY KEY (child, parent)
);
CREATE INDEX IF NOT EXISTS edges_parent ON edges (parent);
CREATE TABLE IF NOT EXISTS mentions (
	artifact TEXT NOT NULL,
	subject  TEXT NOT NULL,
	seq      INTEGER NOT NULL,
	PRIMARY KEY (artifact, subject)
);
CREATE INDEX IF NOT EXISTS mentions_subject ON mentions (subject);
CREATE TABLE IF NOT EXISTS suppressions (
	artifact TEXT PRIMARY KEY,
	erasure  TEXT NOT NULL,
	seq      INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS erasures (
	artifact TEXT NOT NULL,
	erasure  TEXT NOT NULL,
	outcome  TEXT NOT NULL,
	seq      INTEGER NOT NULL,
	PRIMARY KEY (artifact, erasure)
);
`

// Ledger is the embedded ledger: one SQLite file (cgo, mattn/go-sqlite3),
// shared by the processes of one host.
type Ledger struct {
	db *sql.DB
	st stmts
	rd *reader // View's handle
	// wmu queues this process's write transactions (inTx) for SQLite's
	// one write lock in the process, so that each starts as the one before
	// commits. Without it each BEGIN IMMEDIATE that finds the lock taken
	// sleeps in SQLite's busy handler (1, 2, 5, 10 ms …) and the lock stands
	// idle meanwhile: concurrent erasures of one batch (saga.RunBatch) spent
	// more time in those sleeps than in their commits. Other processes still
	// wait in the busy handler.
	wmu sync.Mutex
}

// driverName is mattn/go-sqlite3 with each connection reading the ledger
// through a read-only memory map (PRAGMA mmap_size, up to SQLite's default
// cap of 2 GiB of the file): page reads become memory loads instead of
// pread calls. View's reader does not (readerDriver, view.go): out of the
// page cache the map's faults read far more than a trace needs. Writes still go through write(2) and the WAL; an I/O
// error while reading a mapped page ends the process (SIGBUS) instead of
// failing the read.
//
// Temporary storage (statement journals of the multi-row INSERTs,
// ephemeral tables of the IN (json_each) reads) is kept in memory
// (PRAGMA temp_store = MEMORY): it was a temporary file, written at every
// batch (about 64 page writes a 41-record batch, measured with strace). It
// holds nothing durable: the WAL and synchronous=FULL are unchanged.
//
// Each connection's page cache may grow to 64 MiB (PRAGMA cache_size; the
// default is 2 MiB), allocated as used. A batch writes into five indexes
// keyed by digests, so each artifact dirties pages all over them: with 2
// MiB a transaction of a few thousand artifacts spilled its dirty pages
// and read them back (seen: 30-45% less system time growing a ledger to
// 200,000 edges through RecordBatch, the same bytes written). Reads past
// the memory map's 2 GiB (a ledger of ten million edges is about 10 GiB)
// go through this cache too, which then keeps the indexes' upper levels.
const driverName = "sqlite3-amnesia-ledger"

// stmtCacheSize is how many statements each connection of the ledger (and
// of View's reader) keeps prepared (go-sqlite3's _stmt_cache_size): the
// statements run with arguments but not prepared by the ledger itself (a
// suppression's and an erasure mark's reads and inserts, the transparency
// log's reads and appends, the data key's read, …) are otherwise compiled
// again by sqlite3_prepare_v2 every time, several dozen times an erasure.
// A cached statement is reset (it holds no lock and no read snapshot) and
// re-prepared by SQLite itself after a schema change, as any prepared
// statement is: what a statement reads and writes does not change.
const stmtCacheSize = "64"

func init() {
	sql.Register(driverName, &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		_, err := c.Exec("PRAGMA mmap_size = 2147418112; PRAGMA temp_store = MEMORY; PRAGMA cache_size = -65536", nil)
		return err
	}})
	lineage.RegisterBackend("sqlite", lineage.Backend{
		Match: func(spec string) bool { return !lineage.IsPostgresDSN(spec) },
		Open: func(ctx context.Context, spec string, create bool) (lineage.Ledger, error) {
			l, err := open(ctx, spec, create)
			if err != nil {
				return nil, err
			}
			return l, nil
		},
	})
}

var _ lineage.Ledger = (*Ledger)(nil)

// Open opens or creates the ledger database at path. lineage.Open does the
// same for a spec that is not a PostgreSQL URL.
func Open(ctx context.Context, path string) (*Ledger, error) {
	return open(ctx, path, true)
}

// OpenExisting opens the ledger database at path, but never creates it: a
// missing or empty file, or one without the ledger's tables, is refused
// with an error that wraps lineage.ErrNoLedger.
func OpenExisting(ctx context.Context, path string) (*Ledger, error) {
	return open(ctx, path, false)
}

// open opens the ledger at path; unless create, a missing or empty
// file, or one without the ledger's tables, is refused (lineage.ErrNoLedger) and
// nothing is created.
//
// Several processes opening a new ledger at the same moment meet lock
// conflicts that SQLite's busy timeout does not wait out: a connection
// that finds another switching the new file to WAL, or a statement whose
// read snapshot another opener's schema write made stale, gets
// SQLITE_BUSY at once. Opening is then tried again from the start (every
// step of it may be repeated), for up to openRetry.
func open(ctx context.Context, path string, create bool) (*Ledger, error) {
	deadline := time.Now().Add(openRetry)
	for wait := 2 * time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		l, err := openOnce(ctx, path, create)
		if err == nil || !busy(err) || time.Now().After(deadline) {
			return l, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("open ledger %s: %w (after: %w)", path, ctx.Err(), err)
		case <-time.After(wait):
		}
	}
}

// openRetry is how long open tries again after a lock conflict: as long as
// the busy timeout of its connections.
const openRetry = 10 * time.Second

// busy reports whether err is SQLite's SQLITE_BUSY or SQLITE_LOCKED.
func busy(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked)
}

func openOnce(ctx context.Context, path string, create bool) (*Ledger, error) {
	if create {
		// The ledger is private (0600): created so before SQLite opens it, since
		// SQLite would create it under the process umask (often 0644), and
		// SQLite gives its -wal and -shm files the database file's mode.
		if f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); err == nil {
			f.Close()
		} else if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("open ledger: %w", err)
		}
	}
	dsn := "file:" + path + "?_journal_mode=WAL&_busy_timeout=10000&_txlock=immediate&_synchronous=FULL&_stmt_cache_size=" + stmtCacheSize
	if !create {
		fi, err := os.Stat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("open ledger: %w: %s does not exist", lineage.ErrNoLedger, path)
		case err != nil:
			return nil, fmt.Errorf("open ledger: %w", err)
		case fi.Size() == 0:
			return nil, fmt.Errorf("open ledger: %w: %s is empty", lineage.ErrNoLedger, path)
		}
		dsn += "&mode=rw" // SQLite itself must not create the file either
	}
	db, err := sql.Open(driverName, dsn)
	if err != nil {
		return nil, fmt.Errorf("open ledger: %w", err)
	}
	if !create {
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'`).Scan(&n); err != nil {
			db.Close()
			return nil, fmt.Errorf("open ledger %s: %w", path, err)
		}
		if n == 0 {
			db.Close()
			return nil, fmt.Errorf("open ledger: %w: %s holds no amnesia ledger tables", lineage.ErrNoLedger, path)
		}
	}
	if _, err := db.ExecContext(ctx, sqliteSchema+sqliteQueueSchema+sqliteLogSchema+sqliteRequestsSchema+sqliteAdoptSchema+sqliteKeysSchema); err != nil {
		db.Close()
		return nil, fmt.Errorf("open ledger %s: %w", path, err)
	}
	if err := sqliteQueueOwner(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("open ledger %s: %w", path, err)
	}
	if err := initConsent(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("open ledger %s: %w", path, err)
	}
	var v string
	err = db.QueryRowContext(ctx, `SELECT v FROM meta WHERE k='schema'`).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		// A new ledger. Another process may be opening it at the same
		// moment: the first insert wins, and both read what it wrote.
		if _, err := db.ExecContext(ctx, `INSERT INTO meta (k, v) VALUES ('schema', ?) ON CONFLICT (k) DO NOTHING`, lineage.SchemaVersion); err != nil {
			db.Close()
			return nil, fmt.Errorf("open ledger: %w", err)
		}
		err = db.QueryRowContext(ctx, `SELECT v FROM meta WHERE k='schema'`).Scan(&v)
	}
	switch {
	case err != nil:
		db.Close()
		return nil, fmt.Errorf("open ledger: %w", err)
	case v != lineage.SchemaVersion:
		db.Close()
		return nil, fmt.Errorf("open ledger: schema %q, this amnesia reads %q", v, lineage.SchemaVersion)
	}
	if err := privateFiles(path, path+"-wal", path+"-shm"); err != nil {
		db.Close()
		return nil, fmt.Errorf("open ledger: %w", err)
	}
	l := &Ledger{db: db}
	if err := l.prepare(ctx); err != nil {
		l.closeStmts()
		db.Close()
		return nil, fmt.Errorf("open ledger: %w", err)
	}
	if l.rd, err = openReader(ctx, path); err != nil {
		l.closeStmts()
		db.Close()
		return nil, fmt.Errorf("open ledger: %w", err)
	}
	return l, nil
}

// privateFiles takes group and other access away from the files that exist
// (a ledger created by an earlier version under a 022 umask).
func privateFiles(paths ...string) error {
	for _, p := range paths {
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if fi.Mode().IsRegular() && fi.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(p, fi.Mode().Perm()&0o700); err != nil {
				return err
			}
		}
	}
	return nil
}

// Close closes the database.
func (l *Ledger) Close() error {
	l.closeStmts()
	rerr := l.rd.close()
	if err := l.db.Close(); err != nil {
		return err
	}
	return rerr
}

// append writes one event to the hash chain and returns its seq.
func appendEvent(ctx context.Context, tx *sql.Tx, kind string, body any) (int64, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return 0, err
	}
	var seq int64
	var prev string
	err = tx.QueryRowContext(ctx, `SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1`).Scan(&seq, &prev)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, err
	}
	seq++
	hash := lineage.EventHash(prev, seq, kind, b)
	_, err = tx.ExecContext(ctx, `INSERT INTO events (seq, kind, body, hash) VALUES (?, ?, ?, ?)`, seq, kind, string(b), hash)
	return seq, err
}

func (l *Ledger) inTx(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	l.wmu.Lock() // fn must not call inTx: it would wait for itself
	defer l.wmu.Unlock()
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return fmt.Errorf("%s: %w", op, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// Record implements lineage.Ledger.
func (l *Ledger) Record(ctx context.Context, a lineage.Artifact) error {
	if err := lineage.CheckArtifact(a); err != nil {
		return err
	}
	return l.inTx(ctx, "record artifact", func(tx *sql.Tx) error {
		return l.writeBatch(ctx, tx, []lineage.Artifact{a}, nil)
	})
}

// lineage.Mention implements lineage.Ledger.
func (l *Ledger) Mention(ctx context.Context, m lineage.Mention) error {
	return l.inTx(ctx, "record mention", func(tx *sql.Tx) error {
		return l.writeBatch(ctx, tx, nil, []lineage.Mention{m})
	})
}

// RecordBatch implements lineage.BatchRecorder: one transaction, one
// commit (one fsync), the events of Record and Mention one by one.
func (l *Ledger) RecordBatch(ctx context.Context, artifacts []lineage.Artifact, mentions []lineage.Mention) error {
	for _, a := range artifacts {
		if err := lineage.CheckArtifact(a); err != nil {
			return err
		}
	}
	return l.inTx(ctx, "record batch", func(tx *sql.Tx) error {
		return l.writeBatch(ctx, tx, artifacts, mentions)
	})
}

// The write path's statements, prepared once per ledger (and by
// database/sql once per connection). Sets of ids and rows travel as one
// JSON array each, so a batch of any size is a fixed number of statements.
const (
	qHead      = `SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1`
	qKnown     = `SELECT id, subject, digest FROM artifacts WHERE id IN (SELECT value FROM json_each(?))`
	qErased    = `SELECT DISTINCT artifact FROM erasures WHERE artifact IN (SELECT value FROM json_each(?))`
	qEdges     = `SELECT child, parent FROM edges WHERE child IN (SELECT value FROM json_each(?))`
	qMentioned = `SELECT artifact, subject FROM mentions WHERE artifact IN (SELECT value FROM json_each(?))`
	qInsEvents = `INSERT INTO events (seq, kind, body, hash) SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'), json_extract(value, '$[3]') FROM json_each(?) ORDER BY key`
	qInsArts   = `INSERT INTO artifacts (id, seq, scope, subject, kind, store, key, digest) SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'), json_extract(value, '$[3]'), json_extract(value, '$[4]'), json_extract(value, '$[5]'), json_extract(value, '$[6]'), json_extract(value, '$[7]') FROM json_each(?) WHERE true
		ON CONFLICT (id) DO UPDATE SET digest = excluded.digest, seq = excluded.seq`
	qInsEdges   = `INSERT INTO edges (child, parent, seq) SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]') FROM json_each(?)`
	qInsMention = `INSERT INTO mentions (artifact, subject, seq) SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]') FROM json_each(?)`
	// The reads capture makes before a write: its parent's owner, its
	// subject's erasure and queued erasure (SubjectState: one row, one
	// statement; the queue through its partial index queue_subject_open).
	qLookup       = `SELECT id, scope, subject, kind, store, key, digest FROM artifacts WHERE scope = ? AND store = ? AND key = ?`
	qSubjectState = `SELECT e.seq, e.erasure, (SELECT id FROM queue WHERE subject = ?2 AND scope = ?1 AND state IN ('pending', 'claimed') LIMIT 1)
		FROM (SELECT 1) LEFT JOIN (SELECT seq, erasure FROM erased_subjects WHERE scope = ?1 AND subject = ?2 ORDER BY seq DESC LIMIT 1) e ON 1`
)

// stmts are the prepared write statements.
type stmts struct {
	head, known, erased, edges, mentioned, insEvents, insArts, insEdges, insMentions *sql.Stmt
	lookup, subjectState                                                             *sql.Stmt
}

func (st *stmts) all() []**sql.Stmt {
	return []**sql.Stmt{&st.head, &st.known, &st.erased, &st.edges, &st.mentioned, &st.insEvents, &st.insArts, &st.insEdges, &st.insMentions, &st.lookup, &st.subjectState}
}

func (l *Ledger) prepare(ctx context.Context) error {
	for i, q := range []string{qHead, qKnown, qErased, qEdges, qMentioned, qInsEvents, qInsArts, qInsEdges, qInsMention, qLookup, qSubjectState} {
		s, err := l.db.PrepareContext(ctx, q)
		if err != nil {
			return err
		}
		*l.st.all()[i] = s
	}
	return nil
}

func (l *Ledger) closeStmts() {
	for _, s := range l.st.all() {
		if *s != nil {
			(*s).Close()
		}
	}
}

// writeBatch reads what the batch's checks need (at most five statements:
// edges only when an artifact names a parent, mentions only with
// mentions), plans its events in memory (lineage.PlanBatch: those of one
// write at a time), and writes them (at most four statements).
func (l *Ledger) writeBatch(ctx context.Context, tx *sql.Tx, artifacts []lineage.Artifact, mentions []lineage.Mention) error {
	st := func(s *sql.Stmt) *sql.Stmt { return tx.StmtContext(ctx, s) }
	reads := lineage.ReadsOf(artifacts, mentions)
	var seq int64
	var hash string
	if err := st(l.st.head).QueryRowContext(ctx).Scan(&seq, &hash); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	state := lineage.NewBatchState(seq, hash)
	if len(reads.IDs) > 0 {
		err := eachRow(ctx, st(l.st.known), reads.IDs, func(r *sql.Rows) error {
			var id, subj, digest string
			if err := r.Scan(&id, &subj, &digest); err != nil {
				return err
			}
			state.Known[id] = [2]string{subj, digest}
			return nil
		})
		if err != nil {
			return err
		}
		if err := eachRow(ctx, st(l.st.erased), reads.Artifacts, func(r *sql.Rows) error {
			var id string
			err := r.Scan(&id)
			state.Erased[id] = true
			return err
		}); err != nil {
			return err
		}
	}
	if len(reads.Parented) > 0 {
		if err := eachRow(ctx, st(l.st.edges), reads.Parented, func(r *sql.Rows) error {
			var c, p string
			err := r.Scan(&c, &p)
			state.Edges[[2]string{c, p}] = true
			return err
		}); err != nil {
			return err
		}
	}
	if len(reads.Mentioned) > 0 {
		if err := eachRow(ctx, st(l.st.mentioned), reads.Mentioned, func(r *sql.Rows) error {
			var a, s string
			err := r.Scan(&a, &s)
			state.Mentions[[2]string{a, s}] = true
			return err
		}); err != nil {
			return err
		}
	}
	plan, err := lineage.PlanBatch(state, artifacts, mentions)
	if err != nil {
		return err
	}
	rows := func(n int, row func(i int) []any) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = row(i)
		}
		return out
	}
	for _, w := range []struct {
		s    *sql.Stmt
		rows []any
	}{
		{l.st.insEvents, rows(len(plan.Events), func(i int) []any {
			e := plan.Events[i]
			return []any{e.Seq, e.Kind, e.Body, e.Hash}
		})},
		{l.st.insArts, rows(len(plan.Artifacts), func(i int) []any {
			a := plan.Artifacts[i]
			return []any{a.ID, a.Seq, a.Scope, a.Subject.String(), string(a.Kind), a.Store, a.Key, a.Digest}
		})},
		{l.st.insEdges, rows(len(plan.Edges), func(i int) []any {
			e := plan.Edges[i]
			return []any{e.Child, e.Parent, e.Seq}
		})},
		{l.st.insMentions, rows(len(plan.Mentions), func(i int) []any {
			m := plan.Mentions[i]
			return []any{m.Artifact, m.Subject, m.Seq}
		})},
	} {
		if len(w.rows) == 0 {
			continue
		}
		b, err := json.Marshal(w.rows)
		if err != nil {
			return err
		}
		if _, err := st(w.s).ExecContext(ctx, string(b)); err != nil {
			return err
		}
	}
	return nil
}

// eachRow runs a read statement on a JSON array of ids.
func eachRow(ctx context.Context, s *sql.Stmt, ids []string, fn func(*sql.Rows) error) error {
	b, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	rows, err := s.QueryContext(ctx, string(b))
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Lookup implements lineage.Ledger.
func (l *Ledger) Lookup(ctx context.Context, scope, store, key string) (*lineage.Artifact, error) {
	row := l.st.lookup.QueryRowContext(ctx, scope, store, key)
	a, err := scanArtifact(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, lineage.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("look up artifact: %w", err)
	}
	return a, nil
}

// qLookupKeys is qLookup for a JSON array of keys.
const qLookupKeys = `SELECT id, scope, subject, kind, store, key, digest FROM artifacts WHERE scope = ? AND store = ? AND key IN (SELECT value FROM json_each(?))`

var _ lineage.BatchLookup = (*Ledger)(nil)

// LookupKeys implements lineage.BatchLookup: one statement for all the keys
// (a location has at most one artifact: artifacts_location is unique).
func (l *Ledger) LookupKeys(ctx context.Context, scope, store string, keys []string) (map[string]*lineage.Artifact, error) {
	out := make(map[string]*lineage.Artifact, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	b, err := json.Marshal(keys)
	if err != nil {
		return nil, fmt.Errorf("look up artifacts: %w", err)
	}
	rows, err := l.db.QueryContext(ctx, qLookupKeys, scope, store, string(b))
	if err != nil {
		return nil, fmt.Errorf("look up artifacts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		a, err := scanArtifact(rows)
		if err != nil {
			return nil, fmt.Errorf("look up artifacts: %w", err)
		}
		out[a.Key] = a
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("look up artifacts: %w", err)
	}
	return out, nil
}

type scanner interface{ Scan(...any) error }

func scanArtifact(r scanner) (*lineage.Artifact, error) {
	var a lineage.Artifact
	var subj, kind string
	if err := r.Scan(&a.ID, &a.Scope, &subj, &kind, &a.Store, &a.Key, &a.Digest); err != nil {
		return nil, err
	}
	k, err := subject.ParseKey(subj)
	if err != nil {
		return nil, err
	}
	a.Subject, a.Kind = k, lineage.Kind(kind)
	return &a, nil
}

// Suppress implements lineage.Ledger.
func (l *Ledger) Suppress(ctx context.Context, erasure string, artifacts []string) error {
	return l.inTx(ctx, "suppress", func(tx *sql.Tx) error { return suppress(ctx, tx, erasure, artifacts) })
}

var _ lineage.LoggedSuppressor = (*Ledger)(nil)

// SuppressLogged implements lineage.LoggedSuppressor: one IMMEDIATE
// transaction, one commit.
func (l *Ledger) SuppressLogged(ctx context.Context, erasure string, artifacts []string, leaf []byte) (int64, error) {
	var idx int64
	err := l.inTx(ctx, "suppress", func(tx *sql.Tx) error {
		if err := suppress(ctx, tx, erasure, artifacts); err != nil {
			return err
		}
		var err error
		idx, _, err = logAppend(ctx, tx, leaf)
		return err
	})
	return idx, err
}

// suppress suppresses the artifacts not suppressed yet, in their order, as
// one event: one read of those already suppressed and one insert, whatever
// the number of artifacts (each set travels as a JSON array).
func suppress(ctx context.Context, tx *sql.Tx, erasure string, artifacts []string) error {
	if !validUTF8(append([]string{erasure}, artifacts...)...) {
		// JSON would replace the invalid bytes: the rows would name
		// other ids than the event.
		return errors.New("suppress: an artifact or erasure id is not valid UTF-8")
	}
	done := map[string]bool{}
	if len(artifacts) > 0 {
		b, err := json.Marshal(artifacts)
		if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, qSuppressed, string(b))
		if err != nil {
			return err
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			done[id] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	var todo []string
	for _, id := range artifacts {
		if !done[id] && !slices.Contains(todo, id) {
			todo = append(todo, id)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	seq, err := appendEvent(ctx, tx, "suppress", map[string]any{"erasure": erasure, "artifacts": todo})
	if err != nil {
		return err
	}
	b, err := json.Marshal(todo)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO suppressions (artifact, erasure, seq) SELECT value, ?, ? FROM json_each(?) ORDER BY key`, erasure, seq, string(b))
	return err
}

// qSuppressed selects, of a JSON array of artifact ids, those suppressed.
const qSuppressed = `SELECT artifact FROM suppressions WHERE artifact IN (SELECT value FROM json_each(?))`

// Suppressed implements lineage.Ledger.
func (l *Ledger) Suppressed(ctx context.Context, artifact string) (bool, error) {
	var n int
	err := l.db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM suppressions WHERE artifact = ?) + (SELECT count(*) FROM erasures WHERE artifact = ?)`, artifact, artifact).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("check suppression: %w", err)
	}
	return n > 0, nil
}

// MarkErased implements lineage.Ledger: the marks not recorded yet, in
// their order, as one event, with one read of those recorded and one insert
// each into erasures and erased_subjects, whatever the number of marks
// (each set travels as a JSON array of [artifact, erasure, outcome]).
func (l *Ledger) MarkErased(ctx context.Context, marks []lineage.ErasureMark) error {
	return l.inTx(ctx, "mark erased", func(tx *sql.Tx) error {
		if len(marks) == 0 {
			return nil
		}
		for _, m := range marks {
			if !validUTF8(m.Artifact, m.Erasure, m.Outcome) {
				return errors.New("an artifact id, erasure id or outcome is not valid UTF-8") // JSON would replace the invalid bytes
			}
		}
		done := map[[2]string]bool{}
		rows, err := tx.QueryContext(ctx, qMarked, markRows(marks))
		if err != nil {
			return err
		}
		for rows.Next() {
			var a, e string
			if err := rows.Scan(&a, &e); err != nil {
				rows.Close()
				return err
			}
			done[[2]string{a, e}] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		var todo []lineage.ErasureMark
		for _, m := range marks {
			if !done[[2]string{m.Artifact, m.Erasure}] && !containsMark(todo, m) {
				todo = append(todo, m)
			}
		}
		if len(todo) == 0 {
			return nil
		}
		seq, err := appendEvent(ctx, tx, "erased", todo)
		if err != nil {
			return err
		}
		set := markRows(todo)
		if _, err := tx.ExecContext(ctx, qInsMarks, seq, set); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, qMarkErasedSubjects, seq, set)
		return err
	})
}

// The statements of MarkErased, on a JSON array of [artifact, erasure,
// outcome] (markRows): the pairs already recorded, the insert of the marks
// (in their order), and the marker of the subjects owning the marked
// artifacts (erased_subjects).
const (
	qMarked = `SELECT e.artifact, e.erasure FROM json_each(?) j
		JOIN erasures e ON e.artifact = json_extract(j.value, '$[0]') AND e.erasure = json_extract(j.value, '$[1]')`
	qInsMarks = `INSERT INTO erasures (artifact, erasure, outcome, seq)
		SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'), ?1 FROM json_each(?2) ORDER BY key`
	qMarkErasedSubjects = `INSERT OR IGNORE INTO erased_subjects (scope, subject, erasure, seq)
		SELECT a.scope, a.subject, json_extract(j.value, '$[1]'), ?1 FROM json_each(?2) j JOIN artifacts a ON a.id = json_extract(j.value, '$[0]') ORDER BY j.key`
)

// validUTF8 reports whether every s is valid UTF-8, which the JSON arrays
// of suppress and MarkErased carry unchanged.
func validUTF8(ss ...string) bool {
	for _, s := range ss {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}

// markRows is marks as a JSON array of [artifact, erasure, outcome].
func markRows(marks []lineage.ErasureMark) string {
	rows := make([][3]string, len(marks))
	for i, m := range marks {
		rows[i] = [3]string{m.Artifact, m.Erasure, m.Outcome}
	}
	b, _ := json.Marshal(rows) // strings only: never fails
	return string(b)
}

// Head implements lineage.Ledger.
func (l *Ledger) Head(ctx context.Context) (int64, string, error) {
	var seq int64
	var hash string
	err := l.db.QueryRowContext(ctx, `SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1`).Scan(&seq, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", nil
	}
	if err != nil {
		return 0, "", fmt.Errorf("ledger head: %w", err)
	}
	return seq, hash, nil
}

// containsMark reports whether ms has a mark for m's (artifact, erasure).
func containsMark(ms []lineage.ErasureMark, m lineage.ErasureMark) bool {
	return slices.ContainsFunc(ms, func(x lineage.ErasureMark) bool { return x.Artifact == m.Artifact && x.Erasure == m.Erasure })
}
