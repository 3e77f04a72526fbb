package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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
}

// Tiling: every byte of the content lies in a window, and every fragment
// of FragmentBytes bytes, wherever it starts, contains a whole window, for
// lengths around every stride and window boundary.
func TestTileCoversEveryFragment(t *testing.T) {
	for n := MinNeedle; n <= 3*WindowSize+2*WindowStride+1; n++ {
		b := make([]byte, n)
		fill(b, uint64(n))
		w, covered := Tile(b)
		if covered != n {
			t.Fatalf("len %d: covered %d", n, covered)
		}
		starts := map[int]bool{}
		for _, x := range w {
			starts[bytes.Index(b, x)] = true
		}
		for i := 0; i < n; i++ {
			in := false
			for s := range starts {
				in = in || s <= i && i < s+len(w[0])
			}
			if !in {
				t.Fatalf("len %d: byte %d is in no window", n, i)
			}
		}
		for a := 0; a+FragmentBytes <= n; a++ {
			frag := b[a : a+FragmentBytes]
			found := false
			for _, x := range w {
				found = found || bytes.Contains(frag, x)
			}
			if !found {
				t.Fatalf("len %d: the fragment at %d of %d bytes contains no window", n, a, FragmentBytes)
			}
		}
	}
}

// Content that would need more than MaxWindows windows is sampled evenly,
// and the coverage says how much of it the windows hold.
func TestTileCapReportsCoverage(t *testing.T) {
	fits := make([]byte, (MaxWindows-1)*WindowStride+WindowSize)
	fill(fits, 1)
	if w, c := Tile(fits); len(w) != MaxWindows || c != len(fits) {
		t.Errorf("%d bytes: %d windows covering %d bytes, want %d covering all", len(fits), len(w), c, MaxWindows)
	}
	long := make([]byte, 2*len(fits))
	fill(long, 2)
	w, c := Tile(long)
	if len(w) != MaxWindows {
		t.Errorf("long content: %d windows, want %d", len(w), MaxWindows)
	}
	if !bytes.HasPrefix(long, w[0]) || !bytes.HasSuffix(long, w[len(w)-1]) {
		t.Errorf("long content: the sample does not span the content")
	}
	// Blocks of tiled windows cover about half of twice the content.
	if c >= len(long)*6/10 || c < len(long)*4/10 {
		t.Errorf("long content of %d bytes: covered %d", len(long), c)
	}
	e := &Evidence{}
	e.AddWindows(long)
	e.AddWindows([]byte("short"))
	if e.RecordBytes != len(long)+5 || e.CoveredBytes != c || len(e.Needles) != MaxWindows {
		t.Errorf("AddWindows: record %d covered %d needles %d", e.RecordBytes, e.CoveredBytes, len(e.Needles))
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
	ev := map[string]*Evidence{"a": {Needles: [][]byte{[]byte("unique window of record a, 32 b!"), []byte("boilerplate shared by others...."), []byte("copied by record c only, 32 b..!")}}}
	others := func(fn func(string, []byte) error) error {
		for _, r := range []struct{ k, b string }{
			{"b", "xx boilerplate shared by others.... yy"},
			{"c", "boilerplate shared by others....copied by record c only, 32 b..!"},
			{"d", "nothing of a's"},
			{"", "unique window of record a, 32 b!"}, // shared, no holder named
		} {
			if err := fn(r.k, []byte(r.b)); err != nil {
				return err
			}
		}
		return nil
	}
	if err := DropShared(context.Background(), ev, others); err != nil {
		t.Fatal(err)
	}
	a := ev["a"]
	if len(a.Needles) != 0 || a.Shared != 3 {
		t.Errorf("after DropShared: %q shared=%d", a.Needles, a.Shared)
	}
	if len(a.SharedWith) != 2 || a.SharedWith["b"] != 1 || a.SharedWith["c"] != 2 || a.SharedWithMore != 0 {
		t.Errorf("SharedWith = %v (+%d), want b:1 c:2", a.SharedWith, a.SharedWithMore)
	}
}

// DropShared names at most MaxSharedWith holders, those holding the most.
func TestDropSharedNamesTopHolders(t *testing.T) {
	b := make([]byte, 400)
	fill(b, 9)
	e := &Evidence{}
	e.AddWindows(b)
	n := len(e.Needles)
	ev := map[string]*Evidence{"a": e}
	others := func(fn func(string, []byte) error) error {
		for i := 0; i < MaxSharedWith+3; i++ {
			// holder i holds the first 40+8i bytes: 2+i windows
			if err := fn(fmt.Sprintf("h%02d", i), b[:40+8*i]); err != nil {
				return err
			}
		}
		return nil
	}
	if err := DropShared(context.Background(), ev, others); err != nil {
		t.Fatal(err)
	}
	if e.SharedWithMore != 3 || len(e.SharedWith) != MaxSharedWith || e.SharedWith["h00"] != 0 || e.SharedWith[fmt.Sprintf("h%02d", MaxSharedWith+2)] != MaxSharedWith+4 {
		t.Errorf("SharedWith = %v (+%d)", e.SharedWith, e.SharedWithMore)
	}
	if e.Shared != MaxSharedWith+4 || len(e.Needles) != n-e.Shared {
		t.Errorf("shared %d, needles %d of %d", e.Shared, len(e.Needles), n)
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
	path := filepath.Join(t.TempDir(), "seg-wal") // held: a name SQLite gives its WAL
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
	rep, err := ScanFiles(context.Background(), NewNeedleSet(ev), "test", path)
	if err != nil {
		t.Fatal(err)
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

// Every gram a tier indexes passes the tier's bloom filter (one that did not
// would hide its needles from the scan), the filter has at least 8 bits per
// entry, and each entry's dlt puts its check bytes where coff does, ending
// within checkEnd of the probed position (search compares them there
// without bounds): for sets of every bloom size, at one stride and several.
func TestTierIndexInvariants(t *testing.T) {
	var sets []*NeedleSet
	for _, count := range []int{1, 300, 3000, 30000} {
		e := &Evidence{}
		for i := range count {
			nd := make([]byte, WindowSize)
			fill(nd, uint64(i))
			e.Needles = append(e.Needles, nd)
		}
		sets = append(sets, NewNeedleSet(map[string]*Evidence{"k": e}))
	}
	for _, c := range [][2]int{{400, 40}, {100, 200}} {
		ev, _ := textNeedles(c[0], c[1])
		sets = append(sets, NewNeedleSet(ev))
	}
	for _, set := range sets {
		for _, tr := range set.tiers {
			if bits := 64 * len(tr.bloom); bits < 8*len(tr.ents) {
				t.Errorf("%d needles, stride %d: %d bloom bits for %d entries", set.Len(), tr.k, bits, len(tr.ents))
			}
			for _, s := range tr.slots {
				if s.n == 0 {
					continue
				}
				if w, m := bloomBits(s.gram, tr.bshift); tr.bloom[w]&m != m {
					t.Fatalf("%d needles, stride %d: gram %#x is indexed but does not pass the bloom filter", set.Len(), tr.k, s.gram)
				}
				// Runs (groupRuns) tile the gram's entries; a run's entries
				// share the run key and are ordered by window sum.
				ents := tr.ents[s.lo : s.lo+s.n]
				for i := 0; i < len(ents); {
					n := int(ents[i].run)
					if n == 0 || i+n > len(ents) {
						t.Fatalf("%d needles, stride %d: a run of %d at entry %d of %d", set.Len(), tr.k, n, i, len(ents))
					}
					for j := i + 1; j < i+n; j++ {
						if !sameRun(&ents[i], &ents[j]) || ents[j].sum < ents[j-1].sum {
							t.Fatalf("%d needles, stride %d: entry %d does not belong to the run at %d", set.Len(), tr.k, j, i)
						}
					}
					i += n
				}
				for _, e := range ents {
					o := int(e.ent & (1<<offBits - 1))
					n := set.needles[e.ent>>offBits]
					if gramAt(n, o, tr.glen) != s.gram || o > tr.maxOff || int(e.dlt) != int(e.coff)-o || int(e.coff)+4 > min(len(n), checkEnd) {
						t.Fatalf("%d needles, stride %d: entry of needle %d at offset %d: check offset %d, dlt %d, needle of %d bytes", set.Len(), tr.k, e.ent>>offBits, o, e.coff, e.dlt, len(n))
					}
				}
			}
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

// tiledCorpus returns records of text-like content, each tiled into
// needles, and a file holding some records whole, fragments of
// FragmentBytes bytes of others, and random bytes and zero pages between.
func tiledCorpus(records, size, fileBytes int) (map[string]*Evidence, [][]byte, []byte) {
	rng := rand.New(rand.NewPCG(11, 12))
	const alpha = "abcdefghijklmnopqrstuvwxyz ,.ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	ev := map[string]*Evidence{}
	content := make([][]byte, records)
	for i := range content {
		c := make([]byte, size+rng.IntN(size))
		for j := range c {
			c[j] = alpha[rng.IntN(len(alpha))]
		}
		content[i] = c
		e := &Evidence{}
		e.AddWindows(c)
		ev[fmt.Sprintf("r%05d", i)] = e
	}
	data := make([]byte, fileBytes)
	fill(data, 13)
	for off := 0; off+4096 <= len(data); off += 64 << 10 {
		clear(data[off : off+4096])
	}
	at := 5000
	for i := 0; i < records && at < len(data)-2*size-100; i += 3 {
		var part []byte
		switch i % 2 {
		case 0:
			part = content[i]
		default:
			o := rng.IntN(len(content[i]) - FragmentBytes)
			part = content[i][o : o+FragmentBytes]
		}
		at += copy(data[at:], part) + 50 + rng.IntN(5000)
	}
	return ev, content, data
}

// Tiled needles of many records are found exactly where a search through
// an index of every WindowSize-byte substring of the file finds them, and
// a record of which only a FragmentBytes-byte fragment is in the file is
// found.
func TestScanTiledMatchesIndex(t *testing.T) {
	ev, content, data := tiledCorpus(300, 1500, 2<<20+777)
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := ScanFiles(context.Background(), NewNeedleSet(ev), "test", path)
	if err != nil {
		t.Fatal(err)
	}
	index := map[string]bool{}
	for i := 0; i+WindowSize <= len(data); i++ {
		index[string(data[i:i+WindowSize])] = true
	}
	for k, e := range ev {
		want := 0
		for _, n := range e.Needles {
			if index[string(n)] {
				want++
			}
		}
		if rep.Found[k] != want {
			t.Errorf("%s: found %d, index %d", k, rep.Found[k], want)
		}
	}
	for i := 0; i < len(content); i += 3 {
		if k := fmt.Sprintf("r%05d", i); rep.Found[k] == 0 && bytes.Contains(data, content[i][:FragmentBytes/2]) {
			t.Errorf("%s: a fragment of it is in the file but none of its needles was found", k)
		}
	}
	if rep.FoundKeys() < len(content)/3-5 {
		t.Errorf("found %d records, planted about %d", rep.FoundKeys(), len(content)/3)
	}
}

// BenchmarkScanTiled scans 16 MiB for 2,000 records of 1 to 2 KiB tiled
// into windows every WindowStride bytes (about 300,000 needles).
func BenchmarkScanTiled(b *testing.B) {
	ev, _, data := tiledCorpus(2000, 1024, 16<<20)
	set := NewNeedleSet(ev)
	b.ReportMetric(float64(set.Len()), "needles")
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sc := NewScanner(set, "bench")
		sc.ScanBytes(data)
		if sc.Report().NeedlesFound == 0 {
			b.Fatal("nothing found")
		}
	}
}

// RescanGone lists again only when a listed file went before it was read:
// b's bytes were moved to c (a rewrite renames a new file over an old one,
// or writes a new one and removes the old) after the first listing, and the
// second listing names c. Files that appear while none goes are not a
// reason to list again; files that keep going make it ErrBusy.
func TestRescanGoneFollowsMovedBytes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	content := []byte("a record's bytes, moved by a rewrite into a file the first listing did not name")
	a, b, c := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "c")
	if err := os.WriteFile(a, []byte("nothing of the record here"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, append([]byte("old file "), content...), 0o600); err != nil {
		t.Fatal(err)
	}
	ev := map[string]*Evidence{"k": {Key: "k", Needles: Windows(content)}}
	sc := NewScanner(NewNeedleSet(ev), "test")
	calls := 0
	list := func() ([]string, error) {
		calls++
		if calls == 1 {
			return []string{a, b}, nil
		}
		return []string{a, c}, nil
	}
	scan := func(p string) (bool, string, error) {
		if p == a && calls == 1 {
			// The rewrite runs now, after a was read, before b is.
			if err := os.Rename(b, c); err != nil {
				return false, "", err
			}
		}
		return sc.ScanFileGone(ctx, p)
	}
	n, err := RescanGone(ctx, list, scan)
	if err != nil {
		t.Fatal(err)
	}
	if rep := sc.Report(); rep.Found["k"] == 0 || n != 2 || calls != 2 {
		t.Fatalf("found %v after %d listings (%d calls), want the record found after 2", rep.Found, n, calls)
	}
	// New files appearing, none going: one listing.
	grow := 0
	appear := func() ([]string, error) {
		grow++
		p := filepath.Join(dir, fmt.Sprintf("new-%d", grow))
		return []string{a, p}, os.WriteFile(p, []byte("a newer write"), 0o600)
	}
	sc2 := NewScanner(NewNeedleSet(ev), "test")
	if n, err := RescanGone(ctx, appear, func(p string) (bool, string, error) { return sc2.ScanFileGone(ctx, p) }); err != nil || n != 1 {
		t.Fatalf("new files, none gone: %d listings, %v; want 1, nil", n, err)
	}
	// A listed file gone at every pass: ErrBusy.
	k := 0
	going := func() ([]string, error) {
		k++
		return []string{filepath.Join(dir, fmt.Sprintf("gone-%d", k))}, nil
	}
	if _, err := RescanGone(ctx, going, func(p string) (bool, string, error) { return sc2.ScanFileGone(ctx, p) }); !errors.Is(err, ErrBusy) {
		t.Fatalf("files that keep going: %v, want ErrBusy", err)
	}
}

// A save renames its temporary file onto a path already read (Redis:
// temp-<pid>.rdb onto dump.rdb): the temporary file is gone when it comes
// to be read, and the next listing names only the path read before, now
// another file, holding the bytes. RescanGone reads it again.
func TestRescanGoneRereadsAPathRenamedOnto(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	content := []byte("a record's bytes, written by a save into its temporary file, then renamed onto the dump")
	dump, temp := filepath.Join(dir, "dump.rdb"), filepath.Join(dir, "temp-1.rdb")
	if err := os.WriteFile(dump, []byte("the old dump: nothing of the record"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(temp, append([]byte("new dump "), content...), 0o600); err != nil {
		t.Fatal(err)
	}
	ev := map[string]*Evidence{"k": {Key: "k", Needles: Windows(content)}}
	sc := NewScanner(NewNeedleSet(ev), "test")
	listings := 0
	list := func() ([]string, error) {
		listings++
		ents, err := os.ReadDir(dir)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, e := range ents {
			out = append(out, filepath.Join(dir, e.Name())) // sorted: dump.rdb before temp-1.rdb
		}
		return out, nil
	}
	renamed := false
	scan := func(p string) (bool, string, error) {
		g, id, err := sc.ScanFileGone(ctx, p)
		if p == dump && !renamed {
			renamed = true // the save ends now, after the old dump was read, before its temporary file is
			if err := os.Rename(temp, dump); err != nil {
				return false, "", err
			}
		}
		return g, id, err
	}
	n, err := RescanGone(ctx, list, scan)
	if err != nil {
		t.Fatal(err)
	}
	if rep := sc.Report(); rep.Found["k"] == 0 || n != 2 {
		t.Fatalf("found %v after %d listings, want the record found in the new dump after 2", rep.Found, n)
	}
}

// A scanner told to stop once every needle is found (StopWhenAllFound)
// stops after the read that finds the last one and does not open the files
// after it, and finds what a whole scan finds. When a needle is in no file
// it reads every byte, as a scanner without the option always does. Both
// the sequential and the parallel read of a file are covered.
func TestScanStopsWhenAllFound(t *testing.T) {
	oldRead, oldPar := readSize, parallelMin
	defer func() { readSize, parallelMin = oldRead, oldPar }()
	readSize = 16 << 10 // hundreds of reads per file: a stopped scan reads few of them
	ctx := context.Background()
	dir := t.TempDir()
	data := make([]byte, 4<<20)
	fill(data, 21)
	files := []string{filepath.Join(dir, "first"), filepath.Join(dir, "second")}
	for _, p := range files {
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	needle := func(at int) []byte { return append([]byte(nil), data[at:at+WindowSize]...) }
	present := map[string]*Evidence{"key": {Needles: [][]byte{needle(100), needle(200)}}}
	absent := map[string]*Evidence{"key": {Needles: [][]byte{needle(100), []byte("this needle is in no file at all!")}}}
	scan := func(ev map[string]*Evidence, stop bool) ScanReport {
		t.Helper()
		sc := NewScanner(NewNeedleSet(ev), "test")
		if stop {
			sc.StopWhenAllFound()
		}
		for _, p := range files {
			if err := sc.ScanFile(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		return sc.Report()
	}
	whole := int64(len(files) * len(data))
	for _, c := range []struct {
		name string
		par  int
	}{{"sequential", 64 << 20}, {"parallel", 1 << 20}} {
		parallelMin = c.par
		// Sequentially the reads go in order: the scan stops after the
		// first. In parallel the worker that finds both needles in the
		// first read stops the others when it gets the CPU: on a loaded
		// machine they may have read the rest of the first file by then
		// (seen under CI), so only the second file is sure to be unread.
		rep := scan(present, true)
		if rep.Found["key"] != 2 || rep.NeedlesFound != 2 || !rep.Stopped || rep.Files != 1 || rep.Bytes > int64(len(data)) {
			t.Errorf("%s, stopping, every needle in the first file: %+v; want both found, stopped in the first file", c.name, rep)
		}
		if c.name == "sequential" && rep.Bytes >= int64(len(data)) {
			t.Errorf("sequential, stopping, every needle in the first read: read %d bytes; want fewer than the first file's %d", rep.Bytes, len(data))
		}
		if rep := scan(absent, true); rep.Found["key"] != 1 || rep.Stopped || rep.Files != 2 || rep.Bytes != whole {
			t.Errorf("%s, stopping, a needle in no file: %+v; want one found and every byte read", c.name, rep)
		}
		if rep := scan(present, false); rep.Found["key"] != 2 || rep.Stopped || rep.Files != 2 || rep.Bytes != whole {
			t.Errorf("%s, not stopping: %+v; want both found and every byte read", c.name, rep)
		}
	}
	if rep := scan(map[string]*Evidence{}, true); rep.Files != 0 || rep.Bytes != 0 || !rep.Stopped {
		t.Errorf("stopping, no needles: %+v; want nothing read", rep)
	}
}

// groupRuns splits a run longer than 255 entries (its length is a byte) into
// runs that each keep the order by window sum, and starts a new run where
// the run key changes.
func TestGroupRunsSplitsLongRuns(t *testing.T) {
	var ents []entry
	for i := range 600 {
		ents = append(ents, entry{ent: uint32(i)<<offBits | 3, chk: 7, sum: uint32((i * 7919) % 1000), coff: 9, hlen: 32, dlt: 6})
	}
	ents = append(ents, entry{ent: 600<<offBits | 3, chk: 8, sum: 1, coff: 9, hlen: 32, dlt: 6})
	groupRuns(ents)
	var lens []int
	for i := 0; i < len(ents); {
		n := int(ents[i].run)
		if n == 0 {
			t.Fatalf("entry %d starts no run", i)
		}
		for j := i + 1; j < i+n; j++ {
			if !sameRun(&ents[i], &ents[j]) || ents[j].sum < ents[j-1].sum {
				t.Fatalf("entry %d is out of its run's order", j)
			}
		}
		lens = append(lens, n)
		i += n
	}
	if want := []int{255, 255, 90, 1}; !slices.Equal(lens, want) {
		t.Fatalf("runs %v, want %v", lens, want)
	}
}

// Needles that agree on their first 72 bytes (every gram the index may
// take, their check bytes and their window sum) and differ only after
// them: under each gram they form one run of equal window sums, split at
// 255 entries, and the scan must confirm every entry of the run with the
// data's sum, finding exactly the needles the data holds. The data holds
// every third needle, one of them at each end (the edge path), the others
// between random bytes (the fast path).
func TestScanRunsOfEqualSums(t *testing.T) {
	prefix := make([]byte, 72)
	fill(prefix, 77)
	ev := map[string]*Evidence{}
	var needles [][]byte
	for i := range 300 {
		n := fmt.Appendf(append([]byte(nil), prefix...), "-the tail of needle %05d-", i)
		needles = append(needles, n)
		ev[fmt.Sprintf("k%03d", i)] = &Evidence{Needles: [][]byte{n}}
	}
	set := NewNeedleSet(ev)
	longest := 0
	for _, tr := range set.tiers {
		for i := 0; i < len(tr.ents); i += int(tr.ents[i].run) {
			longest = max(longest, int(tr.ents[i].run))
		}
	}
	if longest != 255 {
		t.Fatalf("the longest run has %d entries, want 255: the needles do not make the runs this test is for", longest)
	}
	gap := make([]byte, 200)
	var data []byte
	for i := 0; i < len(needles); i += 3 {
		fill(gap, uint64(i))
		data = append(data, needles[i]...)
		data = append(data, gap...)
	}
	data = append(data, needles[298]...) // at the very end
	sc := NewScanner(set, "test")
	if err := sc.Scan(context.Background(), bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	rep := sc.Report()
	want := 0
	for i, n := range needles {
		k := fmt.Sprintf("k%03d", i)
		in := bytes.Contains(data, n)
		if in {
			want++
		}
		if got := rep.Found[k] == 1; got != in {
			t.Errorf("needle %d: found %v, in the data %v", i, got, in)
		}
	}
	if rep.NeedlesFound != want || want != 101 {
		t.Fatalf("found %d needles, the data holds %d (want 101)", rep.NeedlesFound, want)
	}
}
