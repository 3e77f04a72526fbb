package sqliteledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/shred"
	"github.com/amnesia-dev/amnesia/subject"
)

// sqliteKeysSchema is created on every open (IF NOT EXISTS).
const sqliteKeysSchema = `
CREATE TABLE IF NOT EXISTS data_keys (
	scope   TEXT NOT NULL,
	subject TEXT NOT NULL,
	wrapped BLOB NOT NULL,
	seq     INTEGER NOT NULL,
	PRIMARY KEY (scope, subject)
);
CREATE TABLE IF NOT EXISTS data_keys_destroyed (
	scope   TEXT NOT NULL,
	subject TEXT NOT NULL,
	erasure TEXT NOT NULL,
	seq     INTEGER NOT NULL,
	PRIMARY KEY (scope, subject)
);
CREATE TABLE IF NOT EXISTS sealed (
	artifact TEXT PRIMARY KEY,
	seq      INTEGER NOT NULL
);
`

var _ lineage.KeyKeeper = (*Ledger)(nil)

// PutDataKey implements shred.KeyStore.
func (l *Ledger) PutDataKey(ctx context.Context, scope string, s subject.Key, wrapped []byte) ([]byte, error) {
	var out []byte
	err := l.inTx(ctx, "put data key", func(tx *sql.Tx) error {
		if destroyed(ctx, tx, scope, s) && !consentSinceDestroyed(ctx, tx, scope, s) {
			return shred.ErrDestroyed
		}
		err := tx.QueryRowContext(ctx, `SELECT wrapped FROM data_keys WHERE scope = ? AND subject = ?`, scope, s.String()).Scan(&out)
		if err == nil {
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		seq, err := appendEvent(ctx, tx, "datakey", lineage.DataKeyEvent{Scope: scope, Subject: s.String()})
		if err != nil {
			return err
		}
		out = wrapped
		_, err = tx.ExecContext(ctx, `INSERT INTO data_keys (scope, subject, wrapped, seq) VALUES (?, ?, ?, ?)`, scope, s.String(), wrapped, seq)
		return err
	})
	return out, err
}

func destroyed(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, scope string, s subject.Key) bool {
	var n int
	q.QueryRowContext(ctx, `SELECT count(*) FROM data_keys_destroyed WHERE scope = ? AND subject = ?`, scope, s.String()).Scan(&n)
	return n > 0
}

// consentSinceDestroyed: the subject gave new consent after its key was
// destroyed, so a new key may be created (what was sealed with the old one
// stays unreadable).
func consentSinceDestroyed(ctx context.Context, tx *sql.Tx, scope string, s subject.Key) bool {
	var n int
	tx.QueryRowContext(ctx, `SELECT count(*) FROM consents c, data_keys_destroyed d WHERE c.scope = ? AND c.subject = ? AND d.scope = c.scope AND d.subject = c.subject AND c.seq > d.seq`, scope, s.String()).Scan(&n)
	return n > 0
}

// DataKey implements shred.KeyStore.
func (l *Ledger) DataKey(ctx context.Context, scope string, s subject.Key) ([]byte, error) {
	var b []byte
	err := l.db.QueryRowContext(ctx, `SELECT wrapped FROM data_keys WHERE scope = ? AND subject = ?`, scope, s.String()).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		if destroyed(ctx, l.db, scope, s) {
			return nil, shred.ErrDestroyed
		}
		return nil, shred.ErrNoKey
	}
	return b, err
}

// DestroyDataKey implements shred.KeyStore. The row is deleted with
// secure_delete on (SQLite zeroes the freed cell), and the WAL is then
// checkpointed and truncated, so that the wrapped key's bytes leave the
// ledger's files (the erasure's probe checks that they did).
func (l *Ledger) DestroyDataKey(ctx context.Context, scope string, s subject.Key, erasure string) (bool, error) {
	var done bool
	err := l.inTx(ctx, "destroy data key", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `PRAGMA secure_delete = ON`); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM data_keys WHERE scope = ? AND subject = ?`, scope, s.String())
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		if n == 0 {
			return nil
		}
		done = true
		seq, err := appendEvent(ctx, tx, "datakey-destroyed", lineage.DataKeyEvent{Scope: scope, Subject: s.String(), Erasure: erasure})
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT OR IGNORE INTO data_keys_destroyed (scope, subject, erasure, seq) VALUES (?, ?, ?, ?)`, scope, s.String(), erasure, seq)
		return err
	})
	if err != nil {
		return false, err
	}
	// Best effort: a reader holding the WAL keeps it; the probe decides.
	l.db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	return done, nil
}

// MarkSealed implements lineage.KeyKeeper.
func (l *Ledger) MarkSealed(ctx context.Context, artifacts []string) error {
	if len(artifacts) == 0 {
		return nil
	}
	ids, err := json.Marshal(artifacts)
	if err != nil {
		return err
	}
	return l.inTx(ctx, "mark sealed", func(tx *sql.Tx) error {
		var known int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sealed WHERE artifact IN (SELECT value FROM json_each(?))`, string(ids)).Scan(&known); err != nil {
			return err
		}
		if known == len(artifacts) {
			return nil
		}
		seq, err := appendEvent(ctx, tx, "sealed", lineage.SealedEvent{Artifacts: artifacts})
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT OR IGNORE INTO sealed (artifact, seq) SELECT value, ? FROM json_each(?)`, seq, string(ids))
		return err
	})
}

// Sealed implements lineage.KeyKeeper.
func (l *Ledger) Sealed(ctx context.Context, ids []string) (map[string]bool, error) {
	b, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	rows, err := l.db.QueryContext(ctx, `SELECT artifact FROM sealed WHERE artifact IN (SELECT value FROM json_each(?))`, string(b))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out[id] = true
	}
	return out, rows.Err()
}
