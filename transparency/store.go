package transparency

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"golang.org/x/mod/sumdb/tlog"
)

// StoreReader is what reading the log needs: proofs, leaves, checkpoints
// and the audit. Nothing here writes.
type StoreReader interface {
	// LogSize returns the number of leaves.
	LogSize(ctx context.Context) (int64, error)
	// LogLeaves returns the leaves with index in [from, to); at most
	// MaxLeavesPerRead per call. A leaf missing in the range is
	// ErrLogCorrupt.
	LogLeaves(ctx context.Context, from, to int64) ([][]byte, error)
	// ReadHashes returns the stored hashes at the given storage indexes
	// (tlog.HashReader); a missing one is ErrLogCorrupt.
	ReadHashes(ctx context.Context, indexes []int64) ([]tlog.Hash, error)
	// Checkpoint returns the checkpoint stored for size, or the newest when
	// size < 0; ErrNoCheckpoint if none.
	Checkpoint(ctx context.Context, size int64) ([]byte, error)
	// Checkpoints returns every stored checkpoint, oldest (smallest) first.
	Checkpoints(ctx context.Context) ([][]byte, error)
	// Timestamp returns the token stored for size; ErrNoCheckpoint if none.
	Timestamp(ctx context.Context, size int64) ([]byte, error)
}

// StoreWriter is what appending and checkpointing need.
type StoreWriter interface {
	// LogAppend appends data as the next leaf and returns its index. A leaf
	// equal to one already in the log is not appended again: its index is
	// returned with existed set, so an append retried after a crash lands
	// once. Implementations compute the stored hashes with StoredHashes.
	LogAppend(ctx context.Context, data []byte) (index int64, existed bool, err error)
	// LogOrigin returns the log's origin line, setting it to proposed on
	// first use; it never changes afterwards.
	LogOrigin(ctx context.Context, proposed string) (string, error)
	// SaveCheckpoint stores a signed checkpoint (C2SP signed note) of the
	// tree at size; a later save for the same size replaces it only to add
	// signatures (cosignatures, a timestamp): the caller checks that.
	SaveCheckpoint(ctx context.Context, size int64, note []byte) error
	// UpdateCheckpoint replaces the checkpoint stored for size with what fn
	// returns given the stored one, atomically: no other write to that
	// checkpoint comes between the read and the write, so two witnesses'
	// cosignatures added at once are both kept. ErrNoCheckpoint if none is
	// stored for size; an error from fn leaves the stored one as it was.
	UpdateCheckpoint(ctx context.Context, size int64, fn func(stored []byte) ([]byte, error)) error
	// SaveTimestamp stores an RFC 3161 token obtained over the checkpoint
	// of size (its leaf, AnchorLeaf, is appended by the caller).
	SaveTimestamp(ctx context.Context, size int64, token []byte) error
}

// Store keeps the log: its leaves, the Merkle tree's stored hashes
// (golang.org/x/mod/sumdb/tlog's layout, RFC 6962 hashing) and the
// checkpoints signed over it. The ledger backends (lineage/sqliteledger,
// lineage/pgledger) are stores; every write there is atomic and serialised
// with the ledger's other writes, so processes that share a ledger share one
// log. transparency/storagetest is the conformance suite every Store runs.
type Store interface {
	StoreReader
	StoreWriter
}

// AppendCheckpointer is a Store that can append a leaf and store a
// checkpoint over the log it leaves in one atomic write (one commit, one
// fsync), which Log.AppendCheckpoint uses; a Store without it gets the same
// result from LogAppend, then a second write with SaveCheckpoint.
type AppendCheckpointer interface {
	// LogAppendCheckpoint appends data as LogAppend does and, in the same
	// transaction, with no other writer in between, calls checkpoint with
	// a reader of the log as it is then and its size (leaves). When
	// checkpoint returns save, note is stored for size (as SaveCheckpoint
	// does) in the same transaction; an error from checkpoint writes
	// nothing. It returns the leaf's index and checkpoint's note.
	LogAppendCheckpoint(ctx context.Context, data []byte, checkpoint func(r CheckpointReader, size int64) (note []byte, save bool, err error)) (index int64, note []byte, err error)
}

// CheckpointReader is what signing a checkpoint reads of the log, inside
// an AppendCheckpointer's transaction.
type CheckpointReader interface {
	// Checkpoint returns the checkpoint stored for size, or the newest when
	// size < 0; ErrNoCheckpoint if none.
	Checkpoint(ctx context.Context, size int64) ([]byte, error)
	// ReadHashes returns the stored hashes at the given storage indexes.
	ReadHashes(ctx context.Context, indexes []int64) ([]tlog.Hash, error)
}

// ErrNoCheckpoint: the store holds no checkpoint of that size (or none).
var ErrNoCheckpoint = errors.New("no checkpoint")

// ErrLogCorrupt is returned when the stored log does not hash to itself
// (a stored hash or a leaf is missing or malformed).
var ErrLogCorrupt = errors.New("transparency log corrupt")

// MaxLeavesPerRead is the most leaves a Store must return from one
// LogLeaves call; it may refuse larger ranges.
const MaxLeavesPerRead = 1 << 16

// LeafKey is the hex RFC 6962 record hash of data: the key a Store keeps a
// leaf under, which makes LogAppend idempotent.
func LeafKey(data []byte) string {
	h := tlog.RecordHash(data)
	return hex.EncodeToString(h[:])
}

// StoredHashes computes the hashes a Store keeps for leaf n holding data,
// reading the ones already stored through read. They go at storage indexes
// tlog.StoredHashIndex(0, n) onwards.
func StoredHashes(n int64, data []byte, read func([]int64) ([]tlog.Hash, error)) ([]tlog.Hash, error) {
	hs, err := tlog.StoredHashesForRecordHash(n, tlog.RecordHash(data), tlog.HashReaderFunc(read))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrLogCorrupt, err)
	}
	return hs, nil
}

// HashFromBytes converts a stored hash; anything but 32 bytes is
// ErrLogCorrupt.
func HashFromBytes(b []byte) (tlog.Hash, error) {
	var h tlog.Hash
	if len(b) != sha256.Size {
		return h, fmt.Errorf("%w: stored hash of %d bytes", ErrLogCorrupt, len(b))
	}
	copy(h[:], b)
	return h, nil
}

// HashesInOrder returns the hashes of ids, in the order of ids, from got
// (stored hash bytes by storage index, as a store read them): a missing or
// malformed one is ErrLogCorrupt. The ledger backends' ReadHashes share it.
func HashesInOrder(ids []int64, got map[int64][]byte) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(ids))
	for i, id := range ids {
		b, ok := got[id]
		if !ok {
			return nil, fmt.Errorf("%w: stored hash %d is missing", ErrLogCorrupt, id)
		}
		h, err := HashFromBytes(b)
		if err != nil {
			return nil, err
		}
		out[i] = h
	}
	return out, nil
}
