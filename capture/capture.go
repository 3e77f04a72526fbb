// Package capture records lineage as applications write, so that nobody has
// to remember where a person's data went.
//
// Wrap each store client once; every write through the wrapper records its
// artifact (and the edges it derives from) in the ledger before the store
// sees the data, and every read through the wrapper hides artifacts that an
// erasure has suppressed. The caller says whose data a document is; chunks
// inherit it from their document, and an embedding inherits it from the
// chunk with the same id, with the edge recorded without the caller's help.
//
// An application opens everything from the state directory `amnesia init`
// created: Open returns an App holding the pepper, the ledger and the stores
// amnesia.yaml configures, wrapped by name (App.Docs for sqlite-doc and
// postgres, App.Vectors for sqlite-vec and pgvector); App.Erase runs an
// erasure as `amnesia forget --yes` does. See docs/integrate.md.
//
// Ledger first, store second: if the store write fails the ledger holds an
// artifact that does not exist, which an erasure treats as already deleted;
// the reverse order could leave data nobody knows about.
package capture

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/shred"
	"github.com/amnesia-dev/amnesia/subject"
)

// ErrKeyIsPersonal is matched (errors.Is) by the *KeyError returned when a
// store key or parent key contains the subject's (or a mentioned person's)
// identifier: the ledger keeps keys in clear, so keys must not be personal
// data. What is searched for, and what is not, is listed at keyEncoding and
// in docs/design.md; the check is a guard against mistakes, not a proof.
var ErrKeyIsPersonal = errors.New("store key contains the subject identifier; use an opaque key")

// ErrNoOwner is returned when nothing says whose data a write is.
var ErrNoOwner = errors.New("no subject: give one, or write the parent artifact through capture first")

// Recorder records lineage in one scope.
type Recorder struct {
	ledger lineage.Ledger
	keyer  *subject.Keyer
	scope  string
	mu     sync.Mutex
	docs   []string          // names of the document stores an embedding's chunk is looked up in, in order
	keys   *shred.Keys       // set by SealContent
	keeper lineage.KeyKeeper // the ledger, when sealing
}

// New returns a Recorder for scope (subject.DefaultScope when empty).
func New(l lineage.Ledger, k *subject.Keyer, scope string) *Recorder {
	if scope == "" {
		scope = subject.DefaultScope
	}
	return &Recorder{ledger: l, keyer: k, scope: scope}
}

// Scope returns the recorder's scope.
func (r *Recorder) Scope() string { return r.scope }

// addDocStore adds a document store to those an embedding's chunk is looked
// up in.
func (r *Recorder) addDocStore(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !slices.Contains(r.docs, name) {
		r.docs = append(r.docs, name)
	}
}

func (r *Recorder) docStores() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.docs)
}

// SubjectKey returns the key of a raw subject id in the recorder's scope.
func (r *Recorder) SubjectKey(raw string) (subject.Key, error) {
	return r.keyer.Key(r.scope, raw)
}

// artifact is the artifact of a write; parent is empty or its parent's id.
func (r *Recorder) artifact(owner subject.Key, kind lineage.Kind, store, key string, content []byte, parent string) lineage.Artifact {
	a := lineage.Artifact{
		ID: lineage.ArtifactID(r.keyer, r.scope, store, key), Scope: r.scope, Subject: owner, Kind: kind, Store: store, Key: key,
		Digest: lineage.ContentDigest(r.keyer, content),
	}
	if parent != "" {
		a.Parents = []string{parent}
	}
	return a
}

// record writes one artifact to the ledger.
func (r *Recorder) record(ctx context.Context, owner subject.Key, kind lineage.Kind, store, key string, content []byte, parents ...string) (string, error) {
	return r.recordMentioned(ctx, owner, kind, store, key, content, nil, parents...)
}

// recordMentioned writes one artifact and the people it mentions (raw
// ids, keyed here) to the ledger in one transaction (lineage.RecordAll):
// the events Record and then Mention one at a time would append, one
// commit. A mention that does not key is refused before anything is
// written.
func (r *Recorder) recordMentioned(ctx context.Context, owner subject.Key, kind lineage.Kind, store, key string, content []byte, mentions []string, parents ...string) (string, error) {
	queued, err := r.admit(ctx, owner)
	if err != nil {
		return "", fmt.Errorf("capture %s: %w", kind, err)
	}
	id := lineage.ArtifactID(r.keyer, r.scope, store, key)
	var ms []lineage.Mention
	for _, raw := range mentions {
		k, err := r.SubjectKey(raw)
		if err != nil {
			return "", fmt.Errorf("capture mention: %w", err)
		}
		ms = append(ms, lineage.Mention{Artifact: id, Subject: k})
	}
	a := lineage.Artifact{
		ID: id, Scope: r.scope, Subject: owner, Kind: kind, Store: store, Key: key,
		Digest: lineage.ContentDigest(r.keyer, content), Parents: parents,
	}
	if err := lineage.RecordAll(ctx, r.ledger, []lineage.Artifact{a}, ms); err != nil {
		return "", fmt.Errorf("capture %s %s: %w", kind, id, err)
	}
	if err := r.suppressQueued(ctx, queued, []string{id}); err != nil {
		return "", err
	}
	return id, nil
}

// owner resolves the owner of a write: the raw subject when given, else the
// owner of the parent artifact in one of the stores.
func (r *Recorder) owner(ctx context.Context, raw, key string, parentKey string, stores []string) (subject.Key, string, error) {
	return r.ownerIn(ctx, raw, parentKey, stores, nil)
}

// ownerIn is owner, where a parent is looked up in batch (the artifacts
// of a batch not yet recorded, by store and key) before the ledger, store
// by store.
func (r *Recorder) ownerIn(ctx context.Context, raw, parentKey string, stores []string, batch map[[2]string]*lineage.Artifact) (subject.Key, string, error) {
	if raw != "" {
		k, err := r.SubjectKey(raw)
		if err != nil {
			return subject.Key{}, "", err
		}
		if parentKey == "" {
			return k, "", nil
		}
	}
	if parentKey == "" {
		return subject.Key{}, "", ErrNoOwner
	}
	for _, st := range stores {
		a, err := batch[[2]string{st, parentKey}], error(nil)
		if a == nil {
			a, err = r.ledger.Lookup(ctx, r.scope, st, parentKey)
		}
		if errors.Is(err, lineage.ErrNotFound) {
			continue
		}
		if err != nil {
			return subject.Key{}, "", err
		}
		if raw != "" {
			k, _ := r.SubjectKey(raw)
			if k != a.Subject {
				return subject.Key{}, "", lineage.ErrOwnerConflict
			}
		}
		return a.Subject, a.ID, nil
	}
	if raw != "" {
		k, err := r.SubjectKey(raw)
		return k, "", err
	}
	return subject.Key{}, "", ErrNoOwner
}

// visible reports whether the artifact at (store, key) may be returned by a
// read: false once an erasure suppressed it.
func (r *Recorder) visible(ctx context.Context, store, key string) (bool, error) {
	sup, err := r.ledger.Suppressed(ctx, lineage.ArtifactID(r.keyer, r.scope, store, key))
	if err != nil {
		return false, err
	}
	return !sup, nil
}
