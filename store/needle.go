package store

import (
	"encoding/binary"
	"math"
)

// Needle sizes. A text or vector encoding is tiled with windows of
// WindowSize bytes that start every WindowStride bytes, plus one that ends
// at the end of the content, so that every byte lies in some window and any
// contiguous run of FragmentBytes bytes of the content contains a whole
// window: a fragment of the record at least that long that survives
// anywhere in the scanned files is found. Windows shorter than MinNeedle
// bytes are not used: they would match by chance.
const (
	WindowSize   = 32
	WindowStride = 8
	// FragmentBytes is the length from which a surviving contiguous
	// fragment is guaranteed to contain a whole window: a run of
	// WindowSize+WindowStride-1 bytes holds a window start among any
	// WindowStride consecutive offsets, and the window after it.
	FragmentBytes = WindowSize + WindowStride - 1
	MinNeedle     = 16
	// MaxWindows caps the windows of one field of one record (1<<16 windows
	// tile 512 KiB). Of longer content, evenly spaced blocks are tiled and
	// its coverage (Evidence.CoveredBytes) is less than its size: the
	// certificate then says so and does not claim the physical level.
	MaxWindows    = 1 << 16
	capBlock      = 64 // windows per evenly spaced block when MaxWindows caps a field
	minByteValues = 6  // windows with fewer distinct byte values (zero padding, repeated characters) are skipped
)

// Windows cuts b into needles (see Tile).
func Windows(b []byte) [][]byte {
	w, _ := Tile(b)
	return w
}

// Tile cuts b into needles: windows of WindowSize bytes every WindowStride
// bytes, and a last one that ends at the end of b; content of MinNeedle to
// WindowSize bytes is one window. covered is the number of bytes of b that
// lie in a window position taken: all of b unless b is shorter than
// MinNeedle (none) or needs more than MaxWindows windows (then evenly
// spaced blocks of consecutive windows are taken, and the bytes between the
// blocks are not covered). A window
// position whose bytes have fewer than 6 distinct values is covered but
// yields no needle: it carries no information that could tell it apart
// from padding. The windows share one copy of b.
func Tile(b []byte) (windows [][]byte, covered int) {
	if len(b) < MinNeedle {
		return nil, 0
	}
	if len(b) <= WindowSize {
		if distinct(b) < minByteValues {
			return nil, len(b)
		}
		return [][]byte{clone(b)}, len(b)
	}
	last := len(b) - WindowSize
	n := last/WindowStride + 1 // starts 0, WindowStride, … ≤ last
	if last%WindowStride != 0 {
		n++ // and last
	}
	start := func(i int) int { return min(i*WindowStride, last) }
	starts := make([]int, 0, min(n, MaxWindows))
	if n <= MaxWindows {
		for i := 0; i < n; i++ {
			starts = append(starts, start(i))
		}
		covered = len(b)
	} else {
		// Evenly spaced blocks of capBlock consecutive windows: within a
		// block the tiling and its fragment guarantee hold; the bytes
		// between blocks are not covered.
		blocks := MaxWindows / capBlock
		end := -1 // last byte covered so far
		for j := 0; j < blocks; j++ {
			first := int(int64(j) * int64(n-capBlock) / int64(blocks-1))
			for i := first; i < first+capBlock; i++ {
				s := start(i)
				if s+WindowSize-1 <= end {
					continue // in the previous block already
				}
				starts = append(starts, s)
				covered += s + WindowSize - 1 - max(end, s-1)
				end = s + WindowSize - 1
			}
		}
	}
	buf := clone(b)
	windows = make([][]byte, 0, len(starts))
	for _, s := range starts {
		w := buf[s : s+WindowSize : s+WindowSize]
		if distinct(w) < minByteValues {
			continue
		}
		windows = append(windows, w)
	}
	return windows, covered
}

// AddWindows tiles b, one field of the record (its text, its vector's
// stored encoding), into e's needles and counts its size and coverage.
func (e *Evidence) AddWindows(b []byte) {
	w, covered := Tile(b)
	e.Needles = append(e.Needles, w...)
	e.RecordBytes += len(b)
	e.CoveredBytes += covered
}

// AddUnsearchable is AddWindows for a field the store keeps in a form the
// byte scan cannot match (compressed, say): its windows are still searched
// for (a copy of the bytes as written may survive elsewhere), but none of
// its bytes counts as covered, and UnsearchableBytes says why, so the
// physical level is not claimed for the record.
func (e *Evidence) AddUnsearchable(b []byte) {
	w, _ := Tile(b)
	e.Needles = append(e.Needles, w...)
	e.RecordBytes += len(b)
	e.UnsearchableBytes += len(b)
}

// Float32LE encodes v as consecutive little-endian IEEE-754 float32 values,
// the encoding sqlite-vec and pgvector's binary format (per element) use.
func Float32LE(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

func distinct(b []byte) int {
	var seen [256]bool
	n := 0
	for _, c := range b {
		if !seen[c] {
			seen[c] = true
			n++
		}
	}
	return n
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }
