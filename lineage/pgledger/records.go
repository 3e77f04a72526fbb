package pgledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/lineage"
)

// pgRecordsSchema keeps the durable state of erasures (lineage.ErasureRecords),
// created on every open (IF NOT EXISTS), under the ledger's write lock:
//
//   - erasure_journal: one row per journal entry, its JSON line exactly as a
//     journal file would hold it (hash-chained; the reader checks the
//     chain), append-only (a trigger refuses UPDATE and DELETE); the
//     primary key (erasure, name, seq) makes a second writer of one entry
//     fail instead of forking the journal;
//   - erasure_sealed: sealed evidence (AES-256-GCM ciphertext), deleted
//     when the erasure publishes, its table then rewritten (VACUUM FULL);
//   - erasure_records: saved traces and published certificates.
const pgRecordsSchema = `
CREATE TABLE IF NOT EXISTS erasure_journal (
	erasure TEXT NOT NULL, name TEXT NOT NULL, seq INTEGER NOT NULL,
	step TEXT NOT NULL, phase TEXT NOT NULL, line TEXT NOT NULL,
	PRIMARY KEY (erasure, name, seq)
);
CREATE TABLE IF NOT EXISTS erasure_sealed (id TEXT PRIMARY KEY, body BYTEA NOT NULL);
CREATE TABLE IF NOT EXISTS erasure_records (kind TEXT NOT NULL, id TEXT NOT NULL, body BYTEA NOT NULL, PRIMARY KEY (kind, id));
CREATE OR REPLACE FUNCTION amnesia_journal_append_only() RETURNS trigger LANGUAGE plpgsql AS
	$$BEGIN RAISE EXCEPTION 'amnesia erasure journals are append-only'; END$$;
CREATE OR REPLACE TRIGGER erasure_journal_no_update BEFORE UPDATE OR DELETE ON erasure_journal
	FOR EACH ROW EXECUTE FUNCTION amnesia_journal_append_only();
`

var _ lineage.ErasureRecords = (*Ledger)(nil)

// fencedTx runs fn in a transaction that first checks that claim (when not
// nil) is the job's current claim with a lease that has not run out, and
// holds that queue row share-locked until the commit: a new claim of the
// job (FOR UPDATE SKIP LOCKED) cannot take it in between.
func (l *Ledger) fencedTx(ctx context.Context, op string, claim *lineage.Job, fn func(tx pgx.Tx) error) error {
	err := l.pool.with(ctx, func(c *pgx.Conn) error {
		return pgx.BeginTxFunc(ctx, c, pgx.TxOptions{}, func(tx pgx.Tx) error {
			if claim != nil {
				var one int
				err := tx.QueryRow(ctx, `SELECT 1 FROM queue WHERE id = $1 AND worker = $2 AND attempts = $3
					AND state = 'claimed' AND lease_until > now() FOR SHARE`, claim.ID, claim.Worker, claim.Attempts).Scan(&one)
				if errors.Is(err, pgx.ErrNoRows) {
					return lineage.ErrLeaseLost
				}
				if err != nil {
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

// AppendJournalLine implements lineage.ErasureRecords.
func (l *Ledger) AppendJournalLine(ctx context.Context, claim *lineage.Job, erasure, name string, seq int, step, phase string, line []byte) error {
	if erasure == "" || name == "" || seq < 1 {
		return errors.New("append journal entry: an erasure, a journal name and an entry number ≥ 1 are required")
	}
	return l.fencedTx(ctx, "append journal entry", claim, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO erasure_journal (erasure, name, seq, step, phase, line) VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT DO NOTHING`, erasure, name, seq, step, phase, string(line))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("%w: entry %d of journal %s/%s", lineage.ErrJournalConflict, seq, erasure, name)
		}
		return nil
	})
}

// JournalLines implements lineage.ErasureRecords.
func (l *Ledger) JournalLines(ctx context.Context, erasure, name string) ([][]byte, error) {
	var out [][]byte
	err := l.pool.with(ctx, func(c *pgx.Conn) error {
		rows, _ := c.Query(ctx, `SELECT line FROM erasure_journal WHERE erasure = $1 AND name = $2 ORDER BY seq`, erasure, name)
		var err error
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]byte, error) {
			var s string
			err := r.Scan(&s)
			return []byte(s), err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	return out, nil
}

// JournalErasures implements lineage.ErasureRecords.
func (l *Ledger) JournalErasures(ctx context.Context, name, unfinishedStep string) ([]string, error) {
	var out []string
	err := l.pool.with(ctx, func(c *pgx.Conn) error {
		rows, _ := c.Query(ctx, `SELECT DISTINCT j.erasure FROM erasure_journal j WHERE j.name = $1
			AND ($2 = '' OR NOT EXISTS (SELECT 1 FROM erasure_journal d
				WHERE d.erasure = j.erasure AND d.name = j.name AND d.step = $2 AND d.phase = 'done'))
			ORDER BY j.erasure`, name, unfinishedStep)
		var err error
		out, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list journals: %w", err)
	}
	return out, nil
}

// recordTable returns the table and key condition of a record kind.
func recordTable(kind string) (table, where string, err error) {
	switch kind {
	case lineage.RecordSealed:
		return "erasure_sealed", "$1 = 'sealed'", nil
	case lineage.RecordTrace, lineage.RecordCertificate:
		return "erasure_records", "kind = $1", nil
	}
	return "", "", fmt.Errorf("erasure record: unknown kind %q", kind)
}

// PutErasureRecord implements lineage.ErasureRecords.
func (l *Ledger) PutErasureRecord(ctx context.Context, claim *lineage.Job, kind, id string, b []byte) error {
	table, _, err := recordTable(kind)
	if err != nil {
		return err
	}
	if id == "" {
		return errors.New("put erasure record: an id is required")
	}
	return l.fencedTx(ctx, "put "+kind, claim, func(tx pgx.Tx) error {
		if table == "erasure_sealed" {
			_, err := tx.Exec(ctx, `INSERT INTO erasure_sealed (id, body) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET body = excluded.body`, id, b)
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO erasure_records (kind, id, body) VALUES ($1, $2, $3) ON CONFLICT (kind, id) DO UPDATE SET body = excluded.body`, kind, id, b)
		return err
	})
}

// ErasureRecord implements lineage.ErasureRecords.
func (l *Ledger) ErasureRecord(ctx context.Context, kind, id string) ([]byte, error) {
	table, where, err := recordTable(kind)
	if err != nil {
		return nil, err
	}
	var b []byte
	err = l.pool.with(ctx, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, `SELECT body FROM `+table+` WHERE `+where+` AND id = $2`, kind, id).Scan(&b)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%s %s: %w", kind, id, lineage.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", kind, err)
	}
	return b, nil
}

// ErasureRecordIDs implements lineage.ErasureRecords.
func (l *Ledger) ErasureRecordIDs(ctx context.Context, kind string) ([]string, error) {
	table, where, err := recordTable(kind)
	if err != nil {
		return nil, err
	}
	var out []string
	err = l.pool.with(ctx, func(c *pgx.Conn) error {
		rows, _ := c.Query(ctx, `SELECT id FROM `+table+` WHERE `+where+` ORDER BY id`, kind)
		var err error
		out, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", kind, err)
	}
	return out, nil
}

// ShredErasureRecords implements lineage.ErasureRecords: the rows are
// deleted (fenced), then their table is rewritten with VACUUM FULL, so that
// the table's files no longer hold them. pg_wal keeps the inserts until the
// server recycles it, and replicas and backups keep their own copies: the
// description says so.
func (l *Ledger) ShredErasureRecords(ctx context.Context, claim *lineage.Job, kind string, ids []string) (string, error) {
	table, where, err := recordTable(kind)
	if err != nil {
		return "", err
	}
	var n int64
	err = l.fencedTx(ctx, "destroy "+kind, claim, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM `+table+` WHERE `+where+` AND id = ANY($2)`, kind, ids)
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return "", err
	}
	err = l.pool.with(ctx, func(c *pgx.Conn) error {
		_, err := c.Exec(ctx, `VACUUM FULL `+table)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("destroy %s: rewrite %s: %w", kind, table, err)
	}
	return fmt.Sprintf("%d row(s) deleted from the ledger's %s table, then the table rewritten (VACUUM FULL); pg_wal keeps the ciphertext until the server recycles it, and replicas and backups of the ledger keep their copies", n, table), nil
}
