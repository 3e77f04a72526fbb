package transparency_test

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/transparency"
)

// growingStore is a ledger another process appends to, and signs a
// checkpoint of, while an audit reads the leaves.
type growingStore struct {
	*sqliteledger.Ledger
	other *transparency.Log
	done  bool
	t     *testing.T
}

func (s *growingStore) LogLeaves(ctx context.Context, from, to int64) ([][]byte, error) {
	if !s.done {
		s.done = true
		leaf, _ := transparency.EventLeaf("erasure-started", "er-concurrent", fmt.Sprintf("%064x", 999))
		if _, err := s.other.Append(ctx, leaf); err != nil {
			s.t.Fatal(err)
		}
		if _, err := s.other.Checkpoint(ctx); err != nil {
			s.t.Fatal(err)
		}
	}
	return s.Ledger.LogLeaves(ctx, from, to)
}

// An audit of a live log is not a tamper alarm: a checkpoint signed by
// another process while the audit runs is of a log that grew, not shrank.
func TestAuditWhileTheLogGrows(t *testing.T) {
	ctx := context.Background()
	l, err := sqliteledger.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	priv := ed25519.NewKeyFromSeed(seed)
	other, err := transparency.Open(ctx, l, priv, "")
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, other, 0, 5)
	if _, err := other.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	lg, err := transparency.Open(ctx, &growingStore{Ledger: l, other: other, t: t}, priv, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lg.Audit(ctx, nil); err != nil {
		t.Fatalf("audit while another process appends: %v", err)
	}
	// And the log as it is now audits whole.
	rep, err := other.Audit(ctx, nil)
	if err != nil || rep.Size != 6 || rep.Checkpoints != 2 {
		t.Fatalf("audit after: %+v, %v", rep, err)
	}
}
