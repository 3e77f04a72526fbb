package store

import (
	"bytes"
	"math/rand/v2"
	"sync"
	"testing"
)

// spans finds exactly the needles that a naive search over every split
// finds: some split puts a record's end (or zeros, or fewer than
// minSpanPart bytes: taken to occur anywhere) before and a record's start
// (or zeros, or a short part) after. Records and needles are cut from a
// small alphabet with zero runs, so that ends and starts often match; the
// needles are taken across the records' boundaries, and at random.
func TestSpansMatchNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 13))
	for round := 0; round < 40; round++ {
		var recs [][]byte
		for range 30 {
			r := make([]byte, 8+rng.IntN(60))
			for i := range r {
				if rng.IntN(4) == 0 {
					r[i] = 0
				} else {
					r[i] = byte(1 + rng.IntN(3))
				}
			}
			recs = append(recs, r)
		}
		ev := map[string]*Evidence{}
		var needles [][]byte
		for k := range 200 {
			n := make([]byte, 8+rng.IntN(2*WindowSize-8))
			switch rng.IntN(4) {
			case 3: // zeros, then a record's start
				b := recs[rng.IntN(len(recs))]
				copy(n[rng.IntN(len(n)):], b)
			case 0: // the end of one record, then the start of another
				a, b := recs[rng.IntN(len(recs))], recs[rng.IntN(len(recs))]
				cut := rng.IntN(len(n) + 1)
				head := a[max(len(a)-cut, 0):]
				copy(n, head)
				copy(n[len(head):], b)
			case 1: // a record's end, then zeros
				a := recs[rng.IntN(len(recs))]
				copy(n, a[max(len(a)-rng.IntN(len(n)+1), 0):])
			default:
				for i := range n {
					n[i] = byte(rng.IntN(4))
				}
			}
			needles = append(needles, n)
			ev[string(rune('A'+k/26))+string(rune('a'+k%26))] = &Evidence{Needles: [][]byte{n}}
		}
		set := NewNeedleSet(ev)
		sp := newSpans(set)
		for _, r := range recs {
			sp.record(r)
		}
		// As DropShared's workers do: the records spread over goroutines,
		// each into its own bits, merged after.
		par := newSpans(set)
		var wg sync.WaitGroup
		bits := []*spanBits{par.newBits(), par.newBits(), par.newBits()}
		for w, b := range bits {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := w; j < len(recs); j += len(bits) {
					par.recordInto(recs[j], b)
				}
			}()
		}
		wg.Wait()
		for _, b := range bits {
			par.merge(b)
		}
		// formable: p is short, all zeros, or has(r, p) for some record r.
		formable := func(p []byte, has func(r, p []byte) bool) bool {
			if len(p) < minSpanPart || bytes.Count(p, []byte{0}) == len(p) {
				return true
			}
			for _, r := range recs {
				if has(r, p) {
					return true
				}
			}
			return false
		}
		ends := func(p []byte) bool { return formable(p, bytes.HasSuffix) }
		starts := func(p []byte) bool { return formable(p, bytes.HasPrefix) }
		spanning, not := 0, 0
		for i, n := range set.needles {
			want := false
			if len(n) <= maxSpanPart+1 {
				for s := 1; s < len(n) && !want; s++ {
					want = ends(n[:s]) && starts(n[s:])
				}
			}
			if got := sp.spanning(i); got != want {
				t.Fatalf("round %d: needle %x: spanning = %v, naive %v", round, n, got, want)
			}
			if got := par.spanning(i); got != want {
				t.Fatalf("round %d: needle %x: spanning = %v with the records spread over goroutines, naive %v", round, n, got, want)
			}
			if want {
				spanning++
			} else {
				not++
			}
		}
		if round == 0 && (spanning < 20 || not < 20) {
			t.Fatalf("corpus too weak: %d spanning, %d not", spanning, not)
		}
	}
}
