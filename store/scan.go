package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
)

// NeedleSet indexes the needles of many records for one pass over a store's
// bytes. Lookups go through one 8-byte anchor per needle: a bitmap rejects
// almost every offset with one load, a map resolves the rest, and a full
// comparison confirms a hit. A needle's anchor is its 8-byte substring with
// the most distinct byte values, not its prefix: vector needles often begin
// with zero bytes (zero components), and thousands of needles sharing an
// all-zero prefix made every offset of a zero-filled page or WAL segment
// pass the bitmap and be compared with each of them.
type NeedleSet struct {
	needles  [][]byte
	owner    []string // key that owns needles[i]
	anchor   []int    // offset of needles[i]'s anchor
	bloom    []uint64 // 2^bits bits over a hash of each needle's anchor
	bits     int
	byAnchor map[uint64][]int
	maxLen   int
	maxAnch  int // largest anchor offset
}

// The bloom filter has at least 2^minBloomBits bits, and at least 16 per
// needle up to 2^maxBloomBits (32 MiB), so that it still rejects almost
// every offset when records are tiled into many overlapping windows.
const (
	minBloomBits = 20
	maxBloomBits = 28
)

// NewNeedleSet builds a set from per-key evidence.
func NewNeedleSet(ev map[string]*Evidence) *NeedleSet {
	keys := make([]string, 0, len(ev))
	total := 0
	for k, e := range ev {
		keys = append(keys, k)
		total += len(e.Needles)
	}
	bits := minBloomBits
	for bits < maxBloomBits && 1<<bits < 16*total {
		bits++
	}
	s := &NeedleSet{bloom: make([]uint64, 1<<(bits-6)), bits: bits, byAnchor: make(map[uint64][]int, total)}
	sort.Strings(keys)
	for _, k := range keys {
		for _, n := range ev[k].Needles {
			if len(n) < 8 {
				continue
			}
			i := len(s.needles)
			a := anchorOf(n)
			s.needles = append(s.needles, n)
			s.owner = append(s.owner, k)
			s.anchor = append(s.anchor, a)
			p := binary.LittleEndian.Uint64(n[a:])
			s.byAnchor[p] = append(s.byAnchor[p], i)
			h := bloomHash(p, s.bits)
			s.bloom[h>>6] |= 1 << (h & 63)
			s.maxLen = max(s.maxLen, len(n))
			s.maxAnch = max(s.maxAnch, a)
		}
	}
	return s
}

// anchorOf returns the offset of n's 8-byte substring with the most distinct
// byte values (the first such one).
func anchorOf(n []byte) int {
	best, bestN := 0, 0
	for a := 0; a+8 <= len(n); a++ {
		d := 0
		for j := a; j < a+8; j++ {
			if bytes.IndexByte(n[a:j], n[j]) < 0 {
				d++
			}
		}
		if d > bestN {
			best, bestN = a, d
			if d == 8 {
				break
			}
		}
	}
	return best
}

// Len is the number of needles in the set.
func (s *NeedleSet) Len() int { return len(s.needles) }

// Keys returns, sorted, the keys that have at least one needle.
func (s *NeedleSet) Keys() []string {
	seen := map[string]bool{}
	var out []string
	for _, k := range s.owner {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// NeedlesOf returns how many needles key has in the set.
func (s *NeedleSet) NeedlesOf(key string) int {
	n := 0
	for _, k := range s.owner {
		if k == key {
			n++
		}
	}
	return n
}

func bloomHash(p uint64, bits int) uint64 { return (p * 0x9E3779B97F4A7C15) >> (64 - bits) }

// ScanReport is the result of scanning a store's bytes for a NeedleSet.
type ScanReport struct {
	Method       string         `json:"method"` // what was scanned and how
	Files        int            `json:"files"`  // files (or relations, segments) scanned
	Bytes        int64          `json:"bytes"`  // bytes scanned
	Found        map[string]int `json:"found"`  // per key: distinct needles found (keys with none are absent)
	NeedlesFound int            `json:"needles_found"`
}

// FoundKeys returns the number of keys with at least one needle found.
func (r ScanReport) FoundKeys() int { return len(r.Found) }

// Scanner accumulates a scan over several byte streams.
type Scanner struct {
	set *NeedleSet
	hit []bool
	rep ScanReport
	buf []byte // read buffer, allocated once per Scanner
	// With track set, search appends to fresh the index of every needle it
	// finds (DropShared attributes them to the record it scanned).
	track bool
	fresh []int
}

// NewScanner starts a scan for set.
func NewScanner(set *NeedleSet, method string) *Scanner {
	return &Scanner{set: set, hit: make([]bool, set.Len()), rep: ScanReport{Method: method}}
}

// Scan reads r to the end, looking for needles. Needles that straddle two
// reads are found; needles that straddle two calls to Scan are not (each call
// is one file).
func (sc *Scanner) Scan(ctx context.Context, r io.Reader) error {
	sc.rep.Files++
	if sc.buf == nil {
		sc.buf = make([]byte, 1<<20)
	}
	buf := sc.buf
	carry := 0
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := io.ReadFull(r, buf[carry:])
		total := carry + n
		sc.rep.Bytes += int64(n)
		final := err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF)
		if err != nil && !final {
			return err
		}
		limit := total
		if !final {
			limit = total - max(sc.set.maxLen, 1) + 1 // an empty set keeps nothing back
		}
		sc.search(buf[:total], limit)
		if final {
			return nil
		}
		keep := total - limit
		copy(buf, buf[limit:total])
		carry = keep
	}
}

// ScanBytes looks for needles in b, counted as one file.
func (sc *Scanner) ScanBytes(b []byte) {
	sc.rep.Files++
	sc.rep.Bytes += int64(len(b))
	sc.search(b, len(b))
}

// search looks for needles starting at offsets [0, limit) of b.
func (sc *Scanner) search(b []byte, limit int) {
	s := sc.set
	if len(s.needles) == 0 {
		return
	}
	// An anchor at offset i is a needle starting at i - anchor; only starts
	// in [0, limit) are this call's (later ones come again in the next).
	bloom, shift := s.bloom, 64-s.bits
	for i := 0; i < limit+s.maxAnch && i+8 <= len(b); i++ {
		p := binary.LittleEndian.Uint64(b[i:])
		h := (p * 0x9E3779B97F4A7C15) >> shift // bloomHash, inlined
		if bloom[h>>6]&(1<<(h&63)) == 0 {
			continue
		}
		for _, idx := range s.byAnchor[p] {
			start := i - s.anchor[idx]
			if start < 0 || start >= limit || sc.hit[idx] {
				continue
			}
			if bytes.HasPrefix(b[start:], s.needles[idx]) {
				sc.hit[idx] = true
				if sc.track {
					sc.fresh = append(sc.fresh, idx)
				}
			}
		}
	}
}

// ScanFile scans one file. A file that does not exist is skipped (a -wal or
// -journal file is often absent) and not counted. The file is read through a
// descriptor held for the life of the process, never closed after the scan:
// see fdcache.go for why closing it could corrupt a SQLite database.
func (sc *Scanner) ScanFile(ctx context.Context, path string) error {
	f, size, err := openHeld(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("scan %s: %w", path, err)
	}
	if err := sc.Scan(ctx, io.NewSectionReader(f, 0, size)); err != nil {
		return fmt.Errorf("scan %s: %w", path, err)
	}
	return nil
}

// Report finishes the scan, and lets go of held files that were deleted or
// replaced meanwhile (see fdcache.go).
func (sc *Scanner) Report() ScanReport {
	releaseGone()
	r := sc.rep
	r.Found = map[string]int{}
	for i, h := range sc.hit {
		if h {
			r.Found[sc.set.owner[i]]++
			r.NeedlesFound++
		}
	}
	return r
}

// ScanFiles scans the given files for set.
func ScanFiles(ctx context.Context, set *NeedleSet, method string, paths ...string) (ScanReport, error) {
	sc := NewScanner(set, method)
	for _, p := range paths {
		if err := sc.ScanFile(ctx, p); err != nil {
			return ScanReport{}, err
		}
	}
	return sc.Report(), nil
}
