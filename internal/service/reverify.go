package service

import (
	"context"
	"encoding/json"
	"time"

	"github.com/amnesia-dev/amnesia/internal/comeback"
)

// reverifyLoop runs scheduled re-verification (comeback.Due, as `amnesia
// reverify --due`) every check until ctx ends: at start, then every check.
// Every erasure certificate whose last check is every or more ago is
// re-probed. When erased data came back it raises an alert: the log line
// (WARN "erased data reappeared", from comeback), the metric
// amnesia_reverify_reappeared_total and, when reverify.alert_url is set, a
// signed POST to it.
func (s *Service) reverifyLoop(ctx context.Context, every, check time.Duration) {
	t := time.NewTicker(check)
	defer t.Stop()
	for {
		s.ReverifyDue(ctx, every)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// alertBody is the JSON of a reappearance alert: ids, counts and the
// keyed subject reference only.
type alertBody struct {
	Event           string `json:"event"` // "erased_data_reappeared"
	CertificateID   string `json:"certificate_id"`
	ReverifyID      string `json:"reverification_id"`
	SubjectRef      string `json:"subject_ref"`
	Residual        int    `json:"residual"`
	CertificatePath string `json:"certificate_path"`
}

// ReverifyDue runs one scheduled re-verification and raises the alerts.
func (s *Service) ReverifyDue(ctx context.Context, every time.Duration) *comeback.Report {
	rep, err := comeback.Due(ctx, &comeback.Env{Dir: s.dir, Ledger: s.ledger, Log: s.log, Now: s.now}, every)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("scheduled reverify", "err", err)
		}
		return rep
	}
	for _, o := range rep.Outcomes {
		switch {
		case o.Err != nil:
			s.metrics.reverify.WithLabelValues("failed").Inc()
			s.log.Error("scheduled reverify", "certificate", o.Erasure.CertificateID, "err", o.Err)
		case o.Reappeared():
			s.metrics.reverify.WithLabelValues("reappeared").Inc()
		case o.Result.Statement.Predicate.Complete:
			s.metrics.reverify.WithLabelValues("verified").Inc()
		default:
			s.metrics.reverify.WithLabelValues("incomplete").Inc()
		}
	}
	for _, o := range rep.Reappeared() {
		s.metrics.reappeared.Add(float64(o.Result.Statement.Predicate.Counts.Residual))
		url := s.dir.Config.Reverify.AlertURL
		if url == "" {
			continue
		}
		b, _ := json.Marshal(alertBody{Event: "erased_data_reappeared", CertificateID: o.Erasure.CertificateID, ReverifyID: o.Result.ID,
			SubjectRef: o.Erasure.SubjectRef, Residual: o.Result.Statement.Predicate.Counts.Residual, CertificatePath: o.Result.CertificatePath})
		if err := s.post(ctx, url, b); err != nil {
			s.log.Error("reappearance alert not delivered", "certificate", o.Erasure.CertificateID, "err", err)
		} else {
			s.log.Info("reappearance alert delivered", "certificate", o.Erasure.CertificateID)
		}
	}
	if len(rep.Outcomes) > 0 {
		s.log.Info("scheduled reverify", "reverified", len(rep.Outcomes), "reappeared", len(rep.Reappeared()), "not_due", rep.NotDue, "not_reverifiable", rep.Skipped)
	}
	return rep
}
