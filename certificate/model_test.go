package certificate

import (
	"strings"
	"testing"
)

// verify refuses a certificate whose model entries claim more than their
// shard records show.
func TestModelClaimsChecked(t *testing.T) {
	pub, _ := goldenKey()
	good := func() ModelOutcome {
		return ModelOutcome{Model: "bot", Sharded: true, Level: LevelModel, Outcome: Verified, Method: "m",
			Shards: []ModelShard{{Shard: 0, Retrain: "done", Retrained: &ModelArtifact{Run: "run-1", SHA256: "ab", Rows: 3}, TrainedWithout: true, Served: ServedSwitched}}}
	}
	st := goldenStatementWithKey(pub)
	st.Predicate.Complete = true
	st.Predicate.Models = []ModelOutcome{good()}
	if err := checkStatement(st, KeyID(pub)); err != nil {
		t.Fatalf("a supported VERIFIED model is refused: %v", err)
	}
	for _, tc := range []struct {
		name   string
		mutate func(m *ModelOutcome, p *Predicate)
		want   string
	}{
		{"level", func(m *ModelOutcome, p *Predicate) { m.Level = "physical" }, "models[0].level"},
		{"unsharded verified", func(m *ModelOutcome, p *Predicate) { m.Sharded = false }, "models[0] is VERIFIED"},
		{"served by nobody", func(m *ModelOutcome, p *Predicate) { m.Shards[0].Served = ServedOperatorMust }, "models[0] is VERIFIED"},
		{"canary after", func(m *ModelOutcome, p *Predicate) { m.ProbeAfter = &ModelProbe{Canaries: 1, Extracted: 1} }, "models[0] is VERIFIED"},
		{"tainted complete", func(m *ModelOutcome, p *Predicate) { m.Outcome, m.Reason = Tainted, "not sharded" }, "complete is true but predicate.models[0] is TAINTED"},
		{"tainted no reason", func(m *ModelOutcome, p *Predicate) { m.Outcome = Tainted; p.Complete = false }, "models[0].reason"},
		{"unknown", func(m *ModelOutcome, p *Predicate) { m.Outcome = "ERASED" }, "models[0].outcome"},
	} {
		st := goldenStatementWithKey(pub)
		st.Predicate.Complete = true
		m := good()
		tc.mutate(&m, &st.Predicate)
		st.Predicate.Models = []ModelOutcome{m}
		err := checkStatement(st, KeyID(pub))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
}
