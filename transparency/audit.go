package transparency

import (
	"context"
	"fmt"

	"golang.org/x/mod/sumdb/tlog"
)

// Report is what Audit found.
type Report struct {
	Size        int64          // leaves
	Root        tlog.Hash      // tree hash recomputed from the leaves
	Kinds       map[string]int // leaves per kind line
	Checkpoints int            // stored checkpoints checked
	Since       *Checkpoint    // the saved checkpoint proven consistent, if any
}

// Audit recomputes the whole log from its leaves, without trusting the
// stored tree: every stored hash must be the one the leaves give, every
// stored checkpoint must be signed by a log key (the current one or one
// given to Open as earlier) and name the recomputed root of its size. With since (a signed checkpoint saved earlier by the
// auditor) it also proves that the log still extends that checkpoint, which
// catches a truncated or rewritten log whatever the operator stored.
func (l *Log) Audit(ctx context.Context, since []byte) (*Report, error) {
	var saved *Signed
	if since != nil {
		s, err := OpenCheckpoint(since, l.verifiers...)
		if err != nil {
			return nil, fmt.Errorf("saved checkpoint: %w", err)
		}
		saved = s
	}
	// The stored checkpoints first, then the size: the log only grows, so
	// every checkpoint read is of at most n leaves unless leaves were
	// dropped, even while other processes append and sign.
	cps, err := l.store.Checkpoints(ctx)
	if err != nil {
		return nil, err
	}
	n, err := l.store.LogSize(ctx)
	if err != nil {
		return nil, err
	}
	// Rebuild the stored hashes in memory from the leaves.
	mem := make([]tlog.Hash, 0, tlog.StoredHashCount(n))
	memReader := tlog.HashReaderFunc(func(ids []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(ids))
		for i, id := range ids {
			if id < 0 || id >= int64(len(mem)) {
				return nil, fmt.Errorf("hash %d not yet computed", id)
			}
			out[i] = mem[id]
		}
		return out, nil
	})
	rep := &Report{Size: n, Kinds: map[string]int{}}
	roots := map[int64]tlog.Hash{}
	for from := int64(0); from < n; {
		to := min(n, from+4096)
		leaves, err := l.store.LogLeaves(ctx, from, to)
		if err != nil {
			return nil, err
		}
		for j, leaf := range leaves {
			i := from + int64(j)
			hs, err := tlog.StoredHashes(i, leaf, memReader)
			if err != nil {
				return nil, err
			}
			mem = append(mem, hs...)
			rep.Kinds[LeafKind(leaf)]++
		}
		from = to
	}
	// Compare with what is stored, in chunks.
	for from := int64(0); from < int64(len(mem)); {
		to := min(int64(len(mem)), from+4096)
		ids := make([]int64, 0, to-from)
		for id := from; id < to; id++ {
			ids = append(ids, id)
		}
		stored, err := l.store.ReadHashes(ctx, ids)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrProof, err)
		}
		for k, h := range stored {
			if h != mem[ids[k]] {
				level, idx := tlog.SplitStoredHashIndex(ids[k])
				return nil, fmt.Errorf("audit: %w: stored hash of level %d node %d is not what the leaves give (a leaf was edited or the tree rewritten)", ErrProof, level, idx)
			}
		}
		from = to
	}
	root, err := tlog.TreeHash(n, memReader)
	if err != nil {
		return nil, err
	}
	rep.Root = root
	rootAt := func(size int64) (tlog.Hash, error) {
		if h, ok := roots[size]; ok {
			return h, nil
		}
		h, err := tlog.TreeHash(size, memReader)
		roots[size] = h
		return h, err
	}
	for _, raw := range cps {
		s, err := OpenCheckpoint(raw, l.verifiers...)
		if err != nil {
			return nil, fmt.Errorf("audit: stored checkpoint: %w", err)
		}
		if s.Size > n {
			return nil, fmt.Errorf("audit: %w: a stored checkpoint has %d leaves, the log %d (leaves were dropped)", ErrProof, s.Size, n)
		}
		h, err := rootAt(s.Size)
		if err != nil {
			return nil, err
		}
		if h != s.Hash {
			return nil, fmt.Errorf("audit: %w: the stored checkpoint of size %d does not match the leaves", ErrProof, s.Size)
		}
		rep.Checkpoints++
	}
	if saved != nil {
		if saved.Origin != l.origin {
			return nil, fmt.Errorf("audit: %w: the saved checkpoint is of log %q, this log is %q", ErrProof, saved.Origin, l.origin)
		}
		if saved.Size > n {
			return nil, fmt.Errorf("audit: %w: the saved checkpoint has %d leaves, the log now %d: the log was truncated", ErrProof, saved.Size, n)
		}
		h, err := rootAt(saved.Size)
		if err != nil {
			return nil, err
		}
		if h != saved.Hash {
			return nil, fmt.Errorf("audit: %w: the log's first %d leaves no longer hash to the saved checkpoint: the log was rewritten", ErrProof, saved.Size)
		}
		// The proof a third party would check, from the stored tree.
		proof, err := l.ConsistencyProof(ctx, saved.Size, n)
		if err != nil {
			return nil, err
		}
		if err := VerifyConsistency(saved.Checkpoint, Checkpoint{Origin: l.origin, Size: n, Hash: root}, proof); err != nil {
			return nil, fmt.Errorf("audit: %w", err)
		}
		rep.Since = &saved.Checkpoint
	}
	return rep, nil
}
