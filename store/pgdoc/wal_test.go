package pgdoc_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/store"
)

// Bytes that only pg_wal holds, in a segment a checkpoint recycled ahead of
// the write position (renamed, its old bytes kept), are gone after a full
// reclaim: the rotation goes on until the write position has passed every
// segment file that the first switch and checkpoint left at or ahead of it,
// so each of them is written again from its start.
func TestRotationWritesRecycledSegmentsAgain(t *testing.T) {
	ctx := context.Background()
	s, ev := setup(t, config(t))
	a := admin(t)
	// A row of another table, never in the store's files: after the insert
	// its bytes are in the WAL only.
	side := uniq("walonly_")
	tok := uniq("")
	var b strings.Builder
	for i := 0; i < 24; i++ {
		fmt.Fprintf(&b, "[%s wal-only %02d %x] ", tok, i, i*7919+13)
	}
	content := b.String()
	exec(t, a, "CREATE TABLE "+side+" (body text)")
	exec(t, a, "INSERT INTO "+side+" VALUES ($1)", content)
	// The segment holding the insert falls behind the next checkpoint's redo
	// point: the checkpoint recycles it ahead of the write position (or,
	// beyond what min_wal_size and its estimate keep, removes it).
	exec(t, a, "SELECT pg_switch_wal()")
	exec(t, a, "CHECKPOINT")
	w := &store.Evidence{Key: "wal-only"}
	w.AddWindows([]byte(content))
	ev["wal-only"] = w
	if f := found(t, s, ev); f["wal-only"] == 0 {
		t.Skip("no window of the WAL-only row was found in pg_wal before reclaim (its segment was removed, or another test's rotation wrote it again): the test has no power")
	}

	if err := s.Delete(ctx, []string{"rec-a"}); err != nil {
		t.Fatal(err)
	}
	rep := reclaim(t, s)
	if rep.State != "" {
		t.Fatalf("Reclaim = state %q evidence %q, want clean", rep.State, rep.Evidence)
	}
	if steps := strings.Join(rep.Steps, "\n"); !strings.Contains(steps, "each was written again from its start") {
		t.Errorf("steps %q: want the rotation through every segment file at or ahead of the write position", rep.Steps)
	}
	if f := found(t, s, ev); f["wal-only"] != 0 || f["rec-a"] != 0 || f["rec-b"] == 0 {
		t.Errorf("after reclaim found %v: want no window of the WAL-only row nor of rec-a, and some of rec-b", f)
	}
}
