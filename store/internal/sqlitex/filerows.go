package sqlitex

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/amnesia-dev/amnesia/store"
)

// Rows read from the database file.
//
// Shared-window detection (store.DropShared) reads every other live row of
// a table. Through SQL each row costs a step of the statement and a cgo
// call (the driver's rows were about half of DropShared's CPU time in a
// profile of an erasure on the default corpus). FileRows reads the same
// rows from the database file instead, walking the table's b-tree as the
// free-space audit does (https://www.sqlite.org/fileformat2.html), under
// the audit's conditions: a read transaction started with the WAL empty,
// so the file is the whole database and no checkpoint may write to it
// while it is read. What it cannot read so (a WAL it could not empty, a
// WITHOUT ROWID table, generated columns, a floating-point key or value, a
// page it does not understand) it does not guess at: it returns a NotRead
// error, and the caller reads the rows through SQL.

// RowsSpec says which rows FileRows reads, and how each is passed on: as
//
//	SELECT CAST(Key AS TEXT), CAST(c AS BLOB) FROM Table WHERE c IS NOT NULL
//
// returns them for each column c of Content.
type RowsSpec struct {
	Table   string
	Key     string
	Content []string
}

// NotRead is FileRows's error when it cannot read the rows from the file:
// Reason says why, in one line of schema names and counts (no content).
type NotRead struct{ Reason string }

func (e *NotRead) Error() string { return "rows not read from the database file: " + e.Reason }

func notRead(format string, args ...any) error { return &NotRead{fmt.Sprintf(format, args...)} }

// FileRows calls fn with the key and the bytes of every non-NULL Content
// value of every live row of spec.Table (row by row, not column by column
// as a UNION ALL of the statements above would), reading the database file
// at path. The bytes are FileRows's until fn returns. It returns fn's error
// as it is, and a *NotRead error, possibly after fn has been called for
// some rows, when the file cannot be read so: the caller then reads the
// rows through SQL (and discards what fn was told).
//
// It first checkpoints and truncates the WAL (PRAGMA wal_checkpoint
// (TRUNCATE), without waiting: another connection's transaction makes it a
// NotRead), then reads under a read transaction (see AuditFreeSpace).
func FileRows(ctx context.Context, db *sql.DB, path string, spec RowsSpec, fn func(key string, b []byte) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var wait int
	if err := conn.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&wait); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, "PRAGMA busy_timeout = 0"); err != nil {
		return err
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "PRAGMA busy_timeout = "+strconv.Itoa(wait))
	var busy, frames, done int
	if err := conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &frames, &done); err != nil {
		if errors.Is(busyErr(err), store.ErrBusy) {
			return notRead("the WAL could not be checkpointed: %v", err)
		}
		return err
	}
	if busy != 0 {
		return notRead("another connection holds a transaction: the WAL could not be emptied")
	}
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		return busyErr(err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
	t, err := readTable(ctx, conn, spec)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(walFile(path)); err != nil || fi.Size() > 0 {
		return notRead("the WAL was written after the checkpoint, or is not where SQLite keeps it: the database file is not the whole database")
	}
	f, _, release, err := store.OpenRead(path)
	if err != nil {
		return err
	}
	defer release()
	if f == nil {
		return notRead("the database file is empty")
	}
	r := &rowReader{f: f, t: t, fn: fn, ctx: ctx}
	return r.run()
}

// table is what FileRows needs of the table's schema: its root page, the
// record column of the key and of each content value, and the file's size
// in pages.
type table struct {
	name    string
	root    uint32
	pages   int64
	key     int  // record column of the key
	keyRow  bool // the key is the rowid (an INTEGER PRIMARY KEY)
	content []int
	ncols   int // columns of the table: a record may hold fewer (ALTER TABLE ADD COLUMN)
	// noDefault: per record column, its default is not NULL (a record
	// that ends before it has that default, which FileRows does not
	// evaluate).
	noDefault []bool
}

// descending finds DESC in a table's SQL: INTEGER PRIMARY KEY DESC is not
// an alias of the rowid (https://www.sqlite.org/lang_createtable.html#rowid).
var descending = regexp.MustCompile(`(?i)\bdesc\b`)

// readTable reads spec's table from the schema, in the read transaction
// on conn (its first read starts it).
func readTable(ctx context.Context, conn *sql.Conn, spec RowsSpec) (*table, error) {
	var root int64
	var ddl sql.NullString
	err := conn.QueryRowContext(ctx, "SELECT rootpage, sql FROM sqlite_master WHERE type = 'table' AND name = ? COLLATE NOCASE", spec.Table).Scan(&root, &ddl)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notRead("no table %s in the schema", Quote(spec.Table))
	}
	if err != nil {
		return nil, busyErr(err)
	}
	if root < 2 || root > 1<<31 {
		return nil, notRead("table %s has root page %d (a virtual table?)", Quote(spec.Table), root)
	}
	rows, err := conn.QueryContext(ctx, "SELECT name, type, pk, hidden, dflt_value IS NOT NULL FROM pragma_table_xinfo(?)", spec.Table)
	if err != nil {
		return nil, busyErr(err)
	}
	defer rows.Close()
	t := &table{name: spec.Table, root: uint32(root), key: -1}
	idx := map[string]int{}
	real := map[int]bool{}
	var pkCols int
	var pkType string
	pkCol := -1
	for rows.Next() {
		var name, typ string
		var pk, hidden int
		var dflt bool
		if err := rows.Scan(&name, &typ, &pk, &hidden, &dflt); err != nil {
			return nil, err
		}
		if hidden != 0 {
			return nil, notRead("table %s has generated or hidden columns", Quote(spec.Table))
		}
		if realAffinity(typ) {
			real[t.ncols] = true
		}
		idx[strings.ToLower(name)] = t.ncols
		t.noDefault = append(t.noDefault, dflt)
		if pk > 0 {
			pkCols++
			pkType, pkCol = typ, t.ncols
		}
		t.ncols++
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	col := func(name string) (int, error) {
		i, ok := idx[strings.ToLower(name)]
		if !ok {
			return 0, notRead("table %s has no column %s", Quote(spec.Table), Quote(name))
		}
		if real[i] {
			// SQLite may keep a whole REAL as an integer on disk: read
			// back it is 3.0, not the 3 the file holds.
			return 0, notRead("column %s of table %s has REAL affinity", Quote(name), Quote(spec.Table))
		}
		return i, nil
	}
	if t.key, err = col(spec.Key); err != nil {
		return nil, err
	}
	for _, c := range spec.Content {
		i, err := col(c)
		if err != nil {
			return nil, err
		}
		t.content = append(t.content, i)
	}
	t.keyRow = pkCols == 1 && pkCol == t.key && strings.EqualFold(pkType, "INTEGER")
	if t.keyRow && (!ddl.Valid || descending.MatchString(ddl.String)) {
		return nil, notRead("table %s: whether its INTEGER PRIMARY KEY is the rowid is not decided (DESC)", Quote(spec.Table))
	}
	if err := conn.QueryRowContext(ctx, "PRAGMA page_count").Scan(&t.pages); err != nil {
		return nil, busyErr(err)
	}
	return t, nil
}

// realAffinity reports whether a column declared with type typ has REAL
// affinity, by SQLite's rules in their order
// (https://www.sqlite.org/datatype3.html#determination_of_column_affinity).
func realAffinity(typ string) bool {
	t := strings.ToUpper(typ)
	has := func(subs ...string) bool {
		for _, s := range subs {
			if strings.Contains(t, s) {
				return true
			}
		}
		return false
	}
	if t == "" || has("INT", "CHAR", "CLOB", "TEXT", "BLOB") {
		return false
	}
	return has("REAL", "FLOA", "DOUB")
}

// rowReader walks one table b-tree of the file.
type rowReader struct {
	f        *os.File
	t        *table
	fn       func(string, []byte) error
	ctx      context.Context
	pageSize int
	usable   int
	seen     []bool
	pages    *pageReader
	payload  []byte // a payload with overflow pages, put together
	key, num []byte
}

func (r *rowReader) run() error {
	hdr, pageSize, why, err := header(r.f, r.t.pages)
	if err != nil {
		return err
	}
	if why != "" {
		return notRead("%s", why)
	}
	r.pageSize = pageSize
	if hdr[20] != 0 {
		return notRead("%d bytes per page are reserved (for a checksum or encryption extension)", hdr[20])
	}
	r.usable = r.pageSize
	if enc := binary.BigEndian.Uint32(hdr[56:]); enc != 1 {
		return notRead("the text encoding is not UTF-8 (%d)", enc)
	}
	pages := r.t.pages
	r.seen = make([]bool, pages+1)
	r.pages = newPageReader(r.f, r.pageSize, pages)
	stack := []uint32{r.t.root}
	for n := 0; len(stack) > 0; n++ {
		if n%1024 == 0 {
			if err := r.ctx.Err(); err != nil {
				return err
			}
		}
		pg := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		d, err := r.page(pg)
		if err != nil {
			return err
		}
		switch d[0] {
		case leafTable:
			if err := r.leaf(pg, d); err != nil {
				return err
			}
		case interiorTable:
			// Children pushed right to left: leaves are read in key order.
			nCell := int(binary.BigEndian.Uint16(d[3:]))
			if 12+2*nCell > r.usable {
				return notRead("page %d: %d cell pointers do not fit the page", pg, nCell)
			}
			stack = append(stack, binary.BigEndian.Uint32(d[8:]))
			for i := nCell - 1; i >= 0; i-- {
				off := int(binary.BigEndian.Uint16(d[12+2*i:]))
				if off < 12+2*nCell || off+4 > r.usable {
					return notRead("page %d: cell %d at offset %d", pg, i, off)
				}
				stack = append(stack, binary.BigEndian.Uint32(d[off:]))
			}
		case leafIndex, interiorIndex:
			return notRead("table %s is a WITHOUT ROWID table", Quote(r.t.name))
		default:
			return notRead("page %d, reached as a b-tree page, has page type %d", pg, d[0])
		}
	}
	return nil
}

// page returns the usable bytes of page pg (a table's root is never page
// 1, whose header would come first), valid until the next call.
func (r *rowReader) page(pg uint32) ([]byte, error) {
	if pg < 2 || int64(pg) > r.t.pages {
		return nil, notRead("a pointer to page %d, outside the file's %d pages", pg, r.t.pages)
	}
	if r.seen[pg] {
		return nil, notRead("page %d is reached twice", pg)
	}
	r.seen[pg] = true
	d, err := r.pages.get(pg)
	if err != nil {
		return nil, err
	}
	return d[:r.usable], nil
}

// leaf passes on the rows of table leaf page pg, d.
func (r *rowReader) leaf(pg uint32, d []byte) error {
	nCell := int(binary.BigEndian.Uint16(d[3:]))
	ptrs := 8 + 2*nCell
	if ptrs > r.usable {
		return notRead("page %d: %d cell pointers do not fit the page", pg, nCell)
	}
	// Reading a cell's overflow pages can replace the block that holds
	// this page: keep a copy of the page while a cell of it overflows.
	var own []byte
	for i := 0; i < nCell; i++ {
		off := int(binary.BigEndian.Uint16(d[8+2*i:]))
		if off < ptrs || off >= r.usable {
			return notRead("page %d: cell %d at offset %d", pg, i, off)
		}
		c := d[off:]
		size, n := varint(c)
		if n == 0 {
			return notRead("page %d: cell %d is truncated", pg, i)
		}
		p := n
		rowid, n := varint(c[p:])
		if n == 0 {
			return notRead("page %d: cell %d is truncated", pg, i)
		}
		p += n
		local := localBytes(int64(size), int64(r.usable), true)
		var first uint32
		if local < int64(size) {
			if p+int(local)+4 > len(c) {
				return notRead("page %d: cell %d runs past the page", pg, i)
			}
			first = binary.BigEndian.Uint32(c[p+int(local):])
		} else if p+int(local) > len(c) {
			return notRead("page %d: cell %d runs past the page", pg, i)
		}
		payload := c[p : p+int(local)]
		if first != 0 {
			if own == nil {
				own = append([]byte(nil), d...)
				d, c = own, own[off:]
				payload = c[p : p+int(local)]
			}
			var err error
			if payload, err = r.overflow(payload, first, int64(size)); err != nil {
				return err
			}
		} else if local != int64(size) {
			return notRead("page %d: cell %d has no overflow page", pg, i)
		}
		if err := r.row(int64(rowid), payload); err != nil {
			return err
		}
	}
	return nil
}

// overflow returns the payload of size bytes whose first bytes are local
// and whose rest lies on the overflow chain from page first.
func (r *rowReader) overflow(local []byte, first uint32, size int64) ([]byte, error) {
	b := append(r.payload[:0], local...)
	for pg := first; int64(len(b)) < size; {
		if pg == 0 {
			return nil, notRead("an overflow chain ends %d bytes short", size-int64(len(b)))
		}
		d, err := r.page(pg)
		if err != nil {
			return nil, err
		}
		n := min(int64(r.usable-4), size-int64(len(b)))
		b = append(b, d[4:4+n]...)
		pg = binary.BigEndian.Uint32(d)
		if int64(len(b)) == size && pg != 0 {
			return nil, notRead("overflow page ends a payload but points to page %d", pg)
		}
	}
	r.payload = b
	return b, nil
}

// row decodes the record of one row and passes on its content values.
func (r *rowReader) row(rowid int64, rec []byte) error {
	hsize, n := varint(rec)
	if n == 0 || hsize > uint64(len(rec)) || int(hsize) < n {
		return notRead("a record header of %d bytes in a payload of %d", hsize, len(rec))
	}
	hdr, body := rec[n:hsize], rec[hsize:]
	// The offset, length and kind of each record column up to the last
	// one read.
	last := r.t.key
	for _, c := range r.t.content {
		last = max(last, c)
	}
	type val struct {
		typ      uint64
		from, to int
	}
	var vals [16]val
	vs := vals[:0]
	off := 0
	for len(hdr) > 0 && len(vs) <= last {
		typ, n := varint(hdr)
		if n == 0 {
			return notRead("a record header is truncated")
		}
		hdr = hdr[n:]
		l := 0
		switch {
		case typ <= 4:
			l = int(typ)
		case typ == 5:
			l = 6
		case typ == 6, typ == 7:
			l = 8
		case typ == 8, typ == 9:
		case typ >= 12:
			l = int((typ - 12) / 2)
		default:
			return notRead("a record has serial type %d", typ)
		}
		if off+l > len(body) {
			return notRead("a record's values run past its payload")
		}
		vs = append(vs, val{typ, off, off + l})
		off += l
	}
	if len(vs) > r.t.ncols {
		return notRead("a record holds %d columns, the table has %d", len(vs), r.t.ncols)
	}
	value := func(i int) (val, error) {
		if i < len(vs) {
			return vs[i], nil
		}
		if r.t.noDefault[i] {
			return val{}, notRead("a record ends before a column with a default (ALTER TABLE ADD COLUMN)")
		}
		return val{}, nil // NULL
	}
	k, err := value(r.t.key)
	if err != nil {
		return err
	}
	key := r.key[:0]
	switch {
	case r.t.keyRow && k.typ == 0:
		key = strconv.AppendInt(key, rowid, 10)
	case r.t.keyRow:
		return notRead("a value is stored for the INTEGER PRIMARY KEY, which names the rowid")
	default:
		var null bool
		if key, null, err = appendText(key, k.typ, body[k.from:k.to]); err != nil {
			return err
		}
		if null {
			return notRead("a row has a NULL key")
		}
	}
	r.key = key
	ks := string(key)
	for _, c := range r.t.content {
		v, err := value(c)
		if err != nil {
			return err
		}
		if v.typ == 0 {
			continue // NULL: WHERE c IS NOT NULL
		}
		b := body[v.from:v.to]
		if v.typ < 12 { // an integer: its decimal form
			var err error
			if r.num, _, err = appendText(r.num[:0], v.typ, b); err != nil {
				return err
			}
			b = r.num
		}
		if err := r.fn(ks, b); err != nil {
			return err
		}
	}
	return nil
}

// appendText appends to dst a value of serial type typ, stored as b, as
// CAST(… AS TEXT) or CAST(… AS BLOB) gives its bytes in a UTF-8 database:
// an integer in decimal, text and blobs as they are. null reports NULL. A
// floating-point value is a NotRead: SQLite's decimal form of it is its
// own.
func appendText(dst []byte, typ uint64, b []byte) (out []byte, null bool, err error) {
	switch {
	case typ == 0:
		return dst, true, nil
	case typ <= 6:
		var v int64
		for i, x := range b {
			if i == 0 {
				v = int64(int8(x))
			} else {
				v = v<<8 | int64(x)
			}
		}
		return strconv.AppendInt(dst, v, 10), false, nil
	case typ == 7:
		return dst, false, notRead("a floating-point value")
	case typ == 8, typ == 9:
		return strconv.AppendInt(dst, int64(typ-8), 10), false, nil
	}
	return append(dst, b...), false, nil
}

// FileOthers is Others reading spec's rows with FileRows: rows whose key is
// in batch are skipped. Its error is a *NotRead when the file could not be
// read so: DropShared then returns it having changed nothing, and the
// caller runs it again with Others.
func FileOthers(ctx context.Context, db *sql.DB, path string, spec RowsSpec, batch map[string]bool) func(fn func(string, []byte) error) error {
	return func(fn func(string, []byte) error) error {
		return FileRows(ctx, db, path, spec, func(key string, b []byte) error {
			if batch[key] {
				return nil
			}
			return fn(key, b)
		})
	}
}

// pageReader reads a database file's pages in aligned blocks of
// blockPages pages, one read for each: the leaves of one b-tree mostly lie
// in runs. (Not for the audit, which walks every b-tree: their pages
// interleave in the file, and it read each block once per tree.)
type pageReader struct {
	f        *os.File
	pageSize int
	n        int64 // pages in the file
	block    []byte
	first    int64 // the block's first page; 0 before the first read
	count    int64 // pages in the block
}

// blockPages pages are read at once.
const blockPages = 64

func newPageReader(f *os.File, pageSize int, pages int64) *pageReader {
	return &pageReader{f: f, pageSize: pageSize, n: pages, block: make([]byte, blockPages*pageSize)}
}

// get returns page pg (from 1), valid until the next call.
func (p *pageReader) get(pg uint32) ([]byte, error) {
	i := int64(pg)
	if i < 1 || i > p.n {
		return nil, io.EOF
	}
	if p.first == 0 || i < p.first || i >= p.first+p.count {
		first := (i-1)/blockPages*blockPages + 1
		count := min(blockPages, p.n-first+1)
		b := p.block[:count*int64(p.pageSize)]
		if _, err := p.f.ReadAt(b, (first-1)*int64(p.pageSize)); err != nil {
			p.first = 0
			return nil, err
		}
		p.first, p.count = first, count
	}
	at := (i - p.first) * int64(p.pageSize)
	return p.block[at : at+int64(p.pageSize)], nil
}
