package pgledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
			if _, err := tx.Exec(ctx, pgLogSchema+pgRequestsSchema+pgAdoptSchema+pgKeysSchema+pgRecordsSchema); err != nil {
				return err
			}
			return initConsent(ctx, tx)
		}
		var v string
		if len(found) != len(pgTables) || tx.QueryRow(ctx, `SELECT v FROM meta WHERE k = 'schema'`).Scan(&v) != nil {
			return fmt.Errorf("this schema holds tables (%s) that are not an amnesia ledger: use a dedicated database, or a schema of its own through search_path", strings.Join(found, ", "))
		}
		if v != lineage.SchemaVersion {
			return fmt.Errorf("schema %q, this amnesia reads %q", v, lineage.SchemaVersion)
		}
		if _, err := tx.Exec(ctx, pgLogSchema+pgRequestsSchema+pgAdoptSchema+pgKeysSchema+pgRecordsSchema); err != nil {
			return err
		}
		if err := pgQueueOwner(ctx, tx); err != nil {
			return err
		}
		return initConsent(ctx, tx)
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
	b, err := json.Marshal(body)
	if err != nil {
		return 0, err
	}
	var seq int64
	var prev string
	err = tx.QueryRow(ctx, `SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1`).Scan(&seq, &prev)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return 0, err
	}
	seq++
	_, err = tx.Exec(ctx, `INSERT INTO events (seq, kind, body, hash) VALUES ($1, $2, $3, $4)`, seq, kind, string(b), lineage.EventHash(prev, seq, kind, b))
	return seq, err
}

func pgCount(ctx context.Context, tx pgx.Tx, q string, args ...any) (int, error) {
	var n int
	err := tx.QueryRow(ctx, q, args...).Scan(&n)
	return n, err
}

// Record implements lineage.Ledger.
func (l *Ledger) Record(ctx context.Context, a lineage.Artifact) error {
	if err := lineage.CheckArtifact(a); err != nil {
		return err
	}
	return l.recordTx(ctx, "record artifact", []lineage.Artifact{a}, nil)
}

// lineage.Mention implements lineage.Ledger.
func (l *Ledger) Mention(ctx context.Context, m lineage.Mention) error {
	return l.recordTx(ctx, "record mention", nil, []lineage.Mention{m})
}

// RecordBatch implements lineage.BatchRecorder: one transaction, one
// commit, the events of Record and Mention one by one.
func (l *Ledger) RecordBatch(ctx context.Context, artifacts []lineage.Artifact, mentions []lineage.Mention) error {
	for _, a := range artifacts {
		if err := lineage.CheckArtifact(a); err != nil {
			return err
		}
	}
	return l.recordTx(ctx, "record batch", artifacts, mentions)
}

// recordTx records a batch in a transaction of its own in two round trips:
// BEGIN goes with the lock and the reads, COMMIT with the writes
// (writeBatch). On an error the transaction is rolled back; a connection
// that cannot be is closed when released (pgPool.release).
func (l *Ledger) recordTx(ctx context.Context, op string, artifacts []lineage.Artifact, mentions []lineage.Mention) error {
	err := l.pool.with(ctx, func(c *pgx.Conn) error {
		err := writeBatchOn(ctx, c, artifacts, mentions, true)
		if err != nil && !c.IsClosed() && c.PgConn().TxStatus() != 'I' {
			c.Exec(ctx, "ROLLBACK")
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// batchSender is a pgx.Tx, or a *pgx.Conn when writeBatchOn opens and
// commits the transaction itself.
type batchSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// writeBatch takes the ledger's lock and reads what the batch's checks
// need in one round trip, plans its events in memory (lineage.PlanBatch:
// those of one write at a time), and writes them in a second round trip:
// one statement a table, over arrays, whatever the batch size. pgx
// prepares and caches each statement per connection.
func writeBatch(ctx context.Context, tx pgx.Tx, artifacts []lineage.Artifact, mentions []lineage.Mention) error {
	return writeBatchOn(ctx, tx, artifacts, mentions, false)
}

// writeBatchOn is writeBatch on s; with own, the first round trip begins
// the transaction and the second commits it (the caller rolls back on
// an error).
func writeBatchOn(ctx context.Context, s batchSender, artifacts []lineage.Artifact, mentions []lineage.Mention, own bool) error {
	reads := lineage.ReadsOf(artifacts, mentions)
	b := &pgx.Batch{}
	if own {
		b.Queue("BEGIN")
	}
	b.Queue(pgLock)
	var seq int64
	var hash string
	b.Queue(`SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1`).QueryRow(func(r pgx.Row) error {
		if err := r.Scan(&seq, &hash); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		return nil
	})
	state := lineage.NewBatchState(0, "")
	if len(reads.IDs) > 0 {
		b.Queue(`SELECT id, subject, digest FROM artifacts WHERE id = ANY($1)`, reads.IDs).Query(func(rows pgx.Rows) error {
			var id, subj, digest string
			_, err := pgx.ForEachRow(rows, []any{&id, &subj, &digest}, func() error {
				state.Known[id] = [2]string{subj, digest}
				return nil
			})
			return err
		})
		b.Queue(`SELECT DISTINCT artifact FROM erasures WHERE artifact = ANY($1)`, reads.Artifacts).Query(func(rows pgx.Rows) error {
			var id string
			_, err := pgx.ForEachRow(rows, []any{&id}, func() error { state.Erased[id] = true; return nil })
			return err
		})
	}
	if len(reads.Parented) > 0 {
		b.Queue(`SELECT child, parent FROM edges WHERE child = ANY($1)`, reads.Parented).Query(func(rows pgx.Rows) error {
			var c, p string
			_, err := pgx.ForEachRow(rows, []any{&c, &p}, func() error { state.Edges[[2]string{c, p}] = true; return nil })
			return err
		})
	}
	if len(reads.Mentioned) > 0 {
		b.Queue(`SELECT artifact, subject FROM mentions WHERE artifact = ANY($1)`, reads.Mentioned).Query(func(rows pgx.Rows) error {
			var a, s string
			_, err := pgx.ForEachRow(rows, []any{&a, &s}, func() error { state.Mentions[[2]string{a, s}] = true; return nil })
			return err
		})
	}
	if err := s.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	state.HeadSeq, state.HeadHash = seq, hash
	plan, err := lineage.PlanBatch(state, artifacts, mentions)
	if err != nil {
		return err
	}
	w := &pgx.Batch{}
	if n := len(plan.Events); n > 0 {
		seqs, kinds, bodies, hashes := make([]int64, n), make([]string, n), make([]string, n), make([]string, n)
		for i, e := range plan.Events {
			seqs[i], kinds[i], bodies[i], hashes[i] = e.Seq, e.Kind, e.Body, e.Hash
		}
		w.Queue(`INSERT INTO events (seq, kind, body, hash) SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[])`, seqs, kinds, bodies, hashes)
	}
	if n := len(plan.Artifacts); n > 0 {
		var cols [7][]string
		seqs := make([]int64, n)
		for i := range cols {
			cols[i] = make([]string, n)
		}
		for i, a := range plan.Artifacts {
			seqs[i] = a.Seq
			cols[0][i], cols[1][i], cols[2][i], cols[3][i], cols[4][i], cols[5][i], cols[6][i] = a.ID, a.Scope, a.Subject.String(), string(a.Kind), a.Store, a.Key, a.Digest
		}
		w.Queue(`INSERT INTO artifacts (id, seq, scope, subject, kind, store, key, digest)
			SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
			ON CONFLICT (id) DO UPDATE SET digest = EXCLUDED.digest, seq = EXCLUDED.seq`,
			cols[0], seqs, cols[1], cols[2], cols[3], cols[4], cols[5], cols[6])
	}
	if n := len(plan.Edges); n > 0 {
		children, parents, seqs := make([]string, n), make([]string, n), make([]int64, n)
		for i, e := range plan.Edges {
			children[i], parents[i], seqs[i] = e.Child, e.Parent, e.Seq
		}
		w.Queue(`INSERT INTO edges (child, parent, seq) SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[])`, children, parents, seqs)
	}
	if n := len(plan.Mentions); n > 0 {
		arts, subjs, seqs := make([]string, n), make([]string, n), make([]int64, n)
		for i, m := range plan.Mentions {
			arts[i], subjs[i], seqs[i] = m.Artifact, m.Subject, m.Seq
		}
		w.Queue(`INSERT INTO mentions (artifact, subject, seq) SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[])`, arts, subjs, seqs)
	}
	if own {
		w.Queue("COMMIT")
	}
	if w.Len() == 0 {
		return nil
	}
	return s.SendBatch(ctx, w).Close()
}

// Suppress implements lineage.Ledger.
func (l *Ledger) Suppress(ctx context.Context, erasure string, artifacts []string) error {
	return l.inTx(ctx, "suppress", true, func(tx pgx.Tx) error { return pgSuppress(ctx, tx, erasure, artifacts) })
}

var _ lineage.LoggedSuppressor = (*Ledger)(nil)

// SuppressLogged implements lineage.LoggedSuppressor: one transaction
// under the ledger's lock, one commit.
func (l *Ledger) SuppressLogged(ctx context.Context, erasure string, artifacts []string, leaf []byte) (int64, error) {
	var idx int64
	err := l.inTx(ctx, "suppress", true, func(tx pgx.Tx) error {
		if err := pgSuppress(ctx, tx, erasure, artifacts); err != nil {
			return err
		}
		var err error
		idx, _, err = pgLogAppend(ctx, tx, leaf)
		return err
	})
	return idx, err
}

// pgSuppress suppresses artifacts in tx (under pgLock).
func pgSuppress(ctx context.Context, tx pgx.Tx, erasure string, artifacts []string) error {
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
			if _, err := tx.Exec(ctx, markErasedSubjects, m.Erasure, seq, m.Artifact); err != nil {
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
