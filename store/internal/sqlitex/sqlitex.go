// Package sqlitex holds what the SQLite-file adapters share: opening a
// database the way amnesia needs it, the list of files that can hold record
// bytes, and physical reclamation.
package sqlitex

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	vec "github.com/asg017/sqlite-vec-go-bindings/cgo"
	"github.com/mattn/go-sqlite3" // database/sql driver "sqlite3"

	"github.com/amnesia-dev/amnesia/store"
)

func init() { vec.Auto() } // every connection gets sqlite-vec

// Open opens the database at path in WAL mode with secure_delete on, so that
// rows deleted through it are zeroed in their pages, each connection
// keeping its statements prepared. With create false, a missing file is an
// error wrapping store.ErrUnavailable.
func Open(ctx context.Context, path string, create bool) (*sql.DB, error) {
	if !create {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("open %s: %w: %v", path, store.ErrUnavailable, err)
		}
	}
	q := url.Values{}
	q.Set("_journal_mode", "WAL")
	q.Set("_busy_timeout", "10000")
	q.Set("_secure_delete", "on")
	q.Set("_synchronous", "FULL")
	// Each connection keeps up to 32 statements prepared: an erasure runs
	// the same reads, deletes and probes once per key, and each was
	// compiled again by sqlite3_prepare_v2. A cached statement is reset
	// (no lock, no read snapshot, so it keeps no checkpoint or VACUUM
	// waiting) and SQLite prepares it again after a schema change.
	q.Set("_stmt_cache_size", "32")
	db, err := sql.Open("sqlite3", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w: %v", path, store.ErrUnavailable, err)
	}
	openedAs(db, path)
	return db, nil
}

// Files returns the files in which SQLite can hold a database's bytes: the
// database file at path, and its -wal, -journal and -shm files, which
// SQLite names after the path with its symbolic links resolved.
func Files(path string) []string {
	real := path
	if r, err := filepath.EvalSymlinks(path); err == nil {
		real = r
	}
	return []string{path, real + "-wal", real + "-journal", real + "-shm"}
}

// walFile is the name of the WAL file of the database at path.
func walFile(path string) string { return Files(path)[1] }

// ReclaimMethod describes Reclaim when it rewrites the file; the method it
// reports says which way it went, and why.
const ReclaimMethod = "secure_delete=ON; wal_checkpoint(TRUNCATE); VACUUM; wal_checkpoint(TRUNCATE)"

// Reclaim leaves no free page, no unused byte of a page and no WAL frame
// holding a deleted record's bytes, or the bytes of an earlier version of a
// record: it turns secure_delete on, checkpoints the WAL into the main file
// and truncates it, then audits the file's free space (AuditFreeSpace).
// When the audit proves every unused byte zero, nothing in the file can
// hold an earlier version of a record and VACUUM is skipped. When it finds
// non-zero unused bytes (cells that page rebuilds left behind, an
// application's deletes without secure_delete) on pages it could list, it
// zeroes exactly those bytes in the file (zeroInPlace, under SQLite's write
// lock and only if the file is still the one it audited), checkpoints
// again, and skips VACUUM. When that is refused and the only
// non-zero unused bytes lie in indexes' pages, those indexes are rebuilt (REINDEX, with secure_delete on, so
// their old pages are zeroed as they are freed), the WAL is checkpointed
// again and the file audited again: VACUUM is skipped when that audit
// proves it clean. Otherwise (non-zero free space in a table, the freelist
// or sqlite_master, a REINDEX that fails, or anything an audit cannot
// decide) VACUUM rebuilds the file from live rows only and the WAL is
// checkpointed and truncated again. The method reported says which was
// done, and why. It needs no reader to hold an old snapshot; a busy
// checkpoint is reported as an error, never ignored. The physical probe
// decides what is verified, whichever way this went.
//
// Full-text indexes (FTS3, FTS4 and FTS5 virtual tables, an application's
// own) keep the tokens of deleted rows in their segments until those are
// merged: a byte scan for 32-byte windows cannot see tokens. Each is
// merged first ('optimize'); one that cannot be (FTS5 needs amnesia built
// with the tag sqlite_fts5) makes the state StateFTSNotMerged, unseen
// residue: the saga then claims no record of the store physical.
func Reclaim(ctx context.Context, db *sql.DB, path string) (rep store.ReclaimReport, err error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return store.ReclaimReport{}, fmt.Errorf("reclaim: %w", err)
	}
	defer conn.Close()
	rep = store.ReclaimReport{Method: ReclaimMethod}
	var unmerged []string
	defer func() {
		if err == nil && len(unmerged) > 0 {
			rep.State, rep.Unseen = StateFTSNotMerged, true
			rep.Evidence = "full-text index(es) not merged: " + strings.Join(unmerged, "; ") +
				": tokens of deleted rows can stay in their segments, which a byte scan for 32-byte windows cannot see (FTS5 needs amnesia built with -tags sqlite_fts5)"
		}
	}()
	// Wait briefly for other connections here; the saga retries a busy
	// reclaim (store.ErrBusy) with progress for as long as it is told to.
	if _, err := conn.ExecContext(ctx, "PRAGMA busy_timeout = 2000"); err != nil {
		return rep, fmt.Errorf("reclaim: %w", err)
	}
	if err := run(ctx, conn, &rep, "secure_delete=ON", "PRAGMA secure_delete = ON"); err != nil {
		return rep, err
	}
	if unmerged, err = mergeFullText(ctx, conn, &rep); err != nil {
		return rep, err
	}
	if err := run(ctx, conn, &rep, "wal_checkpoint(TRUNCATE)", "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		return rep, err
	}
	fs, err := AuditFreeSpace(ctx, conn, path)
	if err != nil {
		return rep, fmt.Errorf("reclaim: %w", err)
	}
	rep.Steps = append(rep.Steps, fs.String())
	const head = "secure_delete=ON; wal_checkpoint(TRUNCATE); "
	const skipped = "; the WAL is empty: no free space can hold an earlier version of a record"
	if fs.Clean() {
		rep.Method = head + "VACUUM skipped: " + fs.String() + skipped
		rep.Steps = append(rep.Steps, "VACUUM skipped")
		return rep, nil
	}
	why := fs.String()
	if fs.Undecided == "" {
		after, refused, _, err := zeroInPlace(ctx, db, conn, path, fs)
		if err != nil {
			return rep, fmt.Errorf("reclaim: %w", err)
		}
		if refused == "" {
			rep.Steps = append(rep.Steps, fmt.Sprintf("zeroed %d non-zero unused bytes on %d pages in place", after.Zeroed, after.ZeroedPages))
			// zeroInPlace closed conn (its cache may hold the pages as
			// they were); the checkpoint runs on another.
			if err := checkpoint(ctx, db, &rep); err != nil {
				return rep, err
			}
			rep.Steps = append(rep.Steps, after.String(), "VACUUM skipped")
			rep.Method = head + fs.String() + "; " + zeroed + "; wal_checkpoint(TRUNCATE); VACUUM skipped: " + after.String() + skipped
			return rep, nil
		}
		rep.Steps = append(rep.Steps, "not zeroed in place: "+refused)
		why += "; not zeroed in place: " + refused
	}
	if fs.OnlyIndexes() {
		again, rebuilt, err := reindex(ctx, conn, &rep, path, fs.DirtyIndexes)
		if err != nil {
			return rep, err
		}
		did := fmt.Sprintf("%s; REINDEX of %d indexes (%s), wal_checkpoint(TRUNCATE), then ", why, len(fs.DirtyIndexes), strings.Join(fs.DirtyIndexes, ", "))
		if !rebuilt {
			did = why + "; "
		}
		if again.Clean() {
			rep.Method = head + did + "VACUUM skipped: " + again.String() + skipped
			rep.Steps = append(rep.Steps, "VACUUM skipped")
			return rep, nil
		}
		why = did + again.String()
	}
	rep.Method = head + "VACUUM, because " + why + " (free space may hold earlier versions of records); wal_checkpoint(TRUNCATE)"
	if err := run(ctx, conn, &rep, "VACUUM", "VACUUM"); err != nil {
		return rep, err
	}
	if err := run(ctx, conn, &rep, "wal_checkpoint(TRUNCATE)", "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		return rep, err
	}
	return rep, nil
}

// zeroed says how Reclaim zeroed dirty pages in place (see zeroInPlace).
const zeroed = "those bytes zeroed in place under SQLite's write lock (no other connection's commit since the audit, the WAL empty, each page as the audit read it; written, fsynced, read back), then user_version written unchanged so that every connection drops the pages it cached"

// checkpoint checkpoints and truncates the WAL on a connection of db.
func checkpoint(ctx context.Context, db *sql.DB, rep *store.ReclaimReport) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("reclaim: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "PRAGMA busy_timeout = 2000"); err != nil {
		return fmt.Errorf("reclaim: %w", err)
	}
	return run(ctx, conn, rep, "wal_checkpoint(TRUNCATE)", "PRAGMA wal_checkpoint(TRUNCATE)")
}

// StateFTSNotMerged is Reclaim's state when a full-text index of the
// database could not be merged.
const StateFTSNotMerged = "UNVERIFIED-fts-index-not-merged"

// mergeFullText merges every full-text index of the database ('optimize':
// its segments become one, without the entries of deleted rows; with
// secure_delete on, the pages they leave are zeroed). It returns, as
// "name (why)", those that could not be merged; a busy database is an
// error wrapping store.ErrBusy.
func mergeFullText(ctx context.Context, conn *sql.Conn, rep *store.ReclaimReport) ([]string, error) {
	rows, err := conn.QueryContext(ctx, `SELECT name, sql FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%'`)
	if err != nil {
		return nil, fmt.Errorf("reclaim: list full-text indexes: %w", busyErr(err))
	}
	var names []string
	for rows.Next() {
		var name, ddl string
		if err := rows.Scan(&name, &ddl); err != nil {
			rows.Close()
			return nil, fmt.Errorf("reclaim: list full-text indexes: %w", err)
		}
		if ftsUsing.MatchString(ddl) {
			names = append(names, name)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reclaim: list full-text indexes: %w", busyErr(err))
	}
	var unmerged []string
	for _, name := range names {
		_, err := conn.ExecContext(ctx, `INSERT INTO `+Quote(name)+`(`+Quote(name)+`) VALUES ('optimize')`)
		if b := busyErr(err); errors.Is(b, store.ErrBusy) {
			return nil, fmt.Errorf("reclaim: merge full-text index %s: %w", name, b)
		}
		if err != nil {
			unmerged = append(unmerged, fmt.Sprintf("%s (%v)", name, err))
			continue
		}
		rep.Steps = append(rep.Steps, "optimize (merge) of full-text index "+name)
	}
	return unmerged, nil
}

// ftsUsing matches the module clause of a full-text index's CREATE VIRTUAL
// TABLE (fts3, fts4, fts5).
var ftsUsing = regexp.MustCompile(`(?i)\bUSING\s+fts[345]\b`)

// reindex rebuilds the named indexes, checkpoints the WAL and audits the
// file again; rebuilt says the REINDEXes and the checkpoint were done. A
// REINDEX that fails for another reason than a busy database (the index
// was dropped meanwhile, a collation is missing) is no error: it comes back
// as an undecided audit, not rebuilt, and Reclaim goes on to VACUUM.
func reindex(ctx context.Context, conn *sql.Conn, rep *store.ReclaimReport, path string, names []string) (fs FreeSpace, rebuilt bool, err error) {
	for _, name := range names {
		if err := run(ctx, conn, rep, "REINDEX "+name, "REINDEX "+Quote(name)); err != nil {
			if errors.Is(err, store.ErrBusy) || ctx.Err() != nil {
				return FreeSpace{}, false, err
			}
			return FreeSpace{Undecided: "REINDEX " + name + " failed: " + err.Error()}, false, nil
		}
	}
	if err := run(ctx, conn, rep, "wal_checkpoint(TRUNCATE)", "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		return FreeSpace{}, false, err
	}
	fs, err = AuditFreeSpace(ctx, conn, path)
	if err != nil {
		return FreeSpace{}, false, fmt.Errorf("reclaim: %w", err)
	}
	rep.Steps = append(rep.Steps, fs.String())
	return fs, true, nil
}

// run runs one reclaim statement and records it as a step. A checkpoint
// that another connection kept from completing is store.ErrBusy.
func run(ctx context.Context, conn *sql.Conn, rep *store.ReclaimReport, name, q string) error {
	if strings.HasPrefix(q, "PRAGMA wal_checkpoint") {
		var busy, logFrames, done int
		if err := conn.QueryRowContext(ctx, q).Scan(&busy, &logFrames, &done); err != nil {
			return fmt.Errorf("reclaim: %s: %w", name, busyErr(err))
		}
		if busy != 0 {
			return fmt.Errorf("reclaim: %s: %w: another connection (the application?) holds a read or write transaction, so the WAL cannot be checkpointed and truncated", name, store.ErrBusy)
		}
	} else if _, err := conn.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("reclaim: %s: %w", name, busyErr(err))
	}
	rep.Steps = append(rep.Steps, name)
	return nil
}

// busyErr wraps SQLite's BUSY and LOCKED errors with store.ErrBusy: another
// connection holds the database, and a later try can succeed.
func busyErr(err error) error {
	var se sqlite3.Error
	if errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked) {
		return fmt.Errorf("%w: %v", store.ErrBusy, err)
	}
	return err
}

// Scan scans the database's files for set.
func Scan(ctx context.Context, path string, set *store.NeedleSet) (store.ScanReport, error) {
	for _, f := range Files(path)[:1] {
		if _, err := os.Stat(f); errors.Is(err, fs.ErrNotExist) {
			return store.ScanReport{}, fmt.Errorf("scan %s: %w: %v", f, store.ErrUnavailable, err)
		}
	}
	return store.ScanFiles(ctx, set, "byte scan of the database file, -wal, -journal and -shm", Files(path)...)
}

// Others returns a source for store.DropShared: query must select (id,
// bytes) of every live record; rows whose id is in batch are skipped. The
// bytes fn gets are the driver's until fn returns (as DropShared's others
// allows): fn copies what it keeps.
func Others(ctx context.Context, db *sql.DB, query string, batch map[string]bool) func(fn func(string, []byte) error) error {
	return func(fn func(string, []byte) error) error {
		rows, err := db.QueryContext(ctx, query)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			var b sql.RawBytes // the driver's until the next row: fn copies what it keeps (DropShared)
			if err := rows.Scan(&id, &b); err != nil {
				return err
			}
			if !batch[id] {
				if err := fn(id, b); err != nil {
					return err
				}
			}
		}
		return rows.Err()
	}
}

// MeasureResidue reports when the database's files (the database, a
// non-empty -wal or -journal) were last written, relative to since: a write
// after since (an application's insert, a restore from backup) shows here.
// It reads file times only; it opens nothing and changes nothing. File
// times have a granularity, and since is whole seconds: a write within the
// second of since is reported as such, neither before nor after.
func MeasureResidue(path string, since time.Time) (store.ResidueReport, error) {
	var last time.Time
	for _, f := range Files(path)[:3] { // -shm changes on every open
		fi, err := os.Stat(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return store.ResidueReport{}, fmt.Errorf("measure residue: %w", err)
		}
		if f != path && fi.Size() == 0 {
			continue
		}
		if fi.ModTime().After(last) {
			last = fi.ModTime()
		}
	}
	if last.IsZero() {
		return store.ResidueReport{}, fmt.Errorf("measure residue: %s: %w", path, store.ErrUnavailable)
	}
	at := last.UTC().Format(time.RFC3339)
	since = since.UTC()
	var ev string
	switch {
	case !last.Before(since.Add(time.Second)):
		ev = "the database files were written after the re-verified certificate was issued (last write " + at + ")"
	case last.Before(since):
		ev = "the database files were not written after the re-verified certificate was issued (last write " + at + ")"
	default:
		ev = "the database files were last written in the second the re-verified certificate was issued (" + at + "): before or after it, file times cannot tell"
	}
	return store.ResidueReport{Evidence: ev}, nil
}
