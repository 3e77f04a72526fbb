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
// personal data as store keys (capture refuses keys that contain the subject
// identifier).
//
// [Trace] is a pure function of a [View]: the same ledger state gives the same
// trace, byte for byte.
package lineage

import (
	"context"
	"errors"

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
}
