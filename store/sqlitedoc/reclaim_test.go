package sqlitedoc_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/internal/sqlitex"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
)

// version is the text of the v-th version of record i: each version has
// its own bytes, and a different length, so an UPDATE moves the cell.
func version(i, v int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "version %d of record %d: ", v, i)
	for j := 0; j < 3+2*v; j++ {
		fmt.Fprintf(&b, "line %d of version %d of record %d, seen at %x; ", j, v, i, i*104729+v*7919+j)
	}
	return b.String()
}

// inFiles counts which of needles occur anywhere in the database's files.
func inFiles(t *testing.T, path string, needles [][]byte) int {
	t.Helper()
	var all []byte
	for _, f := range sqlitex.Files(path) {
		b, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	n := 0
	for _, x := range needles {
		if bytes.Contains(all, x) {
			n++
		}
	}
	return n
}

// erase is the store's part of an erasure: evidence, delete, reclaim, and
// the physical probe for the evidence's needles.
func erase(t *testing.T, s *sqlitedoc.Store, keys []string) (store.ReclaimReport, store.ScanReport) {
	t.Helper()
	ctx := context.Background()
	ev, err := s.ReadEvidence(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	if len(ev) != len(keys) {
		t.Fatalf("evidence for %d of %d keys", len(ev), len(keys))
	}
	if err := s.Delete(ctx, keys); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Reclaim(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := s.ProbePhysical(ctx, store.NewNeedleSet(ev))
	if err != nil {
		t.Fatal(err)
	}
	return rep, sc
}

// rewritten builds the measured case: 25 records, 5 of them the
// subject's, which an application's own connection (SQLite's default,
// secure_delete off) then rewrote four times. It returns the store, its
// path, the subject's keys and the first 40 bytes of each of their 20
// earlier versions, having checked that some of those are in the files.
func rewritten(t *testing.T) (*sqlitedoc.Store, string, []string, [][]byte) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "docs.db")
	s, err := sqlitedoc.Open(ctx, "docs", path, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var keys []string
	var first [][]byte
	for i := 0; i < 25; i++ {
		r := sqlitedoc.Record{ID: fmt.Sprintf("doc-%02d", i), Kind: sqlitedoc.KindDocument, Subject: "other", Text: text(i)}
		if i%5 == 0 {
			r.Subject, r.Text = "s", version(i, 1)
			keys = append(keys, r.ID)
			for v := 1; v <= 4; v++ { // the versions rewritten later
				first = append(first, []byte(version(i, v)[:40]))
			}
		}
		if err := s.Put(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	app, err := sql.Open("sqlite3", "file:"+path+"?_secure_delete=off&_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	for v := 2; v <= 5; v++ {
		for i := 0; i < 25; i += 5 {
			if _, err := app.Exec(`UPDATE documents SET text = ? WHERE id = ?`, version(i, v), fmt.Sprintf("doc-%02d", i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := app.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	n := inFiles(t, path, first)
	if n == 0 {
		t.Fatalf("no earlier version is left in the files: the case shows nothing")
	}
	t.Logf("before the erasure: %d of %d earlier versions in the files", n, len(first))
	return s, path, keys, first
}

// The measured case: the needles, read from the current versions,
// do not cover the earlier ones, which the rewrites left in free space.
// The free-space audit finds them, Reclaim zeroes them in place and says
// why, and no earlier version is left in the files (the rebuilds that
// Reclaim falls back to are tested in sqlitex).
func TestReclaimClearsEarlierVersions(t *testing.T) {
	s, path, keys, first := rewritten(t)
	rep, sc := erase(t, s, keys)
	if !strings.Contains(rep.Method, "are not zero") || !strings.Contains(rep.Method, "zeroed in place") {
		t.Errorf("method %q: want the non-zero free space found and zeroed in place", rep.Method)
	}
	if contains(rep.Steps, "VACUUM") {
		t.Errorf("steps %q: VACUUM ran", rep.Steps)
	}
	if n := inFiles(t, path, first); n != 0 {
		t.Errorf("after reclaim %d of %d earlier versions are still in the files", n, len(first))
	}
	if sc.Bytes == 0 || len(sc.Found) != 0 {
		t.Errorf("physical probe: %d bytes scanned, %d records found; want a scan that finds none", sc.Bytes, len(sc.Found))
	}
}

// A DELETE with secure_delete on and a checkpoint leave the earlier
// versions where they are: the audit must not call such a file clean.
func TestAuditSeesEarlierVersionsAfterSecureDelete(t *testing.T) {
	ctx := context.Background()
	s, path, keys, first := rewritten(t)
	if err := s.Delete(ctx, keys); err != nil {
		t.Fatal(err)
	}
	db, err := sqlitex.Open(ctx, path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	n := inFiles(t, path, first)
	if n == 0 {
		t.Fatalf("no earlier version is in the file after a secure delete and a checkpoint: the case shows nothing")
	}
	t.Logf("after DELETE (secure_delete on) and wal_checkpoint(TRUNCATE): %d of %d earlier versions in the file", n, len(first))
	fs, err := sqlitex.AuditFreeSpace(ctx, conn, path)
	if err != nil {
		t.Fatal(err)
	}
	if fs.Clean() || fs.Undecided != "" || fs.NonZero == 0 || fs.FirstDirty == 0 {
		t.Fatalf("audit %+v: want the non-zero free space found", fs)
	}
}

// A store written only through amnesia (secure_delete on), rewrites
// included: the audit proves the free space zero, Reclaim skips VACUUM and
// says so, and the physical probe still finds none of the erased records'
// needles, nor any earlier version.
func TestReclaimSkipsVacuumWhenFreeSpaceIsZero(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "docs.db")
	s, err := sqlitedoc.Open(ctx, "docs", path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var keys []string
	var earlier [][]byte
	for i := 0; i < 200; i++ {
		r := sqlitedoc.Record{ID: fmt.Sprintf("doc-%03d", i), Kind: sqlitedoc.KindDocument, Subject: "other", Text: text(i)}
		if i%20 == 0 {
			r.Subject = "s"
			keys = append(keys, r.ID)
			for v := 1; v <= 3; v++ { // rewritten through amnesia
				if err := s.Put(ctx, sqlitedoc.Record{ID: r.ID, Kind: r.Kind, Subject: "s", Text: version(i, v)}); err != nil {
					t.Fatal(err)
				}
				earlier = append(earlier, []byte(version(i, v)[:40]))
			}
		}
		if err := s.Put(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	// Other records deleted through amnesia leave zeroed free pages and blocks.
	if err := s.Delete(ctx, []string{"doc-001", "doc-002", "doc-003"}); err != nil {
		t.Fatal(err)
	}
	rep, sc := erase(t, s, keys)
	if !strings.HasPrefix(rep.Method, "secure_delete=ON; wal_checkpoint(TRUNCATE); VACUUM skipped: free-space audit of") ||
		!strings.Contains(rep.Method, "every unused byte is zero") {
		t.Fatalf("method %q: want VACUUM skipped on a zero free-space audit", rep.Method)
	}
	if contains(rep.Steps, "VACUUM") {
		t.Errorf("steps %q: VACUUM ran", rep.Steps)
	}
	if sc.Bytes == 0 || len(sc.Found) != 0 {
		t.Errorf("physical probe: %d bytes scanned, %d records found; want a scan that finds none", sc.Bytes, len(sc.Found))
	}
	if n := inFiles(t, path, earlier); n != 0 {
		t.Errorf("%d of %d earlier versions are in the files", n, len(earlier))
	}
	for _, k := range keys {
		if r, err := s.Get(ctx, k); err != nil || r != nil {
			t.Errorf("get %s after erasure: %v, %v", k, r, err)
		}
	}
	if r, err := s.Get(ctx, "doc-004"); err != nil || r == nil || r.Text != text(4) {
		t.Errorf("another record was lost: %v, %v", r, err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// A store ingested in batches with random ids, as applications do: page
// splits leave whole stale cells in the indexes' pages, which the first
// reclaim zeroes in place instead of rebuilding the indexes or the file;
// an erasure after that leaves none of the erased records' windows in the
// files, keeps every other record readable, and skips VACUUM.
func TestReclaimClearsIndexesAfterIngest(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "docs.db")
	s, err := sqlitedoc.Open(ctx, "docs", path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	id := func(sub, d int) string {
		return fmt.Sprintf("%x", sha256.Sum256(fmt.Appendf(nil, "%d/%d", sub, d)))[:32]
	}
	for sub := 0; sub < 150; sub++ {
		var rs []sqlitedoc.Record
		for d := 0; d < 40; d++ {
			rs = append(rs, sqlitedoc.Record{ID: id(sub, d), Kind: sqlitedoc.KindChunk, Subject: fmt.Sprintf("subject-%03d", sub), Text: text(sub*40 + d)})
		}
		if err := s.PutBatch(ctx, rs); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := s.Reclaim(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rep.Method, " pages of 1 indexes, 0 pages of tables") || !strings.Contains(rep.Method, "drops the pages it cached; wal_checkpoint(TRUNCATE); VACUUM skipped: ") {
		t.Fatalf("first reclaim after ingestion: %s; want the dirty index pages zeroed in place and VACUUM skipped", rep.Method)
	}
	var keys []string
	var gone [][]byte
	for d := 0; d < 40; d++ {
		keys = append(keys, id(7, d))
		gone = append(gone, []byte(text(7*40 + d)[40:72]))
	}
	if err := s.Delete(ctx, keys); err != nil {
		t.Fatal(err)
	}
	if rep, err = s.Reclaim(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rep.Method, "VACUUM skipped") {
		t.Errorf("reclaim after an erasure: %s; want VACUUM skipped", rep.Method)
	}
	if n := inFiles(t, path, gone); n != 0 {
		t.Errorf("%d of %d erased records' windows are still in the files (%s)", n, len(gone), rep.Method)
	}
	all, err := s.All(ctx)
	if err != nil || len(all) != 149*40 {
		t.Fatalf("after reclaim: %d records, %v; want %d", len(all), err, 149*40)
	}
	for _, sub := range []int{0, 8, 149} {
		if got, err := s.BySubject(ctx, fmt.Sprintf("subject-%03d", sub)); err != nil || len(got) != 40 {
			t.Errorf("subject %d through the rebuilt index: %d records, %v", sub, len(got), err)
		}
	}
}
