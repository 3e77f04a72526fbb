package sqlitex

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
)

// randomPage returns n bytes of a page and which of them are used: runs of
// used bytes (structure and cells: any content) and of unused bytes (zero
// but for a non-zero byte now and then, as left-over bytes are).
func randomPage(rng *rand.Rand, n int) (d []byte, used []bool) {
	d, used = make([]byte, n), make([]bool, n)
	for j := 0; j < n; {
		run := 1 + rng.IntN(64)
		u := rng.IntN(2) == 0
		for k := j; k < min(j+run, n); k++ {
			used[k] = u
			switch {
			case u:
				d[k] = byte(rng.IntN(256))
			case rng.IntN(40) == 0:
				d[k] = byte(1 + rng.IntN(255))
			}
		}
		j += run
	}
	return d, used
}

// marks is used as the auditor keeps it: 1 for a used byte, 0 for an unused one.
func marks(used []bool) []byte {
	b := make([]byte, len(used))
	for i, u := range used {
		if u {
			b[i] = 1
		}
	}
	return b
}

// The audit's per-page helpers find what testing each byte in turn finds:
// every maximal run of unused bytes, once, in order; the non-zero bytes
// among them; the first and last non-zero byte of a slice.
func TestUnusedRunsMatchBytewise(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 4096))
	for round := 0; round < 5000; round++ {
		n := rng.IntN(80)
		if round%10 == 0 {
			n = 4096
		}
		d, used := randomPage(rng, n)
		var wantUnused, wantNonZero int64
		for j := range d {
			if !used[j] {
				wantUnused++
				if d[j] != 0 {
					wantNonZero++
				}
			}
		}
		var unused, nz int64
		prev := 0
		eachUnused(marks(used), func(from, to int) {
			if from < prev || from >= to || to > n {
				t.Fatalf("round %d: run [%d, %d) after %d in %d bytes", round, from, to, prev, n)
			}
			for k := from; k < to; k++ {
				if used[k] {
					t.Fatalf("round %d: run [%d, %d) holds used byte %d", round, from, to, k)
				}
			}
			if from > 0 && !used[from-1] || to < n && !used[to] {
				t.Fatalf("round %d: run [%d, %d) is not maximal", round, from, to)
			}
			prev = to
			unused += int64(to - from)
			nz += nonZeroBytes(d[from:to])
		})
		if unused != wantUnused || nz != wantNonZero {
			t.Fatalf("round %d: runs hold %d unused bytes, %d non-zero; want %d, %d", round, unused, nz, wantUnused, wantNonZero)
		}
		if got, want := nonZeroBytes(d), int64(bytes.Count(d, []byte{0})); got != int64(n)-want {
			t.Fatalf("round %d: nonZeroBytes = %d of %d bytes with %d zeros", round, got, n, want)
		}
		first, last := -1, -1
		for j, x := range d {
			if x != 0 {
				if first < 0 {
					first = j
				}
				last = j
			}
		}
		if f, l := firstNonZero(d), lastNonZero(d); f != first || l != last {
			t.Fatalf("round %d: first, last non-zero = %d, %d; want %d, %d", round, f, l, first, last)
		}
	}
}

// remnantBytewise is remnant as it was first written, a byte at a time:
// the bytes it marks used and counts as a remnant.
func remnantBytewise(d []byte, used []bool) int64 {
	first, last := -1, -1
	for j := range d {
		if !used[j] && d[j] != 0 {
			if first < 0 {
				first = j
			}
			last = j
		}
	}
	if first < 0 || last-first+1 > maxRemnant {
		return 0
	}
	for j := first; j <= last; j++ {
		if used[j] {
			return 0
		}
	}
	for j := first; j <= last; j++ {
		used[j] = true
	}
	return int64(last - first + 1)
}

// staleCellsBytewise is staleCells as it was first written.
func staleCellsBytewise(d []byte, used []bool, vlen int) int64 {
	n := int64(0)
	for j := 0; j < len(d); j++ {
		if used[j] || d[j] == 0 {
			continue
		}
		end := j
		for end < len(d) && !used[end] && d[end] != 0 {
			end++
		}
		if staleCell(d[j:end], vlen) {
			for k := j; k < end; k++ {
				used[k] = true
			}
			n += int64(end - j)
		}
		j = end
	}
	return n
}

// remnant and staleCells mark and count what they did when they tested
// each byte in turn.
func TestRemnantAndStaleCellsMatchBytewise(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8192))
	remnants := 0
	for round := 0; round < 5000; round++ {
		n := rng.IntN(60)
		if round%10 == 0 {
			n = 4096
		}
		d, used := randomPage(rng, n)
		a := &auditor{n: 100, ones: bytes.Repeat([]byte{1}, n)}
		m := marks(used)
		a.remnant(d, m)
		ref := slices.Clone(used)
		want := remnantBytewise(d, ref)
		if want > 0 {
			remnants++
		}
		if a.fs.Remnants != want || a.fs.RemnantPages != min(want, 1) || !bytes.Equal(m, marks(ref)) {
			t.Fatalf("round %d: remnant counted %d bytes on %d pages; want %d", round, a.fs.Remnants, a.fs.RemnantPages, want)
		}

		vlen := 1 + rng.IntN(9)
		a = &auditor{n: 100, ones: bytes.Repeat([]byte{1}, n)}
		m = marks(used)
		a.staleCells(d, m, vlen)
		ref = slices.Clone(used)
		if want := staleCellsBytewise(d, ref, vlen); a.fs.StaleCells != want || !bytes.Equal(m, marks(ref)) {
			t.Fatalf("round %d: staleCells counted %d bytes; want %d", round, a.fs.StaleCells, want)
		}
	}
	if remnants == 0 {
		t.Fatal("no round had a remnant: the test does not test remnant")
	}
}
