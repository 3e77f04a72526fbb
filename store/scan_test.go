package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestWindows(t *testing.T) {
	if w := Windows([]byte("too short")); w != nil {
		t.Errorf("Windows(short) = %q", w)
	}
	if w := Windows(bytes.Repeat([]byte{0}, 100)); len(w) != 0 {
		t.Errorf("zero bytes yielded %d needles", len(w))
	}
	text := []byte("The quick brown fox jumps over the lazy dog; pack my box with five dozen liquor jugs!")
	w := Windows(text)
	if len(w) < 2 {
		t.Fatalf("got %d windows", len(w))
	}
	if !bytes.HasSuffix(text, w[len(w)-1]) {
		t.Errorf("last window does not end at the end of the content")
	}
	long := make([]byte, 100000)
	fill(long, 1)
	if n := len(Windows(long)); n != MaxWindows {
		t.Errorf("long content: %d windows, want %d", n, MaxWindows)
	}
}

// A needle is found wherever it lies in a file, including across the
// scanner's internal read boundary, and only its owner is reported.
func TestScanFindsNeedlesAcrossReads(t *testing.T) {
	data := make([]byte, 3<<20)
	fill(data, 3)
	needle := func(at int) []byte { return append([]byte(nil), data[at:at+WindowSize]...) }
	ev := map[string]*Evidence{
		"start":    {Needles: [][]byte{needle(0)}},
		"boundary": {Needles: [][]byte{needle(1<<20 - 10)}},
		"end":      {Needles: [][]byte{needle(len(data) - WindowSize)}},
		"absent":   {Needles: [][]byte{[]byte("this needle is in no file at all!")}},
	}
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := ScanFiles(context.Background(), NewNeedleSet(ev), "test", path, path+"-missing")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"start", "boundary", "end"} {
		if rep.Found[k] != 1 {
			t.Errorf("%s: found %d, want 1", k, rep.Found[k])
		}
	}
	if rep.Found["absent"] != 0 || rep.Files != 1 || rep.Bytes != int64(len(data)) {
		t.Errorf("report %+v", rep)
	}
}

func TestDropShared(t *testing.T) {
	ev := map[string]*Evidence{"a": {Needles: [][]byte{[]byte("unique window of record a, 32 b!"), []byte("boilerplate shared by others....")}}}
	others := func(fn func([]byte) error) error { return fn([]byte("xx boilerplate shared by others.... yy")) }
	if err := DropShared(context.Background(), ev, others); err != nil {
		t.Fatal(err)
	}
	if len(ev["a"].Needles) != 1 || ev["a"].Shared != 1 || string(ev["a"].Needles[0]) != "unique window of record a, 32 b!" {
		t.Errorf("after DropShared: %q shared=%d", ev["a"].Needles, ev["a"].Shared)
	}
}

func fill(b []byte, seed uint64) {
	r := rand.New(rand.NewPCG(seed, seed+1))
	for i := 0; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], r.Uint64())
	}
}

// A scanned file that is later deleted is not kept alive by the scanner.
func TestScanLetsGoOfDeletedFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seg")
	if err := os.WriteFile(path, []byte("some bytes of a WAL segment, 32+ long"), 0o600); err != nil {
		t.Fatal(err)
	}
	set := NewNeedleSet(map[string]*Evidence{"k": {Needles: [][]byte{[]byte("bytes of a WAL segment")}}})
	if _, err := ScanFiles(context.Background(), set, "t", path); err != nil {
		t.Fatal(err)
	}
	os.Remove(path)
	if _, err := ScanFiles(context.Background(), set, "t"); err != nil {
		t.Fatal(err)
	}
	fds.Lock()
	_, held := fds.m[path]
	fds.Unlock()
	if held {
		t.Errorf("the scanner still holds a descriptor of a deleted file")
	}
}

// Needles that begin with zero bytes (vectors with zero components) and
// needles of assorted lengths are found exactly where a naive search finds
// them, at the start, the end and across every read boundary; and scanning
// zero-filled bytes for thousands of such needles stays fast.
func TestScanMatchesNaiveSearch(t *testing.T) {
	rng := rand.NewChaCha8([32]byte{7, 9})
	data := make([]byte, 3<<20+12345)
	fill(data, 5)
	for off := 0; off < len(data); off += 64 << 10 { // zero-filled stretches
		clear(data[off : off+min(8<<10, len(data)-off)])
	}
	ev := map[string]*Evidence{}
	plant := func(key string, at, n, zeros int) {
		nd := make([]byte, n)
		rng.Read(nd[zeros:])
		copy(data[at:], nd)
		ev[key] = &Evidence{Needles: [][]byte{nd}}
	}
	var ats []int
	for _, b := range []int{0, 1 << 20, 2 << 20, 3 << 20} {
		for d := -40; d <= 8; d += 3 {
			if at := b + d; at >= 0 {
				ats = append(ats, at)
			}
		}
	}
	ats = append(ats, len(data)-WindowSize, len(data)-MinNeedle)
	for i, at := range ats {
		n := []int{WindowSize, MinNeedle, 24, 9}[i%4]
		if at+n > len(data) {
			n = len(data) - at
		}
		plant(fmt.Sprintf("planted-%d", i), at, n, []int{0, 8, 16, 3}[i%4]%(n-6))
	}
	for i := 0; i < 3000; i++ { // absent: a zero prefix, then random bytes
		nd := make([]byte, WindowSize)
		rng.Read(nd[8+i%9:])
		ev[fmt.Sprintf("absent-%d", i)] = &Evidence{Needles: [][]byte{nd}}
	}
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	rep, err := ScanFiles(context.Background(), NewNeedleSet(ev), "test", path)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("scan of %d bytes took %v", len(data), d)
	}
	for k, e := range ev {
		want := 0 // absent needles: 15+ random bytes, in no file
		if strings.HasPrefix(k, "planted") && bytes.Contains(data, e.Needles[0]) {
			want = 1
		}
		if rep.Found[k] != want {
			t.Errorf("%s: found %d, naive search %d", k, rep.Found[k], want)
		}
	}
}

// A set without needles (every record absent, or every window shared)
// scans a reader longer than one read without failing, and finds nothing.
func TestScanEmptySetAcrossReads(t *testing.T) {
	sc := NewScanner(NewNeedleSet(map[string]*Evidence{}), "test")
	if err := sc.Scan(context.Background(), bytes.NewReader(make([]byte, 3<<20+5))); err != nil {
		t.Fatal(err)
	}
	if rep := sc.Report(); rep.Bytes != 3<<20+5 || len(rep.Found) != 0 {
		t.Fatalf("report = %d bytes, found %v", rep.Bytes, rep.Found)
	}
}
