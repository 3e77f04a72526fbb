package store

import (
	"cmp"
	mathbits "math/bits"
	"slices"
	"sort"
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
	// head[i] bit s: needles[i][:s] is the end of some record (or zeros);
	// tail[i] bit s: needles[i][s:] is the start of some record (or zeros).
	head, tail []uint64
	// Pending conditions, sorted by the hash of the bytes and their length,
	// with a bit filter in front: most of a record's ends match nothing.
	heads, tails conds
	maxPart      int
}

type cond struct {
	key    uint64
	needle int32
	split  uint8
	done   bool // on the first entry of a key's run: resolved already
}

type conds struct {
	c      []cond
	filter []uint64
	shift  uint
}

func (cs *conds) build() {
	slices.SortFunc(cs.c, func(a, b cond) int { return cmp.Compare(a.key, b.key) })
	bits := 64
	for bits < 32*len(cs.c) {
		bits <<= 1
	}
	cs.filter = make([]uint64, bits/64)
	cs.shift = uint(64 - mathbits.Len(uint(bits-1)))
	for _, c := range cs.c {
		h := c.key >> cs.shift
		cs.filter[h>>6] |= 1 << (h & 63)
	}
}

// resolve sets, in bits, the bit of every condition with key.
func (cs *conds) resolve(key uint64, bits []uint64) {
	if len(cs.c) == 0 {
		return
	}
	if h := key >> cs.shift; cs.filter[h>>6]&(1<<(h&63)) == 0 {
		return
	}
	i := sort.Search(len(cs.c), func(i int) bool { return cs.c[i].key >= key })
	if i == len(cs.c) || cs.c[i].key != key || cs.c[i].done {
		return
	}
	cs.c[i].done = true
	for ; i < len(cs.c) && cs.c[i].key == key; i++ {
		bits[cs.c[i].needle] |= 1 << cs.c[i].split
	}
}

func newSpans(set *NeedleSet) *spans {
	sp := &spans{head: make([]uint64, set.Len()), tail: make([]uint64, set.Len())}
	for i, n := range set.needles {
		if len(n) > maxSpanPart+1 {
			continue
		}
		sp.maxPart = max(sp.maxPart, len(n)-1)
		for s := 1; s < len(n); s++ {
			if s < minSpanPart || allZero(n[:s]) {
				sp.head[i] |= 1 << s
			} else {
				sp.heads.c = append(sp.heads.c, cond{key: suffixKey(n[:s]), needle: int32(i), split: uint8(s)})
			}
			if len(n)-s < minSpanPart || allZero(n[s:]) {
				sp.tail[i] |= 1 << s
			} else {
				sp.tails.c = append(sp.tails.c, cond{key: prefixKey(n[s:]), needle: int32(i), split: uint8(s)})
			}
		}
	}
	sp.heads.build()
	sp.tails.build()
	return sp
}

// record notes the start and end of one record's bytes.
func (sp *spans) record(b []byte) {
	h := uint64(fnvOffset)
	for s := 1; s <= min(len(b), sp.maxPart); s++ {
		h = fnvStep(h, b[len(b)-s]) // b[len-s:] hashed from its last byte back
		if s >= minSpanPart {
			sp.heads.resolve(finish(h, s), sp.head)
		}
	}
	h = uint64(fnvOffset)
	for t := 1; t <= min(len(b), sp.maxPart); t++ {
		h = fnvStep(h, b[t-1])
		if t >= minSpanPart {
			sp.tails.resolve(finish(h, t), sp.tail)
		}
	}
}

// spanning reports whether needle i can be read across a boundary.
func (sp *spans) spanning(i int) bool { return sp.head[i]&sp.tail[i] != 0 }

// suffixKey hashes p, the first bytes of a needle that must end a record,
// as record hashes a record's end: from the last byte back.
func suffixKey(p []byte) uint64 {
	h := uint64(fnvOffset)
	for i := len(p) - 1; i >= 0; i-- {
		h = fnvStep(h, p[i])
	}
	return finish(h, len(p))
}

// prefixKey hashes p, the last bytes of a needle that must start a record.
func prefixKey(p []byte) uint64 {
	h := uint64(fnvOffset)
	for _, c := range p {
		h = fnvStep(h, c)
	}
	return finish(h, len(p))
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvStep(h uint64, c byte) uint64 { return (h ^ uint64(c)) * fnvPrime }

// finish folds the length in and mixes (a collision only makes a needle
// count as shared: the probe loses a window, it never gains a claim).
func finish(h uint64, n int) uint64 {
	h ^= uint64(n) * 0x9e3779b97f4a7c15
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	return h
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
