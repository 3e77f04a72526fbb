package lineage

import (
	"context"

	"github.com/amnesia-dev/amnesia/shred"
)

// KeyKeeper is implemented by ledgers that keep subjects' wrapped data keys
// for crypto-shredding (both backends do): the shred.KeyStore, and which
// artifacts were written with their content sealed.
type KeyKeeper interface {
	shred.KeyStore
	// MarkSealed records that the artifacts' content fields were written
	// sealed with their subject's data key. Idempotent.
	MarkSealed(ctx context.Context, artifacts []string) error
	// Sealed returns which of ids were marked sealed.
	Sealed(ctx context.Context, ids []string) (map[string]bool, error)
}

// DataKeyEvent is the body of the "datakey" and "datakey-destroyed" events:
// the scope, the subject's keyed digest and, when destroyed, the erasure.
// Never the key.
type DataKeyEvent struct {
	Scope   string `json:"scope"`
	Subject string `json:"subject"`
	Erasure string `json:"erasure,omitempty"`
}

// SealedEvent is the body of a "sealed" event.
type SealedEvent struct {
	Artifacts []string `json:"artifacts"`
}
