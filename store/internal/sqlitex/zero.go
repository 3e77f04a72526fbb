package sqlitex

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"os"
	"strings"
)

// Zeroing in place. A dirty page's unused bytes (the gap between the cell
// pointers and the cell content that a page rebuild leaves as it was,
// free blocks, fragments, a freelist page, an overflow page's tail) are
// bytes SQLite's file format gives no meaning: SQLite never reads them,
// and zeroing them changes no record, no page structure and no answer to
// any query. Rebuilding the page's whole index (REINDEX) or the whole file
// (VACUUM) is what SQLite offers to clear them; at a million records that
// is seconds for a few stray bytes on one page. zeroInPlace writes zeros
// over exactly the ranges the audit found, in the database file, when it
// can prove the file is the one the audit read:
//
//   - under SQLite's write lock (BEGIN IMMEDIATE: no other connection can
//     commit while it is held), with the connection that audited, whose
//     PRAGMA data_version must be unchanged (no other connection committed
//     since the audit's read transaction), the database in WAL mode, and
//     the WAL empty (its file is zero bytes: the database file is the
//     whole database, and no checkpoint can write it);
//   - each page it writes must have the SHA-256 the audit read, and is not
//     page 1 (see below) nor the lock-byte page;
//   - the writes are synced (fsync), read back (through the operating
//     system's cache) and checked zero.
//
// Other connections may hold the dirty pages in their page caches, and a
// later write of such a page from its cache would put the stray bytes
// back. In WAL mode a connection drops its cache when the WAL index header
// has changed since its last transaction, so, still under the write lock,
// PRAGMA user_version is written with the value it has (the database's
// content does not change; page 1 gets a WAL frame, which changes that
// header). Page 1 is the page this commit writes from the connection's own
// cache, so a dirty page 1 is never zeroed in place. The connection that
// zeroed, whose own cache may hold the dirty pages, is then closed.
//
// A crash between the writes leaves some ranges zeroed and some not: each
// page stays valid (only unused bytes differ), SQLite's default
// assumption of powersafe overwrite (a write changes no byte outside its
// range) holds for these writes as for its own, and the next audit finds
// what is left.

// zeroInPlace zeroes the non-zero unused bytes that audit fs found, on
// conn, the connection that audited. It returns the audit as it stands
// afterwards (fs with those bytes counted as zeroed) and "", or why it
// refused without writing anything (Reclaim then rebuilds). An error means
// the attempt failed; wrote then says some bytes may have been written, and
// the caller must not use conn again (it has been closed). A failure after
// writing and before the commit leaves other connections' caches as they
// were, so a later write of theirs may put bytes back: the error fails the
// reclaim, and the next one audits again.
func zeroInPlace(ctx context.Context, db *sql.DB, conn *sql.Conn, path string, fs FreeSpace) (after FreeSpace, refused string, wrote bool, err error) {
	switch {
	case fs.Undecided != "":
		return fs, "the audit is undecided", false, nil
	case fs.NonZero == 0:
		return fs, "the audit found nothing to zero", false, nil
	case len(fs.plan) == 0:
		return fs, fmt.Sprintf("more than %d dirty pages, or a dirty lock-byte page", maxZeroPages), false, nil
	}
	for _, p := range fs.plan {
		if p.pg == 1 {
			return fs, "page 1 (sqlite_master's root, which the commit that tells other connections to drop their caches writes from this connection's cache) is dirty", false, nil
		}
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fs, "", false, fmt.Errorf("zero in place: %w", busyErr(err))
	}
	committed := false
	defer func() {
		if !committed {
			conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
		if wrote {
			discard(conn)
		}
	}()
	var version int64
	var mode string
	if err := conn.QueryRowContext(ctx, "PRAGMA data_version").Scan(&version); err != nil {
		return fs, "", false, fmt.Errorf("zero in place: %w", busyErr(err))
	}
	if version != fs.dataVersion {
		return fs, "another connection committed since the audit", false, nil
	}
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return fs, "", false, fmt.Errorf("zero in place: %w", busyErr(err))
	}
	if !strings.EqualFold(mode, "wal") {
		return fs, "the database is not in WAL mode (journal_mode " + mode + ")", false, nil
	}
	if fi, err := os.Stat(walFile(path)); err != nil || fi.Size() > 0 {
		return fs, "the WAL is not empty, or not where SQLite keeps it", false, nil
	}
	held, ok := opened(db)
	if !ok {
		return fs, "the database was not opened through sqlitex.Open, which records the file its connections hold", false, nil
	}
	f, id, err := writeHandle(path)
	switch {
	case err != nil:
		return fs, "the database file cannot be opened for writing: " + err.Error(), false, nil
	case id != held || id != fs.file:
		return fs, "the file at the database's path is not the one its connections hold, or not the one audited", false, nil
	}
	ps := fs.pageSize
	page := make([]byte, ps)
	for _, p := range fs.plan {
		if _, err := f.ReadAt(page, int64(p.pg-1)*int64(ps)); err != nil {
			return fs, fmt.Sprintf("page %d cannot be read: %v", p.pg, err), false, nil
		}
		if sha256.Sum256(page) != p.sum {
			return fs, fmt.Sprintf("page %d is not as the audit read it", p.pg), false, nil
		}
	}
	// Once a byte is written, the rest runs to its end even if ctx is
	// cancelled: the commit below is what makes other connections drop
	// the pages they cached.
	ctx = context.WithoutCancel(ctx)
	for _, p := range fs.plan {
		for _, r := range p.ranges {
			wrote = true
			if _, err := f.WriteAt(make([]byte, r[1]-r[0]), int64(p.pg-1)*int64(ps)+int64(r[0])); err != nil {
				return fs, "", wrote, fmt.Errorf("zero in place: write page %d: %w", p.pg, err)
			}
		}
	}
	if err := f.Sync(); err != nil {
		return fs, "", wrote, fmt.Errorf("zero in place: sync: %w", err)
	}
	for _, p := range fs.plan {
		if _, err := f.ReadAt(page, int64(p.pg-1)*int64(ps)); err != nil {
			return fs, "", wrote, fmt.Errorf("zero in place: read page %d back: %w", p.pg, err)
		}
		for _, r := range p.ranges {
			if firstNonZero(page[r[0]:r[1]]) >= 0 {
				return fs, "", wrote, fmt.Errorf("zero in place: page %d holds non-zero bytes where zeros were written", p.pg)
			}
		}
	}
	var uv int64
	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&uv); err != nil {
		return fs, "", wrote, fmt.Errorf("zero in place: %w", busyErr(err))
	}
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", uv)); err != nil {
		return fs, "", wrote, fmt.Errorf("zero in place: %w", busyErr(err))
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return fs, "", wrote, fmt.Errorf("zero in place: commit: %w", busyErr(err))
	}
	committed = true
	after = fs
	after.Zeroed, after.ZeroedPages = fs.NonZero, int64(len(fs.plan))
	after.NonZero, after.DirtyPages, after.FirstDirty, after.DirtyIndexes, after.DirtyElse, after.plan = 0, 0, 0, nil, 0, nil
	return after, "", true, nil
}

// discard closes conn's driver connection instead of returning it to the
// pool: its page cache may hold pages as they were before zeroInPlace.
func discard(conn *sql.Conn) {
	conn.Raw(func(any) error { return driver.ErrBadConn })
}
