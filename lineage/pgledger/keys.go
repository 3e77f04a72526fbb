package pgledger

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/shred"
	"github.com/amnesia-dev/amnesia/subject"
)

// pgKeysSchema is created on every open (IF NOT EXISTS), under the ledger's
// write lock.
const pgKeysSchema = `
CREATE TABLE IF NOT EXISTS data_keys (scope TEXT NOT NULL, subject TEXT NOT NULL, wrapped BYTEA NOT NULL, seq BIGINT NOT NULL, PRIMARY KEY (scope, subject));
CREATE TABLE IF NOT EXISTS data_keys_destroyed (scope TEXT NOT NULL, subject TEXT NOT NULL, erasure TEXT NOT NULL, seq BIGINT NOT NULL, PRIMARY KEY (scope, subject));
CREATE TABLE IF NOT EXISTS sealed (artifact TEXT PRIMARY KEY, seq BIGINT NOT NULL);
`

var _ lineage.KeyKeeper = (*Ledger)(nil)

// PutDataKey implements shred.KeyStore.
func (l *Ledger) PutDataKey(ctx context.Context, scope string, s subject.Key, wrapped []byte) ([]byte, error) {
	var out []byte
	err := l.inTx(ctx, "put data key", true, func(tx pgx.Tx) error {
		var gone bool
		// Destroyed, and no new consent since (after which a new key may be
		// created; what was sealed with the old one stays unreadable).
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM data_keys_destroyed d WHERE d.scope = $1 AND d.subject = $2
			AND NOT EXISTS (SELECT 1 FROM consents c WHERE c.scope = d.scope AND c.subject = d.subject AND c.seq > d.seq))`, scope, s.String()).Scan(&gone); err != nil {
			return err
		}
		if gone {
			return shred.ErrDestroyed
		}
		err := tx.QueryRow(ctx, `SELECT wrapped FROM data_keys WHERE scope = $1 AND subject = $2`, scope, s.String()).Scan(&out)
		if err == nil {
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		seq, err := pgAppend(ctx, tx, "datakey", lineage.DataKeyEvent{Scope: scope, Subject: s.String()})
		if err != nil {
			return err
		}
		out = wrapped
		_, err = tx.Exec(ctx, `INSERT INTO data_keys (scope, subject, wrapped, seq) VALUES ($1, $2, $3, $4)`, scope, s.String(), wrapped, seq)
		return err
	})
	return out, err
}

// DataKey implements shred.KeyStore.
func (l *Ledger) DataKey(ctx context.Context, scope string, s subject.Key) ([]byte, error) {
	var b []byte
	var gone bool
	err := l.pool.with(ctx, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, `SELECT (SELECT wrapped FROM data_keys WHERE scope = $1 AND subject = $2),
			EXISTS (SELECT 1 FROM data_keys_destroyed WHERE scope = $1 AND subject = $2)`, scope, s.String()).Scan(&b, &gone)
	})
	switch {
	case err != nil:
		return nil, err
	case b != nil:
		return b, nil
	case gone:
		return nil, shred.ErrDestroyed
	}
	return nil, shred.ErrNoKey
}

// DestroyDataKey implements shred.KeyStore: the row is deleted, then the
// table is rewritten (VACUUM FULL data_keys, a small table) so that no dead
// tuple keeps the wrapped key in the table's files. pg_wal keeps the insert
// until the server recycles it: the erasure does not claim the physical
// level for a PostgreSQL ledger.
func (l *Ledger) DestroyDataKey(ctx context.Context, scope string, s subject.Key, erasure string) (bool, error) {
	var done bool
	err := l.inTx(ctx, "destroy data key", true, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM data_keys WHERE scope = $1 AND subject = $2`, scope, s.String())
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return nil
		}
		done = true
		seq, err := pgAppend(ctx, tx, "datakey-destroyed", lineage.DataKeyEvent{Scope: scope, Subject: s.String(), Erasure: erasure})
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO data_keys_destroyed (scope, subject, erasure, seq) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, scope, s.String(), erasure, seq)
		return err
	})
	if err != nil {
		return false, err
	}
	err = l.pool.with(ctx, func(c *pgx.Conn) error {
		_, err := c.Exec(ctx, `VACUUM FULL data_keys`)
		return err
	})
	return done, err
}

// MarkSealed implements lineage.KeyKeeper.
func (l *Ledger) MarkSealed(ctx context.Context, artifacts []string) error {
	if len(artifacts) == 0 {
		return nil
	}
	return l.inTx(ctx, "mark sealed", true, func(tx pgx.Tx) error {
		var known int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM sealed WHERE artifact = ANY($1)`, artifacts).Scan(&known); err != nil {
			return err
		}
		if known == len(artifacts) {
			return nil
		}
		seq, err := pgAppend(ctx, tx, "sealed", lineage.SealedEvent{Artifacts: artifacts})
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO sealed (artifact, seq) SELECT unnest($1::text[]), $2 ON CONFLICT DO NOTHING`, artifacts, seq)
		return err
	})
}

// Sealed implements lineage.KeyKeeper.
func (l *Ledger) Sealed(ctx context.Context, ids []string) (map[string]bool, error) {
	out := map[string]bool{}
	err := l.pool.with(ctx, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT artifact FROM sealed WHERE artifact = ANY($1)`, ids)
		if err != nil {
			return err
		}
		var id string
		_, err = pgx.ForEachRow(rows, []any{&id}, func() error { out[id] = true; return nil })
		return err
	})
	return out, err
}
