package capture

import (
	"context"
	"errors"
	"fmt"

	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/shred"
	"github.com/amnesia-dev/amnesia/subject"
)

// ErrSealingNeedsKeyKeeper: SealContent was given a ledger that keeps no
// data keys.
var ErrSealingNeedsKeyKeeper = errors.New("capture: crypto-shredding needs a ledger that keeps data keys")

// SealContent makes the recorder encrypt the content fields it writes (a
// document's text, a vector's content) with their subject's data key
// (crypto-shredding, package shred), and decrypt them on reads. An erasure
// destroys the key: every copy of those fields, in backups and replicas
// included, is then ciphertext without a key. Embeddings and metadata are
// not encrypted. The ledger must keep data keys (both ledgers do).
func (r *Recorder) SealContent(w shred.Wrapper) error {
	kk, ok := r.ledger.(lineage.KeyKeeper)
	if !ok {
		return ErrSealingNeedsKeyKeeper
	}
	r.mu.Lock()
	r.keys, r.keeper = shred.NewKeys(kk, w), kk
	r.mu.Unlock()
	return nil
}

func (r *Recorder) sealer() *shred.Keys {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.keys
}

// seal returns text sealed for (store, key, field) when sealing is on,
// and whether it sealed it.
func (r *Recorder) seal(ctx context.Context, owner subject.Key, store, key, field, text string) (string, bool, error) {
	k := r.sealer()
	if k == nil || text == "" {
		return text, false, nil
	}
	s, err := k.Seal(ctx, r.scope, owner, shred.FieldAAD(store, key, field), []byte(text))
	if err != nil {
		return "", false, fmt.Errorf("capture: seal %s: %w", field, err)
	}
	return s, true, nil
}

// markSealed records that the artifacts' content was written sealed.
func (r *Recorder) markSealed(ctx context.Context, ids []string) error {
	if len(ids) == 0 || r.keeper == nil {
		return nil
	}
	if err := r.keeper.MarkSealed(ctx, ids); err != nil {
		return fmt.Errorf("capture: mark sealed: %w", err)
	}
	return nil
}

// unseal opens a sealed field of a record read back (tag is the record's
// subject tag). Text that is not sealed is returned as it is. A field
// whose subject's key was destroyed gives shred.ErrDestroyed.
func (r *Recorder) unseal(ctx context.Context, tag, store, key, field, text string) (string, error) {
	if !shred.IsSealed(text) {
		return text, nil
	}
	k := r.sealer()
	if k == nil {
		return "", fmt.Errorf("capture: %s %s: the field is sealed and this recorder has no sealing (SealContent)", store, key)
	}
	s, err := subject.ParseKey(tag)
	if err != nil {
		return "", fmt.Errorf("capture: %s %s: the subject tag of a sealed field: %w", store, key, err)
	}
	pt, err := k.Open(ctx, r.scope, s, shred.FieldAAD(store, key, field), text)
	if err != nil {
		return "", fmt.Errorf("capture: %s %s: %w", store, key, err)
	}
	return string(pt), nil
}
