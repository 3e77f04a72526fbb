package pgledger

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/lineage"
)

// pgAdoptSchema is created on every open (IF NOT EXISTS), under the
// ledger's write lock, so that ledgers created before it get it too.
const pgAdoptSchema = `
CREATE TABLE IF NOT EXISTS adoptions (artifact TEXT PRIMARY KEY, via TEXT NOT NULL, seq BIGINT NOT NULL);
`

var _ lineage.Adopter = (*Ledger)(nil)

// Adopt implements lineage.Adopter.
func (l *Ledger) Adopt(ctx context.Context, artifacts []lineage.Artifact, via string) error {
	if err := lineage.CheckAdoption(artifacts, via); err != nil {
		return err
	}
	ids := lineage.IDs(artifacts)
	return l.inTx(ctx, "adopt", true, func(tx pgx.Tx) error {
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM artifacts WHERE id = ANY($1)`, ids).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("%w: %d of the %d artifacts", lineage.ErrAdopted, n, len(artifacts))
		}
		if err := writeBatch(ctx, tx, artifacts, nil); err != nil {
			return err
		}
		seq, err := pgAppend(ctx, tx, "adopt", lineage.AdoptEvent{Artifacts: ids, Via: via})
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO adoptions (artifact, via, seq) SELECT unnest($1::text[]), $2, $3`, ids, via, seq)
		return err
	})
}

// AdoptedVia implements lineage.Adopter.
func (l *Ledger) AdoptedVia(ctx context.Context, ids []string) (map[string]string, error) {
	out := map[string]string{}
	err := l.pool.with(ctx, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT artifact, via FROM adoptions WHERE artifact = ANY($1)`, ids)
		if err != nil {
			return err
		}
		var id, via string
		_, err = pgx.ForEachRow(rows, []any{&id, &via}, func() error { out[id] = via; return nil })
		return err
	})
	return out, err
}
