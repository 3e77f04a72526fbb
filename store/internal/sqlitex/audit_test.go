package sqlitex

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fill creates a database at path with secure_delete as given, writes 300
// rows (some with overflow pages), deletes a third of them, and checkpoints.
func fill(t *testing.T, path string, secure bool, dsn ...string) {
	t.Helper()
	sd := "off"
	if secure {
		sd = "on"
	}
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_secure_delete="+sd+strings.Join(dsn, ""))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, k TEXT UNIQUE, v TEXT)`); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 300; i++ {
		v := strings.Repeat(fmt.Sprintf("row %d holds text %x; ", i, i*7919), 3+(i%7)*(i%7)*10)
		if _, err := db.Exec(`INSERT INTO t (k, v) VALUES (?, ?)`, fmt.Sprintf("key-%d", i), v); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(`DELETE FROM t WHERE id % 3 = 0`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
}

// openConn opens the database at path and one connection of it, both
// closed when t ends.
func openConn(t *testing.T, path string) (*sql.DB, *sql.Conn) {
	t.Helper()
	db, err := Open(context.Background(), path, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return db, conn
}

func audit(t *testing.T, path string) FreeSpace {
	t.Helper()
	ctx := context.Background()
	db, conn := openConn(t, path)
	defer db.Close()
	defer conn.Close()
	fs, err := AuditFreeSpace(ctx, conn, path)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// Deleted rows leave their bytes in free blocks and freelist pages unless
// secure_delete zeroed them: the audit tells the two apart, and counts the
// freelist pages it read.
func TestAuditFreeSpace(t *testing.T) {
	dir := t.TempDir()
	secure, plain := filepath.Join(dir, "secure.db"), filepath.Join(dir, "plain.db")
	fill(t, secure, true)
	fill(t, plain, false)
	fs := audit(t, secure)
	if !fs.Clean() || fs.Freelist == 0 || fs.Pages < 50 {
		t.Errorf("secure_delete on: %s (%+v): want clean, with freelist pages", fs, fs)
	}
	fs = audit(t, plain)
	if fs.Clean() || fs.Undecided != "" || fs.NonZero == 0 {
		t.Errorf("secure_delete off: %s: want non-zero free space found", fs)
	}
}

// One non-zero byte in a clean file's unused space is found: in the gap of
// a b-tree page, in a freelist page, past an overflow chain's payload.
func TestAuditFindsOneByte(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	fill(t, path, true)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const ps = 4096
	if binary.BigEndian.Uint16(b[16:]) != ps {
		t.Fatalf("page size %d", binary.BigEndian.Uint16(b[16:]))
	}
	var gap, free, ptrs int = -1, -1, -1
	// A leaf table page with a gap: the byte just before its cell content,
	// and the first two bytes past its cell pointers, when they are zero.
	for pg := 1; pg < len(b)/ps && gap < 0; pg++ {
		d := b[pg*ps : (pg+1)*ps]
		if d[0] == leafTable {
			n := int(binary.BigEndian.Uint16(d[3:]))
			start := int(binary.BigEndian.Uint16(d[5:]))
			if end := 8 + 2*n; start-end > 64 && d[end] == 0 && d[end+1] == 0 {
				gap, ptrs = pg*ps+start-1, pg*ps+end
			}
		}
	}
	igap := gapEnd(t, b, leafIndex, 16)
	cgap := -1 // the middle of an interior table page's gap
	for pg := 1; pg < len(b)/ps && cgap < 0; pg++ {
		d := b[pg*ps : (pg+1)*ps]
		if d[0] == interiorTable {
			n := int(binary.BigEndian.Uint16(d[3:]))
			if start, end := int(binary.BigEndian.Uint16(d[5:])), 12+2*n; start-end > 40 {
				cgap = pg*ps + (start+end)/2
			}
		}
	}
	if cgap < 0 {
		t.Fatal("no interior table page with a gap")
	}
	pastList := -1 // the first byte past the first trunk page's list of leaves
	if tr := binary.BigEndian.Uint32(b[32:]); tr != 0 {
		free = int(tr-1)*ps + ps - 1 // the last byte of the first trunk page
		pastList = int(tr-1)*ps + 8 + 4*int(binary.BigEndian.Uint32(b[int(tr-1)*ps+4:]))
	}
	pages := uint32(len(b) / ps)
	if gap < 0 || free < 0 {
		t.Fatalf("no page with a gap (%d) or no freelist (%d)", gap, free)
	}
	if !audit(t, path).Clean() {
		t.Fatal("the file written with secure_delete on is not clean")
	}
	base := audit(t, path)
	for _, c := range []struct {
		name           string
		off            int
		put            []byte
		nonZero, stale int64
		index          bool // the page is the UNIQUE index's
		leaves         int64
		cells          int64
	}{
		{"stale interior cells", cgap, []byte{0x00, 0x00, 0x01, 0x07, 0x81, 0x05, 0x00, 0x00, 0x01, 0x06, 0x8a}, 0, 0, false, 0, 7},
		{"text in an interior table page", cgap, []byte("hello"), 5, 0, false, 0, 0},
		{"a long varint in an interior table page", cgap, []byte{0x01, 0x07, 0x81, 0x82, 0x83, 0x05}, 6, 0, false, 0, 0},
		{"a stale freelist leaf", pastList, binary.BigEndian.AppendUint32(nil, pages-1), 0, 0, false, 4, 0},
		{"two stale freelist leaves", pastList, binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 2), pages), 0, 0, false, 8, 0},
		{"a leaf past the file", pastList, binary.BigEndian.AppendUint32(nil, pages+1), nonZero(pages + 1), 0, false, 0, 0},
		{"a leaf twice", pastList, binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 7), 7), 0, 0, false, 8, 0},
		{"page 1 as a leaf", pastList, binary.BigEndian.AppendUint32(nil, 1), 1, 0, false, 0, 0},
		{"text past the freelist list", pastList, []byte("wxyz"), 4, 0, false, 0, 0},
		{"gap", gap, []byte("x"), 1, 0, false, 0, 0},
		{"freelist", free, []byte("x"), 1, 0, false, 0, 0},
		{"text past the cell pointers", ptrs, []byte("xy"), 2, 0, false, 0, 0},
		{"a stale cell pointer", ptrs, []byte{0x0f, 0x00}, 0, 2, false, 0, 0},
		{"an index page's gap", igap - 5, []byte("vwxyz"), 5, 0, true, 0, 0},
		{"two runs in an index page's gap", igap - 5, []byte("xy\x00yz"), 4, 0, true, 0, 0},
		{"a remnant in an index page's gap", igap - 6, []byte("wxyz"), 0, 0, true, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "x.db")
			f := append([]byte(nil), b...)
			copy(f[c.off:], c.put)
			if err := os.WriteFile(p, f, 0o600); err != nil {
				t.Fatal(err)
			}
			fs := audit(t, p)
			page := uint32(c.off/ps + 1)
			if c.nonZero == 0 && !fs.Clean() || fs.StaleLeaves-base.StaleLeaves != c.leaves || fs.StaleCells-base.StaleCells != c.cells {
				t.Errorf("%s: want clean with %d more bytes of stale leaves and %d of stale cells", fs, c.leaves, c.cells)
			}
			if c.nonZero > 0 && (fs.NonZero != c.nonZero || fs.FirstDirty != page) || c.stale > 0 && (!fs.Clean() || fs.StalePointers-base.StalePointers != c.stale) || fs.Undecided != "" {
				t.Errorf("%s: want %d non-zero bytes (on page %d) and %d more stale pointer bytes", fs, c.nonZero, page, c.stale)
			}
			switch {
			case c.nonZero == 0:
				if c.index && (fs.Remnants-base.Remnants != int64(len(c.put)) || fs.RemnantPages-base.RemnantPages != 1) {
					t.Errorf("%s (%+v): want %d bytes on 1 page told as a remnant", fs, fs, len(c.put))
				}
			case c.index && (!fs.OnlyIndexes() || !slices.Equal(fs.DirtyIndexes, []string{"sqlite_autoindex_t_1"}) || fs.DirtyElse != 0):
				t.Errorf("%s (%+v): want the dirty page told as the index sqlite_autoindex_t_1's", fs, fs)
			case !c.index && (fs.OnlyIndexes() || len(fs.DirtyIndexes) != 0 || fs.DirtyElse != 1 || fs.Stopped):
				t.Errorf("%s (%+v): want the dirty page told as no index's, and the audit not stopped there", fs, fs)
			case c.index && fs.Stopped:
				t.Errorf("%s: the audit stopped at an index's page", fs)
			}
			if c.nonZero == 0 {
				if fs.plan != nil {
					t.Errorf("a clean audit lists pages to zero: %+v", fs.plan)
				}
				return
			}
			// The dirty page is listed for zeroing in place, with ranges
			// that hold every planted non-zero byte and no used byte.
			if len(fs.plan) != 1 || fs.plan[0].pg != page {
				t.Fatalf("pages listed to zero: %+v; want page %d alone", fs.plan, page)
			}
			in := 0
			for _, r := range fs.plan[0].ranges {
				for o := r[0]; o < r[1]; o++ {
					at := int(page-1)*ps + o
					if at >= c.off && at < c.off+len(c.put) {
						if f[at] != 0 {
							in++
						}
					} else if f[at] != b[at] || b[at] != 0 {
						t.Errorf("the ranges to zero hold byte %d of the page, which is not one planted there", o)
					}
				}
			}
			if want := len(c.put) - bytes.Count(c.put, []byte{0}); in != want {
				t.Errorf("the ranges to zero hold %d of the %d non-zero bytes planted", in, want)
			}
			// Not listing (more dirty pages than it may list), the audit
			// stops at the first dirty page of no index.
			defer func(n int) { maxZeroPages = n }(maxZeroPages)
			maxZeroPages = 0
			if fs := audit(t, p); fs.plan != nil || fs.NonZero != c.nonZero || fs.Stopped == c.index {
				t.Errorf("listing none: %s (%+v); want no pages listed and the audit stopped unless at an index's page", fs, fs)
			}
		})
	}
}

// A run of unused bytes in an interior table page passes for stale cells
// only as up to three bytes of a page number and a varint no longer than
// the table's rowids need.
func TestStaleCell(t *testing.T) {
	for _, c := range []struct {
		run  []byte
		vlen int
		want bool
	}{
		{[]byte{0x76, 0x06, 0x92, 0x99, 0x7f}, 3, true},
		{[]byte{0x01, 0x76, 0x06, 0x92, 0x99, 0x7f}, 3, true},
		{[]byte{0x01, 0x76, 0x06, 0x92, 0x99, 0x7f}, 2, false},
		{[]byte("ab"), 1, true},
		{[]byte("abcd"), 1, true},
		{[]byte("abcde"), 9, false},
		{[]byte("hello world"), 9, false},
		{[]byte{0x92, 0x99}, 3, true}, // cut by the cell content that follows
		{[]byte{'a', 'b', 'c', 0x81, 0x82, 0x83, 0x84}, 3, false},
	} {
		if got := staleCell(c.run, c.vlen); got != c.want {
			t.Errorf("staleCell(%x, %d) = %v, want %v", c.run, c.vlen, got, c.want)
		}
	}
	for v, n := range map[uint64]int{0: 1, 127: 1, 128: 2, 1<<14 - 1: 2, 1 << 14: 3, 1<<56 - 1: 8, 1 << 56: 9} {
		if got := varintLen(v); got != n {
			t.Errorf("varintLen(%d) = %d, want %d", v, got, n)
		}
	}
}

// nonZero counts the non-zero bytes of v.
func nonZero(v uint32) int64 {
	n := int64(0)
	for ; v != 0; v >>= 8 {
		if v&0xff != 0 {
			n++
		}
	}
	return n
}

// gapEnd returns the offset in the database file b (4 KiB pages) of the
// end of the gap between the cell pointers and the cell content (the first
// byte of the cell content) of the first leaf page of type typ (leafIndex or
// leafTable) whose gap is longer than room bytes.
func gapEnd(t *testing.T, b []byte, typ byte, room int) int {
	t.Helper()
	const ps = 4096
	for pg := 1; pg < len(b)/ps; pg++ {
		d := b[pg*ps : (pg+1)*ps]
		if d[0] == typ {
			n := int(binary.BigEndian.Uint16(d[3:]))
			if start := int(binary.BigEndian.Uint16(d[5:])); start-(8+2*n) > room {
				return pg*ps + start
			}
		}
	}
	t.Fatalf("no leaf page of type %d with a gap of more than %d bytes", typ, room)
	return -1
}

// What the audit does not understand leaves it undecided (Reclaim then
// runs VACUUM): auto_vacuum's pointer-map pages, a file longer than its
// pages, a page no b-tree or freelist reaches.
func TestAuditUndecided(t *testing.T) {
	dir := t.TempDir()
	av := filepath.Join(dir, "av.db")
	fill(t, av, true, "&_auto_vacuum=full")
	if fs := audit(t, av); !strings.Contains(fs.Undecided, "auto_vacuum") {
		t.Errorf("auto_vacuum: %s", fs)
	}

	path := filepath.Join(dir, "x.db")
	fill(t, path, true)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	long := filepath.Join(t.TempDir(), "x.db")
	os.WriteFile(long, append(append([]byte(nil), b...), make([]byte, 100)...), 0o600)
	if fs := audit(t, long); !strings.Contains(fs.Undecided, "not the") {
		t.Errorf("longer file: %s", fs)
	}

	// Drop the first freelist trunk from the header: its pages are
	// reached by nothing.
	lost := filepath.Join(t.TempDir(), "x.db")
	c := append([]byte(nil), b...)
	n := binary.BigEndian.Uint32(c[36:])
	tr := binary.BigEndian.Uint32(c[32:])
	if n == 0 {
		t.Fatal("no freelist")
	}
	leaves := binary.BigEndian.Uint32(c[int(tr-1)*4096+4:])
	binary.BigEndian.PutUint32(c[32:], binary.BigEndian.Uint32(c[int(tr-1)*4096:]))
	binary.BigEndian.PutUint32(c[36:], n-1-leaves)
	os.WriteFile(lost, c, 0o600)
	if fs := audit(t, lost); !strings.Contains(fs.Undecided, "belong to no b-tree") {
		t.Errorf("unreachable pages: %s", fs)
	}
}

func TestVarint(t *testing.T) {
	for _, c := range []struct {
		b []byte
		v uint64
		n int
	}{
		{[]byte{0x05}, 5, 1},
		{[]byte{0x81, 0x00}, 128, 2},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 1<<64 - 1, 9},
		{[]byte{0x81}, 0, 0},
	} {
		if v, n := varint(c.b); v != c.v || n != c.n {
			t.Errorf("varint(%x) = %d, %d; want %d, %d", c.b, v, n, c.v, c.n)
		}
	}
}

// A byte past a record's payload on its last overflow page is found.
func TestAuditFindsOverflowTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "o.db")
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_secure_delete=on")
	if err != nil {
		t.Fatal(err)
	}
	// 8178 bytes of blob and a 3-byte record header: 489 bytes stay on the
	// page, 7692 go to two overflow pages, the second holding 3600.
	for _, q := range []string{`CREATE TABLE o (b BLOB)`, `INSERT INTO o VALUES (randomblob(8178))`, `PRAGMA wal_checkpoint(TRUNCATE)`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const ps = 4096
	a := &auditor{usable: ps}
	d := b[ps : 2*ps] // page 2: the table's root, a leaf
	if d[0] != leafTable {
		t.Fatalf("page 2 has type %d", d[0])
	}
	c, err := a.cell(leafTable, d[binary.BigEndian.Uint16(d[8:]):])
	if err != nil || c.overflow == 0 {
		t.Fatalf("root page: cell %+v, %v: want an overflow chain", c, err)
	}
	pg, rest := c.overflow, c.rest
	for rest > ps-4 {
		pg, rest = binary.BigEndian.Uint32(b[int(pg-1)*ps:]), rest-(ps-4)
	}
	if rest >= ps-4 {
		t.Fatalf("the last overflow page is full (%d bytes): no tail to test", rest)
	}
	if fs := audit(t, path); !fs.Clean() {
		t.Fatalf("fresh file: %s", fs)
	}
	b[int(pg)*ps-1] = 'x' // the last byte of the last overflow page
	p := filepath.Join(t.TempDir(), "o.db")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if fs := audit(t, p); fs.NonZero != 1 || fs.Undecided != "" {
		t.Errorf("%s: want the 1 byte past the payload found", fs)
	}
}
