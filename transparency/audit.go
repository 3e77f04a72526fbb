package transparency

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/tlog"
)

// Report is what Audit found.
type Report struct {
	Size        int64          // leaves
	Root        tlog.Hash      // tree hash recomputed from the leaves
	Kinds       map[string]int // leaves per kind line
	Checkpoints int            // stored checkpoints checked
	Timestamps  int            // stored RFC 3161 tokens matched to their anchor leaves
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
	// anchors: the token digest each anchor leaf names, by checkpoint size.
	anchors := map[int64][]string{}
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
			if size, digest, ok := parseAnchorLeaf(leaf); ok {
				anchors[size] = append(anchors[size], digest)
			}
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
	sizes := map[int64]bool{}
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
		// The row's size is the note's: one checkpoint per size, found under
		// its own size (what prove and verify look it up by).
		if sizes[s.Size] {
			return nil, fmt.Errorf("audit: %w: two stored checkpoints are of %d leaves (a checkpoint row was relabelled)", ErrProof, s.Size)
		}
		sizes[s.Size] = true
		if byLookup, err := l.store.Checkpoint(ctx, s.Size); err != nil || !bytes.Equal(byLookup, raw) {
			return nil, fmt.Errorf("audit: %w: the checkpoint of %d leaves is not stored under its size (a checkpoint row was relabelled)", ErrProof, s.Size)
		}
		rep.Checkpoints++
	}
	// RFC 3161 tokens: each anchor leaf names the digest of the token
	// stored for its checkpoint, and each checkpoint with a stored token
	// has its anchor leaf. The token's signature is checked by verify (with
	// the TSA's root), not here.
	for size := range sizes {
		tok, err := l.store.Timestamp(ctx, size)
		if errors.Is(err, ErrNoCheckpoint) {
			if len(anchors[size]) > 0 {
				return nil, fmt.Errorf("audit: %w: an anchor leaf names a timestamp of the checkpoint of %d leaves, and none is stored", ErrProof, size)
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(tok)
		if !slices.Contains(anchors[size], hex.EncodeToString(sum[:])) {
			return nil, fmt.Errorf("audit: %w: the timestamp stored for the checkpoint of %d leaves is not the one an anchor leaf names, or no anchor leaf names one (a token replaced, or an anchoring interrupted before its leaf was appended: amnesia anchor appends a new one)", ErrProof, size)
		}
		rep.Timestamps++
	}
	for size := range anchors {
		if !sizes[size] {
			return nil, fmt.Errorf("audit: %w: an anchor leaf names the checkpoint of %d leaves, which is not stored", ErrProof, size)
		}
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

// parseAnchorLeaf reads an anchor leaf (AnchorLeaf): the checkpoint size and
// the token's SHA-256, hex. ok is false for any other leaf.
func parseAnchorLeaf(leaf []byte) (size int64, digest string, ok bool) {
	f := strings.Split(strings.TrimSuffix(string(leaf), "\n"), "\n")
	if len(f) != 3 || f[0] != anchorLeafV1 {
		return 0, "", false
	}
	size, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil || size < 0 || len(f[2]) != 64 {
		return 0, "", false
	}
	return size, f[2], true
}
