package lineage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"golang.org/x/mod/sumdb/tlog"
)

// LogStore keeps the transparency log (package transparency) in the ledger:
// its leaves, the Merkle tree's stored hashes (golang.org/x/mod/sumdb/tlog's
// layout, RFC 6962 hashing) and the checkpoints signed over it. Leaves are
// short texts that hold ids and digests, never personal data. Both [SQLite]
// and [Postgres] implement it; every write is atomic and serialised with the
// ledger's other writes, so processes that share a ledger share one log.
type LogStore interface {
	// LogAppend appends data as the next leaf and returns its index. A leaf
	// equal to one already in the log is not appended again: its index is
	// returned with existed set, so an append retried after a crash lands
	// once.
	LogAppend(ctx context.Context, data []byte) (index int64, existed bool, err error)
	// LogSize returns the number of leaves.
	LogSize(ctx context.Context) (int64, error)
	// LogLeaves returns the leaves with index in [from, to).
	LogLeaves(ctx context.Context, from, to int64) ([][]byte, error)
	// ReadHashes returns the stored hashes at the given storage indexes
	// (tlog.HashReader).
	ReadHashes(ctx context.Context, indexes []int64) ([]tlog.Hash, error)
	// LogOrigin returns the log's origin line, setting it to proposed on
	// first use; it never changes afterwards.
	LogOrigin(ctx context.Context, proposed string) (string, error)
	// SaveCheckpoint stores a signed checkpoint (C2SP signed note) of the
	// tree at size; a later save for the same size replaces it only to add
	// signatures (cosignatures, a timestamp): the caller checks that.
	SaveCheckpoint(ctx context.Context, size int64, note []byte) error
	// Checkpoint returns the checkpoint stored for size, or the newest when
	// size < 0; ErrNoCheckpoint if none.
	Checkpoint(ctx context.Context, size int64) ([]byte, error)
	// Checkpoints returns every stored checkpoint, oldest first.
	Checkpoints(ctx context.Context) ([][]byte, error)
}

// ErrLogCorrupt is returned when the stored log does not hash to itself.
var ErrLogCorrupt = errors.New("transparency log corrupt")

// ErrNoCheckpoint: no checkpoint is stored for that size (or none at all).
var ErrNoCheckpoint = errors.New("no checkpoint")

// LeafHash is the hex RFC 6962 leaf hash of data, the key that makes
// LogAppend idempotent.
func leafKey(data []byte) string {
	h := tlog.RecordHash(data)
	return hex.EncodeToString(h[:])
}

// storedHashes computes the hashes to store for leaf n of data, reading the
// existing ones through read.
func storedHashes(n int64, data []byte, read func([]int64) ([]tlog.Hash, error)) ([]tlog.Hash, error) {
	hs, err := tlog.StoredHashesForRecordHash(n, tlog.RecordHash(data), tlog.HashReaderFunc(read))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrLogCorrupt, err)
	}
	return hs, nil
}

func toHash(b []byte) (tlog.Hash, error) {
	var h tlog.Hash
	if len(b) != sha256.Size {
		return h, fmt.Errorf("%w: stored hash of %d bytes", ErrLogCorrupt, len(b))
	}
	copy(h[:], b)
	return h, nil
}

const maxLogRead = 1 << 16 // leaves per LogLeaves call
