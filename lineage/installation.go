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

// InstallationUpdater is implemented by ledgers shared by several hosts
// (PostgreSQL) that can change installation values together under one
// lock: UpdateInstallationValues reads the current values of keys (absent
// keys are missing from cur), calls fn, and records the values fn returns,
// in one transaction that holds the installation lock from the read to the
// commit. Two updates never interleave: the second one's fn sees the first
// one's values. An error from fn records nothing and is returned.
type InstallationUpdater interface {
	UpdateInstallationValues(ctx context.Context, keys []string, fn func(cur map[string]string) (map[string]string, error)) error
}
