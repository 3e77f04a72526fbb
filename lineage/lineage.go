// Package lineage is amnesia's ledger: an append-only record of where each
// subject's data went.
//
// Nodes are artifacts (a source document, a chunk, an embedding, a cache
// entry, a training row, a log line) identified by scope, store and key, and
// owned by one subject. Edges say "derived from". Mentions of a third party
// inside an artifact are kept apart: they are never erased automatically.
// Erasure markers and suppression markers are appended, never overwritten.
//
// The ledger never holds personal data in clear: subjects appear as keyed
// digests (package subject), content as keyed digests. Store keys are kept as
// given, because amnesia needs them to delete; applications MUST NOT use
// personal data as store keys. Capture refuses keys and parent keys that hold
// the subject's (or a mentioned person's) id as written, in any case,
// normalised, percent-encoded, base64, hex or as a phone id's digits; that
// is a guard against mistakes, not a proof: other encodings and other
// identifiers are not recognised (docs/design.md). The ledger itself checks
// nothing about keys.
//
// [Trace] is a pure function of a [View]: the same ledger state gives the same
// trace, byte for byte.
//
// This package holds the model, the interfaces and the trace; it links no
// database driver. The backends are packages of their own, side by side like
// the store adapters: lineage/sqliteledger (a file, the default; cgo SQLite)
// and lineage/pgledger (PostgreSQL, shared by several amnesia processes).
// Each registers itself ([RegisterBackend]) when imported, and [Open] picks
// one from a spec, so a program links only the backends it imports:
//
//	import _ "github.com/amnesia-dev/amnesia/lineage/sqliteledger"
//
// Both compute the same hash chain ([EventHash]), and both pass the
// conformance suite in ledgertest and transparency/storagetest.
//
// # Queued erasures
//
// Both also implement [Queue], the erasure work queue of `amnesia worker`.
// An erasure's journal, its sealed evidence and its certificate live in the
// state directory of the process that runs it, so work sharing has two rules,
// and amnesia relies on both:
//
//   - A claim is exclusive for the whole run: the worker renews its lease
//     while the erasure runs and stops the erasure when the lease is lost, so
//     no two processes ever write one journal.
//   - Workers share one state directory (traces, journals, certificates,
//     pepper and signing key). A worker that crashed leaves a half-done
//     journal; when its lease runs out another worker claims the job and
//     resumes that journal to the same certificate. With separate state
//     directories it could not: a fresh run would find the records already
//     deleted (its evidence gone, its proof weaker), or, after the crashed
//     run's decide step marked them erased, be refused as stale and never
//     issue the certificate.
package lineage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/amnesia-dev/amnesia/subject"
)

// Kind is the kind of an artifact.
type Kind string

// Artifact kinds.
const (
	KindSource    Kind = "source"
	KindChunk     Kind = "chunk"
	KindEmbedding Kind = "embedding"
	KindCache     Kind = "cache"
	KindTrain     Kind = "train"
	KindLog       Kind = "log"
)

// Valid reports whether k is a known kind.
func (k Kind) Valid() bool {
	switch k {
	case KindSource, KindChunk, KindEmbedding, KindCache, KindTrain, KindLog:
		return true
	}
	return false
}

// Errors.
var (
	// ErrNoLineage: the ledger holds nothing for the subject in the scope.
	ErrNoLineage = errors.New("no lineage recorded for this subject")
	// ErrAlreadyErased: every artifact of the subject was already erased.
	ErrAlreadyErased = errors.New("every recorded artifact of this subject is already erased")
	// ErrErased: a write targets an artifact that was erased (no resurrection).
	ErrErased = errors.New("artifact was erased; re-ingest is refused")
	// ErrOwnerConflict: an artifact is recorded again under another subject.
	ErrOwnerConflict = errors.New("artifact is already recorded under another subject")
	// ErrNotFound: no artifact at that location.
	ErrNotFound = errors.New("artifact not found")
	// ErrNoLedger: OpenExisting found no ledger (the SQLite file is missing
	// or empty, or the PostgreSQL schema holds no amnesia tables).
	ErrNoLedger = errors.New("no ledger")
)

// Artifact is one node of the lineage graph.
type Artifact struct {
	ID      string      // derived: see ArtifactID
	Scope   string      // tenant
	Subject subject.Key // owner
	Kind    Kind
	Store   string   // configured store name
	Key     string   // the record's key in that store
	Digest  string   // keyed digest of the content, hex; never the content
	Parents []string // ids of the artifacts this one was derived from
}

// Mention says that an artifact holds data about another subject.
type Mention struct {
	Artifact string
	Subject  subject.Key
}

// ErasureMark records the outcome an erasure reached for one artifact.
type ErasureMark struct {
	Artifact string
	Erasure  string
	Outcome  string // a certificate outcome, e.g. "VERIFIED"
}

// Ledger is the lineage store. Implementations MUST make every method
// atomic, MUST be safe for concurrent use, and MUST never update or delete an
// appended event.
type Ledger interface {
	// Record appends an artifact and its edges. Recording an identical
	// artifact again is a no-op; a changed digest appends a new version.
	// It returns ErrErased for an erased artifact and ErrOwnerConflict when
	// the location is owned by another subject.
	Record(ctx context.Context, a Artifact) error
	// Mention appends a third-party mention.
	Mention(ctx context.Context, m Mention) error
	// Lookup finds the artifact at a location; ErrNotFound if none.
	Lookup(ctx context.Context, scope, store, key string) (*Artifact, error)
	// Suppress marks artifacts as suppressed by an erasure: every read path
	// through capture hides them from then on. Idempotent.
	Suppress(ctx context.Context, erasure string, artifacts []string) error
	// Suppressed reports whether the artifact is suppressed or erased.
	Suppressed(ctx context.Context, artifact string) (bool, error)
	// MarkErased appends erasure outcomes. Idempotent per (artifact, erasure).
	MarkErased(ctx context.Context, marks []ErasureMark) error
	// View returns the part of the graph a trace of the subject needs.
	// Every change to what a view holds (artifacts, edges, mentions,
	// erasure outcomes) appends an event in the same transaction, and a
	// backend that reads the head sets View.HeadSeq and HeadHash in the
	// view's snapshot: CheckFresh takes an unchanged head as an unchanged
	// view.
	View(ctx context.Context, scope string, s subject.Key) (*View, error)
	// Head returns the number of events and the hash chain head.
	Head(ctx context.Context) (seq int64, hash string, err error)
	// Close releases the ledger.
	Close() error
}

// View is a consistent snapshot of what a trace reads: the subject's own
// artifacts and their descendants, the artifacts that mention the subject and
// their descendants, and the erasure marks of all of them.
type View struct {
	Scope     string
	Subject   subject.Key
	Artifacts map[string]*Artifact // by id
	Owned     []string             // ids of artifacts owned by the subject
	Mentions  []string             // ids of artifacts that mention the subject
	Children  map[string][]string  // parent id -> child ids, within the view
	Erased    map[string]string    // artifact id -> outcome of its latest erasure
	ErasedBy  map[string]string    // artifact id -> id of its latest erasure
	// HeadSeq and HeadHash are the ledger's event chain head (Ledger.Head)
	// read in the same snapshot as the rest, before it (0 and "" when the
	// backend does not read it): every change to what a view holds appends
	// an event, so a ledger whose head is still this one gives this view.
	HeadSeq  int64
	HeadHash string
}

// Event is one entry of the ledger's hash chain.
type Event struct {
	Seq  int64
	Kind string
	Body string // JSON: digests, ids and store keys, never content
	Hash string
}

// EventLog is implemented by ledgers that can list their hash chain
// (both backends, sqliteledger and pgledger, do).
type EventLog interface {
	// Events returns every event in seq order.
	Events(ctx context.Context) ([]Event, error)
}

// EventHash is the chain link of an event: SHA-256 over the previous hash,
// the seq, the kind and the body. Every backend MUST compute it this way, so
// that the same operations give the same chain on any backend.
func EventHash(prev string, seq int64, kind string, body []byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%d\n%s\n", prev, seq, kind)
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// VerifyChain checks that events form one unbroken hash chain starting at
// seq 1, and returns its head.
func VerifyChain(events []Event) (string, error) {
	prev := ""
	for i, e := range events {
		if e.Seq != int64(i+1) {
			return "", fmt.Errorf("verify ledger chain: event %d has seq %d", i+1, e.Seq)
		}
		if got := EventHash(prev, e.Seq, e.Kind, []byte(e.Body)); got != e.Hash {
			return "", fmt.Errorf("verify ledger chain: event %d does not match its hash", e.Seq)
		}
		prev = e.Hash
	}
	return prev, nil
}

// ArtifactEvent is the body of an "artifact" event, the JSON every backend
// hashes into the chain when it records an artifact: Parents holds only the
// parents this version adds.
type ArtifactEvent struct {
	ID      string   `json:"id"`
	Scope   string   `json:"scope"`
	Subject string   `json:"subject"`
	Kind    Kind     `json:"kind"`
	Store   string   `json:"store"`
	Key     string   `json:"key"`
	Digest  string   `json:"digest"`
	Parents []string `json:"parents,omitempty"`
}

// SchemaVersion is the ledger schema every backend reads and writes. A
// ledger with another version is refused at open.
const SchemaVersion = "amnesia.ledger/v1"

// BatchRecorder is implemented by ledgers that can append many writes in one
// transaction (both backends, sqliteledger and pgledger, do).
type BatchRecorder interface {
	// RecordBatch records the artifacts in order, then the mentions in
	// order, in one transaction: all of them or, on any error, none. The
	// events appended, and so the hash chain, are exactly those that
	// Record for each artifact and then Mention for each mention would
	// append; an artifact may name as parent one recorded earlier in the
	// same batch. Refusals (ErrErased, ErrOwnerConflict, a missing parent)
	// are those of Record, and refuse the whole batch.
	RecordBatch(ctx context.Context, artifacts []Artifact, mentions []Mention) error
}

// BatchLookup is implemented by ledgers that can look up many locations of
// one store in one read (sqliteledger does).
type BatchLookup interface {
	// LookupKeys returns, by key, the artifact at each of keys in store
	// and scope: what Lookup returns for it, a key with none left out.
	LookupKeys(ctx context.Context, scope, store string, keys []string) (map[string]*Artifact, error)
}

// LoggedSuppressor is implemented by ledgers that keep the transparency
// log (transparency.Store) and can suppress artifacts and append a leaf to
// the log in one transaction, one commit (both backends do): an erasure's
// suppression with its erasure-started event.
type LoggedSuppressor interface {
	// SuppressLogged is Suppress(erasure, artifacts) and the log's
	// LogAppend(leaf) in one transaction: both or, on any error, neither.
	// It returns the leaf's index (its earlier index when the log holds
	// it already). Idempotent, as both are.
	SuppressLogged(ctx context.Context, erasure string, artifacts []string, leaf []byte) (int64, error)
}

// RecordAll records artifacts, then mentions, through l: in one
// transaction when l is a BatchRecorder, else one write at a time (and
// then not atomically).
func RecordAll(ctx context.Context, l Ledger, artifacts []Artifact, mentions []Mention) error {
	if b, ok := l.(BatchRecorder); ok {
		return b.RecordBatch(ctx, artifacts, mentions)
	}
	for _, a := range artifacts {
		if err := l.Record(ctx, a); err != nil {
			return err
		}
	}
	for _, m := range mentions {
		if err := l.Mention(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// CheckArtifact returns an error when a lacks what every ledger requires.
func CheckArtifact(a Artifact) error {
	if a.ID == "" || a.Store == "" || a.Key == "" || !a.Kind.Valid() || a.Subject.IsZero() {
		return fmt.Errorf("record artifact: id, store, key, a valid kind and a subject are required")
	}
	return nil
}
