package capture

import (
	"context"
	"fmt"
	"time"

	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/subject"
)

// ErrSubjectErased is matched (errors.Is) by the error of a write whose
// subject was erased and that is not marked as new consent
// (lineage.ErrSubjectErased). The erased records' own keys stay refused
// even with consent (lineage.ErrErased): new data takes new keys.
var ErrSubjectErased = lineage.ErrSubjectErased

type consentKey struct{}

// WithNewConsent marks the writes made with the returned context as new
// consent of their subjects, given to by (an application, token or
// operator name; never personal data): a subject that was erased may be
// captured again, and the consent is recorded in the ledger (keyed subject,
// time, by) before the first such write. Without it such a write is
// refused with ErrSubjectErased.
func WithNewConsent(ctx context.Context, by string) context.Context {
	return context.WithValue(ctx, consentKey{}, by)
}

// RecordConsent records in the ledger that the subject (a raw id, keyed at
// once) gave new consent, by whom; later writes of the subject are then
// accepted. It needs a ledger that is a lineage.SubjectGuard (both are).
func (r *Recorder) RecordConsent(ctx context.Context, raw, by string) (lineage.Consent, error) {
	k, err := r.SubjectKey(raw)
	if err != nil {
		return lineage.Consent{}, fmt.Errorf("capture consent: %w", err)
	}
	return r.recordConsent(ctx, k, by)
}

func (r *Recorder) recordConsent(ctx context.Context, k subject.Key, by string) (lineage.Consent, error) {
	g, ok := r.ledger.(lineage.SubjectGuard)
	if !ok {
		return lineage.Consent{}, fmt.Errorf("capture consent: the ledger %T keeps no consents", r.ledger)
	}
	c, err := g.RecordConsent(ctx, lineage.Consent{Scope: r.scope, Subject: k, At: time.Now(), By: by})
	if err != nil {
		return c, fmt.Errorf("capture consent: %w", err)
	}
	return c, nil
}

// admit refuses a write of owner when owner was erased and no consent was
// recorded since; a write marked WithNewConsent records the consent and is
// admitted. Check and write are separate transactions: an erasure that
// runs between them finds the new artifact in its trace.
//
// It returns the trace id of owner's queued erasure ("" when none), read in
// the same statement (lineage.SubjectState.Queued): the caller suppresses
// what it records (suppressQueued), so that a capture after an erasure
// request is hidden at once, like the queued trace's artifacts.
func (r *Recorder) admit(ctx context.Context, owner subject.Key) (queued string, err error) {
	g, ok := r.ledger.(lineage.SubjectGuard)
	if !ok {
		return "", nil
	}
	st, err := g.SubjectState(ctx, r.scope, owner)
	if err != nil || !st.Refused() {
		return st.Queued, err
	}
	if by, _ := ctx.Value(consentKey{}).(string); by != "" {
		_, err := r.recordConsent(ctx, owner, by)
		return st.Queued, err
	}
	return "", fmt.Errorf("subject %s (erasure %s): %w: if the person gave new consent, mark the write as new consent (capture.WithNewConsent, \"new_consent\" in the lineage API, or `amnesia consent` first)", owner.Ref(), st.Erasure, ErrSubjectErased)
}

// suppressQueued suppresses the artifacts ids just recorded for a subject
// whose erasure is queued (queued: its trace id), under that erasure's id,
// before the store is written: reads through capture never return them.
// The erasure itself, when its worker claims it, traces the subject again
// and erases them too (internal/worker: a later trace that only adds
// artifacts). A subject without a queued erasure costs nothing here.
func (r *Recorder) suppressQueued(ctx context.Context, queued string, ids []string) error {
	if queued == "" || len(ids) == 0 {
		return nil
	}
	if err := r.ledger.Suppress(ctx, saga.ID(queued), ids); err != nil {
		return fmt.Errorf("capture: the subject's erasure %s is queued, and what was just recorded for it could not be suppressed (nothing was written to the store): %w", saga.ID(queued), err)
	}
	return nil
}

// RecordConsent records the subject's new consent in the App's scope
// (Recorder.RecordConsent).
func (a *App) RecordConsent(ctx context.Context, raw, by string) (lineage.Consent, error) {
	return a.rec.RecordConsent(ctx, raw, by)
}
