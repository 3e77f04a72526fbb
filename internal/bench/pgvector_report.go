package bench

// The pgvector benchmark's results: what the certificates and journals of
// an amnesia baseline say, and the RESULTS.md section.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
)

// certificates sums what the certificates and journals of a baseline say.
func (r *pgvRun) certificates(d *state.Dir, results []*saga.Result, batch bool) (*PGVectorCerts, error) {
	c := &PGVectorCerts{Residue: map[string]int{}, ReclaimState: map[string]int{}, Outcomes: map[string]int{}, Steps: map[string]PGVectorStep{}}
	steps := map[string][]float64{}
	for i, res := range results {
		p := res.Statement.Predicate
		c.Erasures++
		if p.Complete {
			c.Complete++
		}
		for _, s := range p.DeclaredScope {
			if s.Name != pgvStore {
				continue
			}
			c.Residue[s.Residue]++
			if i == 0 {
				c.Evidence, c.ReclaimMethod = s.Evidence, s.Reclaim
			}
		}
		for _, a := range p.Artifacts {
			o := a.Outcome
			if a.Level != "" {
				o += "(" + a.Level + ")"
			}
			c.Outcomes[o]++
			if m := a.Measurement; m != nil && m.Physical != nil {
				if m.Physical.FoundBefore > 0 {
					c.FoundBefore++
				}
				if m.Physical.FoundAfter > 0 {
					c.FoundAfter++
				}
			}
		}
		if i == 0 {
			c.CertificateFile, _ = filepath.Rel(r.o.Work, res.CertificatePath)
		}
		js, err := readJournal(filepath.Join(d.ErasureDir(res.ID), "journal.jsonl"))
		if err != nil {
			return nil, err
		}
		for name, ms := range js.durations {
			kind, _, _ := strings.Cut(name, ":")
			steps[kind] = append(steps[kind], ms)
			if i == 0 && batch {
				if c.FirstSteps == nil {
					c.FirstSteps = map[string]float64{}
				}
				c.FirstSteps[kind] += ms
			}
		}
		c.ReclaimState[js.reclaim.State]++
		if i == 0 {
			c.ReclaimSteps = js.reclaim.Steps
		}
	}
	for k, v := range steps {
		s := PGVectorStep{Count: len(v), MedianMs: percentile(v, 0.5)}
		for _, x := range v {
			s.TotalMs += x
		}
		c.Steps[k] = s
	}
	return c, nil
}

type pgvJournal struct {
	durations map[string]float64 // step -> ms from begin to done
	reclaim   struct {
		State string   `json:"state"`
		Steps []string `json:"steps"`
	}
}

// readJournal reads an erasure journal's step times and reclaim result.
func readJournal(path string) (*pgvJournal, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	es, torn, err := saga.ParseJournal(b)
	if err == nil && torn != nil {
		err = fmt.Errorf("its last line is torn")
	}
	if err != nil {
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	j := &pgvJournal{durations: map[string]float64{}}
	begun := map[string]time.Time{}
	for _, e := range es {
		at, err := time.Parse(time.RFC3339Nano, e.At)
		if err != nil {
			return nil, fmt.Errorf("journal %s: %w", path, err)
		}
		switch e.Phase {
		case "begin":
			begun[e.Step] = at
		case "done", "failed":
			if b, ok := begun[e.Step]; ok {
				j.durations[e.Step] = float64(at.Sub(b).Microseconds()) / 1000
			}
			if strings.HasPrefix(e.Step, "reclaim:") && len(e.Result) > 0 {
				if err := json.Unmarshal(e.Result, &j.reclaim); err != nil {
					return nil, fmt.Errorf("journal %s: %w", path, err)
				}
			}
		}
	}
	return j, nil
}

// PGVectorMarkdown renders the "## pgvector at scale" section.
func (p *PGVectorResult) markdown(f *File) string {
	var b strings.Builder
	pr := p.Params
	fmt.Fprintf(&b, "\n## pgvector at scale\n\n%d vectors of dimension %d (%d subjects, %d vectors each, seed %d), %s index; %s; %s; %s. Run wall time %.0f s.\n\n",
		pr.Vectors, pr.Dim, pr.Subjects, pr.VectorsPerSubject, pr.Seed, p.Index.Method, p.Server, p.Describe(), p.Date, p.WallSeconds)
	b.WriteString(f.stamp() + "\n")
	b.WriteString("| baseline | subjects | vectors | wall per subject | wall total | probe power | residue | in relation files | in pg_wal | certificate store residue |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range p.Cells {
		cert := "n/a"
		if c.Certificates != nil {
			var parts []string
			for _, k := range sortedKeys(c.Certificates.Residue) {
				parts = append(parts, fmt.Sprintf("%s ×%d", k, c.Certificates.Residue[k]))
			}
			cert = strings.Join(parts, ", ")
		}
		where := func(n *int) string {
			if n == nil || c.Vectors == 0 {
				return "n/a"
			}
			return pct(float64(*n) / float64(c.Vectors))
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %s | %s | %s | %s | %s | %s | %s |\n", c.Baseline, c.Subjects, c.Vectors, ms(c.WallPerSubjectMs), ms(c.WallTotalMs),
			pct(c.ProbePower), pct(c.Residue), where(c.FoundAfterRelation), where(c.FoundAfterWAL), cert)
	}
	b.WriteString("\nResidue: share of the erased vectors with at least one window of their on-disk encoding still found by the adapter's physical probe (heap, TOAST, indexes, pg_wal) after the deletion path; probe power: share found before it; in relation files / in pg_wal: share found by a scan of the database's files under base/, and of pg_wal, right after. Index: " + p.Index.Note + ".\n")
	for _, c := range p.Cells {
		if c.Note != "" {
			b.WriteString("\n- " + c.Baseline + ": " + c.Note + ".")
		}
	}
	for _, n := range p.Notes {
		b.WriteString("\n- " + n)
	}
	if len(p.Notes) > 0 {
		b.WriteString("\n")
	}
	return b.String()
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
