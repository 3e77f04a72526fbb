package pgdoc

import (
	"context"
	"time"

	"github.com/amnesia-dev/amnesia/store"
)

var _ store.ResidueMeter = (*Store)(nil)

// MeasureResidue implements store.ResidueMeter (see package
// store/internal/pg): the table's dead tuples now, and what holds back the
// xmin horizon when there are some.
func (s *Store) MeasureResidue(ctx context.Context, since time.Time) (store.ResidueReport, error) {
	return s.t.MeasureResidue(ctx, since)
}
