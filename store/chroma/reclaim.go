package chroma

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/mattn/go-sqlite3" // database/sql driver "sqlite3"

	"github.com/amnesia-dev/amnesia/internal/atomicfile"
	"github.com/amnesia-dev/amnesia/store"
)

// Residue states Reclaim reports.
const (
	// StateDeferred: delete-only; nothing was reclaimed.
	StateDeferred = "PENDING-reclaim-deferred"
	// StateFilesNotRead: the collection was rebuilt, but the persist
	// directory is not configured (data_dir), so the orphaned HNSW segment
	// and chroma.sqlite3's free pages could not be cleaned or measured.
	StateFilesNotRead = "UNVERIFIED-chroma-files-not-read"
	// StateFTSNotMerged: everything else was done, but Chroma's full-text
	// index could not be merged (no FTS5 in the linked SQLite).
	StateFTSNotMerged = "UNVERIFIED-fts-index-not-merged"
)

// SQLiteFile is the name of Chroma's SQLite database in its persist
// directory.
const SQLiteFile = "chroma.sqlite3"

// Suffixes of the collections a rebuild creates beside the configured one
// (Chroma allows [a-zA-Z0-9._-] in names).
const (
	rebuildSuffix = "-amnesia-rebuild"
	oldSuffix     = "-amnesia-old"
)

var uuidRe = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// ReclaimMethod describes a full Reclaim with data_dir, by an amnesia whose
// SQLite has FTS5. A Reclaim that did less says so in its Method:
// methodRebuildOnly without data_dir, methodFTSNotMerged without FTS5.
const ReclaimMethod = methodRebuild + "; " +
	"HNSW segment directories no collection owns zeroed and removed; full-text index merged (fts5 optimize); chroma.sqlite3 VACUUMed with secure_delete=ON"

const (
	methodRebuild = "collection rebuilt through the API (survivors copied to a new collection of the same configuration, its unused index slots zeroed, names swapped, old collection deleted)"
	// methodRebuildOnly: without data_dir the files are neither cleaned nor read.
	methodRebuildOnly = methodRebuild + "; no data_dir: segment directories and chroma.sqlite3 not cleaned"
	// methodFTSNotMerged: the SQLite linked into amnesia has no FTS5.
	methodFTSNotMerged = methodRebuild + "; " +
		"HNSW segment directories no collection owns zeroed and removed; full-text index NOT merged (no FTS5 in amnesia's SQLite); chroma.sqlite3 VACUUMed with secure_delete=ON"
)

// Reclaim implements store.Reclaimer.
//
// Chroma offers no compaction of a local collection's HNSW index (hnswlib's
// markDelete keeps deleted vectors in data_level0.bin), and its own
// `chroma vacuum` only purges the log and VACUUMs without secure_delete,
// which leaves deleted rows' bytes in the unused space of rewritten pages.
// So Reclaim:
//
//  1. rebuilds the collection: copies every surviving record (id, document,
//     metadata, embedding, uri) into a new collection with the same
//     configuration and metadata, zeroes the unused slots of its index files
//     when data_dir is set (see scrubUnused), renames the old one aside and the new one
//     to the configured name, copies any record written to the old one
//     meanwhile (and drops any deleted from it meanwhile), then deletes the
//     old collection. The collection's id changes: an application that
//     holds the old collection object must get it again by name.
//  2. with data_dir: zeroes and removes every HNSW segment directory of the
//     persist directory that no segment of chroma.sqlite3 owns (Chroma
//     leaves a deleted collection's directory on disk), runs fts5's
//     optimize on Chroma's full-text index (deleted rows' trigrams stay in
//     its older segments otherwise), and VACUUMs chroma.sqlite3 with
//     secure_delete on, through SQLite's own locking while the server runs
//     (a busy database is store.ErrBusy: a later try can succeed).
//
// A crash between steps leaves the -amnesia-rebuild or -amnesia-old
// collection; the next Reclaim finishes or undoes it.
func (s *Store) Reclaim(ctx context.Context) (store.ReclaimReport, error) {
	if s.opt.DeleteOnly {
		return store.ReclaimReport{
			Method: "delete-only: nothing reclaimed",
			State:  StateDeferred,
			Evidence: "reclaim: delete-only is configured; Chroma's delete leaves the vector in the collection's HNSW segment (data_level0.bin, hnswlib markDelete) " +
				"and text and vectors in chroma.sqlite3 (free pages, and the embeddings queue until the segment is persisted) until the collection is rebuilt and the file VACUUMed",
		}, nil
	}
	rep := store.ReclaimReport{Method: ReclaimMethod}
	steps, err := s.rebuild(ctx, s.opt.DataDir != "")
	rep.Steps = append(rep.Steps, steps...)
	if err != nil {
		return rep, fmt.Errorf("reclaim: %w", err)
	}
	if s.opt.DataDir == "" {
		rep.Method = methodRebuildOnly
		rep.State = StateFilesNotRead
		rep.Evidence = "the collection was rebuilt, but data_dir (the server's persist directory) is not configured: Chroma leaves the old collection's HNSW segment directory " +
			"(data_level0.bin keeps deleted vectors) and chroma.sqlite3's free pages on disk, and amnesia could neither remove nor scan them"
		return rep, nil
	}
	steps, merged, err := s.cleanFiles(ctx)
	rep.Steps = append(rep.Steps, steps...)
	if err != nil {
		return rep, fmt.Errorf("reclaim: %w", err)
	}
	if !merged {
		rep.Method = methodFTSNotMerged
		rep.State, rep.Unseen = StateFTSNotMerged, true
		rep.Evidence = "chroma.sqlite3 was VACUUMed with secure_delete on, but Chroma's full-text index (embedding_fulltext_search, FTS5 trigram) could not be merged: " +
			"the SQLite linked into this amnesia lacks FTS5 (build with -tags sqlite_fts5); trigrams of deleted documents can stay in its older segments, " +
			"which a byte scan for 32-byte windows cannot see"
	}
	return rep, nil
}

// Rebuild replaces the collection by a copy of its live records through
// the API only (step 1 of Reclaim): what an application can do without
// amnesia. It leaves the old collection's HNSW segment directory and
// chroma.sqlite3's free pages as Chroma leaves them.
func (s *Store) Rebuild(ctx context.Context) ([]string, error) { return s.rebuild(ctx, false) }

// DeleteCollection deletes the collection through the API (Chroma leaves
// its HNSW segment directory on disk).
func (s *Store) DeleteCollection(ctx context.Context) error {
	if err := s.c.deleteCollection(ctx, s.opt.Collection); err != nil && !isNotFound(err) {
		return fmt.Errorf("delete collection %q: %w", s.opt.Collection, err)
	}
	return nil
}

// rebuild replaces the collection by a copy of its live records; with
// scrub, the copy's unused index slots are zeroed before the swap.
func (s *Store) rebuild(ctx context.Context, scrub bool) ([]string, error) {
	name := s.opt.Collection
	tmpName, oldName := name+rebuildSuffix, name+oldSuffix
	lookup := func(n string) (*collection, error) {
		c, err := s.c.getCollection(ctx, n)
		if isNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("rebuild: collection %q: %w", n, err)
		}
		return c, nil
	}
	var steps []string
	cur, err := lookup(name)
	if err != nil {
		return nil, err
	}
	tmp, err := lookup(tmpName)
	if err != nil {
		return nil, err
	}
	old, err := lookup(oldName)
	if err != nil {
		return nil, err
	}
	// Finish or undo an earlier rebuild that stopped half way.
	switch {
	case cur == nil && old != nil && tmp != nil:
		// Stopped between the renames: tmp is complete (it is renamed only
		// after its count was checked).
		if err := s.c.renameCollection(ctx, tmp.ID, name); err != nil {
			return steps, fmt.Errorf("rebuild: resume: rename %q to %q: %w: %w", tmpName, name, store.ErrBusy, err)
		}
		steps = append(steps, "resumed an interrupted rebuild: renamed the complete copy to "+name)
		cur, tmp = tmp, nil
	case cur == nil:
		return steps, fmt.Errorf("rebuild: collection %q: %w: it does not exist", name, store.ErrUnavailable)
	}
	if tmp != nil {
		// A partial copy from a rebuild that stopped before the swap.
		if err := s.c.deleteCollection(ctx, tmpName); err != nil && !isNotFound(err) {
			return steps, fmt.Errorf("rebuild: drop the partial copy %q: %w", tmpName, err)
		}
		steps = append(steps, "dropped the partial copy of an interrupted rebuild")
	}
	if old != nil {
		// The swap was done; the old collection was not deleted yet.
		n, err := s.catchUp(ctx, old, cur, nil)
		if err != nil {
			return steps, err
		}
		if err := s.c.deleteCollection(ctx, oldName); err != nil && !isNotFound(err) {
			return steps, fmt.Errorf("rebuild: delete %q: %w", oldName, err)
		}
		steps = append(steps, fmt.Sprintf("finished an interrupted rebuild: %d records reconciled, old collection deleted", n))
	}

	// Copy the survivors.
	conf := map[string]any{}
	for _, k := range []string{"hnsw", "spann", "embedding_function"} {
		if v, ok := cur.Configuration[k]; ok && v != nil {
			conf[k] = v
		}
	}
	tmp, err = s.c.createCollection(ctx, tmpName, conf, cur.Metadata)
	var ae *apiError
	if errors.As(err, &ae) && ae.Status/100 == 4 {
		// The configuration carries what legacy hnsw:* metadata keys say;
		// a server that refuses both gets the metadata without them.
		meta := map[string]any{}
		for k, v := range cur.Metadata {
			if !strings.HasPrefix(k, "hnsw:") {
				meta[k] = v
			}
		}
		tmp, err = s.c.createCollection(ctx, tmpName, conf, meta)
	}
	if err != nil {
		return steps, fmt.Errorf("rebuild: create %q: %w", tmpName, err)
	}
	if a, b := jsonOf(cur.Configuration["hnsw"]), jsonOf(tmp.Configuration["hnsw"]); a != b || cur.space() != tmp.space() {
		_ = s.c.deleteCollection(ctx, tmpName)
		return steps, fmt.Errorf("rebuild: Chroma created the copy with another HNSW configuration (%s, the collection has %s): nothing was changed", b, a)
	}
	copied := map[string]bool{}
	err = s.each(ctx, cur.ID, []string{"documents", "metadatas", "embeddings", "uris"}, func(g *records) error {
		// upsert: a page that repeats a record (the collection changed
		// between pages) is not an error.
		if err := s.c.upsert(ctx, tmp.ID, "upsert", clean(g)); err != nil {
			return fmt.Errorf("copy records: %w", err)
		}
		for _, id := range g.IDs {
			copied[id] = true
		}
		return nil
	})
	if err != nil {
		_ = s.c.deleteCollection(ctx, tmpName)
		return steps, fmt.Errorf("rebuild: %w", err)
	}
	if n, err := s.c.count(ctx, tmp.ID); err != nil || n != len(copied) {
		_ = s.c.deleteCollection(ctx, tmpName)
		if err == nil {
			err = fmt.Errorf("the copy holds %d records, %d were copied", n, len(copied))
		}
		return steps, fmt.Errorf("rebuild: check the copy: %w: nothing was changed", err)
	}
	steps = append(steps, fmt.Sprintf("copied %d live records to a new collection with the same configuration", len(copied)))
	if scrub {
		n, err := s.scrubUnused(ctx, tmp.ID)
		if err != nil {
			_ = s.c.deleteCollection(ctx, tmpName)
			return steps, fmt.Errorf("rebuild: zero the copy's unused index slots: %w: nothing was changed", err)
		}
		steps = append(steps, fmt.Sprintf("zeroed %d bytes of unused hnswlib slots in the copy's index files (Chroma writes a new index from uninitialised memory)", n))
	}
	// Swap the names.
	if err := s.c.renameCollection(ctx, cur.ID, oldName); err != nil {
		_ = s.c.deleteCollection(ctx, tmpName)
		return steps, fmt.Errorf("rebuild: rename %q aside: %w", name, err)
	}
	if err := s.c.renameCollection(ctx, tmp.ID, name); err != nil {
		// Held up, not final (store.ErrBusy): the saga retries the reclaim,
		// whose rebuild finishes the swap, and pauses the erasure if it
		// cannot yet.
		return steps, fmt.Errorf("rebuild: rename the copy to %q (the next reclaim finishes this): %w: %w", name, store.ErrBusy, err)
	}
	steps = append(steps, "swapped the names")
	n, err := s.catchUp(ctx, cur, tmp, copied)
	if err != nil {
		return steps, err
	}
	if n > 0 {
		steps = append(steps, fmt.Sprintf("reconciled %d records written or deleted during the copy", n))
	}
	if err := s.c.deleteCollection(ctx, oldName); err != nil && !isNotFound(err) {
		return steps, fmt.Errorf("rebuild: delete the old collection %q (the next reclaim finishes this): %w: %w", oldName, store.ErrBusy, err)
	}
	steps = append(steps, "deleted the old collection (its id is gone: applications must get the collection again by name)")
	return steps, nil
}

// catchUp brings to up to date with from after the swap: records of from
// missing in to are copied; records that were copied (in copied) but are no
// longer in from are deleted from to. Records written to to after the swap
// are left alone. It returns how many it changed.
func (s *Store) catchUp(ctx context.Context, from, to *collection, copied map[string]bool) (int, error) {
	ids := func(c *collection) (map[string]bool, error) {
		out := map[string]bool{}
		err := s.each(ctx, c.ID, []string{}, func(g *records) error {
			for _, id := range g.IDs {
				out[id] = true
			}
			return nil
		})
		return out, err
	}
	a, err := ids(from)
	if err != nil {
		return 0, fmt.Errorf("rebuild: reconcile: %w", err)
	}
	b, err := ids(to)
	if err != nil {
		return 0, fmt.Errorf("rebuild: reconcile: %w", err)
	}
	var add, del []string
	for id := range a {
		if !b[id] {
			add = append(add, id)
		}
	}
	for id := range b {
		if copied[id] && !a[id] {
			del = append(del, id)
		}
	}
	sort.Strings(add)
	for start := 0; start < len(add); start += pageSize {
		g, err := s.c.get(ctx, from.ID, map[string]any{"ids": add[start:min(len(add), start+pageSize)], "include": []string{"documents", "metadatas", "embeddings", "uris"}})
		if err != nil {
			return 0, fmt.Errorf("rebuild: reconcile: %w", err)
		}
		if err := s.c.upsert(ctx, to.ID, "upsert", clean(g)); err != nil {
			return 0, fmt.Errorf("rebuild: reconcile: %w", err)
		}
	}
	for start := 0; start < len(del); start += pageSize {
		if _, err := s.c.delete(ctx, to.ID, map[string]any{"ids": del[start:min(len(del), start+pageSize)]}); err != nil {
			return 0, fmt.Errorf("rebuild: reconcile: %w", err)
		}
	}
	return len(add) + len(del), nil
}

// clean drops the fields of g that hold nothing, so that add accepts it.
func clean(g *records) *records {
	out := &records{IDs: g.IDs, Embeddings: g.Embeddings}
	for _, d := range g.Documents {
		if d != nil {
			out.Documents = g.Documents
			break
		}
	}
	for _, m := range g.Metadatas {
		if len(m) > 0 {
			out.Metadatas = g.Metadatas
			break
		}
	}
	for _, u := range g.URIs {
		if u != nil {
			out.URIs = g.URIs
			break
		}
	}
	return out
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// openSQLite opens Chroma's database for maintenance, with secure_delete on
// and a short busy timeout; its journal mode is left as Chroma set it.
func (s *Store) openSQLite(ctx context.Context) (*sql.DB, error) {
	path := filepath.Join(s.opt.DataDir, SQLiteFile)
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("%s: %w: %v (is data_dir the server's --path?)", path, store.ErrUnavailable, err)
	}
	q := url.Values{}
	q.Set("_busy_timeout", "2000")
	q.Set("_secure_delete", "on")
	db, err := sql.Open("sqlite3", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w: %v", path, store.ErrUnavailable, err)
	}
	return db, nil
}

// busyErr wraps SQLite's BUSY and LOCKED errors with store.ErrBusy.
func busyErr(err error) error {
	var se sqlite3.Error
	if errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked) {
		return fmt.Errorf("%w: the Chroma server (or another process) holds chroma.sqlite3: %v", store.ErrBusy, err)
	}
	return err
}

// cleanFiles removes orphaned HNSW segment directories, merges the
// full-text index and VACUUMs chroma.sqlite3 with secure_delete on.
func (s *Store) cleanFiles(ctx context.Context) ([]string, bool, error) {
	db, err := s.openSQLite(ctx)
	if err != nil {
		return nil, false, err
	}
	defer db.Close()
	var steps []string
	orphans, err := s.orphanSegments(ctx, db)
	if err != nil {
		return steps, false, err
	}
	for _, d := range orphans {
		if err := shredDir(d); err != nil {
			return steps, false, fmt.Errorf("remove orphaned segment %s: %w", d, err)
		}
	}
	if err := atomicfile.SyncDir(s.opt.DataDir); err != nil {
		return steps, false, fmt.Errorf("fsync %s: %w", s.opt.DataDir, err)
	}
	steps = append(steps, fmt.Sprintf("zeroed and removed %d HNSW segment directories no collection owns", len(orphans)))
	conn, err := db.Conn(ctx)
	if err != nil {
		return steps, false, err
	}
	defer conn.Close()
	var fts int
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE name = 'embedding_fulltext_search'").Scan(&fts); err != nil {
		return steps, false, fmt.Errorf("%s: %w", SQLiteFile, busyErr(err))
	}
	merged := fts == 0
	stmts := []struct{ name, sql string }{{"secure_delete=ON", "PRAGMA secure_delete = ON"}}
	if fts > 0 && hasFTS5(ctx, conn) {
		stmts = append(stmts, struct{ name, sql string }{"fts5 optimize", "INSERT INTO embedding_fulltext_search(embedding_fulltext_search) VALUES('optimize')"})
		merged = true
	} else if fts > 0 {
		steps = append(steps, "fts5 optimize skipped: the SQLite linked into amnesia has no FTS5 (build with -tags sqlite_fts5)")
	}
	stmts = append(stmts, struct{ name, sql string }{"VACUUM", "VACUUM"})
	for _, st := range stmts {
		if _, err := conn.ExecContext(ctx, st.sql); err != nil {
			return steps, false, fmt.Errorf("%s: %s: %w", SQLiteFile, st.name, busyErr(err))
		}
		steps = append(steps, st.name)
	}
	return steps, merged, nil
}

// hasFTS5 reports whether the linked SQLite has FTS5 (mattn/go-sqlite3
// compiles it in only with the build tag sqlite_fts5).
func hasFTS5(ctx context.Context, conn *sql.Conn) bool {
	var n int
	err := conn.QueryRowContext(ctx, "SELECT count(*) FROM pragma_compile_options WHERE compile_options = 'ENABLE_FTS5'").Scan(&n)
	return err == nil && n > 0
}

// orphanSegments returns the HNSW segment directories of the persist
// directory (named by a segment's UUID, holding header.bin or
// data_level0.bin) that no row of chroma.sqlite3's segments table names.
func (s *Store) orphanSegments(ctx context.Context, db *sql.DB) ([]string, error) {
	rows, err := db.QueryContext(ctx, "SELECT id FROM segments")
	if err != nil {
		return nil, fmt.Errorf("%s: read segments: %w", SQLiteFile, busyErr(err))
	}
	owned := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, err
		}
		owned[id] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(s.opt.DataDir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() || !uuidRe.MatchString(e.Name()) || owned[e.Name()] {
			continue
		}
		d := filepath.Join(s.opt.DataDir, e.Name())
		if exists(filepath.Join(d, "header.bin")) || exists(filepath.Join(d, "data_level0.bin")) {
			out = append(out, d)
		}
	}
	return out, nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// shredDir zeroes every regular file of d, then removes d.
func shredDir(d string) error {
	ents, err := os.ReadDir(d)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, e := range ents {
		if e.Type().IsRegular() {
			if err := atomicfile.Shred(filepath.Join(d, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	return os.RemoveAll(d)
}

// Files returns the files of the persist directory in which Chroma keeps
// record bytes: chroma.sqlite3 with its -journal, -wal and -shm, and every
// regular file of every segment directory.
func (s *Store) Files() ([]string, error) {
	base := filepath.Join(s.opt.DataDir, SQLiteFile)
	out := []string{base, base + "-journal", base + "-wal", base + "-shm"}
	ents, err := os.ReadDir(s.opt.DataDir)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		if !e.IsDir() || !uuidRe.MatchString(e.Name()) {
			continue
		}
		d := filepath.Join(s.opt.DataDir, e.Name())
		fs, err := os.ReadDir(d)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, err
		}
		for _, f := range fs {
			if f.Type().IsRegular() {
				out = append(out, filepath.Join(d, f.Name()))
			}
		}
	}
	return out, nil
}

// ProbePhysical implements store.PhysicalProber: a byte scan of
// chroma.sqlite3 (+ -journal, -wal, -shm) and of every file of every HNSW
// segment directory of the persist directory (the collection's and any
// other, orphaned ones included).
func (s *Store) ProbePhysical(ctx context.Context, set *store.NeedleSet) (store.ScanReport, error) {
	if s.opt.DataDir == "" {
		return store.ScanReport{}, errors.New("physical probe: data_dir (the server's persist directory) is not configured")
	}
	if !exists(filepath.Join(s.opt.DataDir, SQLiteFile)) {
		return store.ScanReport{}, fmt.Errorf("physical probe: %s: %w: no %s (is data_dir the server's --path?)", s.opt.DataDir, store.ErrUnavailable, SQLiteFile)
	}
	// Files a listing names may be replaced or removed before they are
	// read (a rollback journal, a segment directory rewritten): the persist
	// directory is listed again then (store.RescanGone). SQLite's journal,
	// WAL and shm files are named whether they exist or not: only those that
	// exist at the listing count.
	sc := store.NewScanner(set, "byte scan of chroma.sqlite3 (+ -journal, -wal, -shm) and every file of every HNSW segment directory of the persist directory, listed again when a listed file went before it was read")
	existing := func() ([]string, error) {
		files, err := s.Files()
		if err != nil {
			return nil, err
		}
		out := files[:0]
		for _, f := range files {
			if exists(f) {
				out = append(out, f)
			}
		}
		return out, nil
	}
	if _, err := store.RescanGone(ctx, existing, func(f string) (bool, string, error) { return sc.ScanFileGone(ctx, f) }); err != nil {
		return store.ScanReport{}, fmt.Errorf("physical probe: %w", err)
	}
	return sc.Report(), nil
}
