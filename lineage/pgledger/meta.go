package pgledger

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/lineage"
)

var _ lineage.InstallationMeta = (*Ledger)(nil)

// installationKey keeps installation values apart from the ledger's own
// meta keys (schema, tlog_origin).
func installationKey(key string) (string, error) {
	if key == "" || strings.ContainsAny(key, " \n") {
		return "", fmt.Errorf("installation value: bad key %q", key)
	}
	return "installation." + key, nil
}

// InstallationValue implements lineage.InstallationMeta.
func (l *Ledger) InstallationValue(ctx context.Context, key string) (string, bool, error) {
	k, err := installationKey(key)
	if err != nil {
		return "", false, err
	}
	var v string
	err = l.pool.with(ctx, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, `SELECT v FROM meta WHERE k = $1`, k).Scan(&v)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("installation value: %w", err)
	}
	return v, true, nil
}

// RecordInstallationValue implements lineage.InstallationMeta.
func (l *Ledger) RecordInstallationValue(ctx context.Context, key, value string, replace bool) (string, error) {
	k, err := installationKey(key)
	if err != nil {
		return "", err
	}
	var v string
	err = l.inTx(ctx, "installation value", true, func(tx pgx.Tx) error {
		q := `INSERT INTO meta (k, v) VALUES ($1, $2) ON CONFLICT (k) DO NOTHING`
		if replace {
			q = `INSERT INTO meta (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = excluded.v`
		}
		if _, err := tx.Exec(ctx, q, k, value); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT v FROM meta WHERE k = $1`, k).Scan(&v)
	})
	return v, err
}

var _ lineage.InstallationUpdater = (*Ledger)(nil)

// installationLock is the transaction-level advisory lock that serialises
// UpdateInstallationValues between hosts.
const installationLock = 0x616d6e6573696101 // "amnesia" 0x01

// UpdateInstallationValues implements lineage.InstallationUpdater.
func (l *Ledger) UpdateInstallationValues(ctx context.Context, keys []string, fn func(cur map[string]string) (map[string]string, error)) error {
	ks := make([]string, len(keys))
	for i, key := range keys {
		k, err := installationKey(key)
		if err != nil {
			return err
		}
		ks[i] = k
	}
	err := l.pool.with(ctx, func(c *pgx.Conn) error {
		return pgx.BeginTxFunc(ctx, c, pgx.TxOptions{}, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(installationLock)); err != nil {
				return err
			}
			cur := map[string]string{}
			for i, k := range ks {
				var v string
				err := tx.QueryRow(ctx, `SELECT v FROM meta WHERE k = $1`, k).Scan(&v)
				if errors.Is(err, pgx.ErrNoRows) {
					continue
				}
				if err != nil {
					return err
				}
				cur[keys[i]] = v
			}
			next, err := fn(cur)
			if err != nil {
				return err
			}
			for key, v := range next {
				k, err := installationKey(key)
				if err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, `INSERT INTO meta (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = excluded.v`, k, v); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("update installation values: %w", err)
	}
	return nil
}
