package transparency

import (
	"context"
	"errors"

	"golang.org/x/mod/sumdb/tlog"
)

// Store keeps the log: its leaves, the Merkle tree's stored hashes
// (golang.org/x/mod/sumdb/tlog's layout, RFC 6962 hashing) and the
// checkpoints signed over it. The ledger (lineage.SQLite, lineage.Postgres)
// is one; every write there is atomic and serialised with the ledger's other
// writes, so processes that share a ledger share one log.
type Store interface {
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
	// SaveTimestamp stores an RFC 3161 token obtained over the checkpoint
	// of size (its leaf, AnchorLeaf, is appended by the caller).
	SaveTimestamp(ctx context.Context, size int64, token []byte) error
	// Timestamp returns the token stored for size; ErrNoCheckpoint if none.
	Timestamp(ctx context.Context, size int64) ([]byte, error)
}

// ErrNoCheckpoint: the store holds no checkpoint of that size (or none).
var ErrNoCheckpoint = errors.New("no checkpoint")
