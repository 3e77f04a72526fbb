package chroma

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/amnesia-dev/amnesia/store"
)

var _ store.ResidueMeter = (*Store)(nil)

// StateDeadBytes is the state MeasureResidue reports when Chroma's files
// hold bytes of deleted records again (or still): elements hnswlib marked
// deleted, free pages in chroma.sqlite3, segment directories no collection
// owns, or unused index slots that are not zero.
const StateDeadBytes = "UNVERIFIED-chroma-dead-bytes-remain"

// MeasureResidue implements store.ResidueMeter: without needles, what in
// the persist directory can hold bytes of deleted records now — elements
// marked deleted in the collection's data_level0.bin, non-zero bytes in
// its unused index slots, chroma.sqlite3's free pages, and segment
// directories no collection owns — as counts, and when chroma.sqlite3 was
// last written relative to since. It opens chroma.sqlite3 read-only and
// changes nothing.
func (s *Store) MeasureResidue(ctx context.Context, since time.Time) (store.ResidueReport, error) {
	if s.opt.DataDir == "" {
		return store.ResidueReport{State: StateFilesNotRead, Evidence: "data_dir (the server's persist directory) is not configured: Chroma's files were not read"}, nil
	}
	path := filepath.Join(s.opt.DataDir, SQLiteFile)
	fi, err := os.Stat(path)
	if err != nil {
		return store.ResidueReport{}, fmt.Errorf("measure residue: %s: %w: %v", path, store.ErrUnavailable, err)
	}
	c, err := s.coll(ctx)
	if err != nil {
		return store.ResidueReport{}, fmt.Errorf("measure residue: %w", err)
	}
	q := url.Values{}
	q.Set("mode", "ro")
	q.Set("_busy_timeout", "2000")
	db, err := sql.Open("sqlite3", "file:"+path+"?"+q.Encode())
	if err != nil {
		return store.ResidueReport{}, fmt.Errorf("measure residue: %w", err)
	}
	defer db.Close()
	var free int
	if err := db.QueryRowContext(ctx, "PRAGMA freelist_count").Scan(&free); err != nil {
		return store.ResidueReport{}, fmt.Errorf("measure residue: %s: %w", SQLiteFile, busyErr(err))
	}
	orphans, err := s.orphanSegments(ctx, db)
	if err != nil {
		return store.ResidueReport{}, fmt.Errorf("measure residue: %w", err)
	}
	deleted, unused := 0, int64(0)
	rows, err := db.QueryContext(ctx, `SELECT id FROM segments WHERE collection = ? AND scope = 'VECTOR'`, c.ID)
	if err != nil {
		return store.ResidueReport{}, fmt.Errorf("measure residue: %s: %w", SQLiteFile, busyErr(err))
	}
	var segs []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err == nil {
			segs = append(segs, id)
		}
	}
	rows.Close()
	for _, seg := range segs {
		d, u, err := level0Residue(filepath.Join(s.opt.DataDir, seg))
		if err != nil {
			return store.ResidueReport{}, fmt.Errorf("measure residue: %w", err)
		}
		deleted += d
		unused += u
	}
	var parts []string
	if deleted > 0 {
		parts = append(parts, fmt.Sprintf("%d elements marked deleted in the collection's data_level0.bin (hnswlib keeps their vectors)", deleted))
	}
	if unused > 0 {
		parts = append(parts, fmt.Sprintf("%d non-zero bytes in the collection's unused index slots", unused))
	}
	if free > 0 {
		parts = append(parts, fmt.Sprintf("%d free pages in %s", free, SQLiteFile))
	}
	if len(orphans) > 0 {
		parts = append(parts, fmt.Sprintf("%d segment directories no collection owns", len(orphans)))
	}
	rep := store.ResidueReport{}
	if len(parts) > 0 {
		rep.State = StateDeadBytes
		rep.Evidence = strings.Join(parts, "; ")
	} else {
		rep.Evidence = "no element marked deleted, no non-zero unused index slot, no free page, no orphaned segment directory"
	}
	when := "before"
	if !fi.ModTime().Before(since) {
		when = "after"
	}
	rep.Evidence += fmt.Sprintf("; %s last written %s the re-verified certificate was issued (%s)", SQLiteFile, when, fi.ModTime().UTC().Format(time.RFC3339))
	return rep, nil
}

// level0Residue counts, in one HNSW segment directory, the elements hnswlib
// marked deleted (the DELETE_MARK bit in byte 2 of an element's level-0
// link-list header) and the non-zero bytes past the elements of
// data_level0.bin and length.bin. A directory not written yet counts none.
func level0Residue(dir string) (deleted int, unused int64, err error) {
	l, err := readLevel0(dir, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	b, err := os.ReadFile(l.path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	for i := 0; i < l.count && (i+1)*l.stride <= len(b); i++ {
		if b[i*l.stride+2]&1 != 0 {
			deleted++
		}
	}
	unused += nonZero(b, l.count*l.stride)
	if lb, err := os.ReadFile(filepath.Join(dir, "length.bin")); err == nil {
		unused += nonZero(lb, l.count*4)
	}
	return deleted, unused, nil
}

func nonZero(b []byte, from int) int64 {
	var n int64
	for _, c := range b[min(from, len(b)):] {
		if c != 0 {
			n++
		}
	}
	return n
}
