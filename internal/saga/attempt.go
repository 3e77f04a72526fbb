package saga

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/amnesia-dev/amnesia/certificate"
)

// readEntries reads the entries of a journal for inspection (which steps
// finished, with which results). It is lenient: it reads with ParseJournal
// but ignores what breaks the format (a torn or damaged line is skipped, a
// broken chain is read as it is) and repairs nothing, because only
// openJournal, which refuses a damaged journal, may decide to resume from
// one. Entries without a step are left out. A missing journal has no
// entries.
func readEntries(path string) ([]JournalEntry, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	all, _, _ := ParseJournal(b) // lenient: see above
	var out []JournalEntry
	for _, e := range all {
		if e.Step != "" {
			out = append(out, e)
		}
	}
	return out, nil
}

// finalOf returns the finished (done or failed) entry of step, or nil.
func finalOf(es []JournalEntry, step string) *JournalEntry {
	for i := range es {
		if es[i].Step == step && (es[i].Phase == phaseDone || es[i].Phase == phaseFailed) {
			return &es[i]
		}
	}
	return nil
}

// doneIn reports whether step has a done entry in es.
func doneIn(es []JournalEntry, step string) bool {
	e := finalOf(es, step)
	return e != nil && e.Phase == phaseDone
}

// erasureState is what a journal says about an erasure as a whole.
type erasureState struct {
	started    bool // the journal exists
	suppressed bool // the suppress step is done: the erasure changed the ledger
	published  bool // the publish step is done: the erasure is finished
	complete   bool // its certificate says complete
}

func readErasureState(ctx context.Context, d Durable, id string) (erasureState, error) {
	es, exists, err := d.readJournal(ctx, id, mainJournal)
	if err != nil {
		return erasureState{}, fmt.Errorf("read journal: %w", err)
	}
	if !exists {
		return erasureState{}, nil
	}
	st := erasureState{started: true, suppressed: doneIn(es, "suppress"), published: doneIn(es, "publish")}
	if d := finalOf(es, "decide"); d != nil && d.Phase == phaseDone {
		var p struct {
			Complete bool `json:"complete"`
		}
		if json.Unmarshal(d.Result, &p) == nil {
			st.complete = p.Complete
		}
	}
	return st, nil
}

// chooseID picks the erasure id of the run. A trace's first erasure has
// ID(trace). When that erasure finished with an incomplete certificate (a
// store was down, a record was still found) and the ledger still gives the
// same trace, nothing it left was erased: the run is a new erasure,
// AttemptID(trace, previous), that erases and verifies what was left and
// whose certificate links to the previous one. A finished complete erasure,
// or one whose trace the ledger no longer gives, is replayed as it is.
// It sets r.resumed and r.suppressed from the chosen erasure's journal, read
// here once (the subject's erasure lock is held: nothing else writes it).
func (r *runner) chooseID(ctx context.Context) error {
	id, prev := ID(r.Trace.ID), ""
	var st erasureState
	for {
		var err error
		if st, err = readErasureState(ctx, r.dur, id); err != nil {
			return err
		}
		if !st.published || st.complete {
			break
		}
		if CheckFresh(ctx, r.Ledger, r.Trace) != nil {
			break
		}
		prev, id = id, AttemptID(r.Trace.ID, id)
	}
	r.id = id
	r.resumed, r.suppressed = st.started, st.suppressed
	if prev == "" {
		return nil
	}
	l, err := certificateLink(ctx, r.dur, prev)
	if err != nil {
		return err
	}
	r.follows = l
	return nil
}

// certificateLink names the published certificate of erasure id: its id,
// the SHA-256 of its signed payload and its log index.
func certificateLink(ctx context.Context, d Durable, id string) (*certificate.ReverifyLink, error) {
	path := d.CertificateRef(id)
	raw, err := d.Certificate(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("erasure %s finished incomplete, and its certificate, which the next erasure must link to, cannot be read from %s (%w): restore %s from a backup, then run the erasure again", id, d.Where(), err, path)
	}
	b, err := certificate.DecodeBundle(raw)
	if err != nil || b.LogEntry == nil {
		return nil, fmt.Errorf("erasure %s finished incomplete, and its certificate %s is damaged: restore it from a backup, then run the erasure again", id, path)
	}
	payload, err := certificate.Payload(b.DSSEEnvelope)
	if err != nil {
		return nil, fmt.Errorf("erasure %s: certificate %s: %w", id, path, err)
	}
	sum := sha256.Sum256(payload)
	return &certificate.ReverifyLink{CertificateID: id, PayloadSHA256: hex.EncodeToString(sum[:]), LogIndex: b.LogEntry.LogIndex}, nil
}
