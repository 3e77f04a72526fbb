package sqliteledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/amnesia-dev/amnesia/lineage"
)

// sqliteAdoptSchema is created on every open (IF NOT EXISTS), so that
// ledgers created before it get it too.
const sqliteAdoptSchema = `
CREATE TABLE IF NOT EXISTS adoptions (
	artifact TEXT PRIMARY KEY,
	via      TEXT NOT NULL,
	seq      INTEGER NOT NULL
);
`

var _ lineage.Adopter = (*Ledger)(nil)

// Adopt implements lineage.Adopter.
func (l *Ledger) Adopt(ctx context.Context, artifacts []lineage.Artifact, via string) error {
	if err := lineage.CheckAdoption(artifacts, via); err != nil {
		return err
	}
	return l.inTx(ctx, "adopt", func(tx *sql.Tx) error {
		ids, err := json.Marshal(lineage.IDs(artifacts))
		if err != nil {
			return err
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM artifacts WHERE id IN (SELECT value FROM json_each(?))`, string(ids)).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("%w: %d of the %d artifacts", lineage.ErrAdopted, n, len(artifacts))
		}
		if err := l.writeBatch(ctx, tx, artifacts, nil); err != nil {
			return err
		}
		seq, err := appendEvent(ctx, tx, "adopt", lineage.AdoptEvent{Artifacts: lineage.IDs(artifacts), Via: via})
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO adoptions (artifact, via, seq) SELECT value, ?, ? FROM json_each(?)`, via, seq, string(ids))
		return err
	})
}

// AdoptedVia implements lineage.Adopter.
func (l *Ledger) AdoptedVia(ctx context.Context, ids []string) (map[string]string, error) {
	b, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	rows, err := l.db.QueryContext(ctx, `SELECT artifact, via FROM adoptions WHERE artifact IN (SELECT value FROM json_each(?))`, string(b))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, via string
		if err := rows.Scan(&id, &via); err != nil {
			return nil, err
		}
		out[id] = via
	}
	return out, rows.Err()
}
