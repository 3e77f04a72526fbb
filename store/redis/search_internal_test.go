package redis

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// topK keeps what a full sort (similarity descending, then key) and a cut
// at k keep, for any k and any order of arrival, ties included.
func TestTopKMatchesSortAndCut(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 500 {
		n, k := r.IntN(40), r.IntN(12)
		var all []Neighbor
		for i := range n {
			// Few distinct similarities: many ties.
			all = append(all, Neighbor{Key: "k" + strconv.Itoa(r.IntN(1000)) + "-" + strconv.Itoa(i), Similarity: float64(r.IntN(5)) / 4})
		}
		top := topK{k: k}
		for _, nb := range all {
			top.add(nb)
		}
		want := slices.Clone(all)
		slices.SortFunc(want, func(a, b Neighbor) int {
			switch {
			case better(a, b):
				return -1
			case better(b, a):
				return 1
			}
			return 0
		})
		want = want[:min(k, len(want))]
		if !slices.Equal(top.ns, want) && !(len(top.ns) == 0 && len(want) == 0) {
			t.Fatalf("trial %d (n=%d k=%d): topK %v, sort and cut %v", trial, n, k, top.ns, want)
		}
	}
}
