package bench

import (
	"fmt"
	"sort"
	"strings"
)

// modelSection is RESULTS.md's model-leg section (issue #15), from
// bench/results/model.json.
func (r *Results) modelSection() string {
	m := r.Model
	if m == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n## Model leg (sharded retraining and the canary probe)\n\n")
	if m.Smoke {
		b.WriteString("**Smoke-size run**: below the default sizes of `amnesia-bench model`; it shows the code works, its timings are not a measurement to quote.\n\n")
	}
	fmt.Fprintf(&b, "%s. %d subjects × %d training rows and one canary each (%d rows) in %d shards by keyed hash; %d references per canary; %d subjects erased one after another.\n\n",
		m.Setup.Model, m.Setup.People, m.Setup.RowsEach, m.Setup.Rows, m.Setup.Shards, m.Setup.References, m.Setup.Erasures)
	b.WriteString(r.file("model", "").stamp() + "\n")
	b.WriteString("| erasure | rows removed | shards retrained | retrain | probe (before + after) | probe requests | whole erasure | model outcome | certificate complete |\n|---|---|---|---|---|---|---|---|---|\n")
	var totals []float64
	for i, e := range m.Erasures {
		fmt.Fprintf(&b, "| %d | %d | %d | %d ms | %d ms | %d | %s | %s | %v |\n", i+1, e.RowsRemoved, e.ShardsRetrained, e.RetrainMs, e.ProbeMs, e.ProbeRequests, ms(e.TotalMs), e.Outcome, e.Complete)
		totals = append(totals, e.TotalMs)
	}
	if len(totals) > 0 {
		sort.Float64s(totals)
		fmt.Fprintf(&b, "\nWhole erasure, median: %s.\n", ms(totals[len(totals)/2]))
	}
	p := m.Power
	fmt.Fprintf(&b, "\nProbe power: of the erased subjects' %d canaries, %d extracted and %d flagged before their shard was retrained; %d extracted and %d flagged after. A never-trained canary is flagged by chance with probability at most %.3g (any of the %d: %.3g). Control canaries of subjects in other shards, probed after each erasure: %d of %d still extracted.\n",
		p.Canaries, p.ExtractedBefore, p.FlaggedBefore, p.ExtractedAfter, p.FlaggedAfter, p.FPRPerCanary, p.Canaries, p.FPRAny, p.ControlsExtracted, p.Controls)
	return b.String()
}
