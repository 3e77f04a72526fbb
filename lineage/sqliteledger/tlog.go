package sqliteledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/amnesia-dev/amnesia/transparency"
)

// The transparency log's tables. They are created on open, so a ledger
// written before the log existed gains an empty log.
const sqliteLogSchema = `
CREATE TABLE IF NOT EXISTS tlog_leaves (
	idx  INTEGER PRIMARY KEY,
	data BLOB NOT NULL,
	hash TEXT NOT NULL UNIQUE
);
CREATE TABLE IF NOT EXISTS tlog_hashes (
	id   INTEGER PRIMARY KEY,
	hash BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS tlog_checkpoints (
	size INTEGER PRIMARY KEY,
	note BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS tlog_timestamps (
	size  INTEGER PRIMARY KEY,
	token BLOB NOT NULL
);
CREATE TRIGGER IF NOT EXISTS tlog_leaves_append_only BEFORE UPDATE ON tlog_leaves
	BEGIN SELECT RAISE(ABORT, 'amnesia transparency log leaves are append-only'); END;
CREATE TRIGGER IF NOT EXISTS tlog_leaves_no_delete BEFORE DELETE ON tlog_leaves
	BEGIN SELECT RAISE(ABORT, 'amnesia transparency log leaves are append-only'); END;
CREATE TRIGGER IF NOT EXISTS tlog_hashes_append_only BEFORE UPDATE ON tlog_hashes
	BEGIN SELECT RAISE(ABORT, 'amnesia transparency log hashes are append-only'); END;
CREATE TRIGGER IF NOT EXISTS tlog_hashes_no_delete BEFORE DELETE ON tlog_hashes
	BEGIN SELECT RAISE(ABORT, 'amnesia transparency log hashes are append-only'); END;
`

var _ transparency.Store = (*Ledger)(nil)

// LogAppend implements transparency.Store.
func (l *Ledger) LogAppend(ctx context.Context, data []byte) (int64, bool, error) {
	var idx int64
	var existed bool
	err := l.inTx(ctx, "log append", func(tx *sql.Tx) error {
		var err error
		idx, existed, err = logAppend(ctx, tx, data)
		return err
	})
	return idx, existed, err
}

// logAppend appends data in tx unless an equal leaf is in the log.
func logAppend(ctx context.Context, tx *sql.Tx, data []byte) (idx int64, existed bool, err error) {
	err = tx.QueryRowContext(ctx, `SELECT idx FROM tlog_leaves WHERE hash = ?`, transparency.LeafKey(data)).Scan(&idx)
	if err == nil {
		return idx, true, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return 0, false, err
	}
	if idx, err = logSize(ctx, tx); err != nil {
		return 0, false, err
	}
	hs, err := transparency.StoredHashes(idx, data, func(ids []int64) ([]tlog.Hash, error) { return sqliteHashes(ctx, tx, ids) })
	if err != nil {
		return 0, false, err
	}
	first := tlog.StoredHashIndex(0, idx)
	for i, h := range hs {
		if _, err := tx.ExecContext(ctx, `INSERT INTO tlog_hashes (id, hash) VALUES (?, ?)`, first+int64(i), h[:]); err != nil {
			return 0, false, err
		}
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO tlog_leaves (idx, data, hash) VALUES (?, ?, ?)`, idx, data, transparency.LeafKey(data))
	return idx, false, err
}

var _ transparency.AppendCheckpointer = (*Ledger)(nil)

// LogAppendCheckpoint implements transparency.AppendCheckpointer: the
// append, the reads of the checkpoint and its save are one IMMEDIATE
// transaction, one commit.
func (l *Ledger) LogAppendCheckpoint(ctx context.Context, data []byte, checkpoint func(transparency.CheckpointReader, int64) ([]byte, bool, error)) (int64, []byte, error) {
	var idx int64
	var note []byte
	err := l.inTx(ctx, "log append", func(tx *sql.Tx) error {
		i, existed, err := logAppend(ctx, tx, data)
		if err != nil {
			return err
		}
		idx = i
		n := i + 1 // the leaves were counted for the append
		if existed {
			if n, err = logSize(ctx, tx); err != nil {
				return err
			}
		}
		var save bool
		note, save, err = checkpoint(txLog{tx}, n)
		if err != nil || !save {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO tlog_checkpoints (size, note) VALUES (?, ?) ON CONFLICT (size) DO UPDATE SET note = excluded.note`, n, note)
		return err
	})
	return idx, note, err
}

// txLog reads the log inside a transaction (transparency.CheckpointReader).
type txLog struct{ tx *sql.Tx }

func (t txLog) Checkpoint(ctx context.Context, size int64) ([]byte, error) {
	return readCheckpoint(ctx, t.tx, size)
}

func (t txLog) ReadHashes(ctx context.Context, ids []int64) ([]tlog.Hash, error) {
	return sqliteHashes(ctx, t.tx, ids)
}

// qLogSize is the number of leaves: the leaves are numbered 0, 1, … and
// only appended (triggers refuse updates and deletes), so the highest
// index plus one, read from the end of the primary key, not a count that
// reads every leaf at each append. A log whose leaves were removed behind
// the triggers' back is caught where its hashes or leaves are read (a
// missing index, a checkpoint that does not verify).
const qLogSize = `SELECT coalesce(max(idx) + 1, 0) FROM tlog_leaves`

// logSize is the number of leaves.
func logSize(ctx context.Context, q sqlQuerier) (int64, error) {
	var n int64
	err := q.QueryRowContext(ctx, qLogSize).Scan(&n)
	return n, err
}

func sqliteHashes(ctx context.Context, q sqlQuerier, ids []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(ids))
	for start := 0; start < len(ids); start += 500 {
		end := min(start+500, len(ids))
		chunk := ids[start:end]
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		rows, err := q.QueryContext(ctx, `SELECT id, hash FROM tlog_hashes WHERE id IN (?`+strings.Repeat(",?", len(chunk)-1)+`)`, args...)
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
		hs, err := transparency.HashesInOrder(chunk, got)
		if err != nil {
			return nil, err
		}
		copy(out[start:], hs)
	}
	return out, nil
}

// ReadHashes implements transparency.Store (and tlog.HashReader with a context).
func (l *Ledger) ReadHashes(ctx context.Context, ids []int64) ([]tlog.Hash, error) {
	return sqliteHashes(ctx, l.db, ids)
}

// LogSize implements transparency.Store.
func (l *Ledger) LogSize(ctx context.Context) (int64, error) {
	return logSize(ctx, l.db)
}

// LogLeaves implements transparency.Store.
func (l *Ledger) LogLeaves(ctx context.Context, from, to int64) ([][]byte, error) {
	if to-from > transparency.MaxLeavesPerRead {
		return nil, fmt.Errorf("log leaves: at most %d per read", transparency.MaxLeavesPerRead)
	}
	rows, err := l.db.QueryContext(ctx, `SELECT idx, data FROM tlog_leaves WHERE idx >= ? AND idx < ? ORDER BY idx`, from, to)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]byte
	for rows.Next() {
		var idx int64
		var d []byte
		if err := rows.Scan(&idx, &d); err != nil {
			return nil, err
		}
		if idx != from+int64(len(out)) {
			return nil, fmt.Errorf("%w: leaf %d is missing", transparency.ErrLogCorrupt, from+int64(len(out)))
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if int64(len(out)) != to-from {
		return nil, fmt.Errorf("%w: leaves %d..%d: %d found", transparency.ErrLogCorrupt, from, to, len(out))
	}
	return out, nil
}

// LogOrigin implements transparency.Store. The origin is recorded once and
// never changed: a recorded one is read without a write transaction (every
// erasure opens the log, and a write transaction waits for the ledger's
// write lock); only the first recording takes it.
func (l *Ledger) LogOrigin(ctx context.Context, proposed string) (string, error) {
	var v string
	err := l.db.QueryRowContext(ctx, `SELECT v FROM meta WHERE k = 'tlog_origin'`).Scan(&v)
	if err == nil {
		return v, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("log origin: %w", err)
	}
	err = l.inTx(ctx, "log origin", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO meta (k, v) VALUES ('tlog_origin', ?)`, proposed); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT v FROM meta WHERE k = 'tlog_origin'`).Scan(&v)
	})
	return v, err
}

// SaveCheckpoint implements transparency.Store.
func (l *Ledger) SaveCheckpoint(ctx context.Context, size int64, note []byte) error {
	return l.inTx(ctx, "save checkpoint", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO tlog_checkpoints (size, note) VALUES (?, ?) ON CONFLICT (size) DO UPDATE SET note = excluded.note`, size, note)
		return err
	})
}

// UpdateCheckpoint implements transparency.Store: the read and the write
// are one IMMEDIATE transaction, so no other writer comes between them.
func (l *Ledger) UpdateCheckpoint(ctx context.Context, size int64, fn func([]byte) ([]byte, error)) error {
	return l.inTx(ctx, "update checkpoint", func(tx *sql.Tx) error {
		var old []byte
		err := tx.QueryRowContext(ctx, `SELECT note FROM tlog_checkpoints WHERE size = ?`, size).Scan(&old)
		if errors.Is(err, sql.ErrNoRows) {
			return transparency.ErrNoCheckpoint
		}
		if err != nil {
			return err
		}
		b, err := fn(old)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE tlog_checkpoints SET note = ? WHERE size = ?`, b, size)
		return err
	})
}

// Checkpoint implements transparency.Store.
func (l *Ledger) Checkpoint(ctx context.Context, size int64) ([]byte, error) {
	return readCheckpoint(ctx, l.db, size)
}

func readCheckpoint(ctx context.Context, q sqlQuerier, size int64) ([]byte, error) {
	var b []byte
	var err error
	if size < 0 {
		err = q.QueryRowContext(ctx, `SELECT note FROM tlog_checkpoints ORDER BY size DESC LIMIT 1`).Scan(&b)
	} else {
		err = q.QueryRowContext(ctx, `SELECT note FROM tlog_checkpoints WHERE size = ?`, size).Scan(&b)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return nil, transparency.ErrNoCheckpoint
	}
	return b, err
}

// Checkpoints implements transparency.Store.
func (l *Ledger) Checkpoints(ctx context.Context) ([][]byte, error) {
	rows, err := l.db.QueryContext(ctx, `SELECT note FROM tlog_checkpoints ORDER BY size`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]byte
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

// SaveTimestamp implements transparency.Store.
func (l *Ledger) SaveTimestamp(ctx context.Context, size int64, token []byte) error {
	return l.inTx(ctx, "save timestamp", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO tlog_timestamps (size, token) VALUES (?, ?) ON CONFLICT (size) DO UPDATE SET token = excluded.token`, size, token)
		return err
	})
}

// Timestamp implements transparency.Store.
func (l *Ledger) Timestamp(ctx context.Context, size int64) ([]byte, error) {
	var b []byte
	err := l.db.QueryRowContext(ctx, `SELECT token FROM tlog_timestamps WHERE size = ?`, size).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, transparency.ErrNoCheckpoint
	}
	return b, err
}
