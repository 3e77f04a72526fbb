package sqlitex

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/amnesia-dev/amnesia/store"
)

// The free-space audit decides whether Reclaim may skip VACUUM. A record's
// earlier versions (text an application replaced, rows it deleted, cells a
// page split left behind) are not covered by needles read from its current
// content, so the byte scan cannot see them; they can only lie where the
// database keeps no live record: the unused bytes of b-tree pages (free
// blocks, the gap between the cell pointers and the cell content, small
// fragments), freelist pages, and the unused tail of a record's last
// overflow page. The audit walks the file the way SQLite's file format
// defines it (https://www.sqlite.org/fileformat2.html): every b-tree from
// its root page (sqlite_master), every cell and its overflow chain, the
// freelist. Every byte that is neither page structure nor a live cell must
// be zero, and every page must be reached exactly once. Only then may
// VACUUM be skipped: no earlier version of any record can be left in the
// file. Anything the audit does not understand (auto_vacuum pointer-map
// pages, reserved bytes per page, an unreachable page, a size mismatch, an
// I/O error) makes it undecided, and Reclaim runs VACUUM.

// FreeSpace is what the free-space audit of a database file found. It
// holds counts and schema names only, never content.
type FreeSpace struct {
	Pages    int // pages in the database
	Freelist int // of which freelist pages
	// NonZero counts the unused bytes (free blocks, page gaps, fragments,
	// freelist pages, overflow tails) that are not zero, on DirtyPages
	// pages, the first of them (in the audit's order) FirstDirty.
	NonZero    int64
	DirtyPages int
	FirstDirty uint32
	// DirtyIndexes names the indexes (sqlite_master's type "index") with
	// non-zero unused bytes on a page of theirs (a b-tree page or an
	// overflow page), sorted; DirtyElse counts the dirty pages that belong
	// to no index: a table's, sqlite_master's, the freelist's. An index can
	// be rebuilt on its own (REINDEX); the rest only by VACUUM.
	DirtyIndexes []string
	DirtyElse    int
	// Stopped: the audit stopped at the first dirty page of no index
	// once it could no longer list the dirty pages for zeroing in place
	// (more than maxZeroPages of them, or the lock-byte page): VACUUM is
	// then certain, so the counts are of the pages before it and that page.
	Stopped bool
	// Zeroed counts the non-zero unused bytes, and ZeroedPages the pages,
	// that Reclaim zeroed in place after this audit found them (zeroInPlace):
	// the file then holds none of the NonZero bytes, and NonZero is 0.
	Zeroed, ZeroedPages int64
	// StalePointers counts the bytes of stale 2-byte cell pointers found
	// directly past pages' cell pointer arrays (see btree): structure that
	// SQLite never clears, not record content.
	StalePointers int64
	// StaleLeaves counts the bytes of stale leaf page numbers found
	// directly past freelist trunk pages' lists (see staleLeaves): also
	// structure.
	StaleLeaves int64
	// StaleCells counts the bytes in interior table pages' unused space
	// that are stale interior cells (see staleCells): page numbers and
	// rowids, structure as well.
	StaleCells int64
	// Remnants counts the bytes, and RemnantPages the index pages, of
	// single short runs in index pages' unused space (see remnant).
	Remnants, RemnantPages int64
	// Undecided, when set, says why the audit could not decide.
	Undecided string

	// plan lists every dirty page with the ranges of its non-zero unused
	// bytes and a digest of the page as the audit read it, for
	// zeroInPlace; nil when there are none, or when the audit could not
	// list them all (see Stopped). dataVersion is PRAGMA data_version in
	// the audit's transaction: another connection's commit changes it.
	plan        []zeroPage
	dataVersion int64
	pageSize    int
	file        [2]uint64 // device and inode of the file audited
}

// zeroPage is a dirty page of an audit: its number, the ranges [from, to)
// of its unused bytes that are not zero, and the SHA-256 of the whole page
// as the audit read it.
type zeroPage struct {
	pg     uint32
	ranges [][2]int
	sum    [sha256.Size]byte
}

// Clean reports whether the audit proved that no unused byte of the file
// holds data.
func (f FreeSpace) Clean() bool { return f.Undecided == "" && f.NonZero == 0 }

// OnlyIndexes reports whether the audit decided and every page with
// non-zero unused bytes belongs to an index: rebuilding those indexes
// (REINDEX) may leave the file clean without rewriting it whole.
func (f FreeSpace) OnlyIndexes() bool {
	return f.Undecided == "" && f.NonZero > 0 && f.DirtyElse == 0 && len(f.DirtyIndexes) > 0
}

// String describes the audit's result in one line of counts.
func (f FreeSpace) String() string {
	switch {
	case f.Undecided != "":
		return "free-space audit undecided: " + f.Undecided
	case f.NonZero > 0:
		s := fmt.Sprintf("free-space audit of %d pages: %d unused bytes on %d pages are not zero (%d pages of %d indexes, %d pages of tables, sqlite_master or the freelist)",
			f.Pages, f.NonZero, f.DirtyPages, f.DirtyPages-f.DirtyElse, len(f.DirtyIndexes), f.DirtyElse)
		if f.Stopped {
			s += " (the audit stops at the first such page of no index once it cannot list them all for zeroing in place)"
		}
		return s
	}
	s := fmt.Sprintf("free-space audit of %d pages (%d on the freelist): every unused byte is zero", f.Pages, f.Freelist)
	if f.Zeroed > 0 {
		s += fmt.Sprintf(" but the %d non-zero unused bytes on %d pages it found, zeroed in place after it (written, fsynced, read back; the file was not audited again)", f.Zeroed, f.ZeroedPages)
	}
	if f.StalePointers > 0 {
		s += fmt.Sprintf(" (%d bytes past cell pointer arrays are stale 2-byte cell pointers: page structure)", f.StalePointers)
	}
	if f.StaleLeaves > 0 {
		s += fmt.Sprintf(" (%d bytes past freelist trunk lists are stale 4-byte leaf page numbers: page structure)", f.StaleLeaves)
	}
	if f.StaleCells > 0 {
		s += fmt.Sprintf(" (%d bytes in interior table pages are stale interior cells, page numbers and rowids: page structure)", f.StaleCells)
	}
	if f.Remnants > 0 {
		s += fmt.Sprintf(" (but for %d bytes on %d index pages, at most %d in one run per page: the first bytes of cells that page rebuilds leave)", f.Remnants, f.RemnantPages, maxRemnant)
	}
	return s
}

// undecided is an audit that cannot conclude: the reason is reported, and
// Reclaim falls back to VACUUM.
type undecided string

func (u undecided) Error() string { return string(u) }

func undecidedf(format string, args ...any) error { return undecided(fmt.Sprintf(format, args...)) }

// AuditFreeSpace audits the database's main file under a read transaction
// on conn, started with the WAL empty (after wal_checkpoint(TRUNCATE)):
// such a reader takes WAL read lock 0, which no checkpoint may write past,
// so the file does not change under the audit. It returns an error only
// when conn fails; what keeps the audit from deciding is in Undecided.
func AuditFreeSpace(ctx context.Context, conn *sql.Conn, path string) (FreeSpace, error) {
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		return FreeSpace{}, fmt.Errorf("free-space audit: %w", busyErr(err))
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
	var roots []uint32
	indexes := map[uint32]string{} // root page → index name
	tables := map[uint32]string{}  // root page → table name
	rows, err := conn.QueryContext(ctx, "SELECT rootpage, type, name FROM sqlite_master WHERE rootpage > 0")
	if err != nil {
		return FreeSpace{}, fmt.Errorf("free-space audit: %w", busyErr(err))
	}
	for rows.Next() {
		var r int64
		var typ, name string
		if err := rows.Scan(&r, &typ, &name); err != nil {
			rows.Close()
			return FreeSpace{}, fmt.Errorf("free-space audit: %w", err)
		}
		roots = append(roots, uint32(r))
		switch typ {
		case "index":
			indexes[uint32(r)] = name
		case "table":
			tables[uint32(r)] = name
		}
	}
	if err := rows.Close(); err != nil {
		return FreeSpace{}, fmt.Errorf("free-space audit: %w", err)
	}
	var pages, version int64
	if err := conn.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
		return FreeSpace{}, fmt.Errorf("free-space audit: %w", busyErr(err))
	}
	if err := conn.QueryRowContext(ctx, "PRAGMA data_version").Scan(&version); err != nil {
		return FreeSpace{}, fmt.Errorf("free-space audit: %w", busyErr(err))
	}
	// The longest rowid varint of each rowid table, for staleCells.
	rowid := map[uint32]int{}
	for root, name := range tables {
		var hi, lo sql.NullInt64
		// Two subqueries: SQLite reads min() or max() from the b-tree's
		// edge only when the query has one of them, and scans the whole
		// table for both at once.
		q := Quote(name)
		if err := conn.QueryRowContext(ctx, "SELECT (SELECT max(_rowid_) FROM "+q+"), (SELECT min(_rowid_) FROM "+q+")").Scan(&hi, &lo); err != nil {
			continue // a WITHOUT ROWID table (no interior table pages), or a column named _rowid_ that is not one
		}
		switch {
		case !hi.Valid:
			rowid[root] = 1
		case lo.Int64 < 0:
			rowid[root] = 9
		default:
			rowid[root] = varintLen(uint64(hi.Int64))
		}
	}
	if fi, err := os.Stat(walFile(path)); err != nil || fi.Size() > 0 {
		return FreeSpace{Pages: int(pages), Undecided: "the WAL was written after the checkpoint, or is not where SQLite keeps it: the database file is not the whole database"}, nil
	}
	fs, dirty, err := auditFile(path, pages, roots, rowid, indexes)
	fs.dataVersion = version
	for root := range dirty {
		if name, ok := indexes[root]; ok {
			fs.DirtyIndexes = append(fs.DirtyIndexes, name)
		} else {
			fs.DirtyElse += dirty[root]
		}
	}
	slices.Sort(fs.DirtyIndexes)
	var u undecided
	if errors.As(err, &u) {
		fs.Undecided = string(u)
	} else if err != nil {
		fs.Undecided = "the database file could not be read: " + err.Error()
	}
	return fs, nil
}

// auditFile audits the database file at path, which holds pages pages and
// b-trees rooted at roots (besides sqlite_master's, page 1). It returns,
// besides the counts, the dirty pages of each b-tree by its root page (0:
// pages of no b-tree, the freelist's). rowid holds the length of the
// longest rowid varint of each rowid table by root page.
func auditFile(path string, pages int64, roots []uint32, rowid map[uint32]int, indexes map[uint32]string) (FreeSpace, map[uint32]int, error) {
	// Not os.Open: closing a descriptor of the database would drop the
	// locks this process's connections hold on it (store.OpenRead).
	f, _, done, err := store.OpenRead(path)
	if err != nil {
		return FreeSpace{}, nil, err
	}
	defer done()
	if f == nil {
		return FreeSpace{}, nil, undecidedf("the database file is empty")
	}
	id, _ := inode(f.Stat()) // zero where there is none: zeroInPlace then refuses
	a := &auditor{f: f, fs: FreeSpace{Pages: int(pages)}, dirtyIn: map[uint32]int{}, rowid: rowid, indexes: indexes, listing: true}
	err = a.run(pages, roots)
	if errors.Is(err, errStop) {
		a.fs.Stopped, err = true, nil
	}
	if err != nil || !a.listing {
		a.fs.plan = nil
	}
	a.fs.pageSize, a.fs.file = a.pageSize, id
	return a.fs, a.dirtyIn, err
}

type auditor struct {
	f        *os.File
	pageSize int
	usable   int
	n        uint32
	seen     []bool
	buf, ov  []byte
	used     []byte // per byte of the page audited: 1 structure or a live cell's, 0 unused
	ones     []byte // pageSize bytes of 1: copied over a range of used to mark it
	fs       FreeSpace
	tree     uint32         // root page of the b-tree being audited; 0 outside b-trees
	dirtyIn  map[uint32]int // dirty pages by tree
	rowid    map[uint32]int // longest rowid varint by table root (staleCells)
	indexes  map[uint32]string
	// listing: every dirty page so far is in fs.plan. It stops when a
	// page may not be zeroed in place (the lock-byte page) or there are
	// more than maxZeroPages.
	listing bool
}

// maxZeroPages bounds the dirty pages an audit lists for zeroing in place
// (a digest and a few ranges each); past it Reclaim rebuilds (REINDEX or
// VACUUM). A variable for tests of those paths.
var maxZeroPages = 1 << 16

// errStop stops the audit at the first dirty page of no index once it no
// longer lists the dirty pages: only VACUUM can clean it then, so reading
// further would not change what Reclaim does.
var errStop = errors.New("a dirty page of no index")

func (a *auditor) run(pages int64, roots []uint32) error {
	hdr, pageSize, why, err := header(a.f, pages)
	if err != nil {
		return err
	}
	if why != "" {
		return undecided(why)
	}
	a.pageSize = pageSize
	if hdr[20] != 0 {
		return undecidedf("%d bytes per page are reserved (for a checksum or encryption extension), which the audit does not read", hdr[20])
	}
	if binary.BigEndian.Uint32(hdr[52:]) != 0 {
		return undecidedf("auto_vacuum is on: its pointer-map pages are not audited")
	}
	a.usable = a.pageSize
	a.n = uint32(pages)
	a.seen = make([]bool, a.n+1)
	a.buf, a.ov = make([]byte, a.pageSize), make([]byte, a.pageSize)
	a.used, a.ones = make([]byte, a.pageSize), bytes.Repeat([]byte{1}, a.pageSize)

	if err := a.freelist(binary.BigEndian.Uint32(hdr[32:]), binary.BigEndian.Uint32(hdr[36:])); err != nil {
		return err
	}
	for _, root := range append([]uint32{1}, roots...) {
		a.tree = root
		stack := []uint32{root}
		for len(stack) > 0 {
			pg := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			children, err := a.btree(pg)
			if err != nil {
				return err
			}
			stack = append(stack, children...)
		}
	}
	a.tree = 0
	lock := uint32(1<<30/a.pageSize + 1) // the lock-byte page: never written
	missing := 0
	for pg := uint32(1); pg <= a.n; pg++ {
		if a.seen[pg] {
			continue
		}
		if pg == lock {
			if err := a.read(pg, a.buf); err != nil {
				return err
			}
			if firstNonZero(a.buf[:a.usable]) >= 0 {
				a.listing = false // SQLite never writes the lock-byte page, nor may Reclaim
			}
			if err := a.zero(pg, a.buf[:a.usable], 0); err != nil {
				return err
			}
			continue
		}
		missing++
	}
	if missing > 0 {
		return undecidedf("%d of %d pages belong to no b-tree and not to the freelist", missing, a.n)
	}
	return nil
}

// header reads the 100-byte header of the database file f, which holds
// pages pages, and checks what every reader of the file needs: SQLite's
// magic string, a valid page size, a page count within bounds and a file of
// exactly that many pages. why says, when they do not hold, which one.
func header(f *os.File, pages int64) (hdr []byte, pageSize int, why string, err error) {
	hdr = make([]byte, 100)
	if _, err := f.ReadAt(hdr, 0); err != nil {
		return nil, 0, "", err
	}
	if string(hdr[:16]) != "SQLite format 3\x00" {
		return hdr, 0, "the file has no SQLite header", nil
	}
	pageSize = int(binary.BigEndian.Uint16(hdr[16:]))
	if pageSize == 1 {
		pageSize = 65536
	}
	if pageSize < 512 || pageSize&(pageSize-1) != 0 {
		return hdr, 0, fmt.Sprintf("page size %d is not valid", pageSize), nil
	}
	if pages < 1 || pages > 1<<31 {
		return hdr, 0, fmt.Sprintf("page count %d", pages), nil
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, "", err
	}
	if fi.Size() != pages*int64(pageSize) {
		return hdr, 0, fmt.Sprintf("the file holds %d bytes, not the %d of its %d pages", fi.Size(), pages*int64(pageSize), pages), nil
	}
	return hdr, pageSize, "", nil
}

func (a *auditor) mark(pg uint32) error {
	if pg < 1 || pg > a.n {
		return undecidedf("a pointer to page %d, outside the file's %d pages", pg, a.n)
	}
	if a.seen[pg] {
		return undecidedf("page %d is reached twice", pg)
	}
	a.seen[pg] = true
	return nil
}

func (a *auditor) read(pg uint32, b []byte) error {
	_, err := a.f.ReadAt(b, int64(pg-1)*int64(a.pageSize))
	if errors.Is(err, io.EOF) {
		return undecidedf("page %d is past the end of the file", pg)
	}
	return err
}

// zero counts the non-zero bytes of page[from:], unused bytes of page pg
// (page: the whole page as read).
func (a *auditor) zero(pg uint32, page []byte, from int) error {
	b := page[from:]
	i := firstNonZero(b)
	if i < 0 {
		return nil
	}
	return a.dirty(pg, page, nonZeroBytes(b), [][2]int{{from + i, from + lastNonZero(b) + 1}})
}

// The audit reads every page of the file, so what it does per byte of a
// page is what it costs: the bytes a page's structure and live cells use
// are marked in used by copying (a.ones), and the unused ones are found as
// runs of zeros in used (bytes.IndexByte) and checked for non-zero bytes
// eight at a time, instead of testing each byte of the page in turn.

// eachUnused calls fn with each maximal run [from, to) of bytes that used
// does not mark (its bytes are 0 there and 1 elsewhere), in order.
func eachUnused(used []byte, fn func(from, to int)) {
	for j := 0; j < len(used); {
		i := bytes.IndexByte(used[j:], 0)
		if i < 0 {
			return
		}
		from := j + i
		to := len(used)
		if k := bytes.IndexByte(used[from:], 1); k >= 0 {
			to = from + k
		}
		fn(from, to)
		j = to
	}
}

// nonZeroBytes counts the non-zero bytes of b.
func nonZeroBytes(b []byte) int64 {
	n := int64(0)
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if binary.LittleEndian.Uint64(b[i:]) == 0 {
			continue
		}
		for _, x := range b[i : i+8] {
			if x != 0 {
				n++
			}
		}
	}
	for _, x := range b[i:] {
		if x != 0 {
			n++
		}
	}
	return n
}

// firstNonZero is the index of b's first non-zero byte, -1 when there is none.
func firstNonZero(b []byte) int {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if binary.LittleEndian.Uint64(b[i:]) != 0 {
			break
		}
	}
	for ; i < len(b); i++ {
		if b[i] != 0 {
			return i
		}
	}
	return -1
}

// lastNonZero is the index of b's last non-zero byte, -1 when there is none.
func lastNonZero(b []byte) int {
	i := len(b)
	for ; i >= 8; i -= 8 {
		if binary.LittleEndian.Uint64(b[i-8:]) != 0 {
			break
		}
	}
	for i--; i >= 0; i-- {
		if b[i] != 0 {
			return i
		}
	}
	return -1
}

// dirty records n non-zero unused bytes on page pg (page: the whole page
// as read), of the tree being audited, in the ranges given, and lists the
// page for zeroing in place while the audit lists them. On an index's page
// the audit goes on (which indexes are dirty decides what Reclaim
// rebuilds); on any other page it stops (errStop) once it no longer lists.
func (a *auditor) dirty(pg uint32, page []byte, n int64, ranges [][2]int) error {
	if n == 0 {
		return nil
	}
	if a.listing && len(a.fs.plan) >= maxZeroPages {
		a.listing = false
	}
	if a.listing {
		a.fs.plan = append(a.fs.plan, zeroPage{pg: pg, ranges: ranges, sum: sha256.Sum256(page[:a.pageSize])})
	}
	if a.fs.DirtyPages == 0 {
		a.fs.FirstDirty = pg
	}
	a.fs.NonZero += n
	a.fs.DirtyPages++
	a.dirtyIn[a.tree]++
	if _, ok := a.indexes[a.tree]; !ok && !a.listing {
		return errStop
	}
	return nil
}

// freelist audits the freelist: a trunk page's bytes past its list of leaf
// pages, and every leaf page, must be zero.
func (a *auditor) freelist(trunk, total uint32) error {
	count := uint32(0)
	for trunk != 0 {
		if err := a.mark(trunk); err != nil {
			return err
		}
		if err := a.read(trunk, a.buf); err != nil {
			return err
		}
		next, leaves := binary.BigEndian.Uint32(a.buf), binary.BigEndian.Uint32(a.buf[4:])
		if 8+4*int64(leaves) > int64(a.usable) {
			return undecidedf("freelist trunk page %d lists %d leaves", trunk, leaves)
		}
		end := 8 + 4*int(leaves)
		list := append([]byte(nil), a.buf[8:end]...)
		end += a.staleLeaves(a.buf[end:a.usable])
		if err := a.zero(trunk, a.buf[:a.usable], end); err != nil {
			return err
		}
		count++
		for i := 0; i < len(list); i += 4 {
			leaf := binary.BigEndian.Uint32(list[i:])
			if err := a.mark(leaf); err != nil {
				return err
			}
			if err := a.read(leaf, a.ov); err != nil {
				return err
			}
			if err := a.zero(leaf, a.ov[:a.usable], 0); err != nil {
				return err
			}
			count++
		}
		trunk = next
	}
	if count != total {
		return undecidedf("the freelist holds %d pages, the header says %d", count, total)
	}
	a.fs.Freelist = int(count)
	return nil
}

// staleLeaves returns how many bytes at the start of b, the rest of a
// freelist trunk page past its list of leaves, are stale leaf page
// numbers, and counts them in StaleLeaves. Taking a leaf off a trunk moves
// the list's last entry into the freed slot and shortens the list, so the
// slot past the new end keeps a page number (the same one may be left in
// several slots): structure that SQLite never clears, not record content.
// Slots directly past the list are stale leaves while each holds a page
// number from 2 to the file's page count, with a zero first byte (files of fewer than 2^24 pages; in larger
// ones none is tolerated, and such files are VACUUMed when a trunk has
// them): no run of more than three non-zero bytes passes for one.
func (a *auditor) staleLeaves(b []byte) int {
	if a.n >= 1<<24 {
		return 0
	}
	n := 0
	for ; n+4 <= len(b); n += 4 {
		if v := binary.BigEndian.Uint32(b[n:]); v < 2 || v > a.n {
			break
		}
	}
	a.fs.StaleLeaves += int64(n)
	return n
}

// maxRemnant is the longest run remnant tolerates.
const maxRemnant = 4

// remnant marks as used, and counts in Remnants, the non-zero unused bytes
// of an index page when they are one run of at most maxRemnant bytes.
// SQLite's page rebuilds leave such runs even on pages it built from zeroed
// ones (REINDEX and VACUUM output has them): measured here, they are the
// first bytes of a cell (payload size, header size, a serial type), the
// rest of it zeroed. Which bytes they are is not proved; what is, is their
// bound: at most maxRemnant bytes of anything per index page, shorter than
// any needle window. Two runs, or a longer one, are left for the audit to
// count (REINDEX or VACUUM then).
func (a *auditor) remnant(d, used []byte) {
	first, last := -1, -1 // the first and the last non-zero unused byte
	eachUnused(used, func(from, to int) {
		if i := firstNonZero(d[from:to]); i >= 0 {
			if first < 0 {
				first = from + i
			}
			last = from + lastNonZero(d[from:to])
		}
	})
	if first < 0 || last-first+1 > maxRemnant {
		return
	}
	for j := first; j <= last; j++ {
		if used[j] != 0 {
			return // not one run: a live cell lies between
		}
	}
	copy(used[first:last+1], a.ones)
	a.fs.Remnants += int64(last - first + 1)
	a.fs.RemnantPages++
}

// staleCells marks as used, and counts in StaleCells, the runs of
// non-zero unused bytes of an interior table page that can only be stale
// interior cells: balancing rebuilds a page from its cells without zeroing
// the space the moved cells used, and an interior table cell is a 4-byte
// child page number and a rowid varint, no record content. A run (bounded
// by zero or used bytes) passes when it is at most three bytes (the child
// page number's, whose first byte is zero in files of fewer than 2^24
// pages) followed by at most vlen bytes (vlen: the table's longest rowid
// varint) of which all but the last have the high bit set, as a varint's
// do. So no run longer than 3+vlen bytes, nor one with more than four
// bytes under 0x80 (ASCII text), passes. vlen 0 (not a rowid table, or
// its rowids unknown) passes nothing.
func (a *auditor) staleCells(d, used []byte, vlen int) {
	if vlen == 0 || a.n >= 1<<24 {
		return
	}
	for j := 0; j < len(d); j++ {
		if used[j] != 0 || d[j] == 0 {
			continue
		}
		end := j
		for end < len(d) && used[end] == 0 && d[end] != 0 {
			end++
		}
		if staleCell(d[j:end], vlen) {
			copy(used[j:end], a.ones)
			a.fs.StaleCells += int64(end - j)
		}
		j = end
	}
}

// staleCell reports whether run can be the tail of a child page number (at
// most three bytes) and a rowid varint of at most vlen bytes, all but the
// last with the high bit set.
func staleCell(run []byte, vlen int) bool {
	for i := 0; i <= 3 && i <= len(run); i++ {
		v := run[i:]
		if len(v) > vlen {
			continue
		}
		ok := true
		for k := 0; k+1 < len(v); k++ {
			if v[k] < 0x80 {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// varintLen is the length of v as an SQLite varint.
func varintLen(v uint64) int {
	if v >= 1<<56 {
		return 9
	}
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// Page types of b-tree pages.
const (
	interiorIndex = 2
	interiorTable = 5
	leafIndex     = 10
	leafTable     = 13
)

// btree audits b-tree page pg and the overflow chains of its cells, and
// returns its child pages.
func (a *auditor) btree(pg uint32) ([]uint32, error) {
	if err := a.mark(pg); err != nil {
		return nil, err
	}
	d := a.buf
	if err := a.read(pg, d); err != nil {
		return nil, err
	}
	hdr := 0
	if pg == 1 {
		hdr = 100
	}
	typ := d[hdr]
	var hsz int
	switch typ {
	case leafIndex, leafTable:
		hsz = 8
	case interiorIndex, interiorTable:
		hsz = 12
	default:
		return nil, undecidedf("page %d, reached as a b-tree page, has page type %d", pg, typ)
	}
	nCell := int(binary.BigEndian.Uint16(d[hdr+3:]))
	ptrs := hdr + hsz + 2*nCell
	if ptrs > a.usable {
		return nil, undecidedf("page %d: %d cell pointers do not fit the page", pg, nCell)
	}
	used := a.used[:a.usable]
	clear(used)
	copy(used[:ptrs], a.ones)
	var children []uint32
	type chain struct {
		first uint32
		bytes int64
	}
	var chains []chain
	for i := 0; i < nCell; i++ {
		off := int(binary.BigEndian.Uint16(d[hdr+hsz+2*i:]))
		if off < ptrs || off >= a.usable {
			return nil, undecidedf("page %d: cell %d at offset %d", pg, i, off)
		}
		c, err := a.cell(typ, d[off:a.usable])
		if err != nil {
			return nil, undecidedf("page %d: cell %d: %v", pg, i, err)
		}
		copy(used[off:off+c.size], a.ones)
		if c.child != 0 {
			children = append(children, c.child)
		}
		if c.overflow != 0 {
			chains = append(chains, chain{c.overflow, c.rest})
		}
	}
	if hsz == 12 {
		children = append(children, binary.BigEndian.Uint32(d[hdr+8:]))
	}
	// Free blocks: a 4-byte header (next, size) is structure, the rest unused.
	fb, hops := int(binary.BigEndian.Uint16(d[hdr+1:])), 0
	for fb != 0 {
		if fb < ptrs || fb+4 > a.usable || hops > a.usable/4 {
			return nil, undecidedf("page %d: a free block at offset %d", pg, fb)
		}
		size := int(binary.BigEndian.Uint16(d[fb+2:]))
		if size < 4 || fb+size > a.usable {
			return nil, undecidedf("page %d: a free block of %d bytes at offset %d", pg, size, fb)
		}
		copy(used[fb:fb+4], a.ones)
		next := int(binary.BigEndian.Uint16(d[fb:]))
		if next != 0 && next <= fb {
			return nil, undecidedf("page %d: free blocks out of order", pg)
		}
		fb, hops = next, hops+1
	}
	// Stale cell pointers: removing a cell shifts the pointer array down
	// and leaves its last 2-byte slot as it was, secure_delete or not, and
	// a page that balancing rebuilt keeps the slots past its shorter array.
	// Such a slot holds the offset of a cell that was on the page: not
	// zero, at least its own end, and where a cell of 4 bytes fits. The
	// slots directly past the array that look so are structure, counted
	// in StalePointers; the first one that does not ends them. On pages of
	// at most 8 KiB such a value's first byte is under 0x20, which no text
	// but control characters has; on larger pages text could pass for
	// pointers, so none is tolerated there (and such files are VACUUMed).
	for j := ptrs; a.usable <= 8192 && j+2 <= a.usable && used[j] == 0 && used[j+1] == 0; j += 2 {
		v := int(binary.BigEndian.Uint16(d[j:]))
		if v < j+2 || v > a.usable-4 {
			break
		}
		used[j], used[j+1] = 1, 1
		a.fs.StalePointers += 2
	}
	switch typ {
	case interiorTable:
		a.staleCells(d[:a.usable], used, a.rowid[a.tree])
	case leafIndex, interiorIndex:
		a.remnant(d[:a.usable], used)
	}
	n := int64(0)
	var ranges [][2]int
	eachUnused(used, func(from, to int) {
		if i := firstNonZero(d[from:to]); i >= 0 {
			n += nonZeroBytes(d[from:to])
			ranges = append(ranges, [2]int{from + i, from + lastNonZero(d[from:to]) + 1})
		}
	})
	if err := a.dirty(pg, d, n, ranges); err != nil {
		return nil, err
	}
	for _, c := range chains {
		if err := a.overflow(c.first, c.bytes); err != nil {
			return nil, err
		}
	}
	return children, nil
}

// overflow audits an overflow chain that holds rest bytes of a payload: the
// last page's bytes past the payload must be zero.
func (a *auditor) overflow(pg uint32, rest int64) error {
	for {
		if err := a.mark(pg); err != nil {
			return err
		}
		if err := a.read(pg, a.ov); err != nil {
			return err
		}
		next := binary.BigEndian.Uint32(a.ov)
		n := int64(a.usable - 4)
		if rest <= n {
			if next != 0 {
				return undecidedf("overflow page %d ends a payload but points to page %d", pg, next)
			}
			return a.zero(pg, a.ov[:a.usable], 4+int(rest))
		}
		if next == 0 {
			return undecidedf("overflow chain ends at page %d with %d payload bytes left", pg, rest-n)
		}
		rest -= n
		pg = next
	}
}

// cellInfo is what the audit needs of one cell.
type cellInfo struct {
	size     int    // bytes of the cell on its page
	child    uint32 // left child page (interior pages)
	overflow uint32 // first overflow page, 0 if none
	rest     int64  // payload bytes on the overflow chain
}

// cell parses the cell at the start of c on a page of type typ.
func (a *auditor) cell(typ byte, c []byte) (cellInfo, error) {
	var ci cellInfo
	p := 0
	if typ == interiorIndex || typ == interiorTable {
		if len(c) < 4 {
			return ci, errors.New("truncated")
		}
		ci.child = binary.BigEndian.Uint32(c)
		p = 4
	}
	if typ == interiorTable { // left child and rowid only
		_, n := varint(c[p:])
		if n == 0 {
			return ci, errors.New("truncated")
		}
		ci.size = p + n
		return ci, nil
	}
	payload, n := varint(c[p:])
	if n == 0 {
		return ci, errors.New("truncated")
	}
	p += n
	if typ == leafTable {
		_, n = varint(c[p:])
		if n == 0 {
			return ci, errors.New("truncated")
		}
		p += n
	}
	local := localBytes(int64(payload), int64(a.usable), typ == leafTable)
	if local < int64(payload) {
		if p+int(local)+4 > len(c) {
			return ci, errors.New("payload runs past the page")
		}
		ci.overflow = binary.BigEndian.Uint32(c[p+int(local):])
		ci.rest = int64(payload) - local
		ci.size = p + int(local) + 4
		if ci.overflow == 0 {
			return ci, errors.New("no overflow page")
		}
		return ci, nil
	}
	ci.size = max(p+int(local), 4)
	if ci.size > len(c) {
		return ci, errors.New("payload runs past the page")
	}
	return ci, nil
}

// localBytes is how many bytes of a cell's payload of size bytes lie on its
// b-tree page (the rest on overflow pages), on pages of usable bytes: of a
// table leaf's cell (table) or an index page's.
func localBytes(size, usable int64, table bool) int64 {
	maxLocal := (usable-12)*64/255 - 23
	if table {
		maxLocal = usable - 35
	}
	if size <= maxLocal {
		return size
	}
	minLocal := (usable-12)*32/255 - 23
	if k := minLocal + (size-minLocal)%(usable-4); k <= maxLocal {
		return k
	}
	return minLocal
}

// varint decodes SQLite's variable-length integer at the start of b and
// returns it with its length, 0 when b is too short.
func varint(b []byte) (uint64, int) {
	var v uint64
	for i := 0; i < 9; i++ {
		if i >= len(b) {
			return 0, 0
		}
		if i == 8 {
			return v<<8 | uint64(b[i]), 9
		}
		v = v<<7 | uint64(b[i]&0x7f)
		if b[i]&0x80 == 0 {
			return v, i + 1
		}
	}
	return v, 9
}
