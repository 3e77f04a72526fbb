package store

import (
	mathbits "math/bits"
)

// Windows read across a boundary between records.
//
// Stores keep records back to back: sqlite-vec keeps a chunk's vectors in
// one array, FAISS and hnswlib keep flat arrays, and a deleted or erased
// slot is often left zero-filled. A window of an erased record can then
// occur in the files as the end of one live record followed by the start
// of the next (or by zero fill), without any single record holding it.
// Sparse embeddings make this likely: their windows are mostly zero floats
// around a few values that many vectors share. Measured here on the
// residue benchmark's 384-dimension vectors: windows found after a complete
// sqlite-vec erasure were each the last 24 or 28 bytes of a live vector
// followed by the first bytes of the next slot (a live vector starting with
// a zero float, or an empty slot). Such a window proves nothing about the
// erased record, so DropShared counts it as shared, with no holder named.

// maxSpanPart bounds the part of a needle that is matched against a
// record's start or end: needles longer than maxSpanPart+1 are not
// considered (Tile's windows are WindowSize bytes).
const maxSpanPart = 2*WindowSize - 1

// minSpanPart: a part of a needle shorter than this is taken to occur at
// any boundary (a record ends or starts with it), without looking. Fewer
// than 8 bytes are no evidence of anything (NewNeedleSet drops needles that
// short), and most such parts occur somewhere; assuming so only drops more
// needles, never claims more.
const minSpanPart = gramLen

// spans finds the needles that can be read as a suffix of some record
// followed by a prefix of some record, either of which may be zero fill.
type spans struct {
	spanBits
	// Conditions, keyed by the hash of the bytes and their length, in
	// buckets: most of a record's ends match nothing. Read only once
	// built: several goroutines resolve records against them, each into
	// its own spanBits (see recordInto).
	heads, tails conds
	maxPart      int
}

// spanBits holds what the records seen so far resolved: head[i] bit s:
// needles[i][:s] is the end of some record (or zeros); tail[i] bit s:
// needles[i][s:] is the start of some record (or zeros).
type spanBits struct {
	head, tail []uint64
}

// newBits returns empty bits for sp's needles, for one goroutine's records.
func (sp *spans) newBits() *spanBits {
	return &spanBits{head: make([]uint64, len(sp.head)), tail: make([]uint64, len(sp.tail))}
}

// merge adds what o's records resolved to sp's own bits.
func (sp *spans) merge(o *spanBits) {
	for i, w := range o.head {
		sp.head[i] |= w
	}
	for i, w := range o.tail {
		sp.tail[i] |= w
	}
}

type cond struct {
	key    uint64
	needle int32
	split  uint8
}

// conds are grouped by bucket, the top bits of their key (a counting sort:
// one pass over them): bucket b's are c[start[b]:start[b+1]]. A bucket
// holds about two of them, most record ends fall in an empty one.
type conds struct {
	c     []cond
	start []int32
	shift uint
	// filter has the bit key&fmask set for every condition's key: most
	// record ends match none, and the filter, small enough for the CPU's
	// cache where the buckets are not, turns them away with one load.
	filter []uint64
	fmask  uint64
}

func (cs *conds) build() {
	nb := 2
	for nb < len(cs.c)/2 {
		nb <<= 1
	}
	cs.shift = uint(64 - mathbits.Len(uint(nb-1))) // key>>shift < nb
	start := make([]int32, nb+1)
	for _, c := range cs.c {
		start[c.key>>cs.shift+1]++
	}
	for b := 1; b <= nb; b++ {
		start[b] += start[b-1]
	}
	next := make([]int32, nb)
	copy(next, start[:nb])
	out := make([]cond, len(cs.c))
	for _, c := range cs.c {
		b := c.key >> cs.shift
		out[next[b]] = c
		next[b]++
	}
	cs.c, cs.start = out, start
	// About 16 bits a condition, at least 2^15 and at most 2^23 bits
	// (1 MiB): a record end that matches no condition gets past it about
	// once in 16 (fewer when capped).
	fb := uint64(1) << 15
	for fb < uint64(len(cs.c))*16 && fb < 1<<23 {
		fb <<= 1
	}
	cs.filter, cs.fmask = make([]uint64, fb/64), fb-1
	for _, c := range cs.c {
		k := c.key & cs.fmask
		cs.filter[k>>6] |= 1 << (k & 63)
	}
}

// resolve sets, in bits, the bit of every condition with key.
func (cs *conds) resolve(key uint64, bits []uint64) {
	if len(cs.c) == 0 {
		return
	}
	if k := key & cs.fmask; cs.filter[k>>6]&(1<<(k&63)) == 0 {
		return
	}
	b := key >> cs.shift
	for i := cs.start[b]; i < cs.start[b+1]; i++ {
		if c := &cs.c[i]; c.key == key {
			bits[c.needle] |= 1 << c.split
		}
	}
}

func newSpans(set *NeedleSet) *spans {
	sp := &spans{spanBits: spanBits{head: make([]uint64, set.Len()), tail: make([]uint64, set.Len())}}
	// Count the conditions first: millions of them for a window of many
	// subjects, appended without growing.
	nh, nt := 0, 0
	for _, n := range set.needles {
		if len(n) > maxSpanPart+1 {
			continue
		}
		first, last := nonZeroBounds(n)
		for s := 1; s < len(n); s++ {
			if s >= minSpanPart && first < s {
				nh++
			}
			if len(n)-s >= minSpanPart && last >= s {
				nt++
			}
		}
	}
	sp.heads.c = make([]cond, 0, nh)
	sp.tails.c = make([]cond, 0, nt)
	for i, n := range set.needles {
		if len(n) > maxSpanPart+1 {
			continue
		}
		sp.maxPart = max(sp.maxPart, len(n)-1)
		// first: index of n's first non-zero byte (len(n) if none), so
		// n[:s] is all zeros when first >= s; last: index of its last
		// non-zero byte (-1 if none), so n[s:] is all zeros when last < s.
		first, last := nonZeroBounds(n)
		// n[:s] must end a record: its key is the hash of n[s-1], n[s-2],
		// ..., n[0] (record hashes a record's end from its last byte
		// back); each longer part has one byte more in front.
		h, pow := uint64(0), uint64(1)
		for s := 1; s < len(n); s++ {
			h += polyByte(n[s-1]) * pow
			pow *= polyBase
			if s < minSpanPart || first >= s {
				sp.head[i] |= 1 << s
			} else {
				sp.heads.c = append(sp.heads.c, cond{key: finish(h, s), needle: int32(i), split: uint8(s)})
			}
		}
		// n[s:] must start a record: the hash of n[s], ..., n[len-1], from
		// the shortest part (s = len-1) to the longest, each one byte more
		// in front.
		h, pow = 0, 1
		for s := len(n) - 1; s >= 1; s-- {
			h += polyByte(n[s]) * pow
			pow *= polyBase
			if len(n)-s < minSpanPart || last < s {
				sp.tail[i] |= 1 << s
			} else {
				sp.tails.c = append(sp.tails.c, cond{key: finish(h, len(n)-s), needle: int32(i), split: uint8(s)})
			}
		}
	}
	// The two sorts are independent: one in another goroutine (millions
	// of conditions each for a window of many subjects).
	done := make(chan struct{})
	go func() { sp.heads.build(); close(done) }()
	sp.tails.build()
	<-done
	return sp
}

// record notes the start and end of one record's bytes in sp's own bits
// (one goroutine only; others use recordInto and merge).
func (sp *spans) record(b []byte) { sp.recordInto(b, &sp.spanBits) }

// recordInto notes the start and end of one record's bytes in bits, which
// belong to the calling goroutine: the conditions are only read, so
// several goroutines may record at once, each into its own bits.
func (sp *spans) recordInto(b []byte, bits *spanBits) {
	h := uint64(0)
	for s := 1; s <= min(len(b), sp.maxPart); s++ {
		h = h*polyBase + polyByte(b[len(b)-s]) // b[len-s:] hashed from its last byte back
		if s >= minSpanPart {
			sp.heads.resolve(finish(h, s), bits.head)
		}
	}
	h = 0
	for t := 1; t <= min(len(b), sp.maxPart); t++ {
		h = h*polyBase + polyByte(b[t-1])
		if t >= minSpanPart {
			sp.tails.resolve(finish(h, t), bits.tail)
		}
	}
}

// spanning reports whether needle i can be read across a boundary.
func (sp *spans) spanning(i int) bool { return sp.head[i]&sp.tail[i] != 0 }

// The parts of needles and the ends of records are hashed as polynomials in
// polyBase modulo 2^64 over their bytes (each plus one): appending a byte (a
// record's end read one byte further) and prepending one (a needle's part
// one byte longer) are one multiply-add each, so every part of a needle is
// hashed in constant time.
const polyBase = 0x100000001b3 // odd: a unit modulo 2^64

func polyByte(c byte) uint64 { return uint64(c) + 1 }

// nonZeroBounds returns the index of b's first and last non-zero bytes
// (len(b) and -1 when b is all zeros).
func nonZeroBounds(b []byte) (first, last int) {
	first, last = len(b), -1
	for i, c := range b {
		if c != 0 {
			if first == len(b) {
				first = i
			}
			last = i
		}
	}
	return first, last
}

// finish folds the length in and mixes (a collision only makes a needle
// count as shared: the probe loses a window, it never gains a claim).
func finish(h uint64, n int) uint64 {
	h ^= uint64(n) * 0x9e3779b97f4a7c15
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	return h
}
