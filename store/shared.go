package store

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
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
// holder named: stores keep records back to back (see span.go). Every
// key of ev gets its SharedWith and SharedWithMore set anew (none when no
// other record holds its windows, or it has none).
func DropShared(ctx context.Context, ev map[string]*Evidence, others func(fn func(key string, b []byte) error) error) error {
	ds := collectNeedles(ev)
	if ds.set.Len() == 0 {
		return nil
	}
	// The search index and the boundary conditions are built from the
	// same needles, independently: at once (a window of many subjects
	// has hundreds of thousands of needles).
	var sp *spans
	built := make(chan struct{})
	go func() { sp = newSpans(ds.set); close(built) }()
	ds.index()
	<-built
	shared, hb, err := searchOthers(ctx, ds.set, sp, others)
	if err != nil {
		return err
	}
	for d := range shared {
		shared[d] = shared[d] || sp.spanning(d)
	}
	for o, k := range ds.keys {
		e := ev[k]
		kept := e.Needles[:0]
		occ := ds.occ[o]
		j := 0
		for _, n := range e.Needles {
			if len(n) >= gramLen {
				d := occ[j]
				j++
				if shared[d] {
					e.Shared++
					continue
				}
			}
			kept = append(kept, n)
		}
		e.Needles = kept
		e.SharedWith, e.SharedWithMore = nil, 0
	}
	hb.top(ds, func(o int, with map[string]int, more int) {
		ev[ds.keys[o]].SharedWith, ev[ds.keys[o]].SharedWithMore = with, more
	})
	return nil
}

// sharedWorkers is how many goroutines search the other records' bytes
// (and check their boundaries, spans.recordInto) while the caller's
// goroutine reads them: one means the caller does it all itself. Tests
// set it.
var sharedWorkers = min(runtime.GOMAXPROCS(0), 8)

// A batch of records for a worker holds up to sharedBatchBytes bytes or
// sharedBatchRecs records (tests lower them to spread a few records).
var sharedBatchBytes, sharedBatchRecs = 256 << 10, 1024

// searcher searches records for a set's needles: which needles some record
// holds (shared) and, for records with a key, the (needle, holder) pairs.
// Holders are numbered only once a record of theirs holds a needle: most
// records of a large store hold none, and numbering them all would grow
// with the store.
type searcher struct {
	sc     *Scanner
	shared []bool
	hb     holderBook
}

func newSearcher(set *NeedleSet) *searcher {
	sc := NewScanner(set, "shared")
	sc.track = true
	return &searcher{sc: sc, shared: make([]bool, set.Len()), hb: holderBook{ids: map[string]int32{}}}
}

// search searches one record of key ("": a record with no key).
func (s *searcher) search(key string, b []byte) {
	s.sc.fresh = s.sc.fresh[:0]
	s.sc.ScanBytes(b)
	if len(s.sc.fresh) == 0 {
		return
	}
	h := int32(-1)
	if key != "" {
		h = s.hb.holder(key)
	}
	for _, d := range s.sc.fresh {
		s.sc.unhit(d) // the next record may hold it too
		s.shared[d] = true
		if h >= 0 {
			s.hb.pairs = append(s.hb.pairs, uint64(d)<<32|uint64(uint32(h)))
		}
	}
}

// maxPairs bounds the (needle, holder) pairs DropShared counts: their
// index is an int32 (2^31 pairs would be 16 GiB of them).
const maxPairs = 1<<31 - 1

// searchOthers reads every record others passes, notes its boundaries in
// sp, and searches it for set's needles: in the caller's goroutine, or,
// with sharedWorkers above one, in that many workers, each with its own
// scanner and boundary bits (merged into sp's at the end), fed copies of
// the records in batches: the caller's goroutine only reads. It returns which needles
// some record holds and the holders with their (needle, holder) pairs;
// neither depends on how the records were spread over the workers (but for
// the holders' numbering, which top does not depend on).
func searchOthers(ctx context.Context, set *NeedleSet, sp *spans, others func(fn func(key string, b []byte) error) error) ([]bool, *holderBook, error) {
	if sharedWorkers <= 1 {
		s := newSearcher(set)
		err := others(func(key string, b []byte) error {
			sp.record(b)
			s.search(key, b)
			return ctx.Err()
		})
		if err == nil && len(s.hb.pairs) > maxPairs {
			err = errPairs(len(s.hb.pairs))
		}
		return s.shared, &s.hb, err
	}
	type rec struct {
		key      string
		from, to int
	}
	type batch struct {
		buf  []byte
		recs []rec
	}
	work := make(chan *batch, 2*sharedWorkers)
	free := make(chan *batch, 3*sharedWorkers) // batches searched, for reuse
	ss := make([]*searcher, sharedWorkers)
	bits := make([]*spanBits, sharedWorkers) // each worker notes the boundaries of its records
	var wg sync.WaitGroup
	for i := range ss {
		s := newSearcher(set)
		ss[i] = s
		bits[i] = sp.newBits()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for bt := range work {
				for _, r := range bt.recs {
					b := bt.buf[r.from:r.to]
					sp.recordInto(b, bits[i])
					s.search(r.key, b)
				}
				bt.buf, bt.recs = bt.buf[:0], bt.recs[:0]
				select {
				case free <- bt:
				default:
				}
			}
		}()
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			close(work)
			wg.Wait()
		}
	}
	defer stop() // also when others panics: no worker is left waiting
	cur := &batch{}
	send := func() {
		if len(cur.recs) == 0 {
			return
		}
		work <- cur
		select {
		case cur = <-free:
		default:
			cur = &batch{}
		}
	}
	err := others(func(key string, b []byte) error {
		// b is the reader's until fn returns: the batch keeps a copy.
		cur.recs = append(cur.recs, rec{key, len(cur.buf), len(cur.buf) + len(b)})
		cur.buf = append(cur.buf, b...)
		if len(cur.buf) >= sharedBatchBytes || len(cur.recs) >= sharedBatchRecs {
			send()
		}
		return ctx.Err()
	})
	if err == nil {
		send()
	}
	stop()
	if err != nil {
		return nil, nil, err
	}
	for _, b := range bits {
		sp.merge(b)
	}
	// One numbering of the holders: the first worker's, extended by the
	// others' holders, their pairs renumbered.
	shared := ss[0].shared
	hb := &ss[0].hb
	n := 0
	for _, s := range ss {
		n += len(s.hb.pairs)
	}
	if n > maxPairs {
		return nil, nil, errPairs(n)
	}
	hb.pairs = slices.Grow(hb.pairs, n-len(hb.pairs))
	for _, s := range ss[1:] {
		for d, ok := range s.shared {
			shared[d] = shared[d] || ok
		}
		to := make([]uint32, len(s.hb.keys))
		for h, k := range s.hb.keys {
			to[h] = uint32(hb.holder(k))
		}
		for _, p := range s.hb.pairs {
			hb.pairs = append(hb.pairs, p&^(1<<32-1)|uint64(to[uint32(p)]))
		}
	}
	return shared, hb, nil
}

func errPairs(n int) error {
	return fmt.Errorf("store: other records hold the erased records' windows %d times, more than the %d that shared-window detection counts; erase fewer subjects at once", n, maxPairs)
}

// needleOwners is the set DropShared searches for: each distinct needle
// once, however many erased records (owners) hold it. A window of many
// subjects holds the same template windows thousands of times; searching
// for each copy, and counting each (owner, holder) pair while scanning,
// made the work and the memory grow with (owners × holders) of every
// shared window.
type needleOwners struct {
	set  *NeedleSet // distinct needles of 8 bytes or more
	keys []string   // owners, sorted
	// occ[o] is, for each needle of ev[keys[o]] of 8 bytes or more in
	// order, its index in set (repeated where the record repeats it).
	occ [][]int32
	// first is, per distinct needle, its first owner's number (for the
	// index's gram counts).
	first []int32
}

func distinctNeedles(ev map[string]*Evidence) *needleOwners {
	ds := collectNeedles(ev)
	ds.index()
	return ds
}

// index builds the search index of ds's set.
func (ds *needleOwners) index() {
	ds.set.tiers, ds.set.chkOff = buildTiers(ds.set.needles, ds.first)
}

// collectNeedles is distinctNeedles without the search index.
func collectNeedles(ev map[string]*Evidence) *needleOwners {
	ds := &needleOwners{keys: make([]string, 0, len(ev))}
	for k := range ev {
		ds.keys = append(ds.keys, k)
	}
	sort.Strings(ds.keys)
	idx := map[string]int32{}
	var needles [][]byte
	var first []int32 // per distinct needle: its first owner's number (for the index's gram counts)
	maxLen := 0
	ds.occ = make([][]int32, len(ds.keys))
	for o, k := range ds.keys {
		for _, n := range ev[k].Needles {
			if len(n) < gramLen {
				continue
			}
			d, ok := idx[string(n)]
			if !ok {
				d = int32(len(needles))
				idx[string(n)] = d
				needles = append(needles, n)
				first = append(first, int32(o))
				maxLen = max(maxLen, len(n))
			}
			ds.occ[o] = append(ds.occ[o], d)
		}
	}
	ds.set = &NeedleSet{needles: needles, owner: make([]string, len(needles)), maxLen: maxLen}
	for d, o := range first {
		ds.set.owner[d] = ds.keys[o]
	}
	ds.first = first
	return ds
}

// holderBook records which distinct needles each other record (holder)
// holds, as (needle, holder) pairs while scanning (searcher.search): as
// many as the scan's hits, not (owners × holders). Counting per owner comes after the scan
// (top), owner by owner, in a dense array indexed by holder.
type holderBook struct {
	keys  []string         // holder numbers' keys
	ids   map[string]int32 // holder key -> number
	pairs []uint64         // needle<<32 | holder, one per needle a record of the holder holds
}

// holder is key's number.
func (hb *holderBook) holder(key string) int32 {
	h, ok := hb.ids[key]
	if !ok {
		h = int32(len(hb.keys))
		hb.ids[key] = h
		hb.keys = append(hb.keys, key)
	}
	return h
}

// top calls fn for each owner that some holder shares with: the
// MaxSharedWith holders with the most of its needles (ties by key) and how
// many were left out. A needle counts once per holder, however many fields
// of it hold the needle, and once per time the owner's record repeats it.
func (hb *holderBook) top(ds *needleOwners, fn func(o int, with map[string]int, more int)) {
	if len(hb.pairs) == 0 {
		return
	}
	// The holders of each needle, by one counting-sort pass over the pairs
	// (bucketed by needle), a holder's repeats (several fields) dropped.
	nd := ds.set.Len()
	start := make([]int32, nd+1)
	for _, p := range hb.pairs {
		start[p>>32+1]++
	}
	for d := 1; d <= nd; d++ {
		start[d] += start[d-1]
	}
	next := make([]int32, nd)
	copy(next, start[:nd])
	holders := make([]int32, len(hb.pairs))
	for _, p := range hb.pairs {
		d := p >> 32
		holders[next[d]] = int32(uint32(p))
		next[d]++
	}
	hb.pairs = nil
	// Drop repeats in place: stamp[h] is 1 + the last needle h was kept for.
	stamp := make([]int32, len(hb.keys))
	w := int32(0)
	for d := 0; d < nd; d++ {
		from := start[d]
		start[d] = w
		for _, h := range holders[from:next[d]] {
			if stamp[h] != int32(d)+1 {
				stamp[h] = int32(d) + 1
				holders[w] = h
				w++
			}
		}
	}
	start[nd] = w
	type held struct {
		h int32
		n int32
	}
	before := func(a, b held) bool {
		if a.n != b.n {
			return a.n > b.n
		}
		return hb.keys[a.h] < hb.keys[b.h]
	}
	// Owners are counted apart from each other: sharedWorkers goroutines
	// take them in turn, each with its own counts; fn runs after, in
	// owner order.
	type result struct {
		with map[string]int
		more int
	}
	results := make([]result, len(ds.occ))
	var nextOwner atomic.Int64
	count1 := func() {
		count := make([]int32, len(hb.keys))
		var touched []int32
		best := make([]held, 0, MaxSharedWith)
		for {
			o := int(nextOwner.Add(1) - 1)
			if o >= len(ds.occ) {
				return
			}
			for _, d := range ds.occ[o] {
				for _, h := range holders[start[d]:start[d+1]] {
					if count[h] == 0 {
						touched = append(touched, h)
					}
					count[h]++
				}
			}
			if len(touched) == 0 {
				continue
			}
			// The best MaxSharedWith, by insertion into a short sorted
			// list: linear in the holders, where a sort of them all was not.
			best = best[:0]
			for _, h := range touched {
				x := held{h, count[h]}
				count[h] = 0
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
			results[o] = result{with, len(touched) - len(best)}
			touched = touched[:0]
		}
	}
	var wg sync.WaitGroup
	for range max(1, min(sharedWorkers, len(ds.occ))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			count1()
		}()
	}
	wg.Wait()
	for o, r := range results {
		if r.with != nil {
			fn(o, r.with, r.more)
		}
	}
}
