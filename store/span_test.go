package store

import (
	"bytes"
	"context"
	"testing"
)

// A window that only the end of one live record followed by the start of
// another (or by zero fill) can form is shared: vector stores keep their
// records back to back, and such a window was seen in a sqlite-vec file
// after a complete erasure. A window that no boundary can form is kept.
func TestDropSharedCountsWindowsAcrossBoundaries(t *testing.T) {
	a := Float32LE([]float32{0.5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.07, -0.26})    // live, ends with 0.07 -0.26
	b := Float32LE([]float32{0, 0.31, 0, 0, 0.11, 0, 0, 0, 0, 0, 0, 0.9})     // live, starts with 0 0.31
	c := Float32LE([]float32{0.2, 0.4, 0, 0, 0, 0, 0.17, 0.17, 0, 0, 0, 0.8}) // live
	spanAB := Float32LE([]float32{0, 0, 0, 0, 0.07, -0.26, 0, 0.31})          // a's last 6 floats, b's first 2
	spanZero := Float32LE([]float32{0.07, -0.26, 0, 0, 0, 0, 0, 0})           // a's last 2 floats, zero fill
	alone := Float32LE([]float32{0.44, 0.12, 0.9, -0.5, 0.25, 0.37, 0.61, -0.11})
	erased := append(append(append([]byte(nil), spanAB...), spanZero...), alone...)
	e := &Evidence{}
	e.AddWindows(erased)
	ev := map[string]*Evidence{"x": e}
	before := append([][]byte(nil), e.Needles...)
	others := func(fn func(string, []byte) error) error {
		for _, r := range [][]byte{a, b, c} {
			if err := fn("", r); err != nil {
				return err
			}
		}
		return nil
	}
	if err := DropShared(context.Background(), ev, others); err != nil {
		t.Fatal(err)
	}
	// Reference: a needle is formable if some split puts a record's end (or
	// zeros) before and a record's start (or zeros) after, or a record
	// holds it whole.
	ends := func(p []byte) bool {
		if bytes.Count(p, []byte{0}) == len(p) {
			return true
		}
		for _, r := range [][]byte{a, b, c} {
			if bytes.HasSuffix(r, p) {
				return true
			}
		}
		return false
	}
	starts := func(p []byte) bool {
		if bytes.Count(p, []byte{0}) == len(p) {
			return true
		}
		for _, r := range [][]byte{a, b, c} {
			if bytes.HasPrefix(r, p) {
				return true
			}
		}
		return false
	}
	formable := func(n []byte) bool {
		for _, r := range [][]byte{a, b, c} {
			if bytes.Contains(r, n) {
				return true
			}
		}
		for s := 1; s < len(n); s++ {
			if ends(n[:s]) && starts(n[s:]) {
				return true
			}
		}
		return false
	}
	var want [][]byte
	dropped := 0
	for _, n := range before {
		if formable(n) {
			dropped++
		} else {
			want = append(want, n)
		}
	}
	if dropped < 2 || len(want) < 3 {
		t.Fatalf("test corpus too weak: %d formable, %d not", dropped, len(want))
	}
	if e.Shared != dropped || len(e.Needles) != len(want) {
		t.Fatalf("shared %d, kept %d; want %d shared, %d kept", e.Shared, len(e.Needles), dropped, len(want))
	}
	if !bytes.Equal(e.Needles[len(e.Needles)-1], alone) {
		t.Errorf("the window nothing forms was dropped")
	}
	for i := range want {
		if !bytes.Equal(e.Needles[i], want[i]) {
			t.Errorf("kept needle %d = %x, want %x", i, e.Needles[i], want[i])
		}
	}
	// The two measured shapes are among the dropped: a's end + b's start,
	// and a's end + zero fill.
	for _, n := range [][]byte{spanAB, spanZero} {
		for _, k := range e.Needles {
			if bytes.Equal(k, n) {
				t.Errorf("needle %x kept, but a boundary forms it", n)
			}
		}
	}
	if len(e.SharedWith) != 0 {
		t.Errorf("SharedWith = %v: a boundary names no holder", e.SharedWith)
	}
}
