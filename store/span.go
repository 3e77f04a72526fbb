package store

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

// spans finds the needles that can be read as a suffix of some record
// followed by a prefix of some record, either of which may be zero fill.
type spans struct {
	set *NeedleSet
	// head[i] bit s: needles[i][:s] is the end of some record (or zeros);
	// tail[i] bit s: needles[i][s:] is the start of some record (or zeros).
	head, tail []uint64
	// Pending conditions, by hash of the bytes and their length: a chain of
	// (needle, split) entries through next.
	heads, tails map[uint64]int32
	entNeedle    []int32
	entSplit     []uint8
	entNext      []int32
	maxPart      int
}

func newSpans(set *NeedleSet) *spans {
	sp := &spans{set: set, head: make([]uint64, set.Len()), tail: make([]uint64, set.Len()),
		heads: map[uint64]int32{}, tails: map[uint64]int32{}}
	for i, n := range set.needles {
		if len(n) > maxSpanPart+1 {
			continue
		}
		sp.maxPart = max(sp.maxPart, len(n)-1)
		for s := 1; s < len(n); s++ {
			if allZero(n[:s]) {
				sp.head[i] |= 1 << s
			} else {
				sp.add(sp.heads, suffixKey(n[:s]), i, s)
			}
			if allZero(n[s:]) {
				sp.tail[i] |= 1 << s
			} else {
				sp.add(sp.tails, prefixKey(n[s:]), i, s)
			}
		}
	}
	return sp
}

func (sp *spans) add(m map[uint64]int32, key uint64, needle, split int) {
	next, ok := m[key]
	if !ok {
		next = -1
	}
	m[key] = int32(len(sp.entNeedle))
	sp.entNeedle = append(sp.entNeedle, int32(needle))
	sp.entSplit = append(sp.entSplit, uint8(split))
	sp.entNext = append(sp.entNext, next)
}

// record notes the start and end of one record's bytes. A condition met
// once is removed, so each is resolved at most once whatever the number of
// records.
func (sp *spans) record(b []byte) {
	if len(sp.heads) > 0 {
		h := uint64(fnvOffset)
		for s := 1; s <= min(len(b), sp.maxPart); s++ {
			h = fnvStep(h, b[len(b)-s]) // b[len-s:] hashed from its last byte back
			sp.resolve(sp.heads, finish(h, s), sp.head)
		}
	}
	if len(sp.tails) > 0 {
		h := uint64(fnvOffset)
		for t := 1; t <= min(len(b), sp.maxPart); t++ {
			h = fnvStep(h, b[t-1])
			sp.resolve(sp.tails, finish(h, t), sp.tail)
		}
	}
}

func (sp *spans) resolve(m map[uint64]int32, key uint64, bits []uint64) {
	e, ok := m[key]
	if !ok {
		return
	}
	delete(m, key)
	for ; e >= 0; e = sp.entNext[e] {
		bits[sp.entNeedle[e]] |= 1 << sp.entSplit[e]
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
