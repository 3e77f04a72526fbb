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
// An adapter also registers a readiness check ([RegisterCheck], [CheckFunc]):
// a read-only look at the configured store (file or server reachable, table
// and columns present, dimensions as configured, privileges held) that
// amnesia runs before an erasure changes anything.
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

// ErrBusy wraps errors that mean another process holds the store (a reader
// or writer keeps a SQLite WAL busy, a lock is held) so that the operation
// could not finish now but can later. A reclaim that fails with it pauses
// the erasure instead of failing the store.
var ErrBusy = errors.New("store busy")

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
	// UnsearchableBytes are the bytes of RecordBytes in fields the store
	// keeps in a form the byte scan cannot match (AddUnsearchable): not
	// covered, whatever their needles.
	UnsearchableBytes int `json:"unsearchable_bytes,omitempty"`
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
	// Unseen says that State names bytes of the deleted records that the
	// byte scan cannot see (a full-text index's tokens, compressed vector
	// codes): no record of the store is then claimed at the physical
	// level, whatever the scan found.
	Unseen bool `json:"unseen,omitempty"`
}

// Identifier is implemented by adapters that can name the store they
// reach without personal data: a file by its device and inode, a
// PostgreSQL table by the cluster's system identifier and the database's
// and table's oids. The saga journals the identity with the evidence and
// stops the store at reclaim when the store it reaches then is another one
// (a resumed erasure run on another host, or after the configured path or
// server changed): the scan's power was measured in the first, the
// records' absence would be measured in the second.
type Identifier interface {
	Identity(ctx context.Context) (string, error)
}

// ReclaimWatcher is implemented by adapters whose Reclaim waits until the
// store's own compaction has removed the deleted records' bytes (Weaviate
// has no compaction API). The saga hands it the deleted records' evidence
// before each reclaim: a resumed erasure's store, in another process, did
// not read it, and would otherwise have nothing to wait for.
type ReclaimWatcher interface {
	WatchDeleted(ev map[string]*Evidence)
}

// DeleteMarker is implemented by adapters whose Reclaim needs something
// their Delete learnt: PostgreSQL's, the deleting transaction's id, which
// tells the transactions that pin the deleted rows from those that began
// after the delete. The saga journals the mark with the delete step and
// hands it back before a reclaim that runs in another process (a resumed
// erasure), whose adapter did not see the delete. A mark holds no
// personal data; "" means none.
type DeleteMarker interface {
	DeleteMark() string
	SetDeleteMark(mark string) error
}

// OrphanProber is implemented by adapters that can look for the bytes of
// records that were already deleted when the erasure began (an application
// deleted them itself) but that the store may still keep where no query
// reaches them: an invalidated slot of a vector chunk, a dead tuple. Such a
// record yields no evidence (there is nothing left to read by key), so the
// byte scan has nothing to look for; the ledger still holds the keyed
// digest of its content, and an orphan probe compares it with the digest
// of each unreachable record it can read.
type OrphanProber interface {
	// ProbeOrphans reads the store's unreachable records and reports which
	// keys of want have one whose content digests, with digest, to
	// want[key] (the ledger's content digest, computed over the same bytes
	// capture digested). It MUST NOT change the store. Report.Measured is
	// false, with Report.Method saying why, when the adapter could not
	// look (an extension or a privilege is missing).
	ProbeOrphans(ctx context.Context, digest func([]byte) string, want map[string]string) (OrphanReport, error)
}

// OrphanReport is what ProbeOrphans found.
type OrphanReport struct {
	// Measured is true when the unreachable records were read and compared.
	Measured bool `json:"measured"`
	// Method says what was compared, or why nothing could be, in one line
	// without content.
	Method string `json:"method"`
	// Scanned counts the unreachable records compared.
	Scanned int `json:"scanned"`
	// Found holds, for each key whose digest matched, evidence built from
	// the matched bytes (needles for a later byte scan). It is personal
	// data, like any Evidence.
	Found map[string]*Evidence `json:"-"`
}

// Severity says how much a [Problem] found by a check matters.
type Severity string

const (
	// SeverityError: the store is not ready; an erasure would fail on it
	// (it cannot be reached or opened, the table or columns are missing,
	// the dimensions differ, the role may not delete). amnesia refuses to
	// start an erasure that touches it unless the operator allows a partial
	// erasure.
	SeverityError Severity = "error"
	// SeverityWarning: the erasure can run, but less can be verified or
	// reclaimed than the adapter could otherwise do (e.g. a missing grant
	// for the physical probe). The certificate says so; nothing is refused.
	SeverityWarning Severity = "warning"
)

// Problem is one thing a [CheckFunc] found wrong with a configured store.
type Problem struct {
	Severity Severity `json:"severity"`
	// Key is the configuration key the problem is about ("path", "dsn",
	// "table", "dimensions", "data_dir", ...), or "" when it is about the
	// store as a whole (a missing privilege).
	Key string `json:"key,omitempty"`
	// Message says what is wrong and what to do, in one line. It names
	// files, hosts, ports, databases, tables, columns and roles; never a
	// password, a record, a key or a vector.
	Message string `json:"message"`
}

func (p Problem) String() string {
	if p.Key == "" {
		return p.Message
	}
	return p.Key + ": " + p.Message
}

// Errors returns the problems of severity error.
func Errors(ps []Problem) []Problem {
	var out []Problem
	for _, p := range ps {
		if p.Severity == SeverityError {
			out = append(out, p)
		}
	}
	return out
}

// CheckFunc is an adapter's readiness check (`amnesia check`, and the
// preflight of forget, erase and worker): can an erasure run on the store
// configured by c, and what can it verify there? c's paths are already
// resolved.
//
// A CheckFunc MUST be read-only: it never creates a file, table, extension
// or index, never writes or deletes a row, and never takes a lock beyond
// what a catalog read takes (it does not go through the adapter's Opener,
// which may create what is missing). It MUST NOT read records: it looks at
// files, catalogs, column types and privileges only, so no personal data
// can reach its result. Its messages MUST NOT contain a password: name a
// server by host:port and database. It honours ctx and returns nil when it
// found nothing wrong.
type CheckFunc func(ctx context.Context, c Config) []Problem
