package pg

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/store"
)

// MeasureResidue reports, without changing anything, the table's dead
// tuples now (pgstattuple) and, when there are some, what holds back the
// xmin horizon. Which rows the dead tuples were is not known: they may be
// any deleted or updated row, not only erased ones. since is not used: the
// server keeps no per-row write times.
func (t *Target) MeasureResidue(ctx context.Context, since time.Time) (store.ResidueReport, error) {
	var rep store.ResidueReport
	err := t.DB.With(ctx, func(c *pgx.Conn) error {
		n, ok, err := DeadTuples(ctx, c, t.Priv, t.Table)
		if err != nil {
			return err
		}
		switch {
		case !ok:
			rep.Evidence = "dead tuples of " + t.Table.String() + " not measured: pgstattuple is not installed or not permitted"
		case n == 0:
			rep.Evidence = fmt.Sprintf("pgstattuple %s: 0 dead tuples now", t.Table)
		default:
			pins, err := FindPins(ctx, c, 0)
			if err != nil {
				return err
			}
			rep.State = StateDeadTuples
			rep.Evidence = fmt.Sprintf("pgstattuple %s: %d dead tuples now (of which rows is not known); their bytes stay in the relation's files until VACUUM and a rewrite", t.Table, n)
			if len(pins) > 0 {
				descs := make([]string, 0, len(pins))
				for _, p := range pins {
					descs = append(descs, fmt.Sprintf("%s: %s, xmin age %d", p.Kind, p.Desc, p.Age))
				}
				rep.Evidence += "; the xmin horizon is held by " + strings.Join(descs, "; ")
			}
		}
		if p := t.Priv.MissingPhysical(); p != "" {
			rep.Evidence += "; " + p
		}
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("measure residue: %w", err)
	}
	return rep, nil
}
