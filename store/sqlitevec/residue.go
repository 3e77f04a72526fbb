package sqlitevec

import (
	"context"
	"time"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/internal/sqlitex"
)

var _ store.ResidueMeter = (*Store)(nil)

// MeasureResidue implements store.ResidueMeter: when the database files
// were last written, relative to since.
func (s *Store) MeasureResidue(ctx context.Context, since time.Time) (store.ResidueReport, error) {
	if err := ctx.Err(); err != nil {
		return store.ResidueReport{}, err
	}
	return sqlitex.MeasureResidue(s.path, since)
}
