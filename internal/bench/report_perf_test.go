package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/internal/bench/provenance"
)

// perfFiles are small synthetic results files of the four issue #13 kinds:
// each figure sits just on one side of its target.
var perfFiles = map[string]string{
	"scanner.json": `{"kind":"scanner","commit":"COMMIT","machine":"m","date":"2026-12-02",
		"params":{"mib":8,"needles":[1000,10000],"runs":1,"workers":2},"method":"a method",
		"rows":[
		 {"data":"text","bytes":8388608,"needles":1000,"needles_found":5,"needle_set_build_ms":1,"cat_mb_per_s":1000,"read_loop_mb_per_s":2000,"scan_mb_per_s":600,"scan_mb_per_cpu_s":300,"scan_vs_cat_percent":60,"scan_vs_read_loop_percent":30},
		 {"data":"text","bytes":8388608,"needles":10000,"needles_found":50,"needle_set_build_ms":2,"cat_mb_per_s":1000,"read_loop_mb_per_s":2000,"scan_mb_per_s":400,"scan_mb_per_cpu_s":200,"scan_vs_cat_percent":40,"scan_vs_read_loop_percent":20},
		 {"data":"vectors","bytes":8388608,"needles":1000,"needles_found":5,"needle_set_build_ms":1,"cat_mb_per_s":0,"read_loop_mb_per_s":2000,"scan_mb_per_s":900,"scan_mb_per_cpu_s":450,"scan_vs_cat_percent":0,"scan_vs_read_loop_percent":45}]}`,
	"trace.json": `{"kind":"trace","commit":"COMMIT","machine":"m","date":"2026-12-02","shape":"a shape",
		"runs":[
		 {"ledger":"sqlite","edges":1000000,"artifacts":1125000,"events":1125000,"build_seconds":100,"build_artifacts_per_s":11250,"traces":100,"warm_p50_ms":0.5,"warm_p99_ms":1.0,"cold_traces":10,"cold_p50_ms":2,"cold_p99_ms":3,"cold_method":"dropped"},
		 {"ledger":"postgres","edges":10000000,"artifacts":11250000,"events":11250000,"build_seconds":0,"traces":100,"warm_p50_ms":1.0,"warm_p99_ms":1.5,"cold_traces":10,"cold_p50_ms":8,"cold_p99_ms":12,"built_by":["0123456789ab"],"reused":true}],
		"note":"a note"}`,
	"capture.json": `{"kind":"capture","commit":"COMMIT","machine":"m","date":"2026-12-02",
		"runs":[{"ledger":"sqlite",
		 "batched":{"ingestions":10,"records_each":41,"plain_p50_ms":10,"captured_p50_ms":10.4,"overhead_p50_percent":4,"put_batch_records_per_s":3000,"record_batch_records_per_s":25000},
		 "single":{"writes":100,"plain_p50_us":100,"captured_p50_us":160,"overhead_p50_percent":60}}],
		"note":"a capture note"}`,
	"fixedcost-sqlite-doc-50x1.json": `{"kind":"fixedcost","store":"sqlite-doc","corpus_subjects":50,"docs_each":1,"commit":"COMMIT","machine":"m","date":"2026-12-02",
		"erasures":20,"mean_ms":4.5,"median_ms":4.2,"p95_ms":6,"journal_fsyncs_per_erasure":2,"steps_ms":{"evidence":1.5,"publish":1,"plan":0}}`,
	"fixedcost-sqlite-doc-200x15.json": `{"kind":"fixedcost","store":"sqlite-doc","corpus_subjects":200,"docs_each":15,"commit":"COMMIT","machine":"m","date":"2026-12-02",
		"erasures":20,"mean_ms":300,"median_ms":290,"p95_ms":400,"journal_fsyncs_per_erasure":2,"steps_ms":{"evidence":250,"publish":4}}`,
	"window-sqlite-doc.json": `{"kind":"window","store":"sqlite-doc","seed":1,"corpus_subjects":2000,"corpus_documents":30000,"corpus_records":120000,"commit":"COMMIT","machine":"m","date":"2026-12-02",
		"cells":[
		 {"baseline":"B5","subjects":1,"records":60,"physical_residue":0,"probe_power":0.9,"wall_median_ms":40,"wall_p95_ms":40,"wall_total_ms":40},
		 {"baseline":"B5","subjects":1000,"records":60000,"physical_residue":0,"probe_power":0.9,"wall_median_ms":9.5,"wall_p95_ms":9.5,"wall_total_ms":9500}]}`,
}

// loadPerf writes files (COMMIT replaced by commit) into a temp dir and
// loads them, checked against the repository at repo.
func loadPerf(t *testing.T, files map[string]string, commit, repo string) *Results {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.ReplaceAll(body, "COMMIT", commit)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	r.Check(repo)
	return r
}

// row is the line of md that starts with prefix; the test fails without one.
func row(t *testing.T, md, prefix string) string {
	t.Helper()
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	t.Fatalf("no row starting %q in:\n%s", prefix, md)
	return ""
}

// section is the text of RESULTS.md's section heading, up to the next.
func section(md, heading string) string {
	i := strings.Index(md, "\n## "+heading+"\n")
	if i < 0 {
		return ""
	}
	rest := md[i+1:]
	if j := strings.Index(rest[3:], "\n## "); j >= 0 {
		return rest[:j+3]
	}
	return rest
}

// The four issue #13 sections are rendered from their files, and each
// verdict follows the figures: met on the target's side, not met on the
// other, and not judged where the file did not measure what the target is
// about.
func TestReportPerfSectionsJudgeTheTargets(t *testing.T) {
	repo := gitRepo(t, map[string]string{"store/scan.go": "package store\n"})
	r := loadPerf(t, perfFiles, run(t, repo, "rev-parse", "HEAD"), repo)
	md := r.Markdown()

	sc := section(md, "Byte scanner")
	if sc == "" {
		t.Fatalf("no Byte scanner section:\n%s", md)
	}
	if l := row(t, sc, "| text | 1,000 |"); !strings.HasSuffix(l, "| 60.0% | met |") {
		t.Errorf("scan at 60%% of cat: %s", l)
	}
	if l := row(t, sc, "| text | 10,000 |"); !strings.HasSuffix(l, "| 40.0% | **not met** |") {
		t.Errorf("scan at 40%% of cat: %s", l)
	}
	if l := row(t, sc, "| vectors | 1,000 |"); !strings.Contains(l, "not judged: no cat") {
		t.Errorf("a row without cat is judged: %s", l)
	}
	if !strings.Contains(sc, "Not measured in this file, so not judged: vectors with 10,000 needles.") {
		t.Errorf("the missing vectors/10,000 row is not named:\n%s", sc)
	}
	if !strings.Contains(sc, "the measured code is unchanged since it was measured") || !strings.Contains(sc, "`bench/results/scanner.json`") {
		t.Errorf("no stamp under the scanner heading:\n%s", sc)
	}

	tr := section(md, "Trace latency")
	if l := row(t, tr, "| sqlite | 1,000,000 |"); !strings.HasSuffix(l, "| not measured at 10M | not measured at 10M |") || strings.Contains(l, "met |") {
		t.Errorf("a run at 1M edges is judged at 10M: %s", l)
	}
	if l := row(t, tr, "| postgres | 10,000,000 |"); !strings.HasSuffix(l, "| 1.00 / 1.50 ms | 10 | 8.00 / 12.00 ms | met | **not met** |") || !strings.Contains(l, "reused, built by 0123456") {
		t.Errorf("postgres at 10M, warm p99 1.5 and cold p99 12 ms: %s", l)
	}
	if !strings.Contains(tr, "No run at 10,000,000 edges on the sqlite ledger") || !strings.Contains(tr, "sqlite at 1,000,000 edges, cold: dropped") || !strings.Contains(tr, "a note") || !strings.Contains(tr, "a shape") {
		t.Errorf("trace section lacks the missing ledger, the cold method, the note or the shape:\n%s", tr)
	}

	ca := section(md, "Capture overhead")
	if l := row(t, ca, "| sqlite | batched"); !strings.HasSuffix(l, "| +4.0% | ≤ 5% | met |") {
		t.Errorf("batched overhead 4%%: %s", l)
	}
	if l := row(t, ca, "| sqlite | single"); !strings.HasSuffix(l, "| +60.0% | ≤ 50% | **not met** |") {
		t.Errorf("single overhead 60%%: %s", l)
	}
	// PutBatch at 3,000/s is below the target, RecordBatch at 25,000/s
	// above: the verdict follows RecordBatch.
	if l := row(t, ca, "| sqlite | 3,000 |"); l != "| sqlite | 3,000 | 25,000 | met |" {
		t.Errorf("throughput row: %s", l)
	}
	if !strings.Contains(ca, "judged on `RecordBatch`") || !strings.Contains(ca, "No run on the postgres ledger") || !strings.Contains(ca, "a capture note") {
		t.Errorf("capture section lacks the RecordBatch line, the missing ledger or the note:\n%s", ca)
	}

	fc := section(md, "Fixed cost per erasure")
	small := row(t, fc, "| sqlite-doc | 50 subjects, 1 document each |")
	if !strings.HasSuffix(small, "| 4.2 ms | 4.5 ms | 6.0 ms | 2.0 | met |") {
		t.Errorf("median 4.2 ms on the small store: %s", small)
	}
	if l := row(t, fc, "| sqlite-doc | 200 subjects, 15 documents each |"); !strings.HasSuffix(l, "| no target (figures only) |") {
		t.Errorf("the default corpus is judged: %s", l)
	}
	if strings.Index(fc, "50 subjects") > strings.Index(fc, "200 subjects") {
		t.Errorf("the small store is not first")
	}
	if l := row(t, fc, "| evidence |"); l != "| evidence | 1.50 | 250.00 |" {
		t.Errorf("steps row: %s", l)
	}
	if l := row(t, fc, "| delete |"); l != "| delete | n/a | n/a |" {
		t.Errorf("a step no file names: %s", l)
	}
	if l := row(t, fc, "| rest:"); !strings.HasSuffix(l, "| 2.00 | 46.00 |") {
		t.Errorf("rest of the mean: %s", l)
	}
	if strings.Count(fc, "the measured code is unchanged since it was measured") != 2 {
		t.Errorf("not one stamp per fixed-cost file:\n%s", fc)
	}

	wn := section(md, "Erasure windows by size")
	if l := row(t, wn, "| 1 | 60 |"); !strings.Contains(l, "| 40.0 ms | 40.0 ms | **not met** |") {
		t.Errorf("a window of 1 at 40 ms per subject: %s", l)
	}
	if l := row(t, wn, "| 1000 | 60000 |"); !strings.Contains(l, "| 9500.0 ms | 9.5 ms | met |") {
		t.Errorf("a window of 1,000 at 9.5 ms per subject: %s", l)
	}
	if !strings.Contains(wn, "Per subject at a window of 1000 is 0.24× its figure at a window of 1.") || !strings.Contains(wn, "`bench/results/window-sqlite-doc.json`") {
		t.Errorf("window section lacks the ratio or the stamp:\n%s", wn)
	}
	if strings.Contains(wn, "not judged") || strings.Contains(wn, "whole corpus") {
		t.Errorf("a window smaller than the corpus is not judged:\n%s", wn)
	}
	// A window of every subject erases every record: shown, not judged,
	// and left out of the ratio.
	whole := map[string]string{"window-sqlite-doc.json": strings.Replace(perfFiles["window-sqlite-doc.json"], `"corpus_subjects":2000`, `"corpus_subjects":1000`, 1)}
	wn = section(loadPerf(t, whole, run(t, repo, "rev-parse", "HEAD"), repo).Markdown(), "Erasure windows by size")
	if l := row(t, wn, "| 1000 | 60000 |"); !strings.Contains(l, "| not judged: the whole corpus |") {
		t.Errorf("a window of the whole corpus is judged: %s", l)
	}
	if !strings.Contains(wn, "run with `--subjects` above the largest window") || strings.Contains(wn, "Per subject at a window of 1000") {
		t.Errorf("the whole-corpus window is not explained, or is in the ratio:\n%s", wn)
	}

	// The other side of each target.
	over := map[string]string{}
	for k, v := range perfFiles {
		over[k] = v
	}
	over["fixedcost-sqlite-doc-50x1.json"] = strings.Replace(over["fixedcost-sqlite-doc-50x1.json"], `"median_ms":4.2`, `"median_ms":5.1`, 1)
	over["capture.json"] = strings.Replace(over["capture.json"], `"record_batch_records_per_s":25000`, `"record_batch_records_per_s":19999`, 1)
	over["trace.json"] = strings.Replace(over["trace.json"], `"warm_p99_ms":1.5,"cold_traces":10,"cold_p50_ms":8,"cold_p99_ms":12`, `"warm_p99_ms":2.5,"cold_traces":10,"cold_p50_ms":8,"cold_p99_ms":9`, 1)
	md = loadPerf(t, over, run(t, repo, "rev-parse", "HEAD"), repo).Markdown()
	if l := row(t, md, "| sqlite-doc | 50 subjects"); !strings.HasSuffix(l, "| **not met** |") {
		t.Errorf("median 5.1 ms: %s", l)
	}
	if l := row(t, md, "| sqlite | 3,000 |"); !strings.HasSuffix(l, "| 19,999 | **not met** |") {
		t.Errorf("RecordBatch at 19,999/s: %s", l)
	}
	if l := row(t, md, "| postgres | 10,000,000 |"); !strings.HasSuffix(l, "| **not met** | met |") {
		t.Errorf("warm p99 2.5, cold p99 9 ms: %s", l)
	}
}

// Without a file of a kind its section is left out.
func TestReportPerfSectionsOnlyWithTheirFiles(t *testing.T) {
	repo := gitRepo(t, map[string]string{"store/scan.go": "package store\n"})
	md := loadPerf(t, map[string]string{"scanner.json": perfFiles["scanner.json"]}, run(t, repo, "rev-parse", "HEAD"), repo).Markdown()
	if section(md, "Byte scanner") == "" {
		t.Errorf("no scanner section")
	}
	for _, h := range []string{"Trace latency", "Capture overhead", "Fixed cost per erasure", "Erasure windows by size"} {
		if section(md, h) != "" {
			t.Errorf("section %q without its file", h)
		}
	}
}

// trace.json and capture.json written before they recorded provenance
// carry a short hash with "-dirty": they load, name the commit as dirty,
// and are stale (what they measured was not recorded).
func TestReportPerfOldDirtyCommitIsStale(t *testing.T) {
	repo := gitRepo(t, map[string]string{"store/scan.go": "package store\n"})
	head := run(t, repo, "rev-parse", "HEAD")
	old := head[:12] + "-dirty"
	r := loadPerf(t, map[string]string{"trace.json": perfFiles["trace.json"], "capture.json": perfFiles["capture.json"]}, old, repo)
	for _, f := range r.Files {
		if !f.Fresh.Stale || f.Fresh.Label() != head[:7]+"+dirty" || !strings.Contains(f.Fresh.Why, "uncommitted changes that were not recorded") {
			t.Errorf("%s with commit %q: %+v", f.Name, old, f.Fresh)
		}
	}
	md := r.Markdown()
	for _, h := range []string{"Trace latency", "Capture overhead"} {
		if s := section(md, h); !strings.Contains(s, "**stale**") || !strings.Contains(s, "easured on "+head[:7]+"+dirty") {
			t.Errorf("%s is not marked stale:\n%s", h, s)
		}
	}
	// A "+dirty" file without a tree is stale too, as before.
	if f := provenance.Check(repo, provenance.Provenance{Commit: head + "+dirty"}, provenance.ResiduePaths); !f.Stale {
		t.Errorf("+dirty without a tree is current")
	}
}
