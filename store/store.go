// Package store defines the contract between amnesia and the stores that hold
// personal data, and the shared machinery (needles, byte scans) that adapters
// use to prove a record is gone.
//
// # Contract
//
// An adapter implements [Store]: identify itself, delete records by key, and
// answer a logical probe. What it can do beyond that it declares through
// optional one-method capability interfaces ([EvidenceReader], [Reclaimer],
// [PhysicalProber], [ResidueMeter]) and through [Info.Capabilities]. amnesia never claims a
// verification level that the adapter's capabilities cannot back.
//
// Every method takes a context, honours its cancellation, and MUST be safe to
// call again after a crash: Delete of a key that is already gone returns nil;
// Reclaim on a clean store does nothing harmful.
//
// Evidence returned by [EvidenceReader] is personal data (text windows, vector
// bytes, filter values). Callers hold it in memory, or sealed with a one-time
// key for the duration of one erasure; adapters never log it and error
// messages never include it.
package store

import (
	"context"
	"errors"
	"time"
)

// Capability names one thing an adapter can do.
type Capability string

const (
	// CapDelete: Delete removes records by key.
	CapDelete Capability = "delete"
	// CapProbeByID: the logical probe looks the record up by its key.
	CapProbeByID Capability = "probe-by-id"
	// CapProbeByFilter: the logical probe searches by the record's metadata.
	CapProbeByFilter Capability = "probe-by-filter"
	// CapProbeBySimilarity: the logical probe runs a nearest-neighbour search
	// with the record's own vector.
	CapProbeBySimilarity Capability = "probe-by-similarity"
	// CapReclaim: the adapter can force the store to physically reclaim the
	// bytes of deleted records.
	CapReclaim Capability = "reclaim"
	// CapProbePhysical: the adapter can scan the store's files for needles.
	CapProbePhysical Capability = "probe-physical"
)

// Info describes an adapter instance.
type Info struct {
	Name         string       // the configured store name, e.g. "docs"
	Type         string       // the adapter type, e.g. "sqlite-doc"
	Capabilities []Capability // what it can do, in the order above
}

// Has reports whether the adapter declares c.
func (i Info) Has(c Capability) bool {
	for _, x := range i.Capabilities {
		if x == c {
			return true
		}
	}
	return false
}

// ErrUnavailable wraps errors that mean the store could not be reached or
// opened. The saga records such a store as failed and goes on with the others.
var ErrUnavailable = errors.New("store unavailable")

// Store is the core adapter interface.
type Store interface {
	// Info describes the adapter. It MUST NOT do I/O.
	Info() Info

	// Delete removes the records with the given keys and every derived row
	// the store keeps for them (index entries, auxiliary tables). It MUST be
	// idempotent: keys that do not exist are not an error.
	Delete(ctx context.Context, keys []string) error

	// ProbeLogical reports, for each key, whether any query path the adapter
	// knows still returns the record. ev holds the evidence read before
	// deletion (it may lack entries: then only the by-id probe runs).
	ProbeLogical(ctx context.Context, keys []string, ev map[string]*Evidence) ([]LogicalResult, error)

	// Close releases the adapter's resources.
	Close() error
}

// EvidenceReader is implemented by adapters that can read, before deletion,
// what a record looks like in the store: the needles a byte scan must look
// for, the metadata it can be found by, and its vector.
type EvidenceReader interface {
	// ReadEvidence returns evidence for each key that exists. Keys that do
	// not exist are absent from the map.
	ReadEvidence(ctx context.Context, keys []string) (map[string]*Evidence, error)
}

// Reclaimer is implemented by adapters that can force physical reclamation.
type Reclaimer interface {
	// Reclaim makes the store rewrite or scrub the space that deleted
	// records occupied. It MUST be idempotent. An adapter configured not to
	// reclaim (it does not declare CapReclaim) does no physical work and
	// reports its residue state, e.g. PENDING-reclaim-deferred.
	Reclaim(ctx context.Context) (ReclaimReport, error)
}

// PhysicalProber is implemented by adapters that can scan the store's own
// files for needles.
type PhysicalProber interface {
	// ProbePhysical scans every file in which the store keeps record bytes
	// and reports which needles were found.
	ProbePhysical(ctx context.Context, set *NeedleSet) (ScanReport, error)
}

// ResidueMeter is implemented by adapters that can say, at any later time
// and without needles, what is measurable about the store's residue: dead
// tuples and what holds them back, when the store's files were last
// written. Re-verification (amnesia reverify) calls it. It MUST NOT change
// the store and MUST NOT report record content.
type ResidueMeter interface {
	// MeasureResidue measures the store now; since is the time the
	// certificate being re-verified was issued.
	MeasureResidue(ctx context.Context, since time.Time) (ResidueReport, error)
}

// ResidueReport is what MeasureResidue found.
type ResidueReport struct {
	// State, when set, is a residue state in the vocabulary of
	// ReclaimReport.State (e.g. "UNVERIFIED-dead-tuples-remain"); empty
	// means the adapter has nothing to add.
	State string `json:"state,omitempty"`
	// Evidence says what was measured, in one line of counts and times.
	Evidence string `json:"evidence,omitempty"`
}

// Evidence is what one record looked like just before deletion.
// It is personal data: never persist it in clear, never log it.
type Evidence struct {
	Key     string            `json:"key"`
	Needles [][]byte          `json:"needles,omitempty"` // byte strings whose presence means the record survives
	Shared  int               `json:"shared,omitempty"`  // windows skipped because other live records hold the same bytes
	Filter  map[string]string `json:"filter,omitempty"`  // metadata the record can be found by
	Vector  []float32         `json:"vector,omitempty"`  // the record's own vector, for the similarity probe
	// SharedWith names, by store key, the other live records that hold
	// some of the Shared windows, with how many of them each holds: at most
	// MaxSharedWith records, those holding the most first; SharedWithMore
	// counts the holders left out. Keys and counts only, never content.
	SharedWith     map[string]int `json:"shared_with,omitempty"`
	SharedWithMore int            `json:"shared_with_more,omitempty"`
	// RecordBytes is the size of the fields the needles were cut from (the
	// text, the vector's stored encoding); CoveredBytes how many of those
	// bytes lie in a window (see Tile). Less than RecordBytes means part of
	// the record was not searched for. Adapters fill them with AddWindows;
	// without them amnesia does not claim the physical level.
	RecordBytes  int `json:"record_bytes,omitempty"`
	CoveredBytes int `json:"covered_bytes,omitempty"`
}

// LogicalResult is the outcome of a logical probe for one key. A true field
// means the record WAS returned by that query path.
type LogicalResult struct {
	Key          string   `json:"key"`
	ByID         bool     `json:"by_id"`
	ByFilter     bool     `json:"by_filter"`
	BySimilarity bool     `json:"by_similarity"`
	Methods      []string `json:"methods"` // the query paths that ran, e.g. "by-id", "by-filter:subject", "by-similarity:k=10"
}

// Found reports whether any query path returned the record.
func (r LogicalResult) Found() bool { return r.ByID || r.ByFilter || r.BySimilarity }

// ReclaimReport says what a reclaim did.
type ReclaimReport struct {
	Method string   `json:"method"` // a one-line description, e.g. "secure_delete=ON; VACUUM; wal_checkpoint(TRUNCATE)"
	Steps  []string `json:"steps"`
	// State, when set, is the adapter's own residue verdict for the store,
	// for what a byte scan cannot see on its own: "PENDING-lock-timeout",
	// "PENDING-<pin>" (what pins dead tuples), "UNVERIFIED-managed",
	// "UNVERIFIED-index-not-rebuilt", "UNVERIFIED-dead-tuples-remain".
	// Empty means the adapter has nothing to add. Evidence says what backs it.
	State    string `json:"state,omitempty"`
	Evidence string `json:"evidence,omitempty"`
}
