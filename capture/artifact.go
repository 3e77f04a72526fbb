package capture

import (
	"context"
	"errors"
	"fmt"

	"github.com/amnesia-dev/amnesia/lineage"
)

// Artifact is one artifact recorded without a store wrapper: the
// application (in any language, through `amnesia serve`) writes the store
// itself and says what it wrote.
type Artifact struct {
	Store string       // the configured store name the artifact lives in
	Key   string       // its key there (never personal data)
	Kind  lineage.Kind // source, chunk, embedding, cache, train or log
	// Subject is the raw id of the person the data is about. Required when
	// there is no parent; with a parent it must be the parent's owner.
	Subject string
	// ParentStore and ParentKey name the artifact this one derives from,
	// recorded before (in the same scope); its owner owns this one.
	ParentStore, ParentKey string
	// Content is what the store holds (text, or a vector as little-endian
	// float32 bytes): only its keyed digest is kept.
	Content []byte
	// Mentions are the raw ids of other people the artifact mentions.
	Mentions []string
}

// ErrBadArtifact matches (errors.Is) an Artifact RecordArtifact refuses
// before anything is recorded.
var ErrBadArtifact = errors.New("capture: bad artifact")

// RecordArtifact records one artifact, its parent edge and its mentions in
// the ledger, with the checks the store wrappers make (a known kind, an
// owner, keys that do not hold the subject's id). It reports changed false
// when the ledger already held the artifact with the same owner, kind and
// content digest (recording it again then appends nothing, except a parent
// edge it did not have).
func (r *Recorder) RecordArtifact(ctx context.Context, a Artifact) (id string, changed bool, err error) {
	switch {
	case a.Store == "" || a.Key == "":
		return "", false, fmt.Errorf("%w: store and key are required", ErrBadArtifact)
	case !a.Kind.Valid():
		return "", false, fmt.Errorf("%w: kind must be one of source, chunk, embedding, cache, train, log", ErrBadArtifact)
	case (a.ParentStore == "") != (a.ParentKey == ""):
		return "", false, fmt.Errorf("%w: a parent needs both its store and its key", ErrBadArtifact)
	case a.Subject == "" && a.ParentKey == "":
		return "", false, fmt.Errorf("%w: %w", ErrBadArtifact, ErrNoOwner)
	}
	var parentStores []string
	if a.ParentStore != "" {
		parentStores = []string{a.ParentStore}
	}
	owner, parent, err := r.owner(ctx, a.Subject, a.Key, a.ParentKey, parentStores)
	if err != nil {
		return "", false, fmt.Errorf("capture %s: %w", a.Kind, err)
	}
	if a.ParentKey != "" && parent == "" {
		return "", false, fmt.Errorf("capture %s: %w: the parent is not recorded in this scope; record it first", a.Kind, lineage.ErrNotFound)
	}
	if err := r.checkKeys(a.Key, a.ParentKey, a.Subject, owner, a.Mentions); err != nil {
		return "", false, fmt.Errorf("capture %s: %w", a.Kind, err)
	}
	id = lineage.ArtifactID(r.keyer, r.scope, a.Store, a.Key)
	digest := lineage.ContentDigest(r.keyer, a.Content)
	changed = true
	if old, err := r.ledger.Lookup(ctx, r.scope, a.Store, a.Key); err == nil {
		// Lookup does not return edges: a new parent of an unchanged
		// artifact is recorded, but counted as unchanged.
		changed = old.Subject != owner || old.Digest != digest || old.Kind != a.Kind
	} else if !errors.Is(err, lineage.ErrNotFound) {
		return "", false, fmt.Errorf("capture %s: %w", a.Kind, err)
	}
	var parents []string
	if parent != "" {
		parents = []string{parent}
	}
	if _, err := r.recordMentioned(ctx, owner, a.Kind, a.Store, a.Key, a.Content, a.Mentions, parents...); err != nil {
		return "", false, err
	}
	return id, changed, nil
}
