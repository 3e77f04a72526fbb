package store

import (
	"context"
	"sort"
)

// MaxSharedWith is the most other records Evidence.SharedWith names per
// record.
const MaxSharedWith = 8

// DropShared removes from ev every needle that also occurs in a record
// outside ev, counts it in Evidence.Shared, and names in
// Evidence.SharedWith the records that hold it: bytes that another live
// record holds prove nothing about the erased one, but that record may be a
// copy of it, which the caller must report. others calls fn once per other
// live record, with its key and its bytes (in the encoding the store keeps
// them; a record with several fields may be passed once per field), and
// stops when fn returns an error. Bytes passed with an empty key are
// counted as shared but name no holder: adapters pass vector encodings so,
// because an identical vector is what any identical chunk text (a template
// line, a boilerplate footer) yields, and the vector alone cannot tell a
// copy from those; the copy of the text is named where the text is kept.
// A needle that the end of one record followed by the start of another (or
// zero fill, on either side) can form is counted as shared too, with no
// holder named: stores keep records back to back (see span.go).
func DropShared(ctx context.Context, ev map[string]*Evidence, others func(fn func(key string, b []byte) error) error) error {
	set := NewNeedleSet(ev)
	if set.Len() == 0 {
		return nil
	}
	sc := NewScanner(set, "shared")
	sc.track = true
	shared := make([]bool, set.Len())
	sp := newSpans(set)
	hb := newHolderBook(set)
	err := others(func(key string, b []byte) error {
		sc.fresh = sc.fresh[:0]
		sc.ScanBytes(b)
		sp.record(b)
		if len(sc.fresh) == 0 {
			return ctx.Err()
		}
		for _, i := range sc.fresh {
			sc.unhit(i) // the next record may hold it too
			shared[i] = true
		}
		if key != "" {
			hb.record(hb.holder(key), sc.fresh)
		}
		return ctx.Err()
	})
	if err != nil {
		return err
	}
	for i := range shared {
		shared[i] = shared[i] || sp.spanning(i)
	}
	// set.needles[i] is ev[set.owner[i]].Needles[j] for the i-th needle of
	// that key in order (NewNeedleSet skips needles under 8 bytes, which
	// Tile never makes; such needles are kept).
	pos := 0
	for _, k := range set.Keys() {
		e := ev[k]
		kept := e.Needles[:0]
		for _, n := range e.Needles {
			if len(n) >= 8 {
				if shared[pos] {
					e.Shared++
					pos++
					continue
				}
				pos++
			}
			kept = append(kept, n)
		}
		e.Needles = kept
		e.SharedWith, e.SharedWithMore = nil, 0
	}
	hb.top(func(owner string, with map[string]int, more int) {
		ev[owner].SharedWith, ev[owner].SharedWithMore = with, more
	})
	return nil
}

// holderBook counts, for each owner of needles, how many distinct needles
// of it each other record (holder) holds. Owners and holders are numbered
// once (a holder's key is looked up once per record, not per needle it
// holds), a record's needles are counted per owner in a scratch array,
// and only the (owner, holder) totals go into a map keyed by integers: a
// window that thousands of records hold (a template line) costs an
// increment per record, not nested string maps.
type holderBook struct {
	owners []int32          // per needle: its owner's number
	names  []string         // owner numbers' keys
	keys   []string         // holder numbers' keys
	ids    map[string]int32 // holder key -> number
	// The needles each holder was counted for, so that a needle counts
	// once when a holder comes back (a record passed once per field):
	// first[h] is the range of buf holding its first record's needles;
	// held[h], made only when h comes back, the set of all of them.
	first  [][2]int32
	buf    []int32
	held   map[int32]map[int32]bool
	counts map[uint64]int32 // owner<<32 | holder -> distinct needles
	// scratch, per record
	perOwner []int32
	touched  []int32
}

func newHolderBook(set *NeedleSet) *holderBook {
	hb := &holderBook{owners: make([]int32, set.Len()), ids: map[string]int32{}, held: map[int32]map[int32]bool{}, counts: map[uint64]int32{}}
	byOwner := map[string]int32{}
	for i, o := range set.owner {
		n, ok := byOwner[o]
		if !ok {
			n = int32(len(hb.names))
			byOwner[o] = n
			hb.names = append(hb.names, o)
		}
		hb.owners[i] = n
	}
	hb.perOwner = make([]int32, len(hb.names))
	return hb
}

// holder is key's number.
func (hb *holderBook) holder(key string) int32 {
	h, ok := hb.ids[key]
	if !ok {
		h = int32(len(hb.keys))
		hb.ids[key] = h
		hb.keys = append(hb.keys, key)
		hb.first = append(hb.first, [2]int32{-1, -1})
	}
	return h
}

// record counts the needles (distinct, as the scanner reports them per
// record) that holder h holds in one record, each once per holder however
// many of its fields hold it.
func (hb *holderBook) record(h int32, needles []int) {
	if hb.first[h][0] < 0 {
		// Its first record: every needle is new to it.
		start := int32(len(hb.buf))
		for _, i := range needles {
			hb.buf = append(hb.buf, int32(i))
		}
		hb.first[h] = [2]int32{start, int32(len(hb.buf))}
		hb.add(h, needles, nil)
		return
	}
	seen := hb.held[h]
	if seen == nil {
		seen = map[int32]bool{}
		r := hb.first[h]
		for _, i := range hb.buf[r[0]:r[1]] {
			seen[i] = true
		}
		hb.held[h] = seen
	}
	hb.add(h, needles, seen)
}

// add counts, per owner, the needles not in seen (and adds them to it).
func (hb *holderBook) add(h int32, needles []int, seen map[int32]bool) {
	for _, i := range needles {
		if seen != nil {
			if seen[int32(i)] {
				continue
			}
			seen[int32(i)] = true
		}
		o := hb.owners[i]
		if hb.perOwner[o] == 0 {
			hb.touched = append(hb.touched, o)
		}
		hb.perOwner[o]++
	}
	for _, o := range hb.touched {
		hb.counts[uint64(o)<<32|uint64(uint32(h))] += hb.perOwner[o]
		hb.perOwner[o] = 0
	}
	hb.touched = hb.touched[:0]
}

// top calls fn for each owner that some holder shares with: the
// MaxSharedWith holders with the most of its needles (ties by key) and how
// many were left out.
func (hb *holderBook) top(fn func(owner string, with map[string]int, more int)) {
	type held struct {
		h int32
		n int32
	}
	per := make([][]held, len(hb.names))
	for k, n := range hb.counts {
		o := int32(k >> 32)
		per[o] = append(per[o], held{int32(uint32(k)), n})
	}
	before := func(a, b held) bool {
		if a.n != b.n {
			return a.n > b.n
		}
		return hb.keys[a.h] < hb.keys[b.h]
	}
	for o, hs := range per {
		if len(hs) == 0 {
			continue
		}
		// The best MaxSharedWith, by insertion into a short sorted list:
		// linear in the holders, where a sort of them all was not.
		best := make([]held, 0, MaxSharedWith)
		for _, x := range hs {
			if len(best) == MaxSharedWith && !before(x, best[len(best)-1]) {
				continue
			}
			j := sort.Search(len(best), func(j int) bool { return before(x, best[j]) })
			if len(best) < MaxSharedWith {
				best = append(best, held{})
			}
			copy(best[j+1:], best[j:len(best)-1])
			best[j] = x
		}
		with := make(map[string]int, len(best))
		for _, x := range best {
			with[hb.keys[x.h]] = int(x.n)
		}
		fn(hb.names[o], with, len(hs)-len(best))
	}
}
