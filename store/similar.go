package store

import (
	"context"
	"fmt"
	"math"
)

// SimilarSearcher is implemented by vector adapters that can run a bounded
// nearest-neighbour search for any vector, read the vectors of given keys,
// and name a fixed sample of their records. The near-duplicate search
// (paraphrases of an erased record) and the retrieval-drift measurement of
// the semantic level use it. Its results are keys and numbers; the vectors
// it returns are personal data and are held in memory only.
type SimilarSearcher interface {
	// Similar returns up to k live records nearest to vec by the store's
	// own search, each with the cosine similarity of its vector to vec,
	// most similar first.
	Similar(ctx context.Context, vec []float32, k int) ([]Neighbour, error)
	// Vectors returns the vectors of the keys that exist and have one.
	Vectors(ctx context.Context, keys []string) (map[string][]float32, error)
	// SampleKeys returns up to n keys of live records that have a vector,
	// in key order (a fixed sample: the same store gives the same keys).
	SampleKeys(ctx context.Context, n int) ([]string, error)
}

// Neighbour is one result of [SimilarSearcher.Similar].
type Neighbour struct {
	Key        string
	Similarity float64 // cosine similarity to the query, -1..1
}

// Cosine returns the cosine similarity of a and b, 0 when either is zero or
// their lengths differ.
func Cosine(a, b []float32) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / (math.Sqrt(na) * math.Sqrt(nb))
}

// Nearby configures, per store, the near-duplicate search and the
// retrieval-drift measurement of the semantic level (docs/nearby.md). Absent
// (the default), neither runs. Every part is bounded.
type Nearby struct {
	// Quotes reports records outside the subject's lineage that hold at
	// least QuoteFraction of an erased record's text windows (counted by
	// the evidence step's shared-window scan: no extra read).
	Quotes bool `yaml:"quotes,omitempty"`
	// QuoteFraction: 0 < f ≤ 1; default DefaultQuoteFraction.
	QuoteFraction float64 `yaml:"quote_fraction,omitempty"`
	// Paraphrases searches, with each erased record's own vector, for
	// records outside the lineage whose vectors have a cosine similarity of
	// at least Similarity (the adapter must implement SimilarSearcher).
	Paraphrases bool `yaml:"paraphrases,omitempty"`
	// Similarity: 0 < s ≤ 1; default DefaultSimilarity.
	Similarity float64 `yaml:"similarity,omitempty"`
	// Neighbours is k of each search: 1..MaxNeighbours; default
	// DefaultNeighbours.
	Neighbours int `yaml:"neighbours,omitempty"`
	// MaxRecords bounds the erased records searched with their vector per
	// erasure and store (1..MaxNearRecords; default DefaultNearRecords);
	// the others are counted as not searched.
	MaxRecords int `yaml:"max_records,omitempty"`
	// ControlQueries is how many other records' vectors are used as
	// control queries for retrieval drift (0..MaxControlQueries; 0, the
	// default, measures no drift).
	ControlQueries int `yaml:"control_queries,omitempty"`
}

// Defaults and bounds of [Nearby].
const (
	DefaultQuoteFraction = 0.2
	DefaultSimilarity    = 0.9
	DefaultNeighbours    = 10
	MaxNeighbours        = 100
	DefaultNearRecords   = 100
	MaxNearRecords       = 10000
	MaxControlQueries    = 100
)

// Enabled reports whether any part of the search or measurement is on.
func (n *Nearby) Enabled() bool {
	return n != nil && (n.Quotes || n.Paraphrases || n.ControlQueries > 0)
}

// WithDefaults returns n with the defaults filled in.
func (n Nearby) WithDefaults() Nearby {
	if n.QuoteFraction == 0 {
		n.QuoteFraction = DefaultQuoteFraction
	}
	if n.Similarity == 0 {
		n.Similarity = DefaultSimilarity
	}
	if n.Neighbours == 0 {
		n.Neighbours = DefaultNeighbours
	}
	if n.MaxRecords == 0 {
		n.MaxRecords = DefaultNearRecords
	}
	return n
}

// Validate checks the bounds; errors name the key and what to write.
func (n *Nearby) Validate() error {
	if n == nil {
		return nil
	}
	switch {
	case n.QuoteFraction < 0 || n.QuoteFraction > 1:
		return fmt.Errorf("nearby.quote_fraction must be more than 0 and at most 1 (default %v), got %v", DefaultQuoteFraction, n.QuoteFraction)
	case n.Similarity < 0 || n.Similarity > 1:
		return fmt.Errorf("nearby.similarity must be more than 0 and at most 1 (a cosine similarity; default %v), got %v", DefaultSimilarity, n.Similarity)
	case n.Neighbours < 0 || n.Neighbours > MaxNeighbours:
		return fmt.Errorf("nearby.neighbours must be 1..%d (default %d), got %d", MaxNeighbours, DefaultNeighbours, n.Neighbours)
	case n.MaxRecords < 0 || n.MaxRecords > MaxNearRecords:
		return fmt.Errorf("nearby.max_records must be 1..%d (default %d), got %d", MaxNearRecords, DefaultNearRecords, n.MaxRecords)
	case n.ControlQueries < 0 || n.ControlQueries > MaxControlQueries:
		return fmt.Errorf("nearby.control_queries must be 0..%d (0: no drift measurement), got %d", MaxControlQueries, n.ControlQueries)
	}
	return nil
}
