package sqlitex

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
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
// holds counts only, never content.
type FreeSpace struct {
	Pages    int // pages in the database
	Freelist int // of which freelist pages
	// NonZero counts the unused bytes (free blocks, page gaps, fragments,
	// freelist pages, overflow tails) that are not zero on page FirstDirty:
	// the audit stops at the first such page (DirtyPages is then 1), since
	// one is enough to VACUUM.
	NonZero    int64
	DirtyPages int
	FirstDirty uint32
	// StalePointers counts the bytes of stale 2-byte cell pointers found
	// directly past pages' cell pointer arrays (see btree): structure that
	// SQLite never clears, not record content.
	StalePointers int64
	// Undecided, when set, says why the audit could not decide.
	Undecided string
}

// Clean reports whether the audit proved that no unused byte of the file
// holds data.
func (f FreeSpace) Clean() bool { return f.Undecided == "" && f.NonZero == 0 }

// String describes the audit's result in one line of counts.
func (f FreeSpace) String() string {
	switch {
	case f.Undecided != "":
		return "free-space audit undecided: " + f.Undecided
	case f.NonZero > 0:
		return fmt.Sprintf("free-space audit of %d pages: %d unused bytes of page %d are not zero (the audit stops at the first such page)", f.Pages, f.NonZero, f.FirstDirty)
	}
	s := fmt.Sprintf("free-space audit of %d pages (%d on the freelist): every unused byte is zero", f.Pages, f.Freelist)
	if f.StalePointers > 0 {
		s += fmt.Sprintf(" (%d bytes past cell pointer arrays are stale 2-byte cell pointers: page structure)", f.StalePointers)
	}
	return s
}

// undecided is an audit that cannot conclude: the reason is reported, and
// Reclaim falls back to VACUUM.
type undecided string

func (u undecided) Error() string { return string(u) }

func undecidedf(format string, args ...any) error { return undecided(fmt.Sprintf(format, args...)) }

// errDirty stops the audit at the first page with non-zero unused bytes.
var errDirty = errors.New("non-zero unused bytes")

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
	rows, err := conn.QueryContext(ctx, "SELECT rootpage FROM sqlite_master WHERE rootpage > 0")
	if err != nil {
		return FreeSpace{}, fmt.Errorf("free-space audit: %w", busyErr(err))
	}
	for rows.Next() {
		var r int64
		if err := rows.Scan(&r); err != nil {
			rows.Close()
			return FreeSpace{}, fmt.Errorf("free-space audit: %w", err)
		}
		roots = append(roots, uint32(r))
	}
	if err := rows.Close(); err != nil {
		return FreeSpace{}, fmt.Errorf("free-space audit: %w", err)
	}
	var pages int64
	if err := conn.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
		return FreeSpace{}, fmt.Errorf("free-space audit: %w", busyErr(err))
	}
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		return FreeSpace{Pages: int(pages), Undecided: "the WAL was written after the checkpoint: the database file is not the whole database"}, nil
	}
	fs, err := auditFile(path, pages, roots)
	var u undecided
	if errors.As(err, &u) {
		fs.Undecided = string(u)
	} else if err != nil {
		fs.Undecided = "the database file could not be read: " + err.Error()
	}
	return fs, nil
}

// auditFile audits the database file at path, which holds pages pages and
// b-trees rooted at roots (besides sqlite_master's, page 1).
func auditFile(path string, pages int64, roots []uint32) (FreeSpace, error) {
	f, err := os.Open(path)
	if err != nil {
		return FreeSpace{}, err
	}
	defer f.Close()
	a := &auditor{f: f, fs: FreeSpace{Pages: int(pages)}}
	err = a.run(pages, roots)
	if errors.Is(err, errDirty) {
		err = nil
	}
	return a.fs, err
}

type auditor struct {
	f        *os.File
	pageSize int
	usable   int
	n        uint32
	seen     []bool
	buf, ov  []byte
	used     []bool
	fs       FreeSpace
}

func (a *auditor) run(pages int64, roots []uint32) error {
	hdr := make([]byte, 100)
	if _, err := a.f.ReadAt(hdr, 0); err != nil {
		return err
	}
	if string(hdr[:16]) != "SQLite format 3\x00" {
		return undecidedf("the file has no SQLite header")
	}
	a.pageSize = int(binary.BigEndian.Uint16(hdr[16:]))
	if a.pageSize == 1 {
		a.pageSize = 65536
	}
	if a.pageSize < 512 || a.pageSize&(a.pageSize-1) != 0 {
		return undecidedf("page size %d is not valid", a.pageSize)
	}
	if hdr[20] != 0 {
		return undecidedf("%d bytes per page are reserved (for a checksum or encryption extension), which the audit does not read", hdr[20])
	}
	if binary.BigEndian.Uint32(hdr[52:]) != 0 {
		return undecidedf("auto_vacuum is on: its pointer-map pages are not audited")
	}
	if pages < 1 || pages > 1<<31 {
		return undecidedf("page count %d", pages)
	}
	fi, err := a.f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() != pages*int64(a.pageSize) {
		return undecidedf("the file holds %d bytes, not the %d of its %d pages", fi.Size(), pages*int64(a.pageSize), pages)
	}
	a.usable = a.pageSize
	a.n = uint32(pages)
	a.seen = make([]bool, a.n+1)
	a.buf, a.ov = make([]byte, a.pageSize), make([]byte, a.pageSize)
	a.used = make([]bool, a.pageSize)

	if err := a.freelist(binary.BigEndian.Uint32(hdr[32:]), binary.BigEndian.Uint32(hdr[36:])); err != nil {
		return err
	}
	stack := append([]uint32{1}, roots...)
	for len(stack) > 0 {
		pg := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		children, err := a.btree(pg)
		if err != nil {
			return err
		}
		stack = append(stack, children...)
	}
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
			if err := a.zero(pg, a.buf[:a.usable]); err != nil {
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

// zero counts the non-zero bytes of b, unused bytes of page pg, and stops
// the audit (errDirty) when there is one.
func (a *auditor) zero(pg uint32, b []byte) error {
	n := int64(0)
	for _, x := range b {
		if x != 0 {
			n++
		}
	}
	return a.dirty(pg, n)
}

// dirty records n non-zero unused bytes on page pg: errDirty when n > 0.
func (a *auditor) dirty(pg uint32, n int64) error {
	if n == 0 {
		return nil
	}
	a.fs.NonZero, a.fs.DirtyPages, a.fs.FirstDirty = n, 1, pg
	return errDirty
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
		if err := a.zero(trunk, a.buf[end:a.usable]); err != nil {
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
			if err := a.zero(leaf, a.ov[:a.usable]); err != nil {
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
	for i := 0; i < ptrs; i++ {
		used[i] = true
	}
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
		for j := off; j < off+c.size; j++ {
			used[j] = true
		}
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
		for j := fb; j < fb+4; j++ {
			used[j] = true
		}
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
	for j := ptrs; a.usable <= 8192 && j+2 <= a.usable && !used[j] && !used[j+1]; j += 2 {
		v := int(binary.BigEndian.Uint16(d[j:]))
		if v < j+2 || v > a.usable-4 {
			break
		}
		used[j], used[j+1] = true, true
		a.fs.StalePointers += 2
	}
	n := int64(0)
	for j, u := range used {
		if !u && d[j] != 0 {
			n++
		}
	}
	if err := a.dirty(pg, n); err != nil {
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
			return a.zero(pg, a.ov[4+rest:a.usable])
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
	u := int64(a.usable)
	maxLocal := (u-12)*64/255 - 23
	if typ == leafTable {
		maxLocal = u - 35
	}
	minLocal := (u-12)*32/255 - 23
	local := int64(payload)
	if local > maxLocal {
		k := minLocal + (int64(payload)-minLocal)%(u-4)
		local = minLocal
		if k <= maxLocal {
			local = k
		}
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
