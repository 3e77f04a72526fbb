package sqliteledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

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
	err = l.db.QueryRowContext(ctx, `SELECT v FROM meta WHERE k = ?`, k).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
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
	q := `INSERT OR IGNORE INTO meta (k, v) VALUES (?, ?)`
	if replace {
		q = `INSERT OR REPLACE INTO meta (k, v) VALUES (?, ?)`
	}
	if _, err := l.db.ExecContext(ctx, q, k, value); err != nil {
		return "", fmt.Errorf("installation value: %w", err)
	}
	v, _, err := l.InstallationValue(ctx, key)
	return v, err
}
