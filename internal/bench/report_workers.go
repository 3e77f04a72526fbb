package bench

import (
	"fmt"
	"sort"
	"strings"
)

// workersSection is RESULTS.md's section on several workers sharing one
// PostgreSQL ledger (issue #18), from bench/results/workers.json: erasures
// per minute per run, and what each erasure adds to the ledger's tables.
func (r *Results) workersSection() string {
	w := r.Workers
	if w == nil || len(w.Runs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n## Workers on one PostgreSQL ledger (erasures per minute, ledger growth)\n\n")
	fmt.Fprintf(&b, "Store: %s, %d documents per subject (%d artifacts each). %s\n\n", w.Setup.Store, w.Setup.DocsEach, w.Setup.ArtifactsPerSubject, w.Setup.Note)
	b.WriteString(r.file("workers", "").stamp() + "\n")
	b.WriteString("| workers | window | erasures | complete certificates | seconds | erasures/min | complete/min | per worker/min |\n|---|---|---|---|---|---|---|---|\n")
	for _, run := range w.Runs {
		win := "one at a time"
		if run.Window > 0 {
			win = fmt.Sprintf("≤ %d", run.Window)
		}
		fmt.Fprintf(&b, "| %d | %s | %d | %d | %.1f | %.1f | %.1f | %.1f |\n", run.Workers, win, run.Erasures, run.Complete, run.Seconds, run.PerMinute, run.CompletePerMinute, run.PerWorkerPerMinute)
	}
	for _, run := range w.Runs {
		if len(run.Tables) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\nLedger growth per erasure (run with %d workers): %.1f events, %.1f log leaves (mean leaf %.0f bytes), certificate %.0f bytes on average; sealed evidence written before its shred: %.1f rows, %.0f bytes.\n\n",
			run.Workers, run.EventsPerErasure, run.LogLeavesPerErasure, run.LogLeafBytes, run.CertificateBytes, run.SealedWritten.Rows, run.SealedWritten.Bytes)
		b.WriteString("| table | rows per erasure | bytes per erasure (stored rows) | disk growth per erasure (pages) |\n|---|---|---|---|\n")
		names := make([]string, 0, len(run.Tables))
		for t := range run.Tables {
			names = append(names, t)
		}
		sort.Strings(names)
		for _, t := range names {
			g := run.Tables[t]
			fmt.Fprintf(&b, "| `%s` | %.1f | %.0f | %.0f |\n", t, g.Rows, g.Bytes, g.DiskBytes)
		}
		break // one run's table: the rows an erasure writes do not depend on the workers
	}
	var lat []string
	for _, run := range w.Runs {
		stores := make([]string, 0, len(run.Latency))
		for s := range run.Latency {
			stores = append(stores, s)
		}
		sort.Strings(stores)
		for _, s := range stores {
			l := run.Latency[s]
			lat = append(lat, fmt.Sprintf("| %d | %s | %d | %v | %.0f | %.0f | %.0f |", run.Workers, s, l.Clean, l.NotClean, l.P50ms, l.P95ms, l.Maxms))
		}
	}
	if len(lat) > 0 {
		b.WriteString("\nDelete persistence latency (from each erasure's enqueue, all queued before the workers start, to the physical probe that found none of its bytes; only stores whose every artifact the certificate verifies physically count as clean):\n\n")
		b.WriteString("| workers | store | clean | not clean | p50 ms | p95 ms | max ms |\n|---|---|---|---|---|---|---|\n")
		b.WriteString(strings.Join(lat, "\n") + "\n")
	}
	b.WriteString("\nThe capacity model that uses these figures: [docs/scale.md](docs/scale.md#capacity-model).\n")
	return b.String()
}
