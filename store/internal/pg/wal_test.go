package pg

import (
	"fmt"
	"slices"
	"testing"
)

// seg names segment n of timeline tli as pg_wal does.
func seg(tli, n int) string { return fmt.Sprintf("%08X%08X%08X", tli, n>>8, n&0xFF) }

func listing(names ...string) []walFile {
	out := make([]walFile, 0, len(names))
	for _, n := range names {
		out = append(out, walFile{Name: n, Size: 16 << 20})
	}
	return out
}

// After the first switch out of upTo and a checkpoint, the files named
// after upTo are the ones the WAL must pass (the segment being written,
// recycled and new ones ahead of it); those named upTo or before are
// retained. A segment number past 0xFF carries into the log part of the
// name, and the names still sort in segment order; a file of an earlier
// timeline, which the WAL of this one never writes, counts as retained.
func TestWALPlan(t *testing.T) {
	upTo := seg(1, 0x1FE)
	files := listing(seg(1, 0x203), seg(1, 0x1F0), seg(1, 0x1FE), seg(1, 0x1FF), seg(1, 0x200), seg(1, 0x201))
	ahead, retained := walPlan(files, upTo)
	if want := []string{seg(1, 0x1FF), seg(1, 0x200), seg(1, 0x201), seg(1, 0x203)}; !slices.Equal(ahead, want) {
		t.Errorf("ahead = %v, want %v", ahead, want)
	}
	if want := []string{seg(1, 0x1F0), seg(1, 0x1FE)}; !slices.Equal(retained, want) {
		t.Errorf("retained = %v, want %v", retained, want)
	}

	upTo2 := seg(2, 0x10)
	ahead, retained = walPlan(listing(seg(1, 0x40), seg(2, 0x11), seg(2, 0x12)), upTo2)
	if want := []string{seg(2, 0x11), seg(2, 0x12)}; !slices.Equal(ahead, want) {
		t.Errorf("after a timeline switch: ahead = %v, want %v", ahead, want)
	}
	if want := []string{seg(1, 0x40)}; !slices.Equal(retained, want) {
		t.Errorf("after a timeline switch: retained = %v, want %v (a file of the earlier timeline is never written again)", retained, want)
	}

	ahead, retained = walPlan(nil, upTo)
	if len(ahead) != 0 || len(retained) != 0 {
		t.Errorf("empty listing: ahead %v, retained %v", ahead, retained)
	}
}

// A retained file missing from a later listing was let go by the server;
// files that appear are not a release (recycling adds names ahead).
func TestWALReleased(t *testing.T) {
	retained := []string{seg(1, 0x10), seg(1, 0x11)}
	if released(retained, listing(seg(1, 0x10), seg(1, 0x11), seg(1, 0x20), seg(1, 0x21))) {
		t.Error("every retained file is still listed, yet released")
	}
	if !released(retained, listing(seg(1, 0x11), seg(1, 0x20))) {
		t.Error("a retained file is gone, yet not released")
	}
	if released(nil, listing(seg(1, 0x20))) {
		t.Error("nothing retained, yet released")
	}
}
