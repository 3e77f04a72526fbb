package transparency_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/transparency"
)

// A log that lost its tail (rows deleted behind the append-only triggers)
// is never signed at its smaller size: Checkpoint refuses with ErrShrunk and
// stores nothing.
func TestCheckpointNeverSignsASmallerTree(t *testing.T) {
	ctx := context.Background()
	lg, path := openLog(t)
	var hooked []int64
	lg.OnCheckpoint(func(_ context.Context, cp *transparency.Signed) error {
		hooked = append(hooked, cp.Size)
		return nil
	})
	appendN(t, lg, 0, 5)
	if cp, err := lg.Checkpoint(ctx); err != nil || cp.Size != 5 || len(hooked) != 1 || hooked[0] != 5 {
		t.Fatalf("checkpoint: %v, hooked %v", err, hooked)
	}
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{"DROP TRIGGER tlog_leaves_no_delete", "DELETE FROM tlog_leaves WHERE idx >= 3"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(q, err)
		}
	}
	_, err = lg.Checkpoint(ctx)
	if !errors.Is(err, transparency.ErrShrunk) || !strings.Contains(err.Error(), "holds 3 leaves, a checkpoint of 5 leaves was signed") {
		t.Fatalf("checkpoint of a log cut to 3 leaves: %v", err)
	}
	var n int
	db.QueryRow(`SELECT count(*) FROM tlog_checkpoints WHERE size = 3`).Scan(&n)
	if n != 0 || len(hooked) != 1 {
		t.Errorf("a checkpoint of the smaller tree was stored (%d) or reported (%v)", n, hooked)
	}
	// Appending and checkpointing in one write (the publish of an erasure)
	// refuses too, and writes nothing: neither the leaf nor a checkpoint.
	leaf, err := transparency.EventLeaf("erasure-started", "er-0100", strings.Repeat("0", 64))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := lg.AppendCheckpoint(ctx, leaf); err == nil {
		t.Fatal("AppendCheckpoint on a log cut to 3 leaves succeeded")
	}
	var leaves, cps int
	db.QueryRow(`SELECT count(*) FROM tlog_leaves`).Scan(&leaves)
	db.QueryRow(`SELECT count(*) FROM tlog_checkpoints WHERE size < 5`).Scan(&cps)
	if leaves != 3 || cps != 0 || len(hooked) != 1 {
		t.Errorf("AppendCheckpoint on a shrunk log left %d leaves, %d smaller checkpoints, reported %v", leaves, cps, hooked)
	}
}
