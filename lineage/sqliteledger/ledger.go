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
	"sort"

	_ "github.com/mattn/go-sqlite3" // database/sql driver "sqlite3"

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
}

func init() {
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
func open(ctx context.Context, path string, create bool) (*Ledger, error) {
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
	dsn := "file:" + path + "?_journal_mode=WAL&_busy_timeout=10000&_txlock=immediate&_synchronous=FULL"
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
	db, err := sql.Open("sqlite3", dsn)
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
	if _, err := db.ExecContext(ctx, sqliteSchema+sqliteQueueSchema+sqliteLogSchema+sqliteRequestsSchema); err != nil {
		db.Close()
		return nil, fmt.Errorf("open ledger %s: %w", path, err)
	}
	var v string
	err = db.QueryRowContext(ctx, `SELECT v FROM meta WHERE k='schema'`).Scan(&v)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if _, err := db.ExecContext(ctx, `INSERT INTO meta (k, v) VALUES ('schema', ?)`, lineage.SchemaVersion); err != nil {
			db.Close()
			return nil, fmt.Errorf("open ledger: %w", err)
		}
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
	return l.db.Close()
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
		return l.writer(ctx, tx).record(a)
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
		w := l.writer(ctx, tx)
		for _, a := range artifacts {
			if err := w.record(a); err != nil {
				return fmt.Errorf("artifact %s: %w", a.ID, err)
			}
		}
		for _, m := range mentions {
			if err := w.mention(m); err != nil {
				return fmt.Errorf("mention on %s: %w", m.Artifact, err)
			}
		}
		return nil
	})
}

// stmts are the write path's statements, prepared once per ledger (and by
// database/sql once per connection).
type stmts struct {
	selArt, cntErased, cntArt, cntEdge, head, insEvent, insArt, insEdge, cntMention, insMention *sql.Stmt
}

func (l *Ledger) prepare(ctx context.Context) error {
	for _, p := range []struct {
		s **sql.Stmt
		q string
	}{
		{&l.st.selArt, `SELECT subject, digest FROM artifacts WHERE id = ?`},
		{&l.st.cntErased, `SELECT count(*) FROM erasures WHERE artifact = ?`},
		{&l.st.cntArt, `SELECT count(*) FROM artifacts WHERE id = ?`},
		{&l.st.cntEdge, `SELECT count(*) FROM edges WHERE child = ? AND parent = ?`},
		{&l.st.head, `SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1`},
		{&l.st.insEvent, `INSERT INTO events (seq, kind, body, hash) VALUES (?, ?, ?, ?)`},
		{&l.st.insArt, `INSERT INTO artifacts (id, seq, scope, subject, kind, store, key, digest) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET digest = excluded.digest, seq = excluded.seq`},
		{&l.st.insEdge, `INSERT INTO edges (child, parent, seq) VALUES (?, ?, ?)`},
		{&l.st.cntMention, `SELECT count(*) FROM mentions WHERE artifact = ? AND subject = ?`},
		{&l.st.insMention, `INSERT INTO mentions (artifact, subject, seq) VALUES (?, ?, ?)`},
	} {
		s, err := l.db.PrepareContext(ctx, p.q)
		if err != nil {
			return err
		}
		*p.s = s
	}
	return nil
}

func (l *Ledger) closeStmts() {
	for _, s := range []*sql.Stmt{l.st.selArt, l.st.cntErased, l.st.cntArt, l.st.cntEdge, l.st.head, l.st.insEvent, l.st.insArt, l.st.insEdge, l.st.cntMention, l.st.insMention} {
		if s != nil {
			s.Close()
		}
	}
}

// txWriter appends to the chain inside one transaction; it keeps the head
// it wrote, so a batch reads the head once.
type txWriter struct {
	ctx  context.Context
	tx   *sql.Tx
	st   *stmts
	seq  int64
	prev string
	read bool // seq, prev hold the head
}

func (l *Ledger) writer(ctx context.Context, tx *sql.Tx) *txWriter {
	return &txWriter{ctx: ctx, tx: tx, st: &l.st}
}

func (w *txWriter) stmt(s *sql.Stmt) *sql.Stmt { return w.tx.StmtContext(w.ctx, s) }

func (w *txWriter) count(s *sql.Stmt, args ...any) (int, error) {
	var n int
	err := w.stmt(s).QueryRowContext(w.ctx, args...).Scan(&n)
	return n, err
}

// append writes one event to the hash chain and returns its seq.
func (w *txWriter) append(kind string, body any) (int64, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return 0, err
	}
	if !w.read {
		err = w.stmt(w.st.head).QueryRowContext(w.ctx).Scan(&w.seq, &w.prev)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return 0, err
		}
		w.read = true
	}
	seq := w.seq + 1
	hash := lineage.EventHash(w.prev, seq, kind, b)
	if _, err := w.stmt(w.st.insEvent).ExecContext(w.ctx, seq, kind, string(b), hash); err != nil {
		return 0, err
	}
	w.seq, w.prev = seq, hash
	return seq, nil
}

func (w *txWriter) record(a lineage.Artifact) error {
	var subj, digest string
	err := w.stmt(w.st.selArt).QueryRowContext(w.ctx, a.ID).Scan(&subj, &digest)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return err
	case subj != a.Subject.String():
		return lineage.ErrOwnerConflict
	}
	if n, err := w.count(w.st.cntErased, a.ID); err != nil {
		return err
	} else if n > 0 {
		return lineage.ErrErased
	}
	var newParents []string
	for _, p := range a.Parents {
		if n, err := w.count(w.st.cntArt, p); err != nil {
			return err
		} else if n == 0 {
			return fmt.Errorf("parent %s: %w", p, lineage.ErrNotFound)
		}
		if n, err := w.count(w.st.cntEdge, a.ID, p); err != nil {
			return err
		} else if n == 0 {
			newParents = append(newParents, p)
		}
	}
	sort.Strings(newParents)
	if subj != "" && digest == a.Digest && len(newParents) == 0 {
		return nil // identical: no-op
	}
	seq, err := w.append("artifact", lineage.ArtifactEvent{ID: a.ID, Scope: a.Scope, Subject: a.Subject.String(), Kind: a.Kind, Store: a.Store, Key: a.Key, Digest: a.Digest, Parents: newParents})
	if err != nil {
		return err
	}
	if _, err := w.stmt(w.st.insArt).ExecContext(w.ctx, a.ID, seq, a.Scope, a.Subject.String(), string(a.Kind), a.Store, a.Key, a.Digest); err != nil {
		return err
	}
	for _, p := range newParents {
		if _, err := w.stmt(w.st.insEdge).ExecContext(w.ctx, a.ID, p, seq); err != nil {
			return err
		}
	}
	return nil
}

func (w *txWriter) mention(m lineage.Mention) error {
	if n, err := w.count(w.st.cntMention, m.Artifact, m.Subject.String()); err != nil || n > 0 {
		return err
	}
	seq, err := w.append("mention", map[string]string{"artifact": m.Artifact, "subject": m.Subject.String()})
	if err != nil {
		return err
	}
	_, err = w.stmt(w.st.insMention).ExecContext(w.ctx, m.Artifact, m.Subject.String(), seq)
	return err
}

// lineage.Mention implements lineage.Ledger.
func (l *Ledger) Mention(ctx context.Context, m lineage.Mention) error {
	return l.inTx(ctx, "record mention", func(tx *sql.Tx) error {
		return l.writer(ctx, tx).mention(m)
	})
}

// Lookup implements lineage.Ledger.
func (l *Ledger) Lookup(ctx context.Context, scope, store, key string) (*lineage.Artifact, error) {
	row := l.db.QueryRowContext(ctx, `SELECT id, scope, subject, kind, store, key, digest FROM artifacts WHERE scope = ? AND store = ? AND key = ?`, scope, store, key)
	a, err := scanArtifact(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, lineage.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("look up artifact: %w", err)
	}
	return a, nil
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
	return l.inTx(ctx, "suppress", func(tx *sql.Tx) error {
		var todo []string
		for _, id := range artifacts {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM suppressions WHERE artifact = ?`, id).Scan(&n); err != nil {
				return err
			}
			if n == 0 && !slices.Contains(todo, id) {
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
		for _, id := range todo {
			if _, err := tx.ExecContext(ctx, `INSERT INTO suppressions (artifact, erasure, seq) VALUES (?, ?, ?)`, id, erasure, seq); err != nil {
				return err
			}
		}
		return nil
	})
}

// Suppressed implements lineage.Ledger.
func (l *Ledger) Suppressed(ctx context.Context, artifact string) (bool, error) {
	var n int
	err := l.db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM suppressions WHERE artifact = ?) + (SELECT count(*) FROM erasures WHERE artifact = ?)`, artifact, artifact).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("check suppression: %w", err)
	}
	return n > 0, nil
}

// MarkErased implements lineage.Ledger.
func (l *Ledger) MarkErased(ctx context.Context, marks []lineage.ErasureMark) error {
	return l.inTx(ctx, "mark erased", func(tx *sql.Tx) error {
		var todo []lineage.ErasureMark
		for _, m := range marks {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM erasures WHERE artifact = ? AND erasure = ?`, m.Artifact, m.Erasure).Scan(&n); err != nil {
				return err
			}
			if n == 0 && !containsMark(todo, m) {
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
		for _, m := range todo {
			if _, err := tx.ExecContext(ctx, `INSERT INTO erasures (artifact, erasure, outcome, seq) VALUES (?, ?, ?, ?)`, m.Artifact, m.Erasure, m.Outcome, seq); err != nil {
				return err
			}
		}
		return nil
	})
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
