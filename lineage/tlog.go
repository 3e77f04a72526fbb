package lineage

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/amnesia-dev/amnesia/transparency"
)

// ErrLogCorrupt is returned when the stored log does not hash to itself.
var ErrLogCorrupt = errors.New("transparency log corrupt")

// ErrNoCheckpoint: no checkpoint is stored for that size (or none at all).
var ErrNoCheckpoint = transparency.ErrNoCheckpoint

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
