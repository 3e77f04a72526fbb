package capture

import (
	"context"
	"fmt"
	"time"

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
func (r *Recorder) admit(ctx context.Context, owner subject.Key) error {
	g, ok := r.ledger.(lineage.SubjectGuard)
	if !ok {
		return nil
	}
	st, err := g.SubjectState(ctx, r.scope, owner)
	if err != nil || !st.Refused() {
		return err
	}
	if by, _ := ctx.Value(consentKey{}).(string); by != "" {
		_, err := r.recordConsent(ctx, owner, by)
		return err
	}
	return fmt.Errorf("subject %s (erasure %s): %w: if the person gave new consent, mark the write as new consent (capture.WithNewConsent, \"new_consent\" in the lineage API, or `amnesia consent` first)", owner.Ref(), st.Erasure, ErrSubjectErased)
}

// RecordConsent records the subject's new consent in the App's scope
// (Recorder.RecordConsent).
func (a *App) RecordConsent(ctx context.Context, raw, by string) (lineage.Consent, error) {
	return a.rec.RecordConsent(ctx, raw, by)
}
