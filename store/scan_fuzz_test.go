package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"testing"
)

// setReadSizes lowers the scanner's read size and parallel threshold for one
// test, so that small inputs span many reads and workers.
func setReadSizes(t testing.TB, read, parallel int) {
	r, p := readSize, parallelMin
	readSize, parallelMin = read, parallel
	t.Cleanup(func() { readSize, parallelMin = r, p })
}

// setProbeBatch lowers the positions search probes in one batch for one
// test, so that needles and the positions that pass the bloom filter lie
// across batches.
func setProbeBatch(t testing.TB, n int) {
	b := probeBatch
	probeBatch = n
	t.Cleanup(func() { probeBatch = b })
}

// naiveFound is what the scanner must report: per key, the needles of at
// least 8 bytes that occur in data.
func naiveFound(ev map[string]*Evidence, data []byte) map[string]int {
	out := map[string]int{}
	for k, e := range ev {
		for _, n := range e.Needles {
			if len(n) >= gramLen && bytes.Contains(data, n) {
				out[k]++
			}
		}
	}
	return out
}

// onlyReader hides every method but Read: Scan takes its sequential path.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

// checkScan scans data for ev every way the scanner can read it (in one
// buffer, through a reader that can ReadAt, through one that cannot) and
// compares each report with a naive search.
func checkScan(t testing.TB, ev map[string]*Evidence, data []byte) {
	want := naiveFound(ev, data)
	set := NewNeedleSet(ev)
	for _, how := range []string{"bytes", "reader-at", "reader"} {
		sc := NewScanner(set, "t")
		switch how {
		case "bytes":
			sc.ScanBytes(data)
		case "reader-at":
			if err := sc.Scan(context.Background(), bytes.NewReader(data)); err != nil {
				t.Fatal(err)
			}
		case "reader":
			if err := sc.Scan(context.Background(), onlyReader{bytes.NewReader(data)}); err != nil {
				t.Fatal(err)
			}
		}
		rep := sc.Report()
		if rep.Bytes != int64(len(data)) || rep.Files != 1 {
			t.Fatalf("%s: %d bytes in %d files, want %d in 1", how, rep.Bytes, rep.Files, len(data))
		}
		total := 0
		for k := range ev {
			if rep.Found[k] != want[k] {
				t.Fatalf("%s: key %s: found %d needles, naive search %d (data %d bytes)", how, k, rep.Found[k], want[k], len(data))
			}
			total += want[k]
		}
		if rep.NeedlesFound != total || len(rep.Found) != len(want) {
			t.Fatalf("%s: %d needles of %d keys found, naive %d of %d", how, rep.NeedlesFound, len(rep.Found), total, len(want))
		}
	}
}

// fuzzCase derives data and needles from the fuzzer's bytes: needles are
// substrings of data (so most are present), at lengths 8..40, some of them
// nested in or overlapping others, some altered in one byte (absent), and
// zero runs in data, or text whose windows are common (stride 4) or rarer
// (a digit: a larger stride); read and parallel sizes are small so that needles
// cross read and worker boundaries.
func fuzzCase(seed, spec []byte) (map[string]*Evidence, []byte, int, int) {
	data := bytes.Repeat(seed, max(1, 600/(len(seed)+1)))
	if len(seed) > 3 && seed[0]&1 == 1 { // zero runs, as pages of vectors with zero components
		for i := int(seed[1]) % 64; i+16 < len(data); i += 97 {
			clear(data[i : i+int(seed[2])%16])
		}
	}
	if len(seed) > 3 && seed[0]&2 == 2 {
		// Text: the seed repeated, a digit every 50 bytes. Windows of the
		// seed only are common (stride 4, many hits), those with a digit
		// rarer (a larger stride): the set spans tiers, or is merged.
		for i := 0; i < len(data); i += 50 {
			data[i] = '0' + byte(i/50%10)
		}
	} else {
		for i := range data { // vary the repetitions so that most windows are unique
			data[i] ^= byte(i*7) ^ byte(i>>8)
		}
	}
	ev := map[string]*Evidence{}
	for i := 0; i+3 <= len(spec) && i < 3*64; i += 3 {
		at := int(binary.LittleEndian.Uint16(spec[i:])) % max(1, len(data))
		n := 8 + int(spec[i+2])%33
		if at+n > len(data) {
			continue
		}
		nd := append([]byte(nil), data[at:at+n]...)
		if spec[i+2]&0x80 != 0 {
			nd[int(spec[i])%n] ^= 0x5a // absent (unless it occurs elsewhere)
		}
		k := fmt.Sprintf("k%d", i%5)
		if ev[k] == nil {
			ev[k] = &Evidence{}
		}
		ev[k].Needles = append(ev[k].Needles, nd)
	}
	read := 32 + int(uint(len(spec))*13%200)
	return ev, data, read, read * (1 + len(seed)%3)
}

// FuzzScan: the scanner finds exactly the needles a naive search finds.
func FuzzScan(f *testing.F) {
	f.Add([]byte("The quick brown fox jumps over the lazy dog"), []byte("\x00\x00\x20\x10\x00\x18\x11\x00\x28\x05\x01\x88\x40\x00\x07"))
	f.Add([]byte{1, 9, 14, 0, 0, 0, 0, 0x3d, 0xcc, 0x10, 0x8f, 0xbd, 0, 0, 0, 0}, []byte("\x03\x00\x18\x40\x00\x20\x41\x00\x10\x60\x01\x20"))
	f.Add([]byte("aaaaaaaaaaaaaaaaaaab"), []byte("\x00\x00\x10\x01\x00\x10\x02\x00\x10\x13\x00\x08"))
	f.Add([]byte("string the customer asked about a refund and was told to wait"), []byte("\x00\x00\x18\x31\x00\x18\x62\x00\x18\x93\x00\x98\xc4\x00\x18\xf5\x00\x18\x26\x01\x18\x57\x01\x18\x88\x01\x18\xb9\x01\x18"))
	f.Fuzz(func(t *testing.T, seed, spec []byte) {
		if len(seed) == 0 || len(seed) > 4096 || len(spec) > 600 {
			return
		}
		ev, data, read, parallel := fuzzCase(seed, spec)
		setReadSizes(t, read, parallel)
		if len(spec)%3 != 0 { // batches of 1 to 13 positions; one case in three the default
			setProbeBatch(t, 1+len(spec)%13)
		}
		checkScan(t, ev, data)
	})
}

// Needles across every read boundary, nested in and overlapping each
// other, with repeated and zero-filled content, found exactly as a naive
// search finds them with the reads and workers far smaller than the data.
func TestScanBoundariesNestedOverlapping(t *testing.T) {
	setReadSizes(t, 64, 256)
	data := make([]byte, 4096+37)
	fill(data, 31)
	clear(data[1000:1300])                             // zero run
	copy(data[2000:], bytes.Repeat([]byte("ab"), 100)) // periodic run
	ev := map[string]*Evidence{}
	add := func(k string, n []byte) {
		if ev[k] == nil {
			ev[k] = &Evidence{}
		}
		ev[k].Needles = append(ev[k].Needles, append([]byte(nil), n...))
	}
	for at := 0; at+50 <= len(data); at += 61 { // 40-byte windows at every phase of a 64-byte read
		add("outer", data[at:at+40])
		add("nested", data[at+5:at+5+16]) // inside the window
		add("overlap", data[at+30:at+30+20])
		add("short", data[at+2:at+10]) // 8 bytes: the shortest indexed
	}
	add("zeros", data[990:1030])     // ends in the zero run
	add("periodic", data[1995:2040]) // starts before the periodic run
	add("absent", []byte("not in the data at all, 32 bytes"))
	add("tiny", []byte("abc"))     // under 8 bytes: never counted
	add("end", data[len(data)-9:]) // at the very end
	for _, batch := range []int{1, 5, maxProbeBatch} {
		setProbeBatch(t, batch)
		checkScan(t, ev, data)
	}
}

// textNeedles returns data of lower-case template text with rare
// identifiers in it, and needles taken from it: windows around the
// identifiers (rare grams: a large stride) and windows of the template only
// (common grams: stride 4), rare ones of the first kind, common ones of
// the second.
func textNeedles(rareNeedles, commonNeedles int) (map[string]*Evidence, []byte) {
	var data []byte
	words := []string{"the ", "customer ", "asked ", "about ", "a ", "refund ", "and ", "was ", "told ", "to ", "wait ", "for ", "review "}
	for i := 0; len(data) < 40000; i++ {
		data = append(data, words[(i*7+i/13)%len(words)]...)
		if i%9 == 0 {
			data = fmt.Appendf(data, "Case %08X/%d. ", uint32(i)*2654435761, i)
		}
	}
	ev := map[string]*Evidence{}
	add := func(k string, n []byte) {
		if ev[k] == nil {
			ev[k] = &Evidence{}
		}
		ev[k].Needles = append(ev[k].Needles, append([]byte(nil), n...))
	}
	for i, at := 0, 0; i < rareNeedles; at++ {
		if j := bytes.Index(data[at:], []byte("Case ")); j >= 0 && at+j+32 <= len(data) {
			at += j
			add(fmt.Sprintf("rare%d", i%7), data[at:at+32])
			i++
		} else {
			at = 0
		}
	}
	for i, at := 0, 5; i < commonNeedles; i, at = i+1, (at+997)%(len(data)-64) {
		for bytes.ContainsAny(data[at:at+32], "C0123456789") {
			at = (at + 1) % (len(data) - 64)
		}
		n := append([]byte(nil), data[at:at+32]...)
		if i%3 == 0 {
			n[31] ^= 0x20 // absent (most likely): differs only at its last byte
		}
		add(fmt.Sprintf("common%d", i%5), n)
	}
	return ev, data
}

// A set whose needles take different strides is searched in several tiers,
// one whose needles mostly need stride 4 in one (the others join it); both
// find what a naive search finds, with needles across read boundaries. The
// rare needles' 8-byte grams are mostly the text around their case number
// ("Case 1a2b3c4d was logged"): they take 16-byte grams, which reach past
// it from more offsets.
func TestScanTiersMatchNaiveSearch(t *testing.T) {
	for _, c := range []struct {
		rare, common, tiers int
		wide                bool // a tier of 16-byte grams
	}{
		{400, 40, 2, true},   // few need stride 4: two passes
		{100, 200, 1, false}, // most need stride 4: the rare ones join them
	} {
		ev, data := textNeedles(c.rare, c.common)
		set := NewNeedleSet(ev)
		var ks []int
		var modes []string
		for _, tr := range set.tiers {
			ks = append(ks, tr.k)
			modes = append(modes, fmt.Sprintf("%d/%d", tr.k, tr.glen))
		}
		t.Logf("%d rare, %d common needles: stride/gram %v", c.rare, c.common, modes)
		if len(ks) != c.tiers {
			t.Fatalf("%d rare and %d common needles: strides %v, want %d tiers", c.rare, c.common, ks, c.tiers)
		}
		if wide := slices.ContainsFunc(set.tiers, func(tr *tier) bool { return tr.glen == 16 }); wide != c.wide {
			t.Fatalf("%d rare and %d common needles: stride/gram %v: a tier of 16-byte grams %v, want %v", c.rare, c.common, modes, wide, c.wide)
		}
		for _, read := range []int{40, 77, 4096} {
			setReadSizes(t, read, 3*read)
			for _, batch := range []int{3, maxProbeBatch} {
				setProbeBatch(t, batch)
				checkScan(t, ev, data)
			}
		}
	}
}

// The grams of a large set are chosen in parts, one goroutine each: the
// index is the one a single loop builds, needle for needle, and it finds
// what a naive search finds. Text needles of several strides and random
// (vector-like) ones, in uneven parts.
func TestTiersBuiltInPartsAsInOne(t *testing.T) {
	defer func(m, p int) { tierPartsMin, tierParts = m, p }(tierPartsMin, tierParts)
	text, data := textNeedles(400, 300)
	random := map[string]*Evidence{}
	for i := range 500 {
		nd := make([]byte, WindowSize+i%9)
		fill(nd, uint64(i))
		k := fmt.Sprint("v", i%11)
		if random[k] == nil {
			random[k] = &Evidence{}
		}
		random[k].Needles = append(random[k].Needles, nd)
	}
	for name, ev := range map[string]map[string]*Evidence{"text": text, "random": random} {
		tierPartsMin, tierParts = 1<<30, 1
		one := NewNeedleSet(ev)
		// The comparisons below mean something only if one loop indexed
		// the needles: every needle long enough for a gram is an entry of
		// some tier.
		ents, indexable := 0, 0
		for _, tr := range one.tiers {
			ents += len(tr.ents)
		}
		for i := range one.Len() {
			if len(one.needles[i]) >= gramLen {
				indexable++
			}
		}
		if indexable == 0 || ents < indexable {
			t.Fatalf("%s: %d tier entries for %d needles of at least %d bytes", name, ents, indexable, gramLen)
		}
		for _, parts := range []int{2, 3, 7} {
			tierPartsMin, tierParts = 1, parts
			got := NewNeedleSet(ev)
			if !reflect.DeepEqual(got.chkOff, one.chkOff) || len(got.tiers) != len(one.tiers) {
				t.Fatalf("%s, %d parts: check offsets or tiers differ from one loop's", name, parts)
			}
			for i, tr := range got.tiers {
				o := one.tiers[i]
				if tr.k != o.k || tr.glen != o.glen || tr.maxOff != o.maxOff || !reflect.DeepEqual(tr.ents, o.ents) || !reflect.DeepEqual(tr.slots, o.slots) || !reflect.DeepEqual(tr.bloom, o.bloom) {
					t.Fatalf("%s, %d parts: tier %d (stride %d) differs from one loop's (stride %d)", name, parts, i, tr.k, o.k)
				}
			}
			if name == "text" {
				checkScan(t, ev, data)
			}
		}
	}
}

// Needles of every length from 16 to 40 bytes, each starting a few bytes
// before a case number of the text (its own bytes between template words),
// some altered in their last byte (absent): the lengths at which 16-byte
// grams first fit a stride (23 for 8, 27 for 12, 31 for 16) and those just
// below are searched in the modes they allow, and found exactly as a naive
// search finds them, across reads and probe batches.
func TestSixteenByteGramsAtEveryLength(t *testing.T) {
	_, data := textNeedles(0, 0)
	wide := map[int]bool{} // lengths indexed under 16-byte grams
	for length := 16; length <= 40; length++ {
		ev := map[string]*Evidence{}
		for i, at := 0, 0; i < 60; i++ {
			j := bytes.Index(data[at:], []byte("Case "))
			if j < 0 || at+j+length+8 > len(data) {
				break
			}
			at += j
			start := at - i%8 // the case number at different offsets of the needle
			if start < 0 {
				start = at
			}
			n := append([]byte(nil), data[start:start+length]...)
			if i%4 == 3 {
				n[len(n)-1] ^= 0x20
			}
			k := fmt.Sprintf("k%d", i%6)
			if ev[k] == nil {
				ev[k] = &Evidence{}
			}
			ev[k].Needles = append(ev[k].Needles, n)
			at += 5
		}
		set := NewNeedleSet(ev)
		for _, tr := range set.tiers {
			if tr.glen == 16 {
				wide[length] = true
				if tr.k > length-16+1 {
					t.Fatalf("%d-byte needles in a tier of stride %d with 16-byte grams: they have room for %d", length, tr.k, length-16+1)
				}
			}
		}
		for _, read := range []int{41, 4096} {
			setReadSizes(t, read, 3*read)
			for _, batch := range []int{5, maxProbeBatch} {
				setProbeBatch(t, batch)
				checkScan(t, ev, data)
			}
		}
	}
	t.Logf("lengths searched with 16-byte grams: %v", slices.Sorted(maps.Keys(wide)))
	if !wide[23] || !wide[40] || wide[22] {
		t.Fatalf("lengths searched with 16-byte grams: %v; want 23 and 40 among them and not 22 (no 16-byte mode fits it)", slices.Sorted(maps.Keys(wide)))
	}
}
