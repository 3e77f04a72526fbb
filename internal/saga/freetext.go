package saga

import (
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/subject"
)

// reasonField names the reason in errors.
const reasonField = "the reason (--reason)"

// CheckReason refuses, with a *subject.PersonalDataError, an erasure whose
// reason or scope would put personal data into its journal, certificate or
// the queue: a reason that looks like it holds an e-mail address, phone
// number, IBAN, card number or IP address (subject.CheckFreeText), or a
// reason or scope that holds the id of the subject being erased (keyed in
// the trace's scope and compared with the trace's subject, since amnesia
// does not know the raw id). The scope is checked against the subject only:
// tenant names are often numbers.
func CheckReason(dir *state.Dir, t *lineage.Trace, reason string) error {
	if err := subject.CheckFreeText(reasonField, reason); err != nil {
		return err
	}
	k, err := subjectKey(t.Subject)
	if err != nil {
		return err
	}
	if err := dir.Keyer.CheckNotSubject(reasonField, reason, t.Scope, k); err != nil {
		return err
	}
	return dir.Keyer.CheckNotSubject("the scope", t.Scope, t.Scope, k)
}
