package transparency_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/transparency"
)

var seed = bytes.Repeat([]byte{7}, ed25519.SeedSize)

func openLog(t *testing.T) (*transparency.Log, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := sqliteledger.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	lg, err := transparency.Open(context.Background(), l, ed25519.NewKeyFromSeed(seed), "")
	if err != nil {
		t.Fatal(err)
	}
	return lg, path
}

func appendN(t *testing.T, lg *transparency.Log, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		leaf, err := transparency.EventLeaf("erasure-started", fmt.Sprintf("er-%04d", i), fmt.Sprintf("%064x", i))
		if err != nil {
			t.Fatal(err)
		}
		idx, err := lg.Append(context.Background(), leaf)
		if err != nil || idx != int64(i) {
			t.Fatalf("append %d: index %d, %v", i, idx, err)
		}
	}
}

func TestInclusionAndConsistency(t *testing.T) {
	ctx := context.Background()
	lg, _ := openLog(t)
	var cps []*transparency.Signed
	for _, n := range []int{1, 2, 3, 7, 8, 9, 33} {
		size, _ := lg.Size(ctx)
		appendN(t, lg, int(size), n)
		cp, err := lg.Checkpoint(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if cp.Size != int64(n) || cp.Origin != lg.Origin() {
			t.Fatalf("checkpoint %+v after %d leaves", cp.Checkpoint, n)
		}
		cps = append(cps, cp)
	}
	last := cps[len(cps)-1]
	leaves, err := lg.Leaves(ctx, 0, last.Size)
	if err != nil {
		t.Fatal(err)
	}
	for i, leaf := range leaves {
		p, err := lg.InclusionProof(ctx, int64(i), last.Size)
		if err != nil {
			t.Fatal(err)
		}
		if err := transparency.VerifyInclusion(leaf, int64(i), p, last.Checkpoint); err != nil {
			t.Errorf("leaf %d: %v", i, err)
		}
		// The same proof does not prove another leaf, or the leaf elsewhere.
		if err := transparency.VerifyInclusion(append([]byte("x"), leaf...), int64(i), p, last.Checkpoint); !errors.Is(err, transparency.ErrProof) {
			t.Errorf("leaf %d: a changed leaf verified: %v", i, err)
		}
		if err := transparency.VerifyInclusion(leaf, int64((i+1)%len(leaves)), p, last.Checkpoint); !errors.Is(err, transparency.ErrProof) {
			t.Errorf("leaf %d: verified at another index: %v", i, err)
		}
	}
	for _, old := range cps {
		p, err := lg.ConsistencyProof(ctx, old.Size, last.Size)
		if err != nil {
			t.Fatal(err)
		}
		if err := transparency.VerifyConsistency(old.Checkpoint, last.Checkpoint, p); err != nil {
			t.Errorf("consistency %d→%d: %v", old.Size, last.Size, err)
		}
		if old.Size > 1 && old.Size < last.Size {
			bad := old.Checkpoint
			bad.Hash[0] ^= 1
			if err := transparency.VerifyConsistency(bad, last.Checkpoint, p); !errors.Is(err, transparency.ErrProof) {
				t.Errorf("consistency with a changed old root verified: %v", err)
			}
		}
	}
	if err := transparency.VerifyConsistency(last.Checkpoint, cps[0].Checkpoint, nil); !errors.Is(err, transparency.ErrProof) {
		t.Errorf("a shrinking log verified: %v", err)
	}
	rep, err := lg.Audit(ctx, cps[2].Raw)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Size != last.Size || rep.Root != last.Hash || rep.Checkpoints != len(cps) || rep.Since == nil {
		t.Errorf("audit report %+v", rep)
	}
}

// Appending the same leaf again (a retried erasure step) keeps one leaf.
func TestAppendIsIdempotent(t *testing.T) {
	ctx := context.Background()
	lg, _ := openLog(t)
	appendN(t, lg, 0, 3)
	leaf, _ := transparency.EventLeaf("erasure-started", "er-0001", fmt.Sprintf("%064x", 1))
	idx, err := lg.Append(ctx, leaf)
	if err != nil || idx != 1 {
		t.Fatalf("re-append: %d %v", idx, err)
	}
	if n, _ := lg.Size(ctx); n != 3 {
		t.Errorf("size %d after a repeated append", n)
	}
}

// Every single-byte change of a signed checkpoint is rejected.
func TestCheckpointByteFlips(t *testing.T) {
	ctx := context.Background()
	lg, _ := openLog(t)
	appendN(t, lg, 0, 5)
	cp, err := lg.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range cp.Raw {
		for _, x := range []byte{0x01, 0x80} {
			b := bytes.Clone(cp.Raw)
			b[i] ^= x
			if got, err := transparency.OpenCheckpoint(b, lg.Verifier()); err == nil {
				t.Fatalf("byte %d ^%#x accepted: %+v", i, x, got.Checkpoint)
			}
		}
	}
	// A checkpoint signed by another key with the same origin.
	other, _ := transparency.NewSigner(lg.Origin(), ed25519.NewKeyFromSeed(bytes.Repeat([]byte{8}, 32)))
	forged, err := transparency.Sign(cp.Checkpoint, other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := transparency.OpenCheckpoint(forged, lg.Verifier()); !errors.Is(err, transparency.ErrCheckpointSignature) {
		t.Errorf("checkpoint by another key: %v", err)
	}
}

// Every single-byte change of an inclusion proof is rejected.
func TestProofByteFlips(t *testing.T) {
	ctx := context.Background()
	lg, _ := openLog(t)
	appendN(t, lg, 0, 13)
	cp, _ := lg.Checkpoint(ctx)
	leaves, _ := lg.Leaves(ctx, 5, 6)
	p, _ := lg.InclusionProof(ctx, 5, cp.Size)
	for h := range p {
		for i := 0; i < tlog.HashSize; i++ {
			q := append(tlog.RecordProof(nil), p...)
			q[h][i] ^= 1
			if err := transparency.VerifyInclusion(leaves[0], 5, q, cp.Checkpoint); err == nil {
				t.Fatalf("proof hash %d byte %d changed, still verified", h, i)
			}
		}
	}
	enc := transparency.EncodeProof(p)
	for h := range enc {
		for i := range enc[h] {
			s := []byte(enc[h][i : i+1])
			s[0] ^= 1
			q := append([]string(nil), enc...)
			q[h] = enc[h][:i] + string(s) + enc[h][i+1:]
			dp, err := transparency.DecodeProof(q)
			if err == nil && transparency.VerifyInclusion(leaves[0], 5, dp, cp.Checkpoint) == nil {
				t.Fatalf("encoded proof hash %d char %d changed, still verified", h, i)
			}
		}
	}
}

// An operator who edits the database behind amnesia's back (dropping the
// append-only triggers) is caught by audit: a leaf edited in the middle, and
// a tail dropped, a leaf deleted from the middle (before or after the log
// grew on: its size is its highest index plus one, so the gap stays a gap),
// against a checkpoint the auditor saved.
func TestAuditCatchesRewrites(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		sql  []string
		want string
	}{
		{"middle leaf edited", []string{`UPDATE tlog_leaves SET data = CAST('amnesia/event/v1' || char(10) || 'erasure-started' || char(10) || 'er-9999' || char(10) || 'x' || char(10) AS BLOB) WHERE idx = 4`}, "stored hash"},
		{"middle leaf deleted", []string{`DELETE FROM tlog_leaves WHERE idx = 4`}, "leaf 4 is missing"},
		{"middle leaf deleted, log appended to", []string{`DELETE FROM tlog_leaves WHERE idx = 4`}, "leaf 4 is missing"},
		{"tail dropped", []string{`DELETE FROM tlog_leaves WHERE idx >= 8`, `DELETE FROM tlog_hashes WHERE id >= ` + fmt.Sprint(tlog.StoredHashIndex(0, 8)), `DELETE FROM tlog_checkpoints WHERE size > 8`}, "truncated"},
		{"tail dropped and regrown", []string{`DELETE FROM tlog_leaves WHERE idx >= 8`, `DELETE FROM tlog_hashes WHERE id >= ` + fmt.Sprint(tlog.StoredHashIndex(0, 8)), `DELETE FROM tlog_checkpoints WHERE size > 8`}, "rewritten"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lg, path := openLog(t)
			appendN(t, lg, 0, 10)
			saved, err := lg.Checkpoint(ctx)
			if err != nil {
				t.Fatal(err)
			}
			db, err := sql.Open("sqlite3", "file:"+path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for _, trig := range []string{"tlog_leaves_append_only", "tlog_leaves_no_delete", "tlog_hashes_append_only", "tlog_hashes_no_delete"} {
				if _, err := db.Exec("DROP TRIGGER " + trig); err != nil {
					t.Fatal(err)
				}
			}
			for _, q := range tc.sql {
				if _, err := db.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
			if tc.name == "middle leaf deleted, log appended to" {
				// The size is the highest index plus one: the append goes
				// after the gap, and the log still reads as 11 leaves.
				leaf, _ := transparency.EventLeaf("erasure-started", "other-10", "x")
				if _, err := lg.Append(ctx, leaf); err != nil {
					t.Fatal(err)
				}
				if _, err := lg.Checkpoint(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if tc.name == "tail dropped and regrown" {
				// New, different leaves take the dropped places and the log is re-signed.
				for i := 8; i < 12; i++ {
					leaf, _ := transparency.EventLeaf("erasure-started", fmt.Sprintf("other-%d", i), "x")
					if _, err := lg.Append(ctx, leaf); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := lg.Checkpoint(ctx); err != nil {
					t.Fatal(err)
				}
			}
			_, err = lg.Audit(ctx, saved.Raw)
			wantErr := transparency.ErrProof
			if strings.HasPrefix(tc.name, "middle leaf deleted") {
				wantErr = transparency.ErrLogCorrupt
			}
			if !errors.Is(err, wantErr) || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
				t.Fatalf("audit --since after %s: %v", tc.name, err)
			}
		})
	}
}

// The ledger's triggers refuse edits through SQL.
func TestLogIsAppendOnly(t *testing.T) {
	lg, path := openLog(t)
	appendN(t, lg, 0, 2)
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{`UPDATE tlog_leaves SET data = x'00'`, `DELETE FROM tlog_leaves`, `UPDATE tlog_hashes SET hash = x'00'`, `DELETE FROM tlog_hashes`} {
		if _, err := db.Exec(q); err == nil {
			t.Errorf("%s: accepted", q)
		}
	}
}
