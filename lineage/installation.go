package lineage

import (
	"context"
	"time"
)

// InstallationMeta is implemented by ledgers (both backends) that keep the
// installation's check values: small, non-secret strings in the ledger's
// meta table, such as the keyed check value of the pepper and the id of the
// current signing key (state.Dir.CheckSecrets). Never a secret in clear.
type InstallationMeta interface {
	// InstallationValue returns the value of key; ok is false when none is
	// recorded.
	InstallationValue(ctx context.Context, key string) (value string, ok bool, err error)
	// RecordInstallationValue records value for key when none is recorded
	// (replace false) and returns the value recorded, which is another one
	// when the key was already set; with replace it overwrites.
	RecordInstallationValue(ctx context.Context, key, value string, replace bool) (string, error)
}

// RoutedQueue is a Queue whose jobs may be bound to one host: the erasures
// of stores that live in files on that host (store owner: in amnesia.yaml).
// Both backends implement it.
type RoutedQueue interface {
	Queue
	// EnqueueFor is Enqueue with the host that must run the erasure ("" for
	// any host). Idempotent per trace id like Enqueue.
	EnqueueFor(ctx context.Context, traceID, subjectKeyHex, scope, reason, owner string) error
	// ClaimOn is Claim for a worker on host: it claims only jobs bound to
	// host or to no host.
	ClaimOn(ctx context.Context, worker, host string, lease time.Duration) (*Job, error)
}
