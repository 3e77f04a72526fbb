package certificate

import "fmt"

// LevelModel is the level of a model outcome: what an erasure did to, and
// measured of, the models trained on the subject's rows (package model).
const LevelModel = "model"

// Tainted is a model outcome only: the model was trained on the subject's
// rows without sharding, so amnesia could not retrain it without them.
// Choices says what the operator can do.
const Tainted = "TAINTED"

// Served states of a model shard.
const (
	ServedSwitched     = "switched"             // amnesia installed the retrained artifact at the served path
	ServedOperatorMust = "operator-must-switch" // no served path is configured: the operator must
	ServedNotRetrained = "not-retrained"
)

// ModelOutcome is the outcome for one model that the subject's rows
// reached. VERIFIED means: every shard trained on the rows was retrained
// from its data file after the rows were deleted, the new artifact's
// recorded rows hold none of the subject's, it is the one served, no
// tainted artifact file is left at its recorded path, and the probe (when
// configured) found none of the subject's canaries. It never means more
// than that (docs/models.md).
type ModelOutcome struct {
	Model       string       `json:"model"`
	Sharded     bool         `json:"sharded"`
	Level       string       `json:"level"` // LevelModel
	Outcome     string       `json:"outcome"`
	Reason      string       `json:"reason,omitempty"`
	Choices     []string     `json:"choices,omitempty"`
	Method      string       `json:"method"`
	Shards      []ModelShard `json:"shards"`
	ProbeBefore *ModelProbe  `json:"probe_before,omitempty"` // the served model before its shards were retrained: the probe's power
	ProbeAfter  *ModelProbe  `json:"probe_after,omitempty"`
}

// ModelShard is what happened to one shard of a model.
type ModelShard struct {
	Shard            int             `json:"shard"`
	Tainted          []ModelArtifact `json:"tainted"`             // runs trained on the subject's rows
	Retrain          string          `json:"retrain"`             // "done", "failed: …", "not-run"
	Retrained        *ModelArtifact  `json:"retrained,omitempty"` // the new run
	TrainedWithout   bool            `json:"trained_without"`     // the new run's recorded rows hold none of the subject's
	Served           string          `json:"served"`              // ServedSwitched, ServedOperatorMust, ServedNotRetrained
	TaintedFilesLeft int             `json:"tainted_files_left"`  // tainted artifacts still at their recorded path, same digest
	RetrainMillis    int64           `json:"retrain_millis,omitempty"`
}

// ModelArtifact is one training run's artifact.
type ModelArtifact struct {
	Run         string `json:"run"`
	SHA256      string `json:"sha256"`
	Rows        int    `json:"rows"`         // rows it was trained on
	SubjectRows int    `json:"subject_rows"` // of those, the subject's
}

// ModelProbe is what the canary probe measured (package model): counts and
// scores, never the canaries.
type ModelProbe struct {
	Error        string    `json:"error,omitempty"` // the endpoint failed: nothing was measured
	Endpoint     string    `json:"endpoint"`
	Canaries     int       `json:"canaries"`
	References   int       `json:"references"`
	Extracted    int       `json:"extracted"`
	Flagged      int       `json:"flagged"`
	Exposure     []float64 `json:"exposure"`
	FPRPerCanary float64   `json:"fpr_per_canary"`
	FPRAny       float64   `json:"fpr_any"`
	Requests     int       `json:"requests"`
	Millis       int64     `json:"millis"`
}

// Found reports whether the probe saw a canary.
func (p *ModelProbe) Found() bool { return p != nil && (p.Extracted > 0 || p.Flagged > 0) }

// ModelVerified reports whether m meets what VERIFIED at the model level
// requires (see ModelOutcome).
func ModelVerified(m ModelOutcome) bool {
	if !m.Sharded || len(m.Shards) == 0 || m.ProbeAfter.Found() || (m.ProbeAfter != nil && m.ProbeAfter.Error != "") {
		return false
	}
	for _, s := range m.Shards {
		if s.Retrained == nil || !s.TrainedWithout || s.Retrained.SubjectRows != 0 || s.Served != ServedSwitched || s.TaintedFilesLeft != 0 {
			return false
		}
	}
	return true
}

// checkModels checks the model outcomes of a predicate.
func checkModels(p *Predicate) error {
	for i, m := range p.Models {
		if m.Level != LevelModel {
			return fmt.Errorf("predicate.models[%d].level is not %s", i, LevelModel)
		}
		switch m.Outcome {
		case Verified:
			if !ModelVerified(m) {
				return fmt.Errorf("predicate.models[%d] is %s but its shards or probe do not show it", i, Verified)
			}
		case Tainted, Unverified, Residual, NeedsHuman:
			if m.Reason == "" {
				return fmt.Errorf("predicate.models[%d].reason is empty", i)
			}
			if p.Complete {
				return fmt.Errorf("predicate.complete is true but predicate.models[%d] is %s", i, m.Outcome)
			}
		default:
			return fmt.Errorf("predicate.models[%d].outcome is not a known outcome", i)
		}
	}
	return nil
}
