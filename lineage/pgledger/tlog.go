package pgledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/amnesia-dev/amnesia/transparency"
)

// The transparency log's tables, created (idempotently) on open under the
// ledger's lock, so a ledger written before the log existed gains an empty
// log. Leaves and hashes are append-only, enforced by triggers.
const pgLogSchema = `
CREATE TABLE IF NOT EXISTS tlog_leaves (idx BIGINT PRIMARY KEY, data BYTEA NOT NULL, hash TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS tlog_hashes (id BIGINT PRIMARY KEY, hash BYTEA NOT NULL);
CREATE TABLE IF NOT EXISTS tlog_checkpoints (size BIGINT PRIMARY KEY, note BYTEA NOT NULL);
CREATE TABLE IF NOT EXISTS tlog_timestamps (size BIGINT PRIMARY KEY, token BYTEA NOT NULL);
CREATE OR REPLACE FUNCTION amnesia_tlog_append_only() RETURNS trigger LANGUAGE plpgsql AS
	$$BEGIN RAISE EXCEPTION 'amnesia transparency log is append-only'; END$$;
CREATE OR REPLACE TRIGGER tlog_leaves_append_only BEFORE UPDATE OR DELETE ON tlog_leaves
	FOR EACH ROW EXECUTE FUNCTION amnesia_tlog_append_only();
CREATE OR REPLACE TRIGGER tlog_leaves_no_truncate BEFORE TRUNCATE ON tlog_leaves
	FOR EACH STATEMENT EXECUTE FUNCTION amnesia_tlog_append_only();
CREATE OR REPLACE TRIGGER tlog_hashes_append_only BEFORE UPDATE OR DELETE ON tlog_hashes
	FOR EACH ROW EXECUTE FUNCTION amnesia_tlog_append_only();
CREATE OR REPLACE TRIGGER tlog_hashes_no_truncate BEFORE TRUNCATE ON tlog_hashes
	FOR EACH STATEMENT EXECUTE FUNCTION amnesia_tlog_append_only();
`

var _ transparency.Store = (*Ledger)(nil)

// LogAppend implements transparency.Store.
func (l *Ledger) LogAppend(ctx context.Context, data []byte) (int64, bool, error) {
	var idx int64
	var existed bool
	err := l.inTx(ctx, "log append", true, func(tx pgx.Tx) error {
		var err error
		idx, existed, err = pgLogAppend(ctx, tx, data)
		return err
	})
	return idx, existed, err
}

// pgLogSize is the number of leaves: the highest index plus one, read
// from the end of the primary key (the leaves are numbered from 0 and only
// appended; see the SQLite ledger's qLogSize), not a count of every leaf.
const pgLogSize = `SELECT coalesce(max(idx) + 1, 0) FROM tlog_leaves`

// pgLogAppend appends data in tx (under pgLock) unless an equal leaf is in
// the log.
func pgLogAppend(ctx context.Context, tx pgx.Tx, data []byte) (idx int64, existed bool, err error) {
	err = tx.QueryRow(ctx, `SELECT idx FROM tlog_leaves WHERE hash = $1`, transparency.LeafKey(data)).Scan(&idx)
	if err == nil {
		return idx, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return 0, false, err
	}
	if err := tx.QueryRow(ctx, pgLogSize).Scan(&idx); err != nil {
		return 0, false, err
	}
	hs, err := transparency.StoredHashes(idx, data, func(ids []int64) ([]tlog.Hash, error) { return pgHashes(ctx, tx, ids) })
	if err != nil {
		return 0, false, err
	}
	first := tlog.StoredHashIndex(0, idx)
	ids := make([]int64, len(hs))
	bs := make([][]byte, len(hs))
	for i, h := range hs {
		ids[i], bs[i] = first+int64(i), append([]byte(nil), h[:]...)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO tlog_hashes (id, hash) SELECT * FROM unnest($1::bigint[], $2::bytea[])`, ids, bs); err != nil {
		return 0, false, err
	}
	_, err = tx.Exec(ctx, `INSERT INTO tlog_leaves (idx, data, hash) VALUES ($1, $2, $3)`, idx, data, transparency.LeafKey(data))
	return idx, false, err
}

var _ transparency.AppendCheckpointer = (*Ledger)(nil)

// LogAppendCheckpoint implements transparency.AppendCheckpointer: the
// append, the reads of the checkpoint and its save are one transaction
// under the ledger's lock, one commit.
func (l *Ledger) LogAppendCheckpoint(ctx context.Context, data []byte, checkpoint func(transparency.CheckpointReader, int64) ([]byte, bool, error)) (int64, []byte, error) {
	var idx int64
	var note []byte
	err := l.inTx(ctx, "log append", true, func(tx pgx.Tx) error {
		i, existed, err := pgLogAppend(ctx, tx, data)
		if err != nil {
			return err
		}
		idx = i
		n := i + 1 // the leaves were counted for the append
		if existed {
			if err := tx.QueryRow(ctx, pgLogSize).Scan(&n); err != nil {
				return err
			}
		}
		var save bool
		note, save, err = checkpoint(pgTxLog{tx}, n)
		if err != nil || !save {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO tlog_checkpoints (size, note) VALUES ($1, $2) ON CONFLICT (size) DO UPDATE SET note = excluded.note`, n, note)
		return err
	})
	return idx, note, err
}

// pgTxLog reads the log inside a transaction
// (transparency.CheckpointReader).
type pgTxLog struct{ tx pgx.Tx }

func (t pgTxLog) Checkpoint(ctx context.Context, size int64) ([]byte, error) {
	var b []byte
	var err error
	if size < 0 {
		err = t.tx.QueryRow(ctx, `SELECT note FROM tlog_checkpoints ORDER BY size DESC LIMIT 1`).Scan(&b)
	} else {
		err = t.tx.QueryRow(ctx, `SELECT note FROM tlog_checkpoints WHERE size = $1`, size).Scan(&b)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, transparency.ErrNoCheckpoint
	}
	return b, err
}

func (t pgTxLog) ReadHashes(ctx context.Context, ids []int64) ([]tlog.Hash, error) {
	return pgHashes(ctx, t.tx, ids)
}

type pgQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func pgHashes(ctx context.Context, q pgQuerier, ids []int64) ([]tlog.Hash, error) {
	rows, err := q.Query(ctx, `SELECT id, hash FROM tlog_hashes WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, err
	}
	got := map[int64][]byte{}
	for rows.Next() {
		var id int64
		var h []byte
		if err := rows.Scan(&id, &h); err != nil {
			rows.Close()
			return nil, err
		}
		got[id] = h
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return transparency.HashesInOrder(ids, got)
}

// ReadHashes implements transparency.Store.
func (l *Ledger) ReadHashes(ctx context.Context, ids []int64) ([]tlog.Hash, error) {
	var out []tlog.Hash
	err := l.pool.with(ctx, func(c *pgx.Conn) error {
		var err error
		out, err = pgHashes(ctx, c, ids)
		return err
	})
	return out, err
}

// LogSize implements transparency.Store.
func (l *Ledger) LogSize(ctx context.Context) (int64, error) {
	var n int64
	err := l.pool.with(ctx, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, pgLogSize).Scan(&n)
	})
	return n, err
}

// LogLeaves implements transparency.Store.
func (l *Ledger) LogLeaves(ctx context.Context, from, to int64) ([][]byte, error) {
	if to-from > transparency.MaxLeavesPerRead {
		return nil, fmt.Errorf("log leaves: at most %d per read", transparency.MaxLeavesPerRead)
	}
	var out [][]byte
	err := l.pool.with(ctx, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT idx, data FROM tlog_leaves WHERE idx >= $1 AND idx < $2 ORDER BY idx`, from, to)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var idx int64
			var d []byte
			if err := rows.Scan(&idx, &d); err != nil {
				return err
			}
			if idx != from+int64(len(out)) {
				return fmt.Errorf("%w: leaf %d is missing", transparency.ErrLogCorrupt, from+int64(len(out)))
			}
			out = append(out, d)
		}
		return rows.Err()
	})
	if err == nil && int64(len(out)) != to-from {
		err = fmt.Errorf("%w: leaves %d..%d: %d found", transparency.ErrLogCorrupt, from, to, len(out))
	}
	return out, err
}

// LogOrigin implements transparency.Store.
func (l *Ledger) LogOrigin(ctx context.Context, proposed string) (string, error) {
	var v string
	err := l.inTx(ctx, "log origin", true, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO meta (k, v) VALUES ('tlog_origin', $1) ON CONFLICT (k) DO NOTHING`, proposed); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT v FROM meta WHERE k = 'tlog_origin'`).Scan(&v)
	})
	return v, err
}

// SaveCheckpoint implements transparency.Store.
func (l *Ledger) SaveCheckpoint(ctx context.Context, size int64, note []byte) error {
	return l.inTx(ctx, "save checkpoint", true, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO tlog_checkpoints (size, note) VALUES ($1, $2) ON CONFLICT (size) DO UPDATE SET note = excluded.note`, size, note)
		return err
	})
}

// UpdateCheckpoint implements transparency.Store: the row is read FOR
// UPDATE and written in the same transaction.
func (l *Ledger) UpdateCheckpoint(ctx context.Context, size int64, fn func([]byte) ([]byte, error)) error {
	return l.inTx(ctx, "update checkpoint", false, func(tx pgx.Tx) error {
		var old []byte
		err := tx.QueryRow(ctx, `SELECT note FROM tlog_checkpoints WHERE size = $1 FOR UPDATE`, size).Scan(&old)
		if errors.Is(err, pgx.ErrNoRows) {
			return transparency.ErrNoCheckpoint
		}
		if err != nil {
			return err
		}
		b, err := fn(old)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE tlog_checkpoints SET note = $1 WHERE size = $2`, b, size)
		return err
	})
}

// Checkpoint implements transparency.Store.
func (l *Ledger) Checkpoint(ctx context.Context, size int64) ([]byte, error) {
	var b []byte
	err := l.pool.with(ctx, func(c *pgx.Conn) error {
		if size < 0 {
			return c.QueryRow(ctx, `SELECT note FROM tlog_checkpoints ORDER BY size DESC LIMIT 1`).Scan(&b)
		}
		return c.QueryRow(ctx, `SELECT note FROM tlog_checkpoints WHERE size = $1`, size).Scan(&b)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, transparency.ErrNoCheckpoint
	}
	return b, err
}

// Checkpoints implements transparency.Store.
func (l *Ledger) Checkpoints(ctx context.Context) ([][]byte, error) {
	var out [][]byte
	err := l.pool.with(ctx, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT note FROM tlog_checkpoints ORDER BY size`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var b []byte
			if err := rows.Scan(&b); err != nil {
				return err
			}
			out = append(out, b)
		}
		return rows.Err()
	})
	return out, err
}

// SaveTimestamp implements transparency.Store.
func (l *Ledger) SaveTimestamp(ctx context.Context, size int64, token []byte) error {
	return l.inTx(ctx, "save timestamp", true, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO tlog_timestamps (size, token) VALUES ($1, $2) ON CONFLICT (size) DO UPDATE SET token = excluded.token`, size, token)
		return err
	})
}

// Timestamp implements transparency.Store.
func (l *Ledger) Timestamp(ctx context.Context, size int64) ([]byte, error) {
	var b []byte
	err := l.pool.with(ctx, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, `SELECT token FROM tlog_timestamps WHERE size = $1`, size).Scan(&b)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, transparency.ErrNoCheckpoint
	}
	return b, err
}
