package saga

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store"
)

// The near-duplicate search and the retrieval-drift measurement
// (docs/nearby.md). Before deletion, the evidence step of a store with
// `nearby` configured looks for records outside the subject's lineage that
// hold the erased records' content under other keys: quotes (a share of an
// erased record's text windows, counted by the shared-window scan the
// evidence step runs anyway) and paraphrases (vectors close to an erased
// record's own vector, found with the store's similarity search). They are
// reported as NEEDS_HUMAN candidates, never deleted. When control queries
// are configured, the k nearest neighbours of other records' vectors are
// taken before deletion and again after the erasure, and their overlap is
// reported at the semantic level as a measurement.
//
// The journal keeps store keys and numbers only, as it does for
// SharedWith; never content or vectors.

// quoteMinWindows is the fewest windows of an erased record that a quote
// candidate holds: shorter shared runs (a common phrase) are not quotes.
const quoteMinWindows = 4

// nearResult is what the evidence step journals of the near-duplicate
// search of one store.
type nearResult struct {
	Quotes        bool            `json:"quotes,omitempty"`
	Paraphrases   bool            `json:"paraphrases,omitempty"`
	Unsupported   string          `json:"unsupported,omitempty"` // why paraphrases or drift could not run
	QuoteFraction float64         `json:"quote_fraction,omitempty"`
	Similarity    float64         `json:"similarity,omitempty"`
	Neighbours    int             `json:"neighbours,omitempty"`
	Searched      int             `json:"searched"`               // erased records searched with their vector
	NotSearched   int             `json:"not_searched,omitempty"` // over max_records
	Candidates    []nearCandidate `json:"candidates,omitempty"`
	Control       *controlSet     `json:"control,omitempty"`
}

// nearCandidate is one record outside the lineage that resembles an
// erased record.
type nearCandidate struct {
	Of         string  `json:"of"`  // the erased record's store key
	Key        string  `json:"key"` // the candidate's store key
	Method     string  `json:"method"`
	Similarity float64 `json:"similarity"`
	Windows    int     `json:"windows,omitempty"`
	OfWindows  int     `json:"of_windows,omitempty"`
}

// controlSet is the control queries of the drift measurement: other
// records' keys and the keys of their k nearest neighbours before deletion.
type controlSet struct {
	K      int                 `json:"k"`
	Keys   []string            `json:"keys"`
	Before map[string][]string `json:"before"`
	Erased int                 `json:"erased"` // before-neighbours that this erasure deletes
}

// driftResult is what the probe step journals of the drift measurement.
type driftResult struct {
	Queries    int     `json:"queries"`
	Missing    int     `json:"missing,omitempty"` // control records gone by the time of the probe
	K          int     `json:"k"`
	Overlap    float64 `json:"overlap"`
	MinOverlap float64 `json:"min_overlap"`
	Erased     int     `json:"erased"`
	Unerased   float64 `json:"unerased"` // mean overlap over the before-neighbours not deleted
}

func (r *runner) nearbyConfig(st string) (store.Nearby, bool) {
	sc, err := r.Dir.Config.Store(st)
	if err != nil || !sc.Nearby.Enabled() {
		return store.Nearby{}, false
	}
	return sc.Nearby.WithDefaults(), true
}

// nearby runs the near-duplicate search of store st before deletion, and
// takes the control queries' neighbours. ev is the store's evidence (with
// the erased records' vectors), recs what the journal keeps of it.
func (r *runner) nearby(ctx context.Context, st string, s store.Store, ev map[string]*store.Evidence, recs map[string]recordEvidence) (*nearResult, error) {
	cfg, ok := r.nearbyConfig(st)
	if !ok {
		return nil, nil
	}
	out := &nearResult{Quotes: cfg.Quotes, Paraphrases: cfg.Paraphrases}
	inTrace := map[string]bool{}
	for _, k := range r.keys[st] {
		inTrace[k] = true
	}
	erased := sortedKeys(recs)
	if cfg.Quotes {
		out.QuoteFraction = cfg.QuoteFraction
		for _, k := range erased {
			rec := recs[k]
			total := rec.Needles + rec.Shared
			for _, h := range sortedKeys(rec.SharedWith) {
				w := rec.SharedWith[h]
				if inTrace[h] || w < quoteMinWindows || total == 0 {
					continue
				}
				if f := float64(w) / float64(total); f >= cfg.QuoteFraction {
					out.Candidates = append(out.Candidates, nearCandidate{Of: k, Key: h, Method: certificate.NearQuote, Similarity: round4(f), Windows: w, OfWindows: total})
				}
			}
		}
	}
	ss, ok := s.(store.SimilarSearcher)
	if !ok && (cfg.Paraphrases || cfg.ControlQueries > 0) {
		out.Unsupported = "the adapter of store " + st + " has no similarity search: paraphrases and retrieval drift were not measured"
		return out, nil
	}
	if cfg.Paraphrases {
		out.Similarity, out.Neighbours = cfg.Similarity, cfg.Neighbours
		// The subject's own records are still there and take places
		// among the neighbours: ask for that many more, up to a bound.
		k := cfg.Neighbours + min(len(inTrace), store.MaxNeighbours)
		for _, key := range erased {
			e := ev[key]
			if e == nil || len(e.Vector) == 0 {
				continue
			}
			if out.Searched >= cfg.MaxRecords {
				out.NotSearched++
				continue
			}
			out.Searched++
			ns, err := ss.Similar(ctx, e.Vector, k)
			if err != nil {
				return nil, fmt.Errorf("near-duplicate search: %w", err)
			}
			for _, n := range ns {
				if inTrace[n.Key] || n.Similarity < cfg.Similarity {
					continue
				}
				out.Candidates = append(out.Candidates, nearCandidate{Of: key, Key: n.Key, Method: certificate.NearParaphrase, Similarity: round4(min(n.Similarity, 1))})
			}
		}
	}
	if cfg.ControlQueries > 0 {
		c, err := r.controlBefore(ctx, ss, cfg, inTrace)
		if err != nil {
			return nil, err
		}
		out.Control = c
	}
	return out, nil
}

// controlBefore picks the control queries (the vectors of the lowest-keyed
// records outside the lineage) and their neighbours before deletion.
func (r *runner) controlBefore(ctx context.Context, ss store.SimilarSearcher, cfg store.Nearby, inTrace map[string]bool) (*controlSet, error) {
	keys, err := ss.SampleKeys(ctx, cfg.ControlQueries+len(inTrace))
	if err != nil {
		return nil, fmt.Errorf("drift control queries: %w", err)
	}
	c := &controlSet{K: cfg.Neighbours, Before: map[string][]string{}}
	for _, k := range keys {
		if !inTrace[k] && len(c.Keys) < cfg.ControlQueries {
			c.Keys = append(c.Keys, k)
		}
	}
	vecs, err := ss.Vectors(ctx, c.Keys)
	if err != nil {
		return nil, fmt.Errorf("drift control queries: %w", err)
	}
	for _, k := range c.Keys {
		ns, err := ss.Similar(ctx, vecs[k], c.K)
		if err != nil {
			return nil, fmt.Errorf("drift control queries: %w", err)
		}
		for _, n := range ns {
			c.Before[k] = append(c.Before[k], n.Key)
			if inTrace[n.Key] {
				c.Erased++
			}
		}
	}
	return c, nil
}

// probeAndDrift runs the probe step of st and, when control queries were
// taken before deletion, measures retrieval drift against them.
func (r *runner) probeAndDrift(ctx context.Context, st string, res *results) (any, error) {
	out, err := r.probe(ctx, st)
	if err != nil {
		return out, err
	}
	e := res.evidence[st]
	if e == nil || e.Near == nil || e.Near.Control == nil {
		return out, nil
	}
	pr, ok := out.(probeResult)
	if !ok {
		return out, nil
	}
	ss, ok := r.Stores[st].(store.SimilarSearcher)
	if !ok {
		return out, nil
	}
	c := e.Near.Control
	vecs, err := ss.Vectors(ctx, c.Keys)
	if err != nil {
		return nil, fmt.Errorf("drift: %w", err)
	}
	inTrace := map[string]bool{}
	for _, k := range r.keys[st] {
		inTrace[k] = true
	}
	d := &driftResult{K: c.K, Erased: c.Erased, MinOverlap: 1}
	sum, sumU, nU := 0.0, 0.0, 0
	for _, k := range c.Keys {
		before := c.Before[k]
		if vecs[k] == nil || len(before) == 0 {
			d.Missing++
			continue
		}
		ns, err := ss.Similar(ctx, vecs[k], c.K)
		if err != nil {
			return nil, fmt.Errorf("drift: %w", err)
		}
		after := map[string]bool{}
		for _, n := range ns {
			after[n.Key] = true
		}
		kept, keptU, unerased := 0, 0, 0
		for _, b := range before {
			if !inTrace[b] {
				unerased++
			}
			if after[b] {
				kept++
				if !inTrace[b] {
					keptU++
				}
			}
		}
		if unerased > 0 {
			sumU += float64(keptU) / float64(unerased)
			nU++
		}
		o := float64(kept) / float64(len(before))
		sum += o
		d.MinOverlap = math.Min(d.MinOverlap, o)
		d.Queries++
	}
	if d.Queries == 0 {
		d.MinOverlap = 0
	} else {
		d.Overlap = round4(sum / float64(d.Queries))
		if nU > 0 {
			d.Unerased = round4(sumU / float64(nU))
		}
		d.MinOverlap = round4(d.MinOverlap)
	}
	pr.Drift = d
	return pr, nil
}

// nearArtifacts turns the candidates into NEEDS_HUMAN artifacts: one per
// record and method, with the erased artifact it resembles most. Records
// already in the certificate (the subject's artifacts, mentions, copies
// named in an artifact's measurement) are left out.
func (r *runner) nearArtifacts(res *results, arts []certificate.Artifact) []certificate.Artifact {
	known := map[string]bool{}
	copies := map[string]bool{} // erased artifact id + " " + copy id
	for _, a := range arts {
		known[a.ID] = true
		if a.Measurement != nil {
			for _, c := range a.Measurement.Copies {
				copies[a.ID+" "+c.Record] = true
			}
		}
	}
	best := map[string]certificate.Artifact{}
	for _, st := range r.stores {
		e := res.evidence[st]
		if e == nil || e.Near == nil {
			continue
		}
		for _, c := range e.Near.Candidates {
			id := lineage.ArtifactID(r.Dir.Keyer, r.Trace.Scope, st, c.Key)
			of := lineage.ArtifactID(r.Dir.Keyer, r.Trace.Scope, st, c.Of)
			if known[id] || copies[of+" "+id] {
				continue
			}
			n := &certificate.Near{Method: c.Method, Of: of, Similarity: c.Similarity, Windows: c.Windows, OfWindows: c.OfWindows}
			a := certificate.Artifact{ID: id, Kind: certificate.KindNearDuplicate, Store: st, Outcome: certificate.NeedsHuman,
				Reason: nearReason(st, n), Method: "not deleted: near-duplicate candidate (" + c.Method + " search)",
				Measurement: &certificate.Measurement{Near: n}}
			k := st + " " + id + " " + c.Method
			if b, ok := best[k]; !ok || n.Similarity > b.Measurement.Near.Similarity {
				best[k] = a
			}
		}
	}
	out := make([]certificate.Artifact, 0, len(best))
	for _, a := range best {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool {
		x, y := out[i], out[j]
		if x.Store != y.Store {
			return x.Store < y.Store
		}
		if x.Measurement.Near.Method != y.Measurement.Near.Method {
			return x.Measurement.Near.Method < y.Measurement.Near.Method
		}
		if x.Measurement.Near.Similarity != y.Measurement.Near.Similarity {
			return x.Measurement.Near.Similarity > y.Measurement.Near.Similarity
		}
		return x.ID < y.ID
	})
	return out
}

func nearReason(st string, n *certificate.Near) string {
	if n.Method == certificate.NearQuote {
		return fmt.Sprintf("a record of store %s outside this subject's lineage holds %d of the %d text windows (%.2f) of erased artifact %s; it was not deleted: a person must decide whether it quotes this subject's data", st, n.Windows, n.OfWindows, n.Similarity, n.Of)
	}
	return fmt.Sprintf("a record of store %s outside this subject's lineage has a vector with cosine similarity %.4f to erased artifact %s; it was not deleted: a person must decide whether it paraphrases this subject's data", st, n.Similarity, n.Of)
}

// semantic is the certificate's semantic section, or nil when no store
// has nearby configured.
func (r *runner) semantic(res *results, arts []certificate.Artifact) *certificate.Semantic {
	var s *certificate.Semantic
	for _, st := range r.stores {
		e := res.evidence[st]
		if e == nil || e.Near == nil {
			continue
		}
		if s == nil {
			s = &certificate.Semantic{Level: certificate.LevelSemantic, Searches: []certificate.NearSearch{},
				Note: "similarity and retrieval-drift measurements: they prove neither that the subject's data is gone nor that it is present; candidates were not deleted"}
		}
		n := e.Near
		ns := certificate.NearSearch{Store: st, Methods: []string{}, Records: n.Searched, NotSearched: n.NotSearched, Neighbours: n.Neighbours, Similarity: n.Similarity, QuoteFraction: n.QuoteFraction, Note: n.Unsupported}
		if n.Quotes {
			ns.Methods = append(ns.Methods, certificate.NearQuote)
		}
		if n.Paraphrases && n.Unsupported == "" {
			ns.Methods = append(ns.Methods, certificate.NearParaphrase)
		}
		for _, a := range arts {
			if a.Kind == certificate.KindNearDuplicate && a.Store == st {
				ns.Candidates++
			}
		}
		s.Searches = append(s.Searches, ns)
		if pr := res.probe[st]; pr != nil && pr.Drift != nil {
			d := pr.Drift
			s.Drift = append(s.Drift, certificate.Drift{Store: st, Queries: d.Queries, K: d.K, OverlapAtK: d.Overlap, MinOverlapAtK: d.MinOverlap, ErasedNeighbours: d.Erased, OverlapUnerasedAtK: d.Unerased,
				Method: fmt.Sprintf("the %d nearest neighbours of the vectors of %d other records (the lowest keys outside this subject's lineage), by the store's similarity search before deletion and after the erasure; %d control records gone since", d.K, d.Queries+d.Missing, d.Missing)})
		}
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func round4(f float64) float64 { return math.Round(f*1e4) / 1e4 }
