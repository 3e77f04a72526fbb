package lineage

import (
	"context"
	"errors"
	"time"

	"github.com/amnesia-dev/amnesia/subject"
)

// Nothing comes back: once a subject's artifacts were erased, capturing
// data of that subject again is refused unless the caller says it is new
// consent, which the ledger records. Both are kept under the subject's keyed
// digest (subject.Key), never a raw id.

// Consent is a new consent of an erased subject, as the ledger keeps it:
// the subject's keyed digest, when it was given, and who recorded it (an
// application, token or operator name; never personal data).
type Consent struct {
	Scope   string
	Subject subject.Key
	At      time.Time // UTC, seconds
	By      string
	Seq     int64 // the ledger event that recorded it (set by the ledger)
}

// SubjectState is what the ledger knows about one subject's erasures and
// new consents: the latest erasure mark of any artifact the subject owned
// and, when there is one, the latest consent, each with the seq of its
// ledger event (Consent is nil for a subject never erased).
type SubjectState struct {
	ErasedSeq int64  // 0: never erased
	Erasure   string // the erasure of the latest mark
	Consent   *Consent
	// Queued is the trace id (the job id) of an erasure of the subject
	// queued and not yet finished (pending or claimed), "" when none:
	// capture suppresses what it records for the subject at once, so
	// that a capture after the request is hidden like the queued trace's
	// artifacts (docs/windows.md).
	Queued string
}

// Refused reports whether a new capture of the subject is refused: it was
// erased, and no consent was recorded after its latest erasure.
func (s SubjectState) Refused() bool {
	return s.ErasedSeq > 0 && (s.Consent == nil || s.Consent.Seq < s.ErasedSeq)
}

// ConsentEvent is the body of a "consent" event in the hash chain.
type ConsentEvent struct {
	Scope   string `json:"scope"`
	Subject string `json:"subject"`
	At      string `json:"at"`
	By      string `json:"by"`
}

// SubjectGuard is implemented by ledgers that remember which subjects were
// erased and the new consents recorded after (both backends do). MarkErased
// keeps, for each subject whose artifact it marks, a row (scope, keyed
// subject, erasure, seq) in erased_subjects.
type SubjectGuard interface {
	// SubjectState returns the subject's latest erasure and consent, and
	// its queued erasure, in one read.
	SubjectState(ctx context.Context, scope string, s subject.Key) (SubjectState, error)
	// RecordConsent appends a "consent" event and returns the consent as
	// recorded (its seq set).
	RecordConsent(ctx context.Context, c Consent) (Consent, error)
	// Consents returns the subject's consents, oldest first.
	Consents(ctx context.Context, scope string, s subject.Key) ([]Consent, error)
}

// CheckConsent checks the fields every backend needs.
func CheckConsent(c Consent) error {
	switch {
	case c.Subject.IsZero():
		return errors.New("record consent: a subject is required")
	case c.By == "" || len(c.By) > 128:
		return errors.New("record consent: say who records it (by: 1 to 128 characters, an application, token or operator name; never personal data)")
	case c.At.IsZero():
		return errors.New("record consent: a time is required")
	}
	return subject.CheckFreeText("by", c.By)
}

// ConsentBody is the event body of c.
func ConsentBody(c Consent) ConsentEvent {
	return ConsentEvent{Scope: c.Scope, Subject: c.Subject.String(), At: c.At.UTC().Truncate(time.Second).Format(time.RFC3339), By: c.By}
}

// ErrSubjectErased: a capture of a subject whose data was erased, not marked
// as new consent, is refused.
var ErrSubjectErased = errors.New("this subject's data was erased; capturing it again is refused without new consent")
