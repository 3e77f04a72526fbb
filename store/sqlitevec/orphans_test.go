package sqlitevec_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/sqlitevec"
)

// inFiles reports whether b occurs in the database file or its -wal,
// -journal or -shm file: the test's own scan, independent of the adapter.
func inFiles(t *testing.T, path string, b []byte) bool {
	t.Helper()
	for _, f := range []string{path, path + "-wal", path + "-journal", path + "-shm"} {
		data, err := os.ReadFile(f)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(data, b) {
			return true
		}
	}
	return false
}

func testDigest(b []byte) string {
	d := sha256.Sum256(append([]byte("test-key\x00"), b...))
	return hex.EncodeToString(d[:])
}

// An application deletes a subject's vectors with plain SQL (and even
// VACUUMs): sqlite-vec keeps them in their chunk. The orphan probe finds
// them by digest without the content; Reclaim zeroes them; afterwards
// neither the probe nor a scan of the file finds them, and a live vector
// is intact.
func TestOrphanSlotsProbedAndReclaimed(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "vec.db")
	s, err := sqlitevec.Open(ctx, "vectors", path, dim, true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i, id := range []string{"rec-a", "rec-b", "rec-live"} {
		if err := s.Put(ctx, sqlitevec.Record{ID: id, Subject: "tag", Embedding: vector(i + 1)}); err != nil {
			t.Fatal(err)
		}
	}
	app, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`DELETE FROM vectors WHERE id IN ('rec-a', 'rec-b')`, `VACUUM`, `PRAGMA wal_checkpoint(TRUNCATE)`} {
		if _, err := app.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	app.Close()
	a, b, live := store.Float32LE(vector(1)), store.Float32LE(vector(2)), store.Float32LE(vector(3))
	if !inFiles(t, path, a) || !inFiles(t, path, b) {
		t.Fatal("after the application's DELETE the vectors are not in the file: the premise of this test failed")
	}
	want := map[string]string{"rec-a": testDigest(a), "rec-b": testDigest(b), "rec-never": testDigest(store.Float32LE(vector(9)))}

	rep, err := s.ProbeOrphans(ctx, testDigest, want)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Measured || rep.Scanned < 2 || len(rep.Found) != 2 || rep.Found["rec-a"] == nil || rep.Found["rec-b"] == nil {
		t.Fatalf("orphan probe before reclaim = measured %v, scanned %d, found %d: want rec-a and rec-b", rep.Measured, rep.Scanned, len(rep.Found))
	}
	if len(rep.Found["rec-a"].Needles) == 0 {
		t.Fatal("a found orphan carries no needles for the byte scan")
	}
	if sc, err := s.ProbePhysical(ctx, store.NewNeedleSet(rep.Found)); err != nil || sc.Found["rec-a"] == 0 {
		t.Fatalf("byte scan with the orphan's needles before reclaim found %v (%v): the needles have no power", sc.Found, err)
	}

	rc, err := s.Reclaim(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rc.Steps) == 0 || rc.Steps[0] != "zeroed 2 invalidated vec0 slots" {
		t.Errorf("reclaim steps = %q, want the zeroing of 2 slots first", rc.Steps)
	}
	if inFiles(t, path, a) || inFiles(t, path, b) {
		t.Fatal("after Reclaim the application-deleted vectors are still in the file")
	}
	if !inFiles(t, path, live) {
		t.Fatal("after Reclaim the live vector is not in the file: the scan went blind")
	}
	after, err := s.ProbeOrphans(ctx, testDigest, want)
	if err != nil || !after.Measured || len(after.Found) != 0 {
		t.Fatalf("orphan probe after reclaim = %v found, %v", after.Found, err)
	}
	got, err := s.Get(ctx, "rec-live")
	if err != nil || got == nil || !bytes.Equal(store.Float32LE(got.Embedding), live) {
		t.Fatalf("the live vector changed: %v", err)
	}
	ns, err := s.Search(ctx, vector(3), 1)
	if err != nil || len(ns) != 1 || ns[0].ID != "rec-live" || ns[0].Distance != 0 {
		t.Fatalf("search after reclaim = %+v, %v", ns, err)
	}
	// A second reclaim has nothing left to zero.
	if rc, err := s.Reclaim(ctx); err != nil || rc.Steps[0] != "zeroed 0 invalidated vec0 slots" {
		t.Fatalf("second reclaim = %q, %v", rc.Steps, err)
	}
}
