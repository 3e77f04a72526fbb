package bench

import (
	"fmt"
	"sort"
	"strings"

	"github.com/amnesia-dev/amnesia/internal/bench/provenance"
)

// RESULTS.md's sections on issue #13's performance targets, from
// bench/results/scanner.json, trace.json, capture.json and
// fixedcost-*.json. Each row's verdict is computed from the file's figures
// against the target; a row measured at another size than the target's is
// shown and not judged.

// Issue #13's targets.
const (
	scannerTargetPc       = 50.0       // scan ≥ 50% of a warm cat of the same file
	traceTargetEdges      = 10_000_000 // the trace targets are at 10M edges
	traceWarmP99TargetMs  = 2.0
	traceColdP99TargetMs  = 10.0
	captureBatchRecords   = 41 // 1 document + 20 chunks + 20 embeddings
	captureBatchTargetPc  = 5.0
	captureSingleTargetPc = 50.0
	captureRecordsPerS    = 20_000.0 // through the batch API (RecordBatch)
	fixedCostTargetMs     = 5.0      // median per erasure on the small store
	fixedCostSmallSubj    = 50
	fixedCostSmallDocs    = 1
	windowTargetMs        = 10.0 // B5 per subject
)

// Where bench/README.md describes how each is measured.
const (
	scannerMethodLink   = "[bench/README.md](bench/README.md#byte-scanner-amnesia-bench-scanner-issue-13-point-1)"
	perfMethodLink      = "[bench/README.md](bench/README.md#trace-and-capture-amnesia-bench-trace-amnesia-bench-capture-issue-13-points-5-and-6)"
	fixedCostMethodLink = "[bench/README.md](bench/README.md#fixed-cost-per-erasure-benchmarkerasurefixedcost-issue-13-point-7)"
)

// FixedCostResult is bench/results/fixedcost-<store>-<people>x<docs>.json:
// BenchmarkErasureFixedCost (internal/saga/fixedcost_bench_test.go) writes
// it, report reads it.
type FixedCostResult struct {
	Kind     string `json:"kind"` // "fixedcost"
	Store    string `json:"store"`
	Subjects int    `json:"corpus_subjects"`
	DocsEach int    `json:"docs_each"`
	provenance.Provenance
	Erasures     int     `json:"erasures"`
	MeanMs       float64 `json:"mean_ms"` // per erasure: trace, then saga.Run
	MedianMs     float64 `json:"median_ms"`
	P95Ms        float64 `json:"p95_ms"`
	JournalSyncs float64 `json:"journal_fsyncs_per_erasure"`
	// StepsMs is the time each kind of step took per erasure, from the
	// saga's progress lines (rounded to the millisecond per step, so a
	// step under half a millisecond counts as 0); the rest of MeanMs is the
	// trace, the journal and the lock.
	StepsMs map[string]float64 `json:"steps_ms"`

	file *File // the results file, for its stamp
}

// verdict is "met" or "**not met**".
func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "**not met**"
}

// shorten cuts a long text from a results file at a sentence end before
// max bytes.
func shorten(s string, max int) string {
	s = strings.TrimSpace(s)
	if len(s) <= max {
		return s
	}
	cut := strings.LastIndex(s[:max], ". ")
	if cut < 0 {
		cut = strings.LastIndex(s[:max], " ")
	}
	if cut < 0 {
		cut = max
	}
	return strings.TrimRight(s[:cut], " .;,") + " …"
}

// thousands writes n with comma separators.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// scannerSection: the byte scanner against a warm cat (issue #13, point 1).
func (r *Results) scannerSection() string {
	s := r.Scanner
	if s == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n## Byte scanner\n\n")
	fmt.Fprintf(&b, "Issue #13, point 1: `store.ScanFiles` against a warm `cat` of the same file. Files of %d MiB, fastest of %d runs, the scanner on %d workers; MB is 2^20 bytes, as the file counts. How it is measured: %s.",
		s.Params.MiB, s.Params.Runs, s.Params.Workers, scannerMethodLink)
	if s.Note != "" {
		fmt.Fprintf(&b, " The file's note: %s", shorten(s.Note, 600))
	}
	b.WriteString("\n\n" + r.file("scanner", "").stamp() + "\n")
	fmt.Fprintf(&b, "| data | needles | needles found | needle set build | cat MB/s | Go read loop MB/s | scan MB/s | scan MB per CPU second | scan / cat | target: scan ≥ %.0f%% of cat |\n|---|---|---|---|---|---|---|---|---|---|\n", scannerTargetPc)
	measured := map[string]bool{}
	for _, row := range s.Rows {
		v := "not judged: no cat"
		if row.CatMBps > 0 {
			v = verdict(row.ScanVsCatPc >= scannerTargetPc)
		}
		measured[fmt.Sprintf("%s/%d", row.Data, row.Needles)] = true
		fmt.Fprintf(&b, "| %s | %s | %s | %.1f ms | %.0f | %.0f | %.0f | %.0f | %.1f%% | %s |\n",
			row.Data, thousands(int64(row.Needles)), thousands(int64(row.NeedlesFound)), row.BuildMs, row.CatMBps, row.ReadMBps, row.ScanMBps, row.ScanCPUMBps, row.ScanVsCatPc, v)
	}
	var missing []string
	for _, d := range []string{"text", "vectors"} {
		for _, n := range []int{1000, 10000} {
			if !measured[fmt.Sprintf("%s/%d", d, n)] {
				missing = append(missing, fmt.Sprintf("%s with %s needles", d, thousands(int64(n))))
			}
		}
	}
	if len(missing) > 0 {
		fmt.Fprintf(&b, "\nNot measured in this file, so not judged: %s.\n", strings.Join(missing, ", "))
	}
	b.WriteString("\nThe target is for 1,000 and 10,000 needles, text and vectors. Scan MB per CPU second counts the process's CPU time over all workers (less sensitive than wall time to other work on the machine).\n")
	return b.String()
}

// traceSection: trace latency (issue #13, point 5).
func (r *Results) traceSection() string {
	t := r.Trace
	if t == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n## Trace latency\n\n")
	fmt.Fprintf(&b, "Issue #13, point 5: View + BuildTrace of a random subject on a ledger grown through `RecordBatch`. How it is measured: %s.", perfMethodLink)
	if t.Shape != "" {
		fmt.Fprintf(&b, " Shape: %s.", strings.TrimSuffix(shorten(t.Shape, 400), "."))
	}
	b.WriteString("\n\n" + r.file("trace", "").stamp() + "\n")
	fmt.Fprintf(&b, "| ledger | edges | artifacts | ledger built | warm traces | warm p50 / p99 | cold traces | cold p50 / p99 | target at %s edges: warm p99 ≤ %.0f ms | cold p99 ≤ %.0f ms |\n|---|---|---|---|---|---|---|---|---|---|\n",
		thousands(traceTargetEdges), traceWarmP99TargetMs, traceColdP99TargetMs)
	at10M := map[string]bool{}
	for _, run := range t.Runs {
		built := "n/a"
		switch {
		case run.Reused && run.BuildSeconds == 0:
			built = "reused"
			if len(run.BuiltBy) > 0 {
				built += ", built by " + shortHashes(run.BuiltBy)
			}
		case run.BuildSeconds > 0:
			built = fmt.Sprintf("%.0f s (%s artifacts/s)", run.BuildSeconds, thousands(int64(run.BuildPerS+0.5)))
			if run.Reused {
				built = "grown " + built + " from a reused ledger"
			}
		}
		cold, coldV := "none", "not measured"
		warmV := "not measured at 10M"
		if run.Edges >= traceTargetEdges {
			at10M[run.Ledger] = true
			warmV = verdict(run.WarmP99Ms <= traceWarmP99TargetMs)
		}
		if run.ColdP50Ms != nil && run.ColdP99Ms != nil {
			cold = fmt.Sprintf("%.2f / %.2f ms", *run.ColdP50Ms, *run.ColdP99Ms)
			coldV = "not measured at 10M"
			if run.Edges >= traceTargetEdges {
				coldV = verdict(*run.ColdP99Ms <= traceColdP99TargetMs)
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %.2f / %.2f ms | %s | %s | %s | %s |\n",
			run.Ledger, thousands(int64(run.Edges)), thousands(int64(run.Artifacts)), built, thousands(int64(run.Traces)), run.WarmP50Ms, run.WarmP99Ms, thousands(int64(run.ColdTraces)), cold, warmV, coldV)
	}
	var missing []string
	for _, l := range []string{"sqlite", "postgres"} {
		if !at10M[l] {
			missing = append(missing, l)
		}
	}
	if len(missing) > 0 {
		fmt.Fprintf(&b, "\nNo run at %s edges on the %s ledger in this file: the target is not measured there.\n", thousands(traceTargetEdges), strings.Join(missing, " and "))
	}
	var methods []string
	for _, run := range t.Runs {
		if run.WarmMethod != "" {
			cached := ""
			if run.WarmCachedPercent != nil {
				cached = fmt.Sprintf("; after the timed warm traces the page cache held %.1f%% of the ledger's files", *run.WarmCachedPercent)
			}
			methods = append(methods, fmt.Sprintf("- %s at %s edges, warm: %s%s", run.Ledger, thousands(int64(run.Edges)), shorten(run.WarmMethod, 400), cached))
		}
		if run.ColdMethod != "" {
			methods = append(methods, fmt.Sprintf("- %s at %s edges, cold: %s", run.Ledger, thousands(int64(run.Edges)), shorten(run.ColdMethod, 400)))
		}
	}
	if len(methods) > 0 {
		b.WriteString("\nHow each run put its ledger in and out of the page cache, as the file records it:\n\n" + strings.Join(methods, "\n") + "\n")
	}
	if t.Note != "" {
		fmt.Fprintf(&b, "\nThe file's note: %s\n", shorten(t.Note, 700))
	}
	return b.String()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func shortHashes(hs []string) string {
	out := make([]string, len(hs))
	for i, h := range hs {
		if len(h) > 7 {
			h = h[:7]
		}
		out[i] = h
	}
	return strings.Join(out, ", ")
}

// captureSection: capture overhead and throughput (issue #13, point 6).
func (r *Results) captureSection() string {
	c := r.Capture
	if c == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n## Capture overhead\n\n")
	fmt.Fprintf(&b, "Issue #13, point 6: store writes through capture against the same writes without it (p50). How it is measured: %s.\n\n", perfMethodLink)
	b.WriteString(r.file("capture", "").stamp() + "\n")
	b.WriteString("| ledger | writes | timed | plain p50 | captured p50 | overhead (p50) | target | verdict |\n|---|---|---|---|---|---|---|---|\n")
	seen := map[string]bool{}
	for _, run := range c.Runs {
		seen[run.Ledger] = true
		bt := run.Batched
		v := verdict(bt.OverheadPc <= captureBatchTargetPc)
		if bt.Records != captureBatchRecords {
			v = fmt.Sprintf("not judged: the target is for batches of %d records", captureBatchRecords)
		}
		fmt.Fprintf(&b, "| %s | batched, %d records each (`Docs.PutBatch`) | %s batches | %.2f ms | %.2f ms | %+.1f%% | ≤ %.0f%% | %s |\n",
			run.Ledger, bt.Records, thousands(int64(bt.Ingestions)), bt.PlainP50Ms, bt.CapturedP50Ms, bt.OverheadPc, captureBatchTargetPc, v)
		sg := run.Single
		fmt.Fprintf(&b, "| %s | single document (`Docs.Put`) | %s writes | %.0f µs | %.0f µs | %+.1f%% | ≤ %.0f%% | %s |\n",
			run.Ledger, thousands(int64(sg.Writes)), sg.PlainP50Us, sg.CapturedP50Us, sg.OverheadPc, captureSingleTargetPc, verdict(sg.OverheadPc <= captureSingleTargetPc))
	}
	fmt.Fprintf(&b, "\n| ledger | records/s through `PutBatch` (store writes included) | records/s through `RecordBatch` (the ledger alone) | target: ≥ %s records/s through the batch API |\n|---|---|---|---|\n", thousands(int64(captureRecordsPerS)))
	for _, run := range c.Runs {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", run.Ledger, thousands(int64(run.Batched.RecordsPerS+0.5)), thousands(int64(run.Batched.LedgerPerS+0.5)), verdict(run.Batched.LedgerPerS >= captureRecordsPerS))
	}
	b.WriteString("\nThe records/s target is judged on `RecordBatch`, the ledger's batch API; `PutBatch`'s figure also holds the store writes it makes.\n")
	var missing []string
	for _, l := range []string{"sqlite", "postgres"} {
		if !seen[l] {
			missing = append(missing, l)
		}
	}
	if len(missing) > 0 {
		fmt.Fprintf(&b, "\nNo run on the %s ledger in this file: the targets are not measured there.\n", strings.Join(missing, " and "))
	}
	if c.Note != "" {
		fmt.Fprintf(&b, "\nThe file's note: %s\n", shorten(c.Note, 1000))
	}
	return b.String()
}

// stepOrder is the order the saga runs its kinds of step in.
var stepOrder = []string{"plan", "suppress", "evidence", "delete", "reclaim", "probe", "shred", "decide", "certificate", "publish"}

// fixedCostSection: the wall time of one erasure (issue #13, point 7).
func (r *Results) fixedCostSection() string {
	fc := r.FixedCost
	if len(fc) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n## Fixed cost per erasure\n\n")
	fmt.Fprintf(&b, "Issue #13, point 7: one erasure of one subject at a time (the trace, then `saga.Run` with its certificate and transparency-log leaf) on a sqlite-doc store with a SQLite ledger, by `BenchmarkErasureFixedCost`. How it is measured: %s.\n\n", fixedCostMethodLink)
	for _, f := range fc {
		b.WriteString(f.file.stamp() + "\n")
	}
	fmt.Fprintf(&b, "| store | corpus | erasures | median | mean | p95 | journal file fsyncs per erasure (not its directories' 2) | target: median ≤ %.0f ms on the small store (%d × %d) |\n|---|---|---|---|---|---|---|---|\n",
		fixedCostTargetMs, fixedCostSmallSubj, fixedCostSmallDocs)
	for _, f := range fc {
		v := "no target (figures only)"
		if f.Subjects == fixedCostSmallSubj && f.DocsEach == fixedCostSmallDocs {
			v = verdict(f.MedianMs <= fixedCostTargetMs)
		}
		fmt.Fprintf(&b, "| %s | %d subjects, %d document%s each | %d | %.1f ms | %.1f ms | %.1f ms | %.1f | %s |\n",
			f.Store, f.Subjects, f.DocsEach, plural(f.DocsEach), f.Erasures, f.MedianMs, f.MeanMs, f.P95Ms, f.JournalSyncs, v)
	}
	// Steps: the saga's order, then any other kind a file names.
	known := map[string]bool{}
	for _, s := range stepOrder {
		known[s] = true
	}
	steps := append([]string{}, stepOrder...)
	var extra []string
	for _, f := range fc {
		for s := range f.StepsMs {
			if !known[s] {
				known[s] = true
				extra = append(extra, s)
			}
		}
	}
	sort.Strings(extra)
	steps = append(steps, extra...)
	b.WriteString("\nTime per erasure by kind of step (mean ms; each step's time as the saga's progress line rounds it, to the millisecond, so a step under half a millisecond counts as 0):\n\n| step |")
	for _, f := range fc {
		fmt.Fprintf(&b, " %d × %d |", f.Subjects, f.DocsEach)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(fc)) + "\n")
	for _, s := range steps {
		fmt.Fprintf(&b, "| %s |", s)
		for _, f := range fc {
			if v, ok := f.StepsMs[s]; ok {
				fmt.Fprintf(&b, " %.2f |", v)
			} else {
				b.WriteString(" n/a |")
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("| rest: the trace, the journal, the lock (mean − steps) |")
	for _, f := range fc {
		sum := 0.0
		for _, v := range f.StepsMs {
			sum += v
		}
		fmt.Fprintf(&b, " %.2f |", f.MeanMs-sum)
	}
	b.WriteString("\n")
	return b.String()
}

// sortFixedCost orders the fixed-cost files by corpus size, smallest first.
func (r *Results) sortFixedCost() {
	sort.SliceStable(r.FixedCost, func(i, j int) bool {
		a, b := r.FixedCost[i], r.FixedCost[j]
		if x, y := a.Subjects*a.DocsEach, b.Subjects*b.DocsEach; x != y {
			return x < y
		}
		return a.file.Name < b.file.Name
	})
}

// windowSection: B5 per subject as the window grows (issue #13, point 7).
func (r *Results) windowSection() string {
	if len(r.Windows) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n## Erasure windows by size\n\n")
	fmt.Fprintf(&b, "Issue #13, point 7: B5 (one batch, `saga.RunBatch`: each store reads its evidence, deletes, reclaims and byte-scans once for the whole window) at several window sizes, each on a fresh copy of the same corpus; the subjects of a window are spread evenly over it. Per subject = the batch's wall time (traces, journals, certificates included) divided by its subjects. Target: ≤ %.0f ms per subject, flat as the window grows. How to run it: [bench/README.md](bench/README.md#erasure-windows-by-size-amnesia-bench-window-issue-13-point-7).\n", windowTargetMs)
	for _, w := range r.Windows {
		fmt.Fprintf(&b, "\n### %s\n\n%d documents of %d subjects (seed %d), %d records in this store.\n\n", w.Store, w.Docs, w.Subjects, w.Seed, w.Records)
		b.WriteString(r.file("window", w.Store).stamp() + "\n")
		fmt.Fprintf(&b, "| window | records | physical residue | probe power | wall total | per subject | target ≤ %.0f ms per subject | how they ended |\n|---|---|---|---|---|---|---|---|\n", windowTargetMs)
		var judged []Cell
		whole := false
		for _, c := range w.Cells {
			ended := "n/a"
			if c.Outcomes != nil {
				ended = c.Outcomes.Summary()
			}
			v := verdict(c.WallMedianMs <= windowTargetMs)
			if c.Subjects >= w.Subjects {
				// Every record of the store is erased: no other record is
				// read for shared windows, so the figure is not the cost
				// of a window in a store that keeps other people's data.
				v, whole = "not judged: the whole corpus", true
			} else {
				judged = append(judged, c)
			}
			fmt.Fprintf(&b, "| %d | %d | %s | %s | %s | %s | %s | %s |\n", c.Subjects, c.Records, pct(c.PhysicalResidue)+flagged("", c.Outcomes), pct(c.ProbePower), ms(c.WallTotalMs), ms(c.WallMedianMs), v, ended)
		}
		if whole {
			b.WriteString("\nA window of every subject of the corpus erases every record: the evidence step then reads no other record for shared windows, so that row is shown, not judged; run with `--subjects` above the largest window.\n")
		}
		if n := len(judged); n > 1 && judged[0].WallMedianMs > 0 {
			first, last := judged[0], judged[n-1]
			fmt.Fprintf(&b, "\nPer subject at a window of %d is %.2f× its figure at a window of %d.\n", last.Subjects, last.WallMedianMs/first.WallMedianMs, first.Subjects)
		}
	}
	return b.String()
}
