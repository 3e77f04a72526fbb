package service

import (
	"context"
	"fmt"

	"github.com/amnesia-dev/amnesia/internal/queuestatus"
)

// MaxStatusLimit is the most erasures QueueStatus lists in each part.
const MaxStatusLimit = 1000

// QueueStatus is the erasure queue at a glance, as `amnesia status` shows
// it (internal/queuestatus), restricted to p's scopes (counts included):
// operator and auditor tokens. It only reads (one read-only transaction).
// limit 0 is 100.
func (s *Service) QueueStatus(ctx context.Context, p *Principal, limit int, all bool) (*queuestatus.Report, error) {
	if p == nil {
		return nil, ErrUnauthorized
	}
	if !p.can(RoleOperator, RoleAuditor) {
		return nil, fmt.Errorf("%w: a %s token may not do this", ErrForbidden, p.Role)
	}
	if limit == 0 {
		limit = 100
	}
	if limit < 1 || limit > MaxStatusLimit {
		return nil, Invalid("limit", "want 1 to 1000")
	}
	scopes := append([]string{}, p.Scopes...)
	r, err := queuestatus.Read(ctx, s.env.Ledger, queuestatus.Options{Limit: limit, All: all, Durable: s.env.Durable(), Scopes: scopes})
	if err != nil {
		return nil, err
	}
	// A failed job's error may name files of this host: the API gives its
	// class only, as for requests (failReason); the CLI shows it whole.
	for _, js := range [][]queuestatus.Job{r.Open, r.History} {
		for i := range js {
			if js[i].Error != "" {
				js[i].Error = failReason(js[i].Error)
			}
		}
	}
	return r, nil
}
