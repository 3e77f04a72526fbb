package service

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/subject"
)

// MaxRecords is the most records one Record call takes.
const MaxRecords = 1000

// Limits on the fields of a lineage record.
const (
	maxKeyLen     = 1024
	maxSubjectLen = 512
	maxMentions   = 100
	maxVectorDims = 16384
)

func (s *Service) recorder(scope string) *capture.Recorder {
	s.recMu.Lock()
	defer s.recMu.Unlock()
	r := s.recorders[scope]
	if r == nil {
		r = capture.New(s.ledger, s.dir.Keyer, scope)
		s.recorders[scope] = r
	}
	return r
}

func checkRecord(i int, r LineageRecord) error {
	f := func(name string) string { return fmt.Sprintf("records[%d].%s", i, name) }
	switch {
	case r.Store == "" || len(r.Store) > 128:
		return Invalid(f("store"), "required: the store's name, 1 to 128 characters")
	case r.Key == "" || len(r.Key) > maxKeyLen || !utf8.ValidString(r.Key):
		return Invalid(f("key"), "required: the record's key in its store, 1 to 1024 bytes of UTF-8")
	case !lineage.Kind(r.Kind).Valid():
		return Invalid(f("kind"), "want source, chunk, embedding, cache, train or log")
	case r.Subject == "" && r.Parent == nil:
		return Invalid(f("subject"), "required for a record without a parent")
	case len(r.Subject) > maxSubjectLen:
		return Invalid(f("subject"), "at most 512 bytes")
	case r.Parent != nil && (r.Parent.Store == "" || r.Parent.Key == "" || len(r.Parent.Key) > maxKeyLen):
		return Invalid(f("parent"), "a parent needs its store and key")
	case r.Content != nil && r.Vector != nil:
		return Invalid(f("content"), "give content or vector, not both")
	case r.Content != nil && !utf8.ValidString(*r.Content):
		return Invalid(f("content"), "must be UTF-8 text")
	case len(r.Vector) > maxVectorDims:
		return Invalid(f("vector"), "at most 16384 dimensions")
	case len(r.Mentions) > maxMentions:
		return Invalid(f("mentions"), "at most 100 mentions per record")
	}
	for _, v := range r.Vector {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return Invalid(f("vector"), "NaN and infinite values are refused")
		}
	}
	for j, m := range r.Mentions {
		if m == "" || len(m) > maxSubjectLen {
			return Invalid(f("mentions["+strconv.Itoa(j)+"]"), "a mention is a raw id of 1 to 512 bytes")
		}
	}
	return nil
}

// Record records lineage: every record is checked before any is recorded;
// then they are recorded in order. Recording is idempotent by (store, key)
// and content, so a batch that failed part-way can be sent again whole.
// Errors name the record's index and field, never its value.
func (s *Service) Record(ctx context.Context, p *Principal, scope string, recs []LineageRecord) (RecordResult, error) {
	scope, err := s.allow(p, scope, RoleCapture)
	if err != nil {
		return RecordResult{}, err
	}
	if len(recs) == 0 || len(recs) > MaxRecords {
		return RecordResult{}, Invalid("records", fmt.Sprintf("send 1 to %d records per call", MaxRecords))
	}
	// Lineage recorded under a configuration the installation no longer
	// has could name stores or policies the other hosts do not erase by.
	if err := s.staleErr(); err != nil {
		return RecordResult{}, err
	}
	for i, r := range recs {
		if err := checkRecord(i, r); err != nil {
			return RecordResult{}, err
		}
	}
	rec := s.recorder(scope)
	var res RecordResult
	for i, r := range recs {
		a := capture.Artifact{Store: r.Store, Key: r.Key, Kind: lineage.Kind(r.Kind), Subject: r.Subject, Mentions: r.Mentions}
		if r.Parent != nil {
			a.ParentStore, a.ParentKey = r.Parent.Store, r.Parent.Key
		}
		switch {
		case r.Vector != nil:
			a.Content = store.Float32LE(r.Vector)
		case r.Content != nil:
			a.Content = []byte(*r.Content)
		}
		rctx := ctx
		if r.NewConsent {
			rctx = capture.WithNewConsent(ctx, consentBy(p))
		}
		_, changed, err := rec.RecordArtifact(rctx, a)
		if err != nil {
			s.metrics.captured.Add(float64(res.Recorded + res.Unchanged))
			return res, recordError(i, err, res)
		}
		if changed {
			res.Recorded++
		} else {
			res.Unchanged++
		}
	}
	s.metrics.captured.Add(float64(len(recs)))
	return res, nil
}

// consentBy names who recorded a consent through the API: the calling
// token's id (token names are free text).
func consentBy(p *Principal) string {
	if p == nil || p.TokenID == "" {
		return "api"
	}
	return "api token " + p.TokenID
}

// recordError maps a capture error to a typed error naming the record.
func recordError(i int, err error, done RecordResult) error {
	at := fmt.Sprintf("records[%d]", i)
	note := ""
	if n := done.Recorded + done.Unchanged; n > 0 {
		note = fmt.Sprintf(" (the %d records before it were recorded; sending the batch again is safe)", n)
	}
	switch {
	case errors.Is(err, capture.ErrKeyIsPersonal):
		return Invalid(at+".key", "holds the subject's (or a mentioned person's) identifier: use an opaque key"+note)
	case errors.Is(err, capture.ErrNoOwner):
		return Invalid(at+".subject", "required: the parent is not recorded"+note)
	case errors.Is(err, lineage.ErrNotFound):
		return Invalid(at+".parent", "is not recorded in this scope: record it first"+note)
	case errors.Is(err, lineage.ErrOwnerConflict):
		return fmt.Errorf("%w: %s is already recorded under another subject%s", ErrConflict, at, note)
	case errors.Is(err, lineage.ErrSubjectErased):
		return fmt.Errorf("%w: %s: this subject's data was erased; capturing it again needs new consent: send \"new_consent\": true if the person gave it%s", ErrConflict, at, note)
	case errors.Is(err, lineage.ErrErased):
		return fmt.Errorf("%w: %s was erased; re-ingest is refused%s", ErrConflict, at, note)
	case errors.Is(err, subject.ErrPersonalData), errors.Is(err, capture.ErrBadArtifact):
		return Invalid(at, "refused: "+safeReason(err)+note)
	}
	return fmt.Errorf("%s: %w", at, err)
}

// safeReason is the part of a capture error that names no value: the text
// after the last ": " of errors the capture package builds from constants.
func safeReason(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	return msg
}

// Trace counts what the ledger holds for a subject in scope (the trace is
// saved under traces/, as `amnesia trace` does).
func (s *Service) Trace(ctx context.Context, p *Principal, scope, rawSubject string) (*TraceSummary, error) {
	scope, err := s.allow(p, scope, RoleOperator)
	if err != nil {
		return nil, err
	}
	k, err := s.subjectKey(scope, rawSubject)
	if err != nil {
		return nil, err
	}
	t, _, err := s.env.Trace(ctx, k, scope)
	if err != nil {
		return nil, traceError(err)
	}
	return summarize(t), nil
}

func (s *Service) subjectKey(scope, raw string) (subject.Key, error) {
	if raw == "" || len(raw) > maxSubjectLen {
		return subject.Key{}, Invalid("subject", "required: the raw subject id, 1 to 512 bytes")
	}
	k, err := s.dir.Keyer.Key(scope, raw)
	if err != nil {
		return subject.Key{}, Invalid("subject", "not a usable subject id")
	}
	return k, nil
}

func traceError(err error) error {
	switch {
	case errors.Is(err, lineage.ErrNoLineage):
		return fmt.Errorf("%w: no lineage is recorded for this subject in this scope", ErrNotFound)
	case errors.Is(err, lineage.ErrAlreadyErased):
		return fmt.Errorf("%w: every recorded artifact of this subject is already erased", ErrConflict)
	}
	return err
}

func summarize(t *lineage.Trace) *TraceSummary {
	sum := &TraceSummary{TraceID: t.ID, SubjectRef: t.SubjectRef, Scope: t.Scope, Artifacts: len(t.Artifacts),
		Mentions: len(t.Mentions), AlreadyErased: t.Erased, Stores: []StoreCount{}}
	for _, pl := range t.Plan {
		sc := StoreCount{Store: pl.Store, Kinds: map[string]int{}, Records: len(pl.Delete)}
		for _, kv := range pl.Kinds {
			k, v, _ := strings.Cut(kv, "=")
			n, _ := strconv.Atoi(v)
			sc.Kinds[k] = n
		}
		sum.Stores = append(sum.Stores, sc)
	}
	sort.Slice(sum.Stores, func(i, j int) bool { return sum.Stores[i].Store < sum.Stores[j].Store })
	return sum
}
