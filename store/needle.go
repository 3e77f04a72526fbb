package store

import (
	"encoding/binary"
	"math"
)

// Needle sizes. A text or vector is cut into windows of WindowSize bytes;
// a record is found when any one of its windows is found. Windows shorter
// than MinNeedle bytes are not used: they would match by chance.
const (
	WindowSize    = 32
	MinNeedle     = 16
	MaxWindows    = 64 // per record and field; longer content is sampled evenly
	minByteValues = 6  // windows with fewer distinct byte values (zero padding, repeated characters) are skipped
)

// Windows cuts b into needles: consecutive WindowSize-byte windows, plus a
// last window that ends at the end of b, sampled evenly down to MaxWindows.
// Content shorter than MinNeedle yields none.
func Windows(b []byte) [][]byte {
	if len(b) < MinNeedle {
		return nil
	}
	if len(b) <= WindowSize {
		if distinct(b) < minByteValues {
			return nil
		}
		return [][]byte{clone(b)}
	}
	var starts []int
	for i := 0; i+WindowSize <= len(b); i += WindowSize {
		starts = append(starts, i)
	}
	if last := len(b) - WindowSize; starts[len(starts)-1] != last {
		starts = append(starts, last)
	}
	if len(starts) > MaxWindows {
		sampled := make([]int, 0, MaxWindows)
		for i := 0; i < MaxWindows; i++ {
			sampled = append(sampled, starts[i*(len(starts)-1)/(MaxWindows-1)])
		}
		starts = sampled
	}
	out := make([][]byte, 0, len(starts))
	for _, s := range starts {
		w := b[s : s+WindowSize]
		if distinct(w) < minByteValues {
			continue
		}
		out = append(out, clone(w))
	}
	return out
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
