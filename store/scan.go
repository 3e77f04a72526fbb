package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
)

// NeedleSet indexes the needles of many records for one pass over a store's
// bytes: see scan_index.go for how a scan finds them while reading only a
// sample of the positions.
type NeedleSet struct {
	needles [][]byte
	owner   []string // key that owns needles[i]
	tiers   []*tier  // by descending sampling stride
	chkOff  []uint8  // per needle: where the 4 bytes its entries check start
	maxLen  int
}

// NewNeedleSet builds a set from per-key evidence. Needles shorter than 8
// bytes are left out (they would match by chance; Tile never makes them).
func NewNeedleSet(ev map[string]*Evidence) *NeedleSet {
	keys := make([]string, 0, len(ev))
	for k := range ev {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s := &NeedleSet{}
	var owners []int32
	for i, k := range keys {
		for _, n := range ev[k].Needles {
			if len(n) < gramLen {
				continue
			}
			s.needles = append(s.needles, n)
			s.owner = append(s.owner, k)
			owners = append(owners, int32(i))
			s.maxLen = max(s.maxLen, len(n))
		}
	}
	s.tiers, s.chkOff = buildTiers(s.needles, owners)
	return s
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

// ScanReport is the result of scanning a store's bytes for a NeedleSet.
type ScanReport struct {
	Method       string         `json:"method"` // what was scanned and how
	Files        int            `json:"files"`  // files (or relations, segments) scanned
	Bytes        int64          `json:"bytes"`  // bytes scanned
	Found        map[string]int `json:"found"`  // per key: distinct needles found (keys with none are absent)
	NeedlesFound int            `json:"needles_found"`
	// Partial, when set, says in one line which of the store's files the
	// scan could not read (PostgreSQL's pg_wal without the right to list
	// it): a scan that found nothing has not shown the records gone from
	// the store, and the saga does not claim the physical level on it.
	Partial string `json:"partial,omitempty"`
	// Stopped: the scan was told to stop once every needle was found
	// (Scanner.StopWhenAllFound), found them all, and stopped, with bytes
	// or files possibly left unread: Files and Bytes count what was read.
	Stopped bool `json:"stopped,omitempty"`
}

// FoundKeys returns the number of keys with at least one needle found.
func (r ScanReport) FoundKeys() int { return len(r.Found) }

// Scanner accumulates a scan over several byte streams. A Scanner is used by
// one goroutine at a time; it searches large inputs on several cores itself.
type Scanner struct {
	set   *NeedleSet
	tiers []*tier  // the set's
	hit   []uint64 // bit i: needles[i] found (set atomically by the workers)
	rep   ScanReport
	buf   []byte // read buffer of the sequential path, allocated once
	// With track set, a sequential search appends to fresh the index of
	// every needle it finds (DropShared attributes them to the record it
	// scanned).
	track bool
	fresh []int
	// stopAll: stop reading once every needle is found (StopWhenAllFound).
	stopAll bool
}

// Sizes of the reads. A read of readSize bytes is searched by one worker;
// inputs of at least parallelMin bytes are searched by up to GOMAXPROCS
// workers. Tests lower them to put needles across read boundaries.
var (
	readSize    = 256 << 10
	parallelMin = 4 << 20
)

// NewScanner starts a scan for set.
func NewScanner(set *NeedleSet, method string) *Scanner {
	return &Scanner{set: set, tiers: set.tiers, hit: make([]uint64, (set.Len()+63)/64), rep: ScanReport{Method: method}}
}

// StopWhenAllFound makes the scan stop reading once every needle of its
// set is found, for a caller that needs only to know that the needles are
// there, not where else they are (crypto-shredding's scan before the
// destruction of a key, whose needles are all windows of one copy): it reads
// up to the first place that shows them all, not every byte. The report's
// Found and NeedlesFound are then those of a whole scan (either every needle
// is found, or every byte was read); Files and Bytes count what was read,
// and Stopped says that the scan stopped. Scan, ScanFile and ScanFileGone
// check after each read and before each file (the workers of a parallel
// read may finish the chunks they hold); ScanBytes reads its bytes all the
// same. A set without needles reads nothing. A Scanner without it (the
// default, and every scan that must show needles absent) reads every byte.
func (sc *Scanner) StopWhenAllFound() { sc.stopAll = true }

// allFound reports whether a scan that stops once every needle is found
// (StopWhenAllFound) has found them all; false for every other scan. The
// workers of a parallel read may be setting bits meanwhile.
func (sc *Scanner) allFound() bool {
	if !sc.stopAll {
		return false
	}
	n := sc.set.Len()
	for i := range sc.hit {
		want := ^uint64(0)
		if r := n - i*64; r < 64 {
			want = 1<<r - 1
		}
		if atomic.LoadUint64(&sc.hit[i]) != want {
			return false
		}
	}
	return true
}

// chunkSize is the bytes one read covers: readSize, or more for sets with
// needles so long that the overlap between reads would dominate.
func (sc *Scanner) chunkSize() int { return max(readSize, 4*sc.set.maxLen) }

// overlap is how far a read extends past the bytes it owns, so that a needle
// starting in them is whole in the read.
func (sc *Scanner) overlap() int { return max(sc.set.maxLen, 1) - 1 }

// sizedReaderAt is what Scan reads in parallel: *os.File sections,
// *bytes.Reader.
type sizedReaderAt interface {
	io.ReaderAt
	Size() int64
}

// Scan reads r to the end, looking for needles. Needles that straddle two
// reads are found; needles that straddle two calls to Scan are not (each call
// is one file). A reader that can also ReadAt and tell its Size (a file
// section, a bytes.Reader) is read from its current offset in parallel, each
// byte once, and left at its end. A scanner told to StopWhenAllFound stops
// reading r once every needle is found and leaves r partway: give it only
// readers that nothing else waits on to be drained (files, not pipes).
func (sc *Scanner) Scan(ctx context.Context, r io.Reader) error {
	if sc.allFound() {
		sc.rep.Stopped = true // StopWhenAllFound: nothing left to find
		return nil
	}
	sc.rep.Files++
	if ra, ok := r.(sizedReaderAt); ok {
		if sk, ok := r.(io.Seeker); ok {
			if cur, err := sk.Seek(0, io.SeekCurrent); err == nil && ra.Size()-cur >= int64(parallelMin) {
				if err := sc.scanAt(ctx, ra, cur, ra.Size()); err != nil {
					return err
				}
				_, err := sk.Seek(0, io.SeekEnd)
				return err
			}
		}
	}
	return sc.scanSeq(ctx, r)
}

// scanSeq reads r in one goroutine, searching each read.
func (sc *Scanner) scanSeq(ctx context.Context, r io.Reader) error {
	if sc.buf == nil {
		sc.buf = make([]byte, sc.chunkSize()+sc.overlap())
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
			limit = total - sc.overlap() // an empty set keeps nothing back
		}
		sc.search(buf[:total], limit, sc.track)
		if final {
			return nil
		}
		if sc.allFound() {
			sc.rep.Stopped = true
			return nil
		}
		carry = copy(buf, buf[limit:total])
	}
}

// scanAt searches bytes [from, size) of r: each worker reads the next
// chunk it claims, plus the overlap, into its own buffer and searches it.
func (sc *Scanner) scanAt(ctx context.Context, r io.ReaderAt, from, size int64) error {
	chunk, ov := int64(sc.chunkSize()), sc.overlap()
	nchunks := (size - from + chunk - 1) / chunk
	var (
		next    atomic.Int64
		read    atomic.Int64
		stopped atomic.Bool // StopWhenAllFound, and every needle is found
		mu      sync.Mutex
		first   error
	)
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
		next.Store(nchunks) // the others stop at their next claim
	}
	work := func() {
		buf := make([]byte, int(chunk)+ov)
		for {
			j := next.Add(1) - 1
			if j >= nchunks {
				return
			}
			if err := ctx.Err(); err != nil {
				fail(err)
				return
			}
			off := from + j*chunk
			want := min(int64(len(buf)), size-off)
			n, err := r.ReadAt(buf[:want], off)
			if err != nil && err != io.EOF { // io.EOF: the file shrank; search what was read
				fail(err)
				return
			}
			own := min(int64(n), chunk) // bytes [off, off+chunk) are this chunk's
			read.Add(own)
			sc.search(buf[:n], int(own), false)
			if sc.allFound() {
				stopped.Store(true)
				next.Store(nchunks) // the others stop at their next claim
				return
			}
		}
	}
	workers := int(min(int64(runtime.GOMAXPROCS(0)), nchunks))
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		wg.Add(1)
		go func() { defer wg.Done(); work() }()
	}
	work()
	wg.Wait()
	sc.rep.Bytes += read.Load()
	if stopped.Load() {
		sc.rep.Stopped = true
	}
	return first
}

// ScanBytes looks for needles in b, counted as one file.
func (sc *Scanner) ScanBytes(b []byte) {
	sc.rep.Files++
	sc.rep.Bytes += int64(len(b))
	if len(b) < parallelMin || sc.track {
		sc.search(b, len(b), sc.track)
		return
	}
	chunk, ov := sc.chunkSize(), sc.overlap()
	nchunks := (len(b) + chunk - 1) / chunk
	var next atomic.Int64
	work := func() {
		for {
			j := int(next.Add(1) - 1)
			if j >= nchunks {
				return
			}
			off := j * chunk
			sc.search(b[off:min(off+chunk+ov, len(b))], min(chunk, len(b)-off), false)
		}
	}
	var wg sync.WaitGroup
	for w := 1; w < min(runtime.GOMAXPROCS(0), nchunks); w++ {
		wg.Add(1)
		go func() { defer wg.Done(); work() }()
	}
	work()
	wg.Wait()
}

// Probing goes by batches of positions: search tests the grams of up to
// probeBatch sampled positions against the bloom filter without a branch
// on the outcome, noting the positions that pass, then looks those up. A
// branch per position would be mispredicted at every position that passes
// (5 to 15% of them on the benchmark's text, where each is an indexed
// template gram or a false positive), and would hold up the probes after
// it.
const maxProbeBatch = 256 // a position's number in its batch fits a byte

// probeBatch is the batch search uses, 1 to maxProbeBatch (tests lower it
// to put needles across batches).
var probeBatch = maxProbeBatch

// checkEnd bounds how far past a probed position the check bytes of its
// entries end: they start at most 1<<offBits+gramLen-5 bytes into the
// needle (countedGrams), and the needle starts at or before the position.
const checkEnd = 1<<offBits + gramLen

// search looks for needles starting at offsets [0, limit) of b and marks
// those it finds; with track it also appends the new ones to sc.fresh (only
// when one goroutine searches).
func (sc *Scanner) search(b []byte, limit int, track bool) {
	batch := min(max(probeBatch, 1), maxProbeBatch)
	var pass [maxProbeBatch]uint8 // numbers in the batch of the positions that pass
	for _, t := range sc.tiers {
		k, bshift, bloom := t.k, t.bshift, t.bloom
		// A needle starting at [0, limit) is probed at a multiple of k no
		// more than maxOff past its start, with its whole gram in b.
		end := min(limit-1+t.maxOff, len(b)-t.glen)
		for from := 0; from <= end; from += batch * k {
			last := min(end, from+(batch-1)*k)
			n := 0
			if t.glen == 16 {
				for i, p := 0, from; p <= last; i, p = i+1, p+k {
					w, m := bloomBits(gram16(b[p:]), bshift)
					miss := bloom[w]&m ^ m // zero when both bits are set
					pass[n&(maxProbeBatch-1)] = uint8(i)
					miss |= -miss // bit 63 set unless miss is zero
					n += int(1 - miss>>63)
				}
			} else {
				for i, p := 0, from; p <= last; i, p = i+1, p+k {
					w, m := bloomBits(le64(b[p:]), bshift)
					miss := bloom[w]&m ^ m
					pass[n&(maxProbeBatch-1)] = uint8(i)
					miss |= -miss
					n += int(1 - miss>>63)
				}
			}
			for _, i := range pass[:n] {
				sc.check(t, b, from+int(i)*k, limit, track)
			}
		}
	}
}

// check compares the needles indexed under the gram at b[p:] with the data
// and marks those found (see search).
func (sc *Scanner) check(t *tier, b []byte, p, limit int, track bool) {
	ents := t.lookup(t.gramOf(b[p:]))
	if p >= t.maxOff && p < limit && p+checkEnd <= len(b) {
		// Every entry's needle starts in [0, limit) and its check bytes lie
		// in b: compare those first, without the bounds (under a template
		// gram of text there are many entries, and most differ there).
		// Entries come in runs that share the check bytes and where the
		// window starts (newTier): each run's check bytes are compared once,
		// and for a run of several the data's window sum is computed once
		// and only the entries with that sum (a range: the run is ordered by
		// sum) are confirmed.
		for i := 0; i < len(ents); {
			e := &ents[i]
			n := int(e.run)
			if le32(b[p+int(e.dlt):]) == e.chk {
				if n == 1 {
					sc.confirm(b, p, e, limit, track)
				} else {
					start := p - int(e.ent&(1<<offBits-1))
					sum := windowSum(b[start : start+int(e.hlen)])
					run := ents[i : i+n]
					lo, hi := 0, n
					for lo < hi {
						if m := int(uint(lo+hi) >> 1); run[m].sum < sum {
							lo = m + 1
						} else {
							hi = m
						}
					}
					for ; lo < n && run[lo].sum == sum; lo++ {
						sc.confirm(b, p, &run[lo], limit, track)
					}
				}
			}
			i += n
		}
		return
	}
	for i := range ents {
		sc.confirm(b, p, &ents[i], limit, track)
	}
}

// confirm marks e's needle found if it occurs in b where e, indexed under
// the gram at b[p:], places it, starting in [0, limit).
func (sc *Scanner) confirm(b []byte, p int, e *entry, limit int, track bool) {
	idx := int(e.ent >> offBits)
	start := p - int(e.ent&(1<<offBits-1))
	c := start + int(e.coff)
	if start < 0 || start >= limit || c+4 > len(b) || le32(b[c:]) != e.chk {
		return
	}
	if hl := int(e.hlen); start+hl > len(b) || windowSum(b[start:start+hl]) != e.sum {
		return
	}
	w, bit := &sc.hit[idx>>6], uint64(1)<<(idx&63)
	if atomic.LoadUint64(w)&bit != 0 {
		return // found already
	}
	n := sc.set.needles[idx]
	if start+len(n) > len(b) || !bytes.Equal(b[start:start+len(n)], n) {
		return
	}
	if atomic.OrUint64(w, bit)&bit == 0 && track {
		sc.fresh = append(sc.fresh, idx)
	}
}

// maxGonePasses bounds the listings of RescanGone.
const maxGonePasses = 8

// RescanGone scans the files list names, each with scan, which reports
// whether the file was gone when it came to be read (renamed or removed
// since it was listed, or shrunk while read) and the identity of the file
// it read (FileIdent; "" when it has none to give). While a pass found a
// file gone, RescanGone lists again and scans what it has not read: a path
// it never read, and a path it read that now names another file (a store
// that renames a new file onto a path already read, as a snapshot or an
// append-only file rewrite does, may have moved there the bytes of a file
// that went). A store that rewrites its files by writing new ones and
// renaming or removing the old may have moved the bytes of a listed file
// into one the listing did not name: the next listing names it. A file
// opened is read whole, so a file that goes after that loses nothing, and
// files that appear while none goes hold only newer writes: they do not
// make it list again (listing until no new file appears would never end on
// a busy store). A path read once that no longer exists is not a file gone:
// it was read; a file that was not there when it came to be read is
// looked for again at the next listing. Files still going after maxGonePasses listings make it
// return ErrBusy (a later scan can finish). It returns how many listings it
// made.
func RescanGone(ctx context.Context, list func() ([]string, error), scan func(path string) (gone bool, ident string, err error)) (int, error) {
	read := map[string]string{} // path -> identity of the file read there
	for pass := 1; pass <= maxGonePasses; pass++ {
		files, err := list()
		if err != nil {
			return pass, err
		}
		gone := false
		for _, f := range files {
			if id, ok := read[f]; ok {
				if id == "" {
					continue // no identity to compare: read once
				}
				now, err := pathIdent(f)
				if err != nil || now == id {
					continue // gone since it was read, or the file read
				}
			}
			g, id, err := scan(f)
			if err != nil {
				return pass, err
			}
			gone = gone || g
			if !g {
				read[f] = id
			}
		}
		if !gone {
			return pass, nil
		}
		if err := ctx.Err(); err != nil {
			return pass, err
		}
	}
	return maxGonePasses, fmt.Errorf("%w: files kept being replaced or removed while they were read (%d listings): the store is rewriting them; scan again later", ErrBusy, maxGonePasses)
}

// FileIdent is the identity of the file fi describes: its device and
// inode, "" where the system gives none.
func FileIdent(fi fs.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%d:%d", st.Dev, st.Ino)
}

// pathIdent is the identity of the file at path now.
func pathIdent(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	return FileIdent(fi), nil
}

// unhit forgets that needle i was found (DropShared looks for it again in
// the next record).
func (sc *Scanner) unhit(i int) { sc.hit[i>>6] &^= 1 << (i & 63) }

func le64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }

func le32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }

// ScanFile scans one file. A file that does not exist is skipped (a -wal or
// -journal file is often absent) and not counted. A SQLite file is read
// through a descriptor held for the life of the process, never closed after
// the scan (see fdcache.go for why closing it could corrupt the database);
// any other file is closed after its scan.
func (sc *Scanner) ScanFile(ctx context.Context, path string) error {
	_, _, err := sc.ScanFileGone(ctx, path)
	return err
}

// ScanFileGone is ScanFile, and reports whether the file did not exist
// when the scan opened it, or shrank while it was read: a caller that
// listed it knows then that it went (renamed, removed or truncated) before
// it was read. A file opened is read whole, through its descriptor, even if
// it is renamed or removed meanwhile. ident is the identity of the file
// read (FileIdent), for RescanGone.
func (sc *Scanner) ScanFileGone(ctx context.Context, path string) (gone bool, ident string, err error) {
	if sc.allFound() {
		sc.rep.Stopped = true // StopWhenAllFound: the file is not opened
		return false, "", nil
	}
	f, size, held, err := openScan(path)
	if errors.Is(err, fs.ErrNotExist) {
		return true, "", nil
	}
	if err != nil {
		return false, "", fmt.Errorf("scan %s: %w", path, err)
	}
	if f == nil { // empty: nothing to read
		sc.rep.Files++
		id, _ := pathIdent(path)
		return false, id, nil
	}
	if !held {
		defer f.Close()
	}
	fi, err := f.Stat()
	if err != nil {
		return false, "", fmt.Errorf("scan %s: %w", path, err)
	}
	if err := sc.Scan(ctx, io.NewSectionReader(f, 0, size)); err != nil {
		return false, "", fmt.Errorf("scan %s: %w", path, err)
	}
	if after, err := f.Stat(); err == nil && after.Size() < size {
		// Truncated while it was read: what it held past its new end
		// may be in a file the listing did not name.
		return true, "", nil
	}
	return false, FileIdent(fi), nil
}

// Report finishes the scan, and lets go of held files that were deleted or
// replaced meanwhile (see fdcache.go).
func (sc *Scanner) Report() ScanReport {
	releaseGone()
	r := sc.rep
	r.Found = map[string]int{}
	for i := range sc.set.needles {
		if sc.hit[i>>6]&(1<<(i&63)) != 0 {
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
