package sqlitex

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
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

func audit(t *testing.T, path string) FreeSpace {
	t.Helper()
	ctx := context.Background()
	db, err := Open(ctx, path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
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
	if tr := binary.BigEndian.Uint32(b[32:]); tr != 0 {
		free = int(tr-1)*ps + ps - 1 // the last byte of the first trunk page
	}
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
	}{
		{"gap", gap, []byte("x"), 1, 0},
		{"freelist", free, []byte("x"), 1, 0},
		{"text past the cell pointers", ptrs, []byte("xy"), 2, 0},
		{"a stale cell pointer", ptrs, []byte{0x0f, 0x00}, 0, 2},
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
			if c.nonZero > 0 && (fs.NonZero != c.nonZero || fs.FirstDirty != page) || c.stale > 0 && (!fs.Clean() || fs.StalePointers-base.StalePointers != c.stale) || fs.Undecided != "" {
				t.Errorf("%s: want %d non-zero bytes (on page %d) and %d more stale pointer bytes", fs, c.nonZero, page, c.stale)
			}
		})
	}
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
