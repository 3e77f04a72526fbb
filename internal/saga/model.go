package saga

import (
	"context"
	"fmt"

	"github.com/amnesia-dev/amnesia/capture/backend"
	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/model"
)

// modelLeg carries the erasure to the models the subject's rows reached
// (package model): one journaled step "model:<name>" per model, after the
// rows were deleted and probed, before decide. A step that fails leaves the
// model UNVERIFIED; a step cut short (crash, stop) is retried on resume, and
// the leg's own journal (erasures/<id>/model-<name>.json) resumes it
// where it stopped (with a PostgreSQL ledger: the ledger's
// erasure_journal, journal model-<name>; an erasure begun when the leg kept
// its file there too continues from the file, which the leg copies into the
// ledger: model.Leg.load).
func (r *runner) modelLeg(ctx context.Context, res *results) error {
	cfgs := r.Dir.Config.Models
	if len(cfgs) == 0 {
		return nil
	}
	k, err := subjectKey(r.Trace.Subject)
	if err != nil {
		return err
	}
	ids := map[string]bool{}
	for _, a := range r.Trace.Artifacts {
		ids[a.ID] = true
	}
	leg := &model.Leg{
		StateDir: r.Dir.Path, ErasureDir: r.dir, Erasure: r.id, Scope: r.Trace.Scope, Subject: k, Keyer: r.Dir.Keyer,
		TraceIDs: ids, Now: r.Now, Progress: r.Progress,
		// With a PostgreSQL ledger the leg's journal is the ledger's
		// (durable.go); with the state directory, its own file.
		Journal: modelJournal(r.dur, r.id),
		StorePath: func(name string) string {
			sc, err := r.Dir.Config.Store(name)
			if err != nil {
				return ""
			}
			return r.Dir.Config.StorePath(sc)
		},
		RowKeys: func(ctx context.Context, name string) ([]string, error) {
			s, ok := r.Stores[name].(interface {
				CaptureAll(context.Context) ([]backend.Record, error)
			})
			if !ok {
				return nil, fmt.Errorf("dataset store %q is not open or is not a file store", name)
			}
			recs, err := s.CaptureAll(ctx)
			if err != nil {
				return nil, err
			}
			keys := make([]string, 0, len(recs))
			for _, rec := range recs {
				keys = append(keys, rec.ID)
			}
			return keys, nil
		},
	}
	reached, err := leg.Reached(cfgs)
	if err != nil {
		return &StepError{Step: "model", Err: err}
	}
	for _, c := range reached {
		var out certificate.ModelOutcome
		serr, err := r.step("model", c.Name, &out, func() (any, error) {
			o, err := leg.Run(ctx, c)
			if err != nil {
				return nil, err
			}
			if o == nil {
				return nil, fmt.Errorf("model %s: no recorded run reached", c.Name)
			}
			return o, nil
		})
		if err != nil {
			return err
		}
		if serr != nil {
			out = certificate.ModelOutcome{Model: c.Name, Sharded: c.Sharded, Level: certificate.LevelModel, Outcome: certificate.Unverified,
				Reason: "the model leg failed: " + serr.Err.Error(), Method: "none", Shards: []certificate.ModelShard{}}
		}
		res.models = append(res.models, out)
	}
	return nil
}

// modelsVerified reports whether every model outcome is VERIFIED.
func modelsVerified(ms []certificate.ModelOutcome) bool {
	for _, m := range ms {
		if m.Outcome != certificate.Verified {
			return false
		}
	}
	return true
}
