package bench

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/internal/pgtest"
)

// The scale benchmark end to end on a small store: every record of the
// corpus ingested through capture and counted in the store, B4 and B5
// erase their subjects' records with every erasure certified, the kept
// subjects' records still read back, and the result's fields filled.
func TestScaleSmoke(t *testing.T) {
	for _, typ := range ScaleTypes {
		t.Run(typ, func(t *testing.T) {
			o := ScaleOptions{Store: typ, Records: 2000, Sample: 2, Window: 5, Seed: 1, Work: t.TempDir()}
			if typ == "postgres" {
				o.PG = pgtest.DB(t, "pgstattuple") // skips without AMNESIA_TEST_PG_DSN
			}
			r, err := Scale(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if r.Kind != "scale" || r.Store != typ || r.RecordsAsked != 2000 || r.Records < 2000 || r.Records > 2000+100 {
				t.Errorf("asked for 2000 records: kind %q store %q, %d asked, %d made", r.Kind, r.Store, r.RecordsAsked, r.Records)
			}
			if r.StoreRecords != r.Records || r.StoreBytes <= 0 || r.LedgerBytes <= 0 {
				t.Errorf("store holds %d of %d records, %d bytes, ledger %d bytes", r.StoreRecords, r.Records, r.StoreBytes, r.LedgerBytes)
			}
			if in := r.Ingest; in.BatchBy != "subject" || in.Batches != r.Subjects || in.Seconds <= 0 || in.RecordsPerS <= 0 {
				t.Errorf("ingest %+v for %d subjects", in, r.Subjects)
			}
			for _, c := range []struct {
				name  string
				cell  ScaleCell
				n     int
				walls int
			}{{"B4", r.B4, 2, 2}, {"B5", r.B5, 5, 1}} {
				if c.cell.Baseline != c.name || c.cell.Subjects != c.n || c.cell.Records == 0 || len(c.cell.WallsMs) != c.walls || c.cell.WallMedianMs <= 0 || c.cell.CellSeconds <= 0 {
					t.Errorf("%s: %+v", c.name, c.cell)
				}
				if c.cell.LogicalExclusion != 1 || c.cell.PhysicalResidue != 0 || c.cell.ProbePower < 0.5 {
					t.Errorf("%s: exclusion %.2f, residue %.2f, power %.2f", c.name, c.cell.LogicalExclusion, c.cell.PhysicalResidue, c.cell.ProbePower)
				}
				o := c.cell.Outcomes
				if o == nil || o.Erasures != c.n || o.Complete+o.Incomplete != c.n || o.Pending+o.Residual+o.Unverified+o.OutOfScope != 0 || o.VerifiedPhysical == 0 {
					t.Errorf("%s: outcomes %+v", c.name, o)
				}
			}
			if r.RunSeconds < r.Ingest.Seconds+r.B4.CellSeconds+r.B5.CellSeconds {
				t.Errorf("run %.1f s, shorter than its parts", r.RunSeconds)
			}
			if r.KeptRecords == 0 || r.KeptReadable != r.KeptRecords {
				t.Errorf("%d of %d kept records read back", r.KeptReadable, r.KeptRecords)
			}
			if r.Commit == "" || len(r.MeasuredPaths) == 0 || (typ == "postgres" && r.ServerSettings["fsync"] == "") {
				t.Errorf("provenance %+v", r.Provenance)
			}
			if left, _ := os.ReadDir(o.Work); len(left) != 0 {
				t.Errorf("left in the work dir: %v", left)
			}
		})
	}
}

func TestScaleRefusesTooFewSubjects(t *testing.T) {
	_, err := Scale(context.Background(), ScaleOptions{Store: "sqlite-doc", Records: 200, Sample: 3, Window: 100, Work: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "too few") {
		t.Errorf("200 records for 103 subjects: err = %v", err)
	}
	if _, err := Scale(context.Background(), ScaleOptions{Store: "sqlite-vec", Records: 200, Sample: 1, Window: 1, Work: t.TempDir()}); err == nil {
		t.Errorf("sqlite-vec is not a scale store")
	}
}

// scaleFile is a results file of a scale run on sqlite-doc.
const scaleFile = `{"kind":"scale","store":"sqlite-doc","seed":1,"records_asked":RECORDS,"corpus_subjects":14750,"docs_each":15,"corpus_documents":221250,"corpus_records":RECORDS,
	"commit":"COMMIT","machine":"m","date":"2026-12-02","ledger":"sqlite",
	"ingest":{"batch_by":"subject","batches":14750,"seconds":400,"records_per_s":2500,"settle_seconds":30},
	"store_records":RECORDS,"store_bytes":524288000,"ledger_bytes":1073741824,
	"b4":{"baseline":"B4","subjects":3,"records":200,"logical_exclusion":1,"physical_residue":0,"probe_power":0.9,"wall_median_ms":900,"wall_p95_ms":1200,"wall_total_ms":3000,"walls_ms":[900,1200,900],"cell_seconds":20,
	 "outcomes":{"erasures":3,"complete":3,"artifacts":230,"verified_physical":200}},
	"b5":{"baseline":"B5","subjects":100,"records":6800,"logical_exclusion":1,"physical_residue":0,"probe_power":0.9,"wall_median_ms":25,"wall_p95_ms":25,"wall_total_ms":2500,"walls_ms":[2500],"cell_seconds":40,
	 "outcomes":{"erasures":100,"complete":100,"artifacts":8000,"verified_physical":6800}},
	"kept_records":1360,"kept_readable":1360,"run_seconds":1500,"note":"a scale note"}`

// The scale section judges B4 and B5 against their targets at a million
// records, shows a smaller run without judging it, names a store with no
// run, and is absent without any file.
func TestReportScaleSection(t *testing.T) {
	repo := gitRepo(t, map[string]string{"store/scan.go": "package store\n"})
	head := run(t, repo, "rev-parse", "HEAD")
	md := loadPerf(t, map[string]string{"scale-sqlite-doc.json": strings.ReplaceAll(scaleFile, "RECORDS", "1000000")}, head, repo).Markdown()
	sc := section(md, "Erasure at scale")
	if sc == "" {
		t.Fatalf("no scale section:\n%s", md)
	}
	if l := row(t, sc, "| B4 | 3 | 200 |"); !strings.Contains(l, "| 900.0 ms, 1200.0 ms, 900.0 ms | 900.0 ms median | ≤ 1 s: met | 20.0 s |") {
		t.Errorf("B4 at 900 ms median: %s", l)
	}
	if l := row(t, sc, "| B5 | 100 | 6800 |"); !strings.Contains(l, "| 2500.0 ms (one batch) | 25.0 ms per subject | ≤ 20 ms: **not met** | 40.0 s |") {
		t.Errorf("B5 at 25 ms per subject: %s", l)
	}
	for _, want := range []string{"1,000,000 records (1,000,000 asked for) of 14,750 subjects", "400.0 s, 2,500 records/s", "500.0 MiB; the ledger took 1024.0 MiB",
		"1,360 of the 1,360 records", "The whole run took 25.0 min.", "a scale note", "`bench/results/scale-sqlite-doc.json`", "No run on postgres: unmeasured"} {
		if !strings.Contains(sc, want) {
			t.Errorf("scale section lacks %q:\n%s", want, sc)
		}
	}
	small := loadPerf(t, map[string]string{"scale-sqlite-doc.json": strings.ReplaceAll(scaleFile, "RECORDS", "100000")}, head, repo).Markdown()
	if l := row(t, section(small, "Erasure at scale"), "| B4 |"); !strings.Contains(l, "≤ 1 s: not judged (100,000 records)") || strings.Contains(l, "met") {
		t.Errorf("a run at 100,000 records is judged: %s", l)
	}
	if s := section(loadPerf(t, map[string]string{"scanner.json": perfFiles["scanner.json"]}, head, repo).Markdown(), "Erasure at scale"); s != "" {
		t.Errorf("a scale section without a scale file:\n%s", s)
	}
}

// A scale file's rerun command and measured paths are its own.
func TestScaleFileRerun(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "scale-postgres.json"), []byte(strings.ReplaceAll(strings.ReplaceAll(scaleFile, "RECORDS", "10"), `"store":"sqlite-doc"`, `"store":"postgres"`)), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Scale) != 1 || r.Files[0].Store != "postgres" || r.Files[0].Rerun() != "go run ./cmd/amnesia-bench scale --store postgres" {
		t.Errorf("loaded %+v, file %+v", r.Scale, r.Files[0])
	}
	var back ScaleResult
	if err := json.Unmarshal([]byte(strings.ReplaceAll(scaleFile, "RECORDS", "10")), &back); err != nil || back.B4.WallsMs[1] != 1200 || back.B5.Outcomes.Complete != 100 {
		t.Errorf("round trip: %v %+v", err, back.B4)
	}
}
