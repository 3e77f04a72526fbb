package lineage

import (
	"context"
	"sort"
)

// ErasedArtifact is an artifact that one erasure marked, with the outcome
// the erasure recorded for it.
type ErasedArtifact struct {
	Artifact
	Outcome string
}

// ErasureReader is implemented by ledgers that can list the artifacts one
// erasure marked (both backends do). Re-verification reads it:
// the ledger is append-only, so an erased artifact keeps its scope, store
// and key, and an erasure can be probed again by id with nothing kept
// beyond the ledger.
type ErasureReader interface {
	// ErasedBy returns the artifacts the erasure marked (MarkErased),
	// sorted by store then key, without their parents. None is not an error.
	ErasedBy(ctx context.Context, erasure string) ([]ErasedArtifact, error)
}

// SortErased orders by store then key, bytewise (as traces do), whatever
// the database's collation: what ErasedBy returns.
func SortErased(as []ErasedArtifact) {
	sort.Slice(as, func(i, j int) bool {
		if as[i].Store != as[j].Store {
			return as[i].Store < as[j].Store
		}
		return as[i].Key < as[j].Key
	})
}
