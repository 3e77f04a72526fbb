// Package storagetest is the conformance suite of transparency.Store: every
// ledger backend runs it against its real database (as store/storetest
// does for the store adapters), so that all of them keep the same log, the
// same stored hashes and the same checkpoints, and the log built on them
// (transparency.Log) proves and audits the same way.
package storagetest

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"sync"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/amnesia-dev/amnesia/transparency"
)

// Opener opens a new, empty store for one test. Closing is the opener's
// business (t.Cleanup).
type Opener func(t *testing.T) transparency.Store

// PairOpener opens a new, empty store and returns two handles on it, as two
// processes would hold.
type PairOpener func(t *testing.T) (first, second transparency.Store)

// Run runs every check of the Store contract on stores from open: the
// reader part (StoreReader) on an empty and on a filled log, the writer
// part (StoreWriter), and a transparency.Log kept in the store.
func Run(t *testing.T, open Opener) {
	t.Run("Empty", func(t *testing.T) { testEmpty(t, open(t)) })
	t.Run("AppendAndLeaves", func(t *testing.T) { testAppend(t, open(t)) })
	t.Run("AppendIsIdempotent", func(t *testing.T) { testIdempotent(t, open(t)) })
	t.Run("StoredHashesAreTheTree", func(t *testing.T) { testHashes(t, open(t)) })
	t.Run("OriginFixedOnFirstUse", func(t *testing.T) { testOrigin(t, open(t)) })
	t.Run("Checkpoints", func(t *testing.T) { testCheckpoints(t, open(t)) })
	t.Run("Timestamps", func(t *testing.T) { testTimestamps(t, open(t)) })
	t.Run("UpdateCheckpoint", func(t *testing.T) { s := open(t); testUpdateCheckpoint(t, s, s) })
	t.Run("ConcurrentAppends", func(t *testing.T) { s := open(t); testConcurrent(t, s, s) })
	t.Run("Log", func(t *testing.T) { testLog(t, open(t)) })
	t.Run("AppendCheckpoint", func(t *testing.T) { testAppendCheckpoint(t, open(t)) })
}

// RunShared runs the checks that need two handles on one store.
func RunShared(t *testing.T, open PairOpener) {
	t.Run("ConcurrentAppendsOneLog", func(t *testing.T) { a, b := open(t); testConcurrent(t, a, b) })
	t.Run("UpdateCheckpointTwoHandles", func(t *testing.T) { a, b := open(t); testUpdateCheckpoint(t, a, b) })
	t.Run("CheckpointVisibleToTheOther", func(t *testing.T) {
		a, b := open(t)
		ctx := context.Background()
		appendLeaves(t, a, 0, 3)
		if err := a.SaveCheckpoint(ctx, 3, []byte("cp3")); err != nil {
			t.Fatal(err)
		}
		if got, err := b.Checkpoint(ctx, -1); err != nil || string(got) != "cp3" {
			t.Errorf("the other handle's newest checkpoint = %q, %v", got, err)
		}
		if o, err := a.LogOrigin(ctx, "first"); err != nil || o != "first" {
			t.Fatalf("origin = %q, %v", o, err)
		}
		if o, err := b.LogOrigin(ctx, "second"); err != nil || o != "first" {
			t.Errorf("the other handle's origin = %q, %v; want first", o, err)
		}
	})
}

// testUpdateCheckpoint: an update reads and writes in one step, so updates
// made at once from two handles (two witnesses' cosignatures stored by two
// processes) are all kept; a failed update changes nothing; a size without
// a checkpoint is ErrNoCheckpoint.
func testUpdateCheckpoint(t *testing.T, a, b transparency.Store) {
	ctx := context.Background()
	appendLeaves(t, a, 0, 3)
	if err := b.UpdateCheckpoint(ctx, 3, func(old []byte) ([]byte, error) { return old, nil }); !errors.Is(err, transparency.ErrNoCheckpoint) {
		t.Fatalf("update of a missing checkpoint: %v, want ErrNoCheckpoint", err)
	}
	if err := a.SaveCheckpoint(ctx, 3, []byte("cp3\n")); err != nil {
		t.Fatal(err)
	}
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func(s transparency.Store) {
			defer wg.Done()
			errs <- s.UpdateCheckpoint(ctx, 3, func(old []byte) ([]byte, error) {
				return append(bytes.Clone(old), fmt.Sprintf("sig %02d\n", i)...), nil
			})
		}(map[bool]transparency.Store{true: a, false: b}[i%2 == 0])
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got, err := b.Checkpoint(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if !bytes.Contains(got, fmt.Appendf(nil, "sig %02d\n", i)) {
			t.Errorf("update %d lost: %q", i, got)
		}
	}
	boom := errors.New("refused")
	if err := a.UpdateCheckpoint(ctx, 3, func([]byte) ([]byte, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Errorf("a failing update: %v, want its error", err)
	}
	if again, _ := a.Checkpoint(ctx, 3); !bytes.Equal(again, got) {
		t.Errorf("a failed update changed the checkpoint: %q", again)
	}
}

func leaf(i int) []byte { return []byte(fmt.Sprintf("amnesia/test/v1\nleaf %04d\n", i)) }

func appendLeaves(t *testing.T, s transparency.StoreWriter, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		idx, existed, err := s.LogAppend(context.Background(), leaf(i))
		if err != nil {
			t.Fatalf("append leaf %d: %v", i, err)
		}
		if idx != int64(i) || existed {
			t.Fatalf("append leaf %d = index %d, existed %v; want %d, false", i, idx, existed, i)
		}
	}
}

func testEmpty(t *testing.T, s transparency.StoreReader) {
	ctx := context.Background()
	if n, err := s.LogSize(ctx); err != nil || n != 0 {
		t.Errorf("size of an empty log = %d, %v", n, err)
	}
	if ls, err := s.LogLeaves(ctx, 0, 0); err != nil || len(ls) != 0 {
		t.Errorf("LogLeaves(0, 0) = %d leaves, %v", len(ls), err)
	}
	if _, err := s.LogLeaves(ctx, 0, 1); !errors.Is(err, transparency.ErrLogCorrupt) {
		t.Errorf("LogLeaves(0, 1) of an empty log = %v, want ErrLogCorrupt", err)
	}
	for _, size := range []int64{-1, 0, 1} {
		if _, err := s.Checkpoint(ctx, size); !errors.Is(err, transparency.ErrNoCheckpoint) {
			t.Errorf("Checkpoint(%d) of an empty log = %v, want ErrNoCheckpoint", size, err)
		}
	}
	if cps, err := s.Checkpoints(ctx); err != nil || len(cps) != 0 {
		t.Errorf("Checkpoints of an empty log = %d, %v", len(cps), err)
	}
	if _, err := s.Timestamp(ctx, 1); !errors.Is(err, transparency.ErrNoCheckpoint) {
		t.Errorf("Timestamp(1) of an empty log = %v, want ErrNoCheckpoint", err)
	}
	if _, err := s.ReadHashes(ctx, []int64{0}); !errors.Is(err, transparency.ErrLogCorrupt) {
		t.Errorf("ReadHashes([0]) of an empty log = %v, want ErrLogCorrupt", err)
	}
}

func testAppend(t *testing.T, s transparency.Store) {
	ctx := context.Background()
	const n = 37
	appendLeaves(t, s, 0, n)
	if got, err := s.LogSize(ctx); err != nil || got != n {
		t.Fatalf("size = %d, %v; want %d", got, err, n)
	}
	for _, r := range [][2]int64{{0, n}, {0, 1}, {5, 17}, {n - 1, n}, {10, 10}} {
		ls, err := s.LogLeaves(ctx, r[0], r[1])
		if err != nil {
			t.Fatalf("LogLeaves(%d, %d): %v", r[0], r[1], err)
		}
		if int64(len(ls)) != r[1]-r[0] {
			t.Fatalf("LogLeaves(%d, %d) = %d leaves", r[0], r[1], len(ls))
		}
		for i, l := range ls {
			if !bytes.Equal(l, leaf(int(r[0])+i)) {
				t.Errorf("LogLeaves(%d, %d)[%d] = %q, want leaf %d", r[0], r[1], i, l, int(r[0])+i)
			}
		}
	}
	if _, err := s.LogLeaves(ctx, n-2, n+1); !errors.Is(err, transparency.ErrLogCorrupt) {
		t.Errorf("LogLeaves past the end = %v, want ErrLogCorrupt", err)
	}
	if _, err := s.LogLeaves(ctx, 0, transparency.MaxLeavesPerRead+1); err == nil {
		t.Errorf("LogLeaves of more than MaxLeavesPerRead leaves was not refused")
	}
}

func testIdempotent(t *testing.T, s transparency.Store) {
	ctx := context.Background()
	appendLeaves(t, s, 0, 5)
	for _, i := range []int{0, 3, 4} {
		idx, existed, err := s.LogAppend(ctx, leaf(i))
		if err != nil || idx != int64(i) || !existed {
			t.Errorf("append leaf %d again = %d, existed %v, %v; want %d, true", i, idx, existed, err, i)
		}
	}
	if n, err := s.LogSize(ctx); err != nil || n != 5 {
		t.Errorf("size after appending equal leaves = %d, %v; want 5", n, err)
	}
	appendLeaves(t, s, 5, 6) // the next new leaf takes the next index
}

// testHashes: the stored hashes are exactly those of golang.org/x/mod's
// tlog layout over the leaves, so any Store's proofs match any other's.
func testHashes(t *testing.T, s transparency.Store) {
	ctx := context.Background()
	const n = 21
	var want []tlog.Hash
	reader := tlog.HashReaderFunc(func(ids []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(ids))
		for i, id := range ids {
			out[i] = want[id]
		}
		return out, nil
	})
	for i := 0; i < n; i++ {
		hs, err := tlog.StoredHashes(int64(i), leaf(i), reader)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, hs...)
	}
	appendLeaves(t, s, 0, n)
	ids := make([]int64, len(want))
	for i := range ids {
		ids[i] = int64(len(ids) - 1 - i) // any order
	}
	got, err := s.ReadHashes(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		if got[i] != want[id] {
			t.Errorf("stored hash %d differs from tlog's", id)
		}
	}
	root, err := tlog.TreeHash(n, tlog.HashReaderFunc(func(ids []int64) ([]tlog.Hash, error) { return s.ReadHashes(ctx, ids) }))
	if err != nil {
		t.Fatal(err)
	}
	wantRoot, _ := tlog.TreeHash(n, reader)
	if root != wantRoot {
		t.Errorf("tree hash over the stored hashes = %v, want %v", root, wantRoot)
	}
	if _, err := s.ReadHashes(ctx, []int64{0, int64(len(want))}); !errors.Is(err, transparency.ErrLogCorrupt) {
		t.Errorf("ReadHashes past the stored ones = %v, want ErrLogCorrupt", err)
	}
}

func testOrigin(t *testing.T, s transparency.Store) {
	ctx := context.Background()
	if o, err := s.LogOrigin(ctx, "example.org/log/a"); err != nil || o != "example.org/log/a" {
		t.Fatalf("first LogOrigin = %q, %v", o, err)
	}
	if o, err := s.LogOrigin(ctx, "example.org/log/b"); err != nil || o != "example.org/log/a" {
		t.Errorf("second LogOrigin = %q, %v; want the first origin kept", o, err)
	}
}

func testCheckpoints(t *testing.T, s transparency.Store) {
	ctx := context.Background()
	appendLeaves(t, s, 0, 5)
	for _, c := range []struct {
		size int64
		note string
	}{{2, "cp2"}, {5, "cp5"}, {3, "cp3"}} {
		if err := s.SaveCheckpoint(ctx, c.size, []byte(c.note)); err != nil {
			t.Fatal(err)
		}
	}
	check := func(size int64, want string) {
		t.Helper()
		got, err := s.Checkpoint(ctx, size)
		if err != nil || string(got) != want {
			t.Errorf("Checkpoint(%d) = %q, %v; want %q", size, got, err, want)
		}
	}
	check(-1, "cp5")
	check(3, "cp3")
	check(2, "cp2")
	if _, err := s.Checkpoint(ctx, 4); !errors.Is(err, transparency.ErrNoCheckpoint) {
		t.Errorf("Checkpoint(4) = %v, want ErrNoCheckpoint", err)
	}
	if err := s.SaveCheckpoint(ctx, 3, []byte("cp3+cosig")); err != nil {
		t.Fatal(err)
	}
	check(3, "cp3+cosig")
	cps, err := s.Checkpoints(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%q", cps); got != `["cp2" "cp3+cosig" "cp5"]` {
		t.Errorf("Checkpoints = %s, want smallest first, one per size", got)
	}
}

func testTimestamps(t *testing.T, s transparency.Store) {
	ctx := context.Background()
	if err := s.SaveTimestamp(ctx, 5, []byte("token-5")); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Timestamp(ctx, 5); err != nil || string(got) != "token-5" {
		t.Errorf("Timestamp(5) = %q, %v", got, err)
	}
	if _, err := s.Timestamp(ctx, 2); !errors.Is(err, transparency.ErrNoCheckpoint) {
		t.Errorf("Timestamp(2) = %v, want ErrNoCheckpoint", err)
	}
	if err := s.SaveTimestamp(ctx, 5, []byte("token-5b")); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Timestamp(ctx, 5); err != nil || string(got) != "token-5b" {
		t.Errorf("Timestamp(5) after a second save = %q, %v", got, err)
	}
}

// testConcurrent appends from several goroutines spread over the handles:
// every leaf lands once, and the stored tree is the tree of the leaves.
func testConcurrent(t *testing.T, handles ...transparency.Store) {
	ctx := context.Background()
	const writers, per = 6, 6
	var wg sync.WaitGroup
	errs := make(chan error, writers*per*2)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			s := handles[w%len(handles)]
			for i := 0; i < per; i++ {
				if _, _, err := s.LogAppend(ctx, leaf(w*per+i)); err != nil {
					errs <- err
				}
				// Every writer also appends one shared leaf: it lands once.
				if _, _, err := s.LogAppend(ctx, []byte("amnesia/test/v1\nshared\n")); err != nil {
					errs <- err
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent append: %v", err)
	}
	want := int64(writers*per + 1)
	for i, s := range handles {
		if n, err := s.LogSize(ctx); err != nil || n != want {
			t.Errorf("handle %d: size %d, %v; want %d", i, n, err, want)
		}
	}
	lg := openLog(t, handles[0])
	if _, err := lg.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if rep, err := lg.Audit(ctx, nil); err != nil || rep.Size != want {
		t.Errorf("audit after concurrent appends = %+v, %v", rep, err)
	}
}

var seed = bytes.Repeat([]byte{7}, ed25519.SeedSize)

func openLog(t *testing.T, s transparency.Store) *transparency.Log {
	t.Helper()
	lg, err := transparency.Open(context.Background(), s, ed25519.NewKeyFromSeed(seed), "")
	if err != nil {
		t.Fatal(err)
	}
	return lg
}

// testLog keeps a transparency.Log in the store: checkpoints, proofs,
// timestamps and the audit work on it as on any other store.
func testLog(t *testing.T, s transparency.Store) {
	ctx := context.Background()
	lg := openLog(t, s)
	add := func(from, to int) {
		for i := from; i < to; i++ {
			l, err := transparency.EventLeaf("erasure-started", fmt.Sprintf("er-%04d", i), fmt.Sprintf("%064x", i))
			if err != nil {
				t.Fatal(err)
			}
			if idx, err := lg.Append(ctx, l); err != nil || idx != int64(i) {
				t.Fatalf("append %d = %d, %v", i, idx, err)
			}
		}
	}
	add(0, 7)
	cp7, err := lg.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	add(7, 20)
	cp20, err := lg.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cp7.Size != 7 || cp20.Size != 20 {
		t.Fatalf("checkpoint sizes %d, %d; want 7, 20", cp7.Size, cp20.Size)
	}
	leaves, err := lg.Leaves(ctx, 0, 20)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int64{0, 6, 13, 19} {
		p, err := lg.InclusionProof(ctx, i, 20)
		if err != nil {
			t.Fatal(err)
		}
		if err := tlog.CheckRecord(p, 20, cp20.Hash, i, tlog.RecordHash(leaves[i])); err != nil {
			t.Errorf("inclusion of leaf %d: %v", i, err)
		}
	}
	tp, err := lg.ConsistencyProof(ctx, 7, 20)
	if err != nil {
		t.Fatal(err)
	}
	if err := tlog.CheckTree(tp, 20, cp20.Hash, 7, cp7.Hash); err != nil {
		t.Errorf("consistency 7 -> 20: %v", err)
	}
	if _, err := lg.Anchor(ctx, 20, []byte("not a real token")); err != nil {
		t.Fatal(err)
	}
	if tok, err := lg.Timestamp(ctx, 20); err != nil || string(tok) != "not a real token" {
		t.Errorf("Timestamp(20) = %q, %v", tok, err)
	}
	rep, err := lg.Audit(ctx, cp7.Raw)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Size != 21 || rep.Checkpoints != 2 || rep.Kinds["amnesia/event/v1"] != 20 || rep.Kinds["amnesia/anchor/v1"] != 1 {
		t.Errorf("audit = size %d, %d checkpoints, kinds %v; want 21, 2, 20 events and 1 anchor", rep.Size, rep.Checkpoints, rep.Kinds)
	}
	// A log reopened on the store keeps its origin and its checkpoints.
	again := openLog(t, s)
	if again.Origin() != lg.Origin() {
		t.Errorf("reopened origin %q, want %q", again.Origin(), lg.Origin())
	}
	if latest, err := again.Latest(ctx); err != nil || latest.Size != 20 {
		t.Errorf("reopened latest checkpoint = %+v, %v", latest, err)
	}
}

// hidden is a Store without its AppendCheckpointer method: what
// Log.AppendCheckpoint does on a store that has none.
type hidden struct{ transparency.Store }

// testAppendCheckpoint: Log.AppendCheckpoint gives each appended leaf its
// index and a checkpoint of the log that holds it, stored in the store and
// reported to OnCheckpoint, as Append then Checkpoint do; a leaf appended
// again keeps its index and gets the checkpoint stored for the log's size.
// The store's one-write path (AppendCheckpointer, when it has one) and the
// two-write path give the same log, the same checkpoints and the same proofs.
func testAppendCheckpoint(t *testing.T, s transparency.Store) {
	ctx := context.Background()
	_, one := s.(transparency.AppendCheckpointer)
	t.Logf("store is an AppendCheckpointer: %v", one)
	for pass, st := range []transparency.Store{s, hidden{s}} {
		lg := openLog(t, st)
		var hooked []int64
		lg.OnCheckpoint(func(_ context.Context, cp *transparency.Signed) error {
			hooked = append(hooked, cp.Size)
			return nil
		})
		base := int64(pass * 5)
		for i := base; i < base+5; i++ {
			l, err := transparency.EventLeaf("erasure-started", fmt.Sprintf("er-%04d", i), fmt.Sprintf("%064x", i))
			if err != nil {
				t.Fatal(err)
			}
			idx, cp, err := lg.AppendCheckpoint(ctx, l)
			if err != nil || idx != i || cp.Size != i+1 {
				t.Fatalf("pass %d: AppendCheckpoint %d = %d, %+v, %v", pass, i, idx, cp, err)
			}
			stored, err := st.Checkpoint(ctx, i+1)
			if err != nil || !bytes.Equal(stored, cp.Raw) {
				t.Fatalf("pass %d: checkpoint %d not stored as returned: %v", pass, i+1, err)
			}
			p, err := lg.InclusionProof(ctx, idx, cp.Size)
			if err != nil {
				t.Fatal(err)
			}
			if err := tlog.CheckRecord(p, cp.Size, cp.Hash, idx, tlog.RecordHash(l)); err != nil {
				t.Errorf("pass %d: leaf %d not proved in its checkpoint: %v", pass, idx, err)
			}
			if len(hooked) != int(i-base+1) || hooked[len(hooked)-1] != i+1 {
				t.Errorf("pass %d: OnCheckpoint saw %v", pass, hooked)
			}
		}
		// Again: the same index, the checkpoint already stored for the size.
		l, _ := transparency.EventLeaf("erasure-started", fmt.Sprintf("er-%04d", base+1), fmt.Sprintf("%064x", base+1))
		before, _ := st.Checkpoint(ctx, base+5)
		idx, cp, err := lg.AppendCheckpoint(ctx, l)
		if err != nil || idx != base+1 || cp.Size != base+5 || !bytes.Equal(cp.Raw, before) {
			t.Fatalf("pass %d: leaf appended again = %d, size %d, %v; want %d, %d and the stored checkpoint", pass, idx, cp.Size, err, base+1, base+5)
		}
		if n, _ := st.LogSize(ctx); n != base+5 {
			t.Errorf("pass %d: log size %d after appending a leaf again, want %d", pass, n, base+5)
		}
	}
	if rep, err := openLog(t, s).Audit(ctx, nil); err != nil || rep.Size != 10 || rep.Checkpoints != 10 {
		t.Errorf("audit = %+v, %v; want 10 leaves, 10 checkpoints", rep, err)
	}
}
