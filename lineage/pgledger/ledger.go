package pgledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/lineage"
)

// The tables are those of the SQLite ledger; events.body is TEXT (not jsonb)
// so that the hashed bytes are stored exactly. A trigger refuses UPDATE,
// DELETE and TRUNCATE on events.
var pgTables = []string{"meta", "events", "artifacts", "edges", "mentions", "suppressions", "erasures", "queue"}

const pgSchema = `
CREATE TABLE meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
CREATE TABLE events (seq BIGINT PRIMARY KEY, kind TEXT NOT NULL, body TEXT NOT NULL, hash TEXT NOT NULL);
CREATE TABLE artifacts (
	id TEXT PRIMARY KEY, seq BIGINT NOT NULL, scope TEXT NOT NULL, subject TEXT NOT NULL,
	kind TEXT NOT NULL, store TEXT NOT NULL, key TEXT NOT NULL, digest TEXT NOT NULL
);
CREATE INDEX artifacts_subject ON artifacts (scope, subject);
CREATE UNIQUE INDEX artifacts_location ON artifacts (scope, store, key);
CREATE TABLE edges (child TEXT NOT NULL, parent TEXT NOT NULL, seq BIGINT NOT NULL, PRIMARY KEY (child, parent));
CREATE INDEX edges_parent ON edges (parent);
CREATE TABLE mentions (artifact TEXT NOT NULL, subject TEXT NOT NULL, seq BIGINT NOT NULL, PRIMARY KEY (artifact, subject));
CREATE INDEX mentions_subject ON mentions (subject);
CREATE TABLE suppressions (artifact TEXT PRIMARY KEY, erasure TEXT NOT NULL, seq BIGINT NOT NULL);
CREATE TABLE erasures (
	artifact TEXT NOT NULL, erasure TEXT NOT NULL, outcome TEXT NOT NULL, seq BIGINT NOT NULL,
	PRIMARY KEY (artifact, erasure)
);
CREATE FUNCTION amnesia_events_append_only() RETURNS trigger LANGUAGE plpgsql AS
	$$BEGIN RAISE EXCEPTION 'amnesia ledger events are append-only'; END$$;
CREATE TRIGGER events_no_update BEFORE UPDATE OR DELETE ON events
	FOR EACH ROW EXECUTE FUNCTION amnesia_events_append_only();
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
	FOR EACH STATEMENT EXECUTE FUNCTION amnesia_events_append_only();
` + pgQueueSchema

// pgLock is the transaction-level advisory lock that serialises every write
// to one ledger (one schema of one database) across all processes: the
// chain head is read and extended under it, so the chain never forks.
const pgLock = `SELECT pg_advisory_xact_lock(1634561381, hashtext('amnesia.ledger:' || current_schema()))`

// Ledger is the ledger in a PostgreSQL database, shared by any number of
// amnesia processes. Its semantics and its hash chain are those of
// sqliteledger.Ledger.
type Ledger struct {
	pool *pgPool
}

func init() {
	lineage.RegisterBackend("postgres", lineage.Backend{
		Match: lineage.IsPostgresDSN,
		Open: func(ctx context.Context, spec string, create bool) (lineage.Ledger, error) {
			l, err := open(ctx, spec, create)
			if err != nil {
				return nil, err
			}
			return l, nil
		},
	})
}

var (
	_ lineage.Ledger        = (*Ledger)(nil)
	_ lineage.BatchRecorder = (*Ledger)(nil)
	_ lineage.Queue         = (*Ledger)(nil)
	_ lineage.EventLog      = (*Ledger)(nil)
)

// Open opens the ledger at dsn (a postgres:// URL; its search_path,
// if any, names the schema), creating its tables on first use. A schema that
// holds another ledger version, or tables of the same names that are not an
// amnesia ledger, is refused.
func Open(ctx context.Context, dsn string) (*Ledger, error) {
	return open(ctx, dsn, true)
}

// OpenExisting opens the ledger at dsn, but never creates it: a schema
// without the ledger's tables is refused with an error that wraps
// lineage.ErrNoLedger.
func OpenExisting(ctx context.Context, dsn string) (*Ledger, error) {
	return open(ctx, dsn, false)
}

// open opens the ledger at dsn; unless create, a schema without the
// ledger's tables is refused (lineage.ErrNoLedger) and nothing is created.
func open(ctx context.Context, dsn string, create bool) (*Ledger, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, errors.New("open ledger: the PostgreSQL URL does not parse") // the URL may hold a password
	}
	l := &Ledger{pool: newPgPool(cfg, 8)}
	if err := l.initSchema(ctx, create); err != nil {
		l.Close()
		return nil, fmt.Errorf("open ledger: %w", err)
	}
	return l, nil
}

func (l *Ledger) initSchema(ctx context.Context, create bool) error {
	return l.inTx(ctx, "schema", true, func(tx pgx.Tx) error {
		var schema *string
		if err := tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
			return err
		}
		if schema == nil {
			return errors.New("no schema of the search_path exists: create it first")
		}
		var found []string
		for _, t := range pgTables {
			var ok bool
			if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, t).Scan(&ok); err != nil {
				return err
			}
			if ok {
				found = append(found, t)
			}
		}
		if len(found) == 0 && !create {
			return fmt.Errorf("%w: the PostgreSQL schema %s holds no amnesia ledger tables", lineage.ErrNoLedger, *schema)
		}
		if len(found) == 0 {
			if _, err := tx.Exec(ctx, pgSchema); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO meta (k, v) VALUES ('schema', $1)`, lineage.SchemaVersion); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, pgLogSchema+pgRequestsSchema)
			return err
		}
		var v string
		if len(found) != len(pgTables) || tx.QueryRow(ctx, `SELECT v FROM meta WHERE k = 'schema'`).Scan(&v) != nil {
			return fmt.Errorf("this schema holds tables (%s) that are not an amnesia ledger: use a dedicated database, or a schema of its own through search_path", strings.Join(found, ", "))
		}
		if v != lineage.SchemaVersion {
			return fmt.Errorf("schema %q, this amnesia reads %q", v, lineage.SchemaVersion)
		}
		_, err := tx.Exec(ctx, pgLogSchema+pgRequestsSchema)
		return err
	})
}

// Close closes the connections.
func (l *Ledger) Close() error {
	l.pool.close()
	return nil
}

// inTx runs fn in a READ COMMITTED transaction; a write transaction first
// takes the ledger's advisory lock.
func (l *Ledger) inTx(ctx context.Context, op string, write bool, fn func(tx pgx.Tx) error) error {
	err := l.pool.with(ctx, func(c *pgx.Conn) error {
		return pgx.BeginTxFunc(ctx, c, pgx.TxOptions{}, func(tx pgx.Tx) error {
			if write {
				if _, err := tx.Exec(ctx, pgLock); err != nil {
					return err
				}
			}
			return fn(tx)
		})
	})
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// pgAppend writes one event to the hash chain (under pgLock) and returns its seq.
func pgAppend(ctx context.Context, tx pgx.Tx, kind string, body any) (int64, error) {
	w := &pgWriter{ctx: ctx, tx: tx}
	return w.append(kind, body)
}

func pgCount(ctx context.Context, tx pgx.Tx, q string, args ...any) (int, error) {
	var n int
	err := tx.QueryRow(ctx, q, args...).Scan(&n)
	return n, err
}

// pgWriter appends to the chain inside one transaction (under pgLock); it
// keeps the head it wrote, so a batch reads the head once. pgx prepares and
// caches each statement per connection.
type pgWriter struct {
	ctx  context.Context
	tx   pgx.Tx
	seq  int64
	prev string
	read bool
}

func (w *pgWriter) append(kind string, body any) (int64, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return 0, err
	}
	if !w.read {
		err = w.tx.QueryRow(w.ctx, `SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1`).Scan(&w.seq, &w.prev)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return 0, err
		}
		w.read = true
	}
	seq := w.seq + 1
	hash := lineage.EventHash(w.prev, seq, kind, b)
	if _, err := w.tx.Exec(w.ctx, `INSERT INTO events (seq, kind, body, hash) VALUES ($1, $2, $3, $4)`, seq, kind, string(b), hash); err != nil {
		return 0, err
	}
	w.seq, w.prev = seq, hash
	return seq, nil
}

func (w *pgWriter) record(a lineage.Artifact) error {
	ctx, tx := w.ctx, w.tx
	var subj, digest string
	err := tx.QueryRow(ctx, `SELECT subject, digest FROM artifacts WHERE id = $1`, a.ID).Scan(&subj, &digest)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return err
	case subj != a.Subject.String():
		return lineage.ErrOwnerConflict
	}
	if n, err := pgCount(ctx, tx, `SELECT count(*) FROM erasures WHERE artifact = $1`, a.ID); err != nil {
		return err
	} else if n > 0 {
		return lineage.ErrErased
	}
	var newParents []string
	for _, p := range a.Parents {
		if n, err := pgCount(ctx, tx, `SELECT count(*) FROM artifacts WHERE id = $1`, p); err != nil {
			return err
		} else if n == 0 {
			return fmt.Errorf("parent %s: %w", p, lineage.ErrNotFound)
		}
		if n, err := pgCount(ctx, tx, `SELECT count(*) FROM edges WHERE child = $1 AND parent = $2`, a.ID, p); err != nil {
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
	if _, err := tx.Exec(ctx, `INSERT INTO artifacts (id, seq, scope, subject, kind, store, key, digest) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (id) DO UPDATE SET digest = EXCLUDED.digest, seq = EXCLUDED.seq`,
		a.ID, seq, a.Scope, a.Subject.String(), string(a.Kind), a.Store, a.Key, a.Digest); err != nil {
		return err
	}
	for _, p := range newParents {
		if _, err := tx.Exec(ctx, `INSERT INTO edges (child, parent, seq) VALUES ($1, $2, $3)`, a.ID, p, seq); err != nil {
			return err
		}
	}
	return nil
}

func (w *pgWriter) mention(m lineage.Mention) error {
	if n, err := pgCount(w.ctx, w.tx, `SELECT count(*) FROM mentions WHERE artifact = $1 AND subject = $2`, m.Artifact, m.Subject.String()); err != nil || n > 0 {
		return err
	}
	seq, err := w.append("mention", map[string]string{"artifact": m.Artifact, "subject": m.Subject.String()})
	if err != nil {
		return err
	}
	_, err = w.tx.Exec(w.ctx, `INSERT INTO mentions (artifact, subject, seq) VALUES ($1, $2, $3)`, m.Artifact, m.Subject.String(), seq)
	return err
}

// Record implements lineage.Ledger.
func (l *Ledger) Record(ctx context.Context, a lineage.Artifact) error {
	if err := lineage.CheckArtifact(a); err != nil {
		return err
	}
	return l.inTx(ctx, "record artifact", true, func(tx pgx.Tx) error {
		return (&pgWriter{ctx: ctx, tx: tx}).record(a)
	})
}

// RecordBatch implements lineage.BatchRecorder: one transaction, one
// commit, the events of Record and Mention one by one.
func (l *Ledger) RecordBatch(ctx context.Context, artifacts []lineage.Artifact, mentions []lineage.Mention) error {
	for _, a := range artifacts {
		if err := lineage.CheckArtifact(a); err != nil {
			return err
		}
	}
	return l.inTx(ctx, "record batch", true, func(tx pgx.Tx) error {
		w := &pgWriter{ctx: ctx, tx: tx}
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

// lineage.Mention implements lineage.Ledger.
func (l *Ledger) Mention(ctx context.Context, m lineage.Mention) error {
	return l.inTx(ctx, "record mention", true, func(tx pgx.Tx) error {
		return (&pgWriter{ctx: ctx, tx: tx}).mention(m)
	})
}

// Suppress implements lineage.Ledger.
func (l *Ledger) Suppress(ctx context.Context, erasure string, artifacts []string) error {
	return l.inTx(ctx, "suppress", true, func(tx pgx.Tx) error {
		var todo []string
		for _, id := range artifacts {
			if n, err := pgCount(ctx, tx, `SELECT count(*) FROM suppressions WHERE artifact = $1`, id); err != nil {
				return err
			} else if n == 0 && !slices.Contains(todo, id) {
				todo = append(todo, id)
			}
		}
		if len(todo) == 0 {
			return nil
		}
		seq, err := pgAppend(ctx, tx, "suppress", map[string]any{"erasure": erasure, "artifacts": todo})
		if err != nil {
			return err
		}
		for _, id := range todo {
			if _, err := tx.Exec(ctx, `INSERT INTO suppressions (artifact, erasure, seq) VALUES ($1, $2, $3)`, id, erasure, seq); err != nil {
				return err
			}
		}
		return nil
	})
}

// MarkErased implements lineage.Ledger.
func (l *Ledger) MarkErased(ctx context.Context, marks []lineage.ErasureMark) error {
	return l.inTx(ctx, "mark erased", true, func(tx pgx.Tx) error {
		var todo []lineage.ErasureMark
		for _, m := range marks {
			if n, err := pgCount(ctx, tx, `SELECT count(*) FROM erasures WHERE artifact = $1 AND erasure = $2`, m.Artifact, m.Erasure); err != nil {
				return err
			} else if n == 0 && !containsMark(todo, m) {
				todo = append(todo, m)
			}
		}
		if len(todo) == 0 {
			return nil
		}
		seq, err := pgAppend(ctx, tx, "erased", todo)
		if err != nil {
			return err
		}
		for _, m := range todo {
			if _, err := tx.Exec(ctx, `INSERT INTO erasures (artifact, erasure, outcome, seq) VALUES ($1, $2, $3, $4)`, m.Artifact, m.Erasure, m.Outcome, seq); err != nil {
				return err
			}
		}
		return nil
	})
}

// containsMark reports whether ms has a mark for m's (artifact, erasure).
func containsMark(ms []lineage.ErasureMark, m lineage.ErasureMark) bool {
	return slices.ContainsFunc(ms, func(x lineage.ErasureMark) bool { return x.Artifact == m.Artifact && x.Erasure == m.Erasure })
}
