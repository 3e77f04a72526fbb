package pgdoc_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/internal/pgtest"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/pgdoc"
)

func testDigest(b []byte) string {
	d := sha256.Sum256(append([]byte("test-key\x00"), b...))
	return hex.EncodeToString(d[:])
}

// The application deleted a row with a plain DELETE: its dead tuple keeps
// the content. The orphan probe finds it by digest (pg_dirtyread) without
// the content; after Reclaim neither the probe, pg_dirtyread nor the byte
// scan finds it, and the live row is still found.
func TestOrphanDeadTuplesProbed(t *testing.T) {
	ctx := context.Background()
	a := admin(t)
	s := open(t, config(t))
	put(t, s, "rec-a", "subject-1", 1)
	put(t, s, "rec-b", "subject-2", 2)
	exec(t, a, `DELETE FROM `+s.Table()+` WHERE id = 'rec-a'`)
	if dirtyRead(t, a, s.Table())["rec-a"] != text(1) {
		t.Fatal("after the application's DELETE pg_dirtyread does not return rec-a: the premise failed")
	}
	want := map[string]string{"rec-a": testDigest([]byte(text(1))), "rec-never": testDigest([]byte(text(99)))}

	rep, err := s.ProbeOrphans(ctx, testDigest, want)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Measured || rep.Scanned < 1 || len(rep.Found) != 1 || rep.Found["rec-a"] == nil || len(rep.Found["rec-a"].Needles) == 0 {
		t.Fatalf("orphan probe before reclaim = measured %v (%s), scanned %d, found %d: want rec-a with needles", rep.Measured, rep.Method, rep.Scanned, len(rep.Found))
	}
	if strings.Contains(rep.Method, "record 1 line") {
		t.Fatal("the probe's method holds content")
	}
	if _, err := s.Reclaim(ctx); err != nil {
		t.Fatal(err)
	}
	after, err := s.ProbeOrphans(ctx, testDigest, want)
	if err != nil || !after.Measured || len(after.Found) != 0 {
		t.Fatalf("orphan probe after reclaim = measured %v, found %d, %v", after.Measured, len(after.Found), err)
	}
	got := dirtyRead(t, a, s.Table())
	for id, c := range got {
		if strings.Contains(c, "record 1 line") {
			t.Fatalf("after Reclaim pg_dirtyread still returns rec-a's content under id %q", id)
		}
	}
	if got["rec-b"] != text(2) {
		t.Fatal("pg_dirtyread no longer returns the live rec-b: the check went blind")
	}
	if s.Info().Has(store.CapProbePhysical) {
		if f := found(t, s, rep.Found); f["rec-a"] != 0 {
			t.Fatalf("after Reclaim the byte scan finds %d windows of rec-a", f["rec-a"])
		}
	}
}

// Without pg_dirtyread the probe measures nothing and says why.
func TestOrphanProbeWithoutDirtyread(t *testing.T) {
	ctx := context.Background()
	cfg := config(t)
	cfg.DSN = pgtest.DB(t) // no pg_dirtyread there; dropped when the test ends
	s := open(t, cfg)
	t.Cleanup(func() { s.Exec(context.Background(), "DROP TABLE IF EXISTS "+s.Table()) })
	if err := s.Exec(ctx, "DROP EXTENSION IF EXISTS pg_dirtyread"); err != nil {
		t.Fatal(err)
	}
	put(t, s, "rec-a", "subject-1", 1)
	if err := s.Exec(ctx, `DELETE FROM `+s.Table()+` WHERE id = 'rec-a'`); err != nil {
		t.Fatal(err)
	}
	rep, err := s.ProbeOrphans(ctx, testDigest, map[string]string{"rec-a": testDigest([]byte(text(1)))})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Measured || len(rep.Found) != 0 || !strings.Contains(rep.Method, "pg_dirtyread is not installed") {
		t.Fatalf("without pg_dirtyread: measured %v, found %d, method %q", rep.Measured, len(rep.Found), rep.Method)
	}
	_ = pgdoc.Type
}
