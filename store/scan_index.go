package store

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sort"
	"sync"
)

// The search index of a NeedleSet.
//
// Every needle of a set is at least gramLen bytes long. A gram is g bytes
// (8, or 16 for needles long enough); a needle of m bytes that occurs at
// offset s of the scanned bytes covers the positions s .. s+m-g at which a
// gram of it starts. The scan reads a gram only at every k-th position (0,
// k, 2k, …): among the m-g+1 gram starts of an occurrence there is one such
// position when k ≤ m-g+1, and it lies at offset r of the needle for the r
// in [0, k) with s+r ≡ 0 (mod k). So a needle is indexed under k grams, one
// per residue r, each at an offset ≡ r (mod k) that the needle has room
// for; the scan looks each sampled gram up in a two-bit-per-gram bloom
// filter (one 64-bit word per lookup) and, on a hit, in a hash table of the
// grams (a 16-byte gram hashed to one word, gram16), whose entries name the
// needle and the offset to compare it from. This is the sampling form of
// skip search: a scan of b bytes does b/k lookups, about 1/24 of the
// positions for the 32-byte windows of Tile, and reads each byte of the
// data once. The bloom tests of a batch of positions run without a branch
// on their outcome, and only the positions that pass are looked up (see
// search): on the benchmark's text 5 to 15% of the positions pass, and a
// branch per position would be mispredicted at each of them.
//
// Needles are grouped into tiers by mode (stride k and gram length, see
// modes), each tier one pass over the data. A needle takes the most
// preferred mode at which every residue has a gram within what that stride
// allows (see gramCost):
//   - at 8 and above, a gram at most one other record of the set has
//     (maxGramShare)
//     and not made of common text bytes only (minRarity per 8 bytes): a
//     gram that many records share (a template line, a greeting) is common
//     in the scanned bytes too, and every occurrence at a probed position
//     costs a lookup and a check per needle indexed under it. A 16-byte
//     gram reaches a record's own bytes (a number, a name) from more
//     offsets than an 8-byte one, so text windows that template words
//     surround can take 8 to 16 with 16-byte grams where 8-byte ones would
//     need 4;
//   - at 4, any 8-byte gram with at least minGramDistinct distinct byte
//     values: fewer (zero runs in vectors, repeated characters) would match
//     at every position of a zero page; ranked by how many records share
//     it, then by byteRarity (gramCostAny);
//   - at 1, the needle's cheapest gram, whatever it is (the single anchor
//     of the scanner this replaced).
//
// Within a residue the cheapest gram is taken among the offsets below 64
// (the first on a tie). A mode that few needles take would cost a whole
// pass for them: they go to a more preferred mode in use with any
// non-degenerate gram; when a quarter of the needles or more take the
// least preferred mode in use, the others join it (text: one pass at 4
// instead of one at 8 and one at 4). A set so large that k entries per
// needle would exceed indexBudget has k capped. Each entry also carries 4
// bytes of its needle (the 4 bytes the fewest records share) and a sum of
// its first 32 bytes (windowSum), both checked against the data before the
// needle is read.
const (
	gramLen         = 8
	minGramDistinct = 4
	indexBudget     = 1 << 18 // index entries (gram, needle, offset) for a whole set
	// maxGramShare is the most records of the set whose needles may hold
	// the gram a residue takes at the larger strides: a gram more records
	// share is text many records have in common (a template, a greeting),
	// likely common in the scanned bytes too, where each occurrence would
	// be looked up and compared with every needle indexed under it.
	maxGramShare = 2
)

// buildTiers chooses the grams of a set of at least tierPartsMin needles
// in tierParts goroutines (tests change both).
var tierPartsMin, tierParts = 1 << 13, min(runtime.GOMAXPROCS(0), 8)

// tier indexes the needles sampled every k bytes.
type tier struct {
	k      int
	glen   int      // gram length: 8 or 16 (see modes)
	maxOff int      // largest offset of an indexed gram in its needle
	bloom  []uint64 // two bits per gram in one word
	bshift uint     // 64 - log2(len(bloom))
	slots  []slot   // open addressing on the gram
	tshift uint     // 64 - log2(len(slots))
	ents   []entry  // grouped by gram
}

// entry is one needle indexed under a gram: the needle's index and the
// gram's offset in it, and the needle's 4 bytes at its check offset (see
// NeedleSet.chkOff), compared with the data before the needle is: a gram
// many needles share (template text) is rejected for most of them without
// reading them.
type entry struct {
	ent  uint32 // needle index << offBits | offset
	chk  uint32
	sum  uint32 // windowSum of the needle's first hlen bytes
	coff uint8  // the check offset (NeedleSet.chkOff): no lookup per entry
	hlen uint8  // min(len(needle), 32)
	dlt  int8   // coff - offset: where the check bytes start from the probed position
	run  uint8  // at the first entry of a run (see newTier): how many entries it has
}

// windowSum hashes b (8 to 32 bytes) from four 8-byte words, the last
// ending at its end. An entry whose check bytes match compares sums before
// it reads the needle: text of a template passes the check bytes often,
// and the needle's bytes are elsewhere in memory.
func windowSum(b []byte) uint32 {
	n := len(b)
	h := le64(b) * bloomMul
	h = (h ^ le64(b[min(8, n-8):])) * slotMul
	h = (h ^ le64(b[min(16, n-8):])) * bloomMul
	h = (h ^ le64(b[n-8:])) * slotMul
	return uint32(h >> 32)
}

type slot struct {
	gram  uint64
	lo, n uint32 // ents[lo : lo+n]; n == 0: empty slot
}

const (
	bloomMul = 0x9E3779B97F4A7C15
	slotMul  = 0xD6E8FEB86659FD93
	offBits  = 6 // gram offsets, below 64 (pickOffsets), fit in the low bits of an entry
)

// bloomBits returns the word index and the mask of a gram's two bits: the
// word from the top bits of one hash of the gram, the bits from the top 12
// bits of another, through bloomBit (a shift by a variable count takes the
// count register on amd64: search probes one position every 4 bytes of
// text, and one such shift is enough).
func bloomBits(g uint64, bshift uint) (uint64, uint64) {
	h, x := g*bloomMul, g*slotMul
	return h >> bshift, bloomBit[x>>58&63] | bloomBit[x>>52&63]
}

// bloomBit[i] is the word with bit i set.
var bloomBit = func() (m [64]uint64) {
	for i := range m {
		m[i] = 1 << i
	}
	return m
}()

// gram16 is the 16-byte gram at b[0:] as one word: the tiers of 16-byte
// grams hash the two words (a collision costs a lookup; every match is
// confirmed against the needle's bytes).
func gram16(b []byte) uint64 { return le64(b)*gramMul ^ le64(b[8:]) }

const gramMul = 0xC2B2AE3D27D4EB4F

// gramOf is the gram of t's length at b[0:].
func (t *tier) gramOf(b []byte) uint64 {
	if t.glen == 16 {
		return gram16(b)
	}
	return le64(b)
}

// lookup returns the entries indexed under gram g.
func (t *tier) lookup(g uint64) []entry {
	mask := uint64(len(t.slots) - 1)
	for i := (g * slotMul) >> t.tshift; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.n == 0 {
			return nil
		}
		if s.gram == g {
			return t.ents[s.lo : s.lo+s.n]
		}
	}
}

// gramDistinct returns, for every start of a gram of width bytes in n, the
// number of distinct byte values of the gram (none when n is shorter).
func gramDistinct(n []byte, width int, buf []uint8) []uint8 {
	out := append(buf[:0], make([]uint8, max(0, len(n)-width+1))...)
	for a := range out {
		var seen [4]uint64
		d := 0
		for _, c := range n[a : a+width] {
			w, b := c>>6, uint64(1)<<(c&63)
			if seen[w]&b == 0 {
				seen[w] |= b
				d++
			}
		}
		out[a] = uint8(d)
	}
	return out
}

// gramCounts is a count-min sketch of how many records (owners) of a set
// have each gram in their needles: two rows of saturating counters indexed
// by two hashes of the gram, the count being the smaller of its two
// counters, so a count may be too high (another gram shares both
// counters), never too low. A gram of one record's content is in its
// overlapping windows several times but counts once; a gram of text that
// many records share (a template, a greeting, boilerplate) counts once per
// record, and is likely as common in the scanned bytes. A set with more
// than maxCounted grams is not counted (every count is 0): building the
// sketch would cost more than the scan saves, and such a set's stride is
// capped low by indexBudget anyway.
type gramCounts struct {
	row   [2][]counter
	shift uint
}

type counter struct {
	last int32 // 1 + the owner that last counted here; 0: none yet
	n    uint8
}

const maxCounted = 1 << 20

var countMul = [2]uint64{slotMul, 0xA0761D6478BD642F}

func newGramCounts(needles [][]byte, owners []int32, width int) *gramCounts {
	total := 0
	for _, n := range needles {
		total += countedGrams(n, width)
	}
	if total > maxCounted {
		return nil
	}
	b := max(10, min(21, bits.Len(uint(4*total))))
	gc := &gramCounts{shift: uint(64 - b)}
	for r := range gc.row {
		gc.row[r] = make([]counter, 1<<b) // zeroed: no owner counted yet
	}
	for j, n := range needles {
		own := owners[j] + 1 // owners are ≥ 0: 0 is left for none
		for o := range countedGrams(n, width) {
			g := gramAt(n, o, width)
			for r := range gc.row {
				if c := &gc.row[r][(g*countMul[r])>>gc.shift]; c.last != own && c.n < math.MaxUint8 {
					c.n++
					c.last = own
				}
			}
		}
	}
	return gc
}

// countedGrams is how many of n's grams of width bytes a sketch counts:
// those starting below 64 (index grams, 8 or 16 bytes), or below 68 (check
// bytes, 4).
func countedGrams(n []byte, width int) int {
	limit := 1 << offBits
	if width == 4 {
		limit += gramLen - 4
	}
	return max(0, min(len(n)-width+1, limit))
}

// gramAt is n's gram of width (4, 8 or 16) bytes at o.
func gramAt(n []byte, o, width int) uint64 {
	switch width {
	case 4:
		return uint64(le32(n[o:]))
	case 16:
		return gram16(n[o:])
	}
	return le64(n[o:])
}

func (gc *gramCounts) of(g uint64) int {
	if gc == nil {
		return 0
	}
	return int(min(gc.row[0][(g*countMul[0])>>gc.shift].n, gc.row[1][(g*countMul[1])>>gc.shift].n))
}

// byteRarity weighs a byte by how rarely it occurs in the bytes stores keep:
// 0 for zero (padding, empty pages), 1 for lower-case letters, space and
// common punctuation (most of any text), 3 for everything else (digits,
// capitals, other symbols, binary and float bytes).
var byteRarity = func() (w [256]uint8) {
	for c := range w {
		w[c] = 3
	}
	w[0] = 0
	for c := 'a'; c <= 'z'; c++ {
		w[c] = 1
	}
	for _, c := range " \n\t.,;:'\"-" {
		w[c] = 1
	}
	return w
}()

// minRarity is the least total byteRarity a gram taken at a stride above 1
// must have: a gram of common text bytes only (8) is likely template text,
// common in the scanned bytes, where each occurrence would be looked up and
// compared with every needle indexed under it.
const minRarity = 12

// gramCost ranks the gram of width bytes at offset o of a needle, lower is
// better: how many records of the set have it, far more for a gram with
// fewer than minGramDistinct distinct byte values, more for one whose bytes
// are common in text (see minRarity, per 8 bytes).
func gramCost(n []byte, o, width int, dist []uint8, gc *gramCounts) int {
	c := gc.of(gramAt(n, o, width))
	if dist[o] < minGramDistinct {
		c += 1 << 20
	}
	if rarity(n[o:o+width]) < minRarity*width/gramLen {
		c += 1 << 10
	}
	return c
}

// gramCostAny ranks the gram of width bytes at offset o where any
// non-degenerate gram may be taken (stride 4 and below, and needles moved
// to another stride): how many records of the set have it first, then
// whether its bytes are common in text, so that a gram few records share is
// taken even when it is made of lower-case letters (a gram of capitals and
// digits that every record has, "Ticket 1", is hit at every record in the
// data); far more for a degenerate gram (fewer than minGramDistinct
// distinct byte values).
func gramCostAny(n []byte, o, width int, dist []uint8, gc *gramCounts) int {
	c := 4 * gc.of(gramAt(n, o, width))
	if dist[o] < minGramDistinct {
		c += 1 << 20
	}
	if rarity(n[o:o+width]) < minRarity*width/gramLen {
		c += 2
	}
	return c
}

// rarity sums the byteRarity of b's bytes.
func rarity(b []byte) int {
	r := 0
	for _, c := range b {
		r += int(byteRarity[c])
	}
	return r
}

// pickOffsets returns, for stride k, the offset of the gram taken for each
// residue (the cheapest of the offsets ≡ r mod k below 64; the first on a
// tie), or nil when some residue has no gram within maxCost (k > 1) or the
// needle has no room for k grams.
func pickOffsets(dist []uint8, cost []int, k, maxCost int, offs []uint8) []uint8 {
	if k > len(dist) {
		return nil
	}
	offs = offs[:0]
	for r := 0; r < k; r++ {
		best := r
		for o := r + k; o < min(len(dist), 1<<offBits); o += k {
			if cost[o] < cost[best] || cost[o] == cost[best] && dist[o] > dist[best] {
				best = o
			}
		}
		if k > 1 && cost[best] > maxCost {
			return nil
		}
		offs = append(offs, uint8(best))
	}
	return offs
}

// mode is a way to sample the data: a gram of glen bytes every k bytes.
// A needle of m bytes can take a mode when k ≤ m-glen+1 (every residue has
// a gram start in it).
type mode struct{ k, glen int }

// modes lists the ways to sample, in ascending order of preference (fewer
// probes first, then grams less likely to be common text). A 16-byte gram
// holds a needle's own bytes (a number, a name) from more starts than an
// 8-byte one, so a text window that template words surround ("was logged
// on day ") can often take a stride of 8 to 16 with 16-byte grams where
// every residue's 8-byte grams would be template text. Random bytes
// (vectors) take 24 or 48 with 8-byte grams. Measured with the scanner
// benchmark's text (BenchmarkScanText): the windows of one or a few
// records (30 needles) now take 16/16 instead of 4/8; sets of 1,000 needles
// and more still mostly need 4/8 (their grams are shared with other records
// of the set: names, templates), and the others join them.
var modes = [...]mode{{1, 8}, {4, 8}, {8, 8}, {8, 16}, {12, 16}, {16, 16}, {24, 8}, {48, 8}}

// width is the index of a gram length in needleCosts' per-width slices.
func width(glen int) int {
	if glen == 16 {
		return 1
	}
	return 0
}

type gramEnt struct {
	gram uint64
	entry
}

// buildTiers indexes needles (each at least gramLen bytes). chkOff[i] is
// where needles[i]'s 4 check bytes start: in its cheapest gram (the one the
// fewest other records share).
func buildTiers(needles [][]byte, owners []int32) (tiers []*tier, chkOff []uint8) {
	if len(needles) >= 1<<(32-offBits) {
		// An entry holds the needle's index in 26 bits. 2^26 needles are
		// 2 GiB of windows of 32 bytes: more than any probe reads at once
		// (MaxWindows caps a field at 65,536 windows).
		panic(fmt.Sprintf("store: %d needles in one NeedleSet; at most %d", len(needles), 1<<(32-offBits)-1))
	}
	kcap := modes[len(modes)-1].k
	if len(needles) > 0 {
		kcap = max(1, indexBudget/len(needles))
	}
	var gc [2]*gramCounts
	var gc4 *gramCounts
	var counting sync.WaitGroup
	counting.Go(func() { gc4 = newGramCounts(needles, owners, 4) })
	counting.Go(func() { gc[1] = newGramCounts(needles, owners, 16) })
	gc[0] = newGramCounts(needles, owners, gramLen)
	counting.Wait()
	// Each needle's mode and offsets (offs[at[i]:][:modes[ms[i]].k]): the
	// most preferred mode at which every residue has a gram within
	// maxGramShare. A needle's choice reads only the counts: the needles
	// are taken in parts, one goroutine each (a window of many subjects
	// has hundreds of thousands), and the parts' offsets joined in order,
	// as one loop would have.
	ms := make([]uint8, len(needles))
	at := make([]int, len(needles))
	chkOff = make([]uint8, len(needles))
	type part struct {
		from, to int
		offs     []uint8
		count    map[int]int
	}
	nparts := 1
	if len(needles) >= tierPartsMin {
		nparts = tierParts
	}
	parts := make([]part, nparts)
	var wg sync.WaitGroup
	for p := range parts {
		pt := &parts[p]
		pt.from, pt.to = p*len(needles)/nparts, (p+1)*len(needles)/nparts
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc := &needleCosts{gc: gc}
			pt.offs = make([]uint8, 0, (pt.to-pt.from)*min(kcap, 24))
			pt.count = map[int]int{}
			for i := pt.from; i < pt.to; i++ {
				chkOff[i], ms[i], at[i] = nc.choose(needles[i], gc4, kcap, &pt.offs)
				pt.count[int(ms[i])]++
			}
		}()
	}
	wg.Wait()
	offs := parts[0].offs
	count := parts[0].count
	for _, pt := range parts[1:] {
		base := len(offs)
		offs = append(offs, pt.offs...)
		for i := pt.from; i < pt.to; i++ {
			at[i] += base
		}
		for m, c := range pt.count {
			count[m] += c
		}
	}
	nc := &needleCosts{gc: gc}
	costs := nc.costs
	// Each mode is a pass over the data: a mode that few needles take
	// costs as much as one that many take. Their needles go to the most
	// preferred mode in use that they have room for, with any grams but
	// degenerate ones (the zero runs that every page of a store is full
	// of).
	top := 0
	for m := range count {
		top = max(top, m)
	}
	for i, n := range needles {
		if m := int(ms[i]); m < top && count[m] < max(16, len(needles)/16) {
			costs(n)
			for m2 := len(modes) - 1; m2 > m; m2-- {
				if count[m2] == 0 {
					continue
				}
				w := width(modes[m2].glen)
				if o := pickOffsets(nc.dist[w], nc.any[w], modes[m2].k, 1<<20-1, nc.tmp); o != nil {
					nc.tmp = o
					count[m]--
					count[m2]++
					ms[i], at[i] = uint8(m2), len(offs)
					offs = append(offs, o...)
					break
				}
			}
		}
	}
	// A tier is a pass over the data costing 1/k probes per byte: when the
	// least preferred mode in use holds many needles, the others join it
	// (their grams then the cheapest among more offsets), one pass instead
	// of two.
	low := top
	for m, c := range count {
		if c > 0 {
			low = min(low, m)
		}
	}
	if low < top && count[low] >= len(needles)/4 {
		w := width(modes[low].glen)
		for i, n := range needles {
			if int(ms[i]) == low {
				continue
			}
			costs(n)
			if o := pickOffsets(nc.dist[w], nc.any[w], modes[low].k, 1<<20-1, nc.tmp); o != nil {
				nc.tmp = o
				count[int(ms[i])]--
				count[low]++
				ms[i], at[i] = uint8(low), len(offs)
				offs = append(offs, o...)
			}
		}
	}
	return layTiers(needles, chkOff, ms, at, offs), chkOff
}

// layTiers builds the tiers of needles: needle i sampled in mode ms[i]
// under its grams at offs[at[i]:][:k], its check bytes at chkOff[i].
func layTiers(needles [][]byte, chkOff, ms []uint8, at []int, offs []uint8) []*tier {
	byMode := map[int][]gramEnt{}
	maxOff := map[int]int{}
	for i, n := range needles {
		m := int(ms[i])
		md := modes[m]
		for _, o := range offs[at[i] : at[i]+md.k] {
			byMode[m] = append(byMode[m], gramEnt{gramAt(n, int(o), md.glen), entry{uint32(i)<<offBits | uint32(o), le32(n[chkOff[i]:]), windowSum(n[:min(len(n), 32)]), chkOff[i], uint8(min(len(n), 32)), int8(int(chkOff[i]) - int(o)), 0}})
			maxOff[m] = max(maxOff[m], int(o))
		}
	}
	used := make([]int, 0, len(byMode))
	for m := range byMode {
		used = append(used, m)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(used)))
	tiers := make([]*tier, 0, len(used))
	for _, m := range used {
		tiers = append(tiers, newTier(modes[m].k, modes[m].glen, maxOff[m], byMode[m]))
	}
	return tiers
}

// needleCosts holds one goroutine's buffers for the grams of one needle at
// a time: dist, cost and any per offset, for 8-byte grams ([0]) and
// 16-byte ones ([1]) (costs), and the offsets picked.
type needleCosts struct {
	gc   [2]*gramCounts
	dist [2][]uint8
	cost [2][]int
	any  [2][]int
	tmp  []uint8
}

// costs computes dist, cost and any for needle n.
func (nc *needleCosts) costs(n []byte) {
	for w, glen := range [2]int{gramLen, 16} {
		nc.dist[w] = gramDistinct(n, glen, nc.dist[w])
		nc.cost[w], nc.any[w] = nc.cost[w][:0], nc.any[w][:0]
		for o := range min(len(nc.dist[w]), 1<<offBits) {
			nc.cost[w] = append(nc.cost[w], gramCost(n, o, glen, nc.dist[w], nc.gc[w]))
			nc.any[w] = append(nc.any[w], gramCostAny(n, o, glen, nc.dist[w], nc.gc[w]))
		}
	}
}

// choose picks needle n's check offset and its mode and offsets, the most
// preferred mode at which every residue has a gram within maxGramShare (at
// strides 8 and above) or not degenerate (at 4), else one gram (stride 1),
// and appends the offsets to offs: it returns the check offset, the mode's
// index and where in offs its offsets start.
func (nc *needleCosts) choose(n []byte, gc4 *gramCounts, kcap int, offs *[]uint8) (chk, m uint8, at int) {
	nc.costs(n)
	// The check bytes: the 4 bytes of the needle that the fewest other
	// records share (the last such): template text around a few unique
	// bytes would pass the check wherever the template is. Without a
	// count (a very large set), the rarer half of the cheapest gram.
	c := 0
	if gc4 != nil {
		best := math.MaxInt
		for o := range countedGrams(n, 4) {
			if x := gc4.of(gramAt(n, o, 4)); x <= best {
				c, best = o, x
			}
		}
	} else {
		cost := nc.cost[0]
		for o := range cost {
			if cost[o] < cost[c] {
				c = o
			}
		}
		if rarity(n[c:c+4]) <= rarity(n[c+4:c+8]) {
			c += 4
		}
	}
	var o []uint8
	j := len(modes) - 1
	for ; j >= 0; j-- {
		md := modes[j]
		w := width(md.glen)
		switch {
		case md.k == 1:
			o = pickOffsets(nc.dist[w], nc.any[w], 1, 1<<20-1, nc.tmp)
		case md.k > kcap:
			continue
		case md.k <= 4:
			o = pickOffsets(nc.dist[w], nc.any[w], md.k, 1<<20-1, nc.tmp)
		default:
			o = pickOffsets(nc.dist[w], nc.cost[w], md.k, maxGramShare, nc.tmp)
		}
		if o != nil {
			break
		}
	}
	nc.tmp = o
	at = len(*offs)
	*offs = append(*offs, o...)
	return uint8(c), uint8(j), at
}

func newTier(k, glen, maxOff int, ge []gramEnt) *tier {
	t := &tier{k: k, glen: glen, maxOff: maxOff}
	// Bloom: 16 to 32 bits per entry while that takes at most 128 KiB (2^14
	// words), else 8 to 16 (at least 64 words, at most 2^22): small enough
	// to stay in a core's cache with the 256 KiB read it searches. Each
	// false positive costs a lookup in the hash table (2 MiB for 10,000
	// text needles); with two bits in one word, about 5% of the positions
	// that hold no indexed gram pass at 8 bits per entry, 1.6% at 16 and
	// 0.5% at 32 (computed, for entries spread evenly over the words).
	wb := max(6, min(22, bits.Len(uint(len(ge)/8))))
	wb = max(wb, min(14, bits.Len(uint(len(ge)/4))))
	t.bloom = make([]uint64, 1<<wb)
	t.bshift = uint(64 - wb)
	// Hash table: at least twice as many slots as distinct grams (fewer
	// than entries where needles share grams: a smaller table stays in a
	// closer cache).
	distinct := map[uint64]struct{}{}
	for _, e := range ge {
		distinct[e.gram] = struct{}{}
	}
	sb := max(4, bits.Len(uint(max(1, 2*len(distinct)-1))))
	t.slots = make([]slot, 1<<sb)
	t.tshift = uint(64 - sb)
	mask := uint64(len(t.slots) - 1)
	find := func(g uint64) uint64 {
		for i := (g * slotMul) >> t.tshift; ; i = (i + 1) & mask {
			if s := &t.slots[i]; s.n == 0 || s.gram == g {
				return i
			}
		}
	}
	// Count the entries of each gram, then lay them out contiguously.
	for _, e := range ge {
		s := &t.slots[find(e.gram)]
		s.gram = e.gram
		s.n++
		w, m := bloomBits(e.gram, t.bshift)
		t.bloom[w] |= m
	}
	var lo uint32
	for i := range t.slots {
		if s := &t.slots[i]; s.n > 0 {
			s.lo = lo
			lo += s.n
		}
	}
	t.ents = make([]entry, len(ge))
	placed := make([]uint32, len(t.slots))
	for _, e := range ge {
		i := find(e.gram)
		t.ents[t.slots[i].lo+placed[i]] = e.entry
		placed[i]++
	}
	for _, s := range t.slots {
		switch {
		case s.n == 1:
			t.ents[s.lo].run = 1
		case s.n > 1:
			groupRuns(t.ents[s.lo : s.lo+s.n])
		}
	}
	return t
}

// groupRuns orders the entries of one gram into runs of entries that place
// their needle at the same offset and compare the same check bytes there
// (same offset, window length, check offset and check bytes), each run
// ordered by window sum, and marks each run's first entry with its length
// (at most 255: a longer run is split). Under a gram of template text many
// needles differ only after their check bytes; the scan then compares the
// check bytes and computes the data's window sum once per run, and confirms
// only the entries of the run with that sum (see Scanner.check), instead
// of computing the sum again for each entry.
func groupRuns(ents []entry) {
	slices.SortFunc(ents, func(a, b entry) int {
		if c := cmp.Compare(runKey(&a), runKey(&b)); c != 0 {
			return c
		}
		if c := cmp.Compare(a.sum, b.sum); c != 0 {
			return c
		}
		return cmp.Compare(a.ent, b.ent)
	})
	for i := 0; i < len(ents); {
		n := 1
		for i+n < len(ents) && n < math.MaxUint8 && sameRun(&ents[i], &ents[i+n]) {
			n++
		}
		ents[i].run = uint8(n)
		i += n
	}
}

// runKey is what the entries of a run have in common: the gram's offset in
// the needle, the window length, the check offset and the check bytes.
func runKey(e *entry) uint64 {
	return uint64(e.ent&(1<<offBits-1))<<56 | uint64(e.hlen)<<48 | uint64(e.coff)<<40 | uint64(e.chk)
}

func sameRun(a, b *entry) bool { return runKey(a) == runKey(b) }
