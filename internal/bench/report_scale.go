package bench

import (
	"fmt"
	"strings"
)

// scaleMethodLink is where bench/README.md describes the scale benchmark.
const scaleMethodLink = "[bench/README.md](bench/README.md#erasure-at-scale-amnesia-bench-scale-issue-13-point-8)"

// scaleSection: B4 and B5 on one store of a million records (issue #13,
// point 8), from bench/results/scale-<store>.json. A run on fewer records
// than the target's is shown and not judged; with no file at all there is
// no section.
func (r *Results) scaleSection() string {
	if len(r.Scale) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n## Erasure at scale\n\n")
	fmt.Fprintf(&b, "Issue #13, point 8: B4 (one subject at a time: trace, journaled saga, certificate) and B5 (other subjects as one batch, `saga.RunBatch`: one evidence read, reclaim and byte scan per store) on one store of %s records, ingested once through capture's batch API (`Docs.PutBatch`), with a SQLite ledger. Targets: B4 ≤ %s per erasure (median), B5 ≤ %.0f ms per subject; a run on fewer records is shown and not judged. Wall time is the deletion path only, as in the residue tables; each cell's total adds the harness's own evidence reads and byte scans before and after. How it runs: %s.\n",
		thousands(ScaleTargetRecords), seconds(scaleB4TargetMs), scaleB5TargetMs, scaleMethodLink)
	have := map[string]bool{}
	for _, s := range r.Scale {
		have[s.Store] = true
		fmt.Fprintf(&b, "\n### %s\n\n", s.Store)
		fmt.Fprintf(&b, "%s records (%s asked for) of %s subjects × %d documents (seed %d), %s ledger. Ingest: %s records in %s batches of one %s each, %.1f s, %s records/s (then one reclaim to settle the files, %.1f s). Before the erasures the store held %s records in %s; the ledger took %s.\n\n",
			thousands(int64(s.Records)), thousands(int64(s.RecordsAsked)), thousands(int64(s.Subjects)), s.DocsEach, s.Seed, s.Ledger,
			thousands(int64(s.Records)), thousands(int64(s.Ingest.Batches)), s.Ingest.BatchBy, s.Ingest.Seconds, thousands(int64(s.Ingest.RecordsPerS)), s.Ingest.SettleSeconds,
			thousands(int64(s.StoreRecords)), mib(s.StoreBytes), mib(s.LedgerBytes))
		b.WriteString(r.file("scale", s.Store).stamp() + "\n")
		b.WriteString("| baseline | subjects | records | physical residue | probe power | deletion path wall | per erasure | target | cell with the harness's scans | how they ended |\n|---|---|---|---|---|---|---|---|---|---|\n")
		judge := func(ok bool, target string) string {
			if s.Records < ScaleTargetRecords {
				return fmt.Sprintf("%s: not judged (%s records)", target, thousands(int64(s.Records)))
			}
			return target + ": " + verdict(ok)
		}
		walls := make([]string, len(s.B4.WallsMs))
		for i, w := range s.B4.WallsMs {
			walls[i] = ms(w)
		}
		fmt.Fprintf(&b, "| B4 | %d | %d | %s | %s | %s | %s median | %s | %.1f s | %s |\n",
			s.B4.Subjects, s.B4.Records, pct(s.B4.PhysicalResidue)+flagged("", s.B4.Outcomes), pct(s.B4.ProbePower), strings.Join(walls, ", "),
			ms(s.B4.WallMedianMs), judge(s.B4.WallMedianMs <= scaleB4TargetMs, "≤ "+seconds(scaleB4TargetMs)), s.B4.CellSeconds, summary(s.B4.Outcomes))
		fmt.Fprintf(&b, "| B5 | %d | %d | %s | %s | %s (one batch) | %s per subject | %s | %.1f s | %s |\n",
			s.B5.Subjects, s.B5.Records, pct(s.B5.PhysicalResidue)+flagged("", s.B5.Outcomes), pct(s.B5.ProbePower), ms(s.B5.WallTotalMs),
			ms(s.B5.WallMedianMs), judge(s.B5.WallMedianMs <= scaleB5TargetMs, fmt.Sprintf("≤ %.0f ms", scaleB5TargetMs)), s.B5.CellSeconds, summary(s.B5.Outcomes))
		fmt.Fprintf(&b, "\nAfter both, %s of the %s records of subjects no erasure touched read back through capture. The whole run took %.1f min.\n", thousands(int64(s.KeptReadable)), thousands(int64(s.KeptRecords)), s.RunSeconds/60)
		if s.Note != "" {
			fmt.Fprintf(&b, "The file's note: %s.\n", shorten(s.Note, 600))
		}
	}
	for _, t := range ScaleTypes {
		if !have[t] {
			fmt.Fprintf(&b, "\nNo run on %s: unmeasured (`go run ./cmd/amnesia-bench scale --store %s`).\n", t, t)
		}
	}
	return b.String()
}

// seconds writes a duration in ms as seconds when it is whole seconds.
func seconds(msec float64) string {
	if msec >= 1000 && int(msec)%1000 == 0 {
		return fmt.Sprintf("%d s", int(msec)/1000)
	}
	return ms(msec)
}

// mib writes a size in bytes as MiB.
func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// summary is the outcomes' summary, or "n/a" without any.
func summary(o *Outcomes) string {
	if o == nil {
		return "n/a"
	}
	return o.Summary()
}
