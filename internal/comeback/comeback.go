// Package comeback keeps erased data from coming back unnoticed: scheduled
// re-verification of past erasures (`amnesia reverify --due`, and `amnesia
// serve` on that schedule) and the replay of erasures onto stores restored
// from a backup (`amnesia replay --since`). Both issue certificates through
// saga.Reverify, linked to the erasure certificate they check
// (predicate.reverifies), and keep nothing new: the schedule is read from
// the certificates the installation keeps (saga.Durable).
package comeback

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store"
)

// Erasure is one erasure certificate of the state directory, with when it
// was last checked.
type Erasure struct {
	Path          string
	CertificateID string
	SubjectRef    string
	IssuedAt      time.Time
	// LastChecked is its own issued_at or, when later, that of the latest
	// re-verification or replay linked to it.
	LastChecked  time.Time
	Reverifiable bool
}

// NextAt is when the erasure is next due, every after its last check.
func (e Erasure) NextAt(every time.Duration) time.Time { return e.LastChecked.Add(every) }

// Erasures lists the erasure certificates the installation keeps (d: the
// state directory's certificates/, or the PostgreSQL ledger); re-verifications
// and replays are not listed; they count as checks of the certificate they
// link to), oldest first. The certificates are parsed, not verified:
// saga.CheckReverify verifies each before it is probed. One that does not
// parse is returned in bad, as an error naming it, and left out.
func Erasures(ctx context.Context, d saga.Durable) (list []Erasure, bad []error, err error) {
	ids, err := d.Certificates(ctx)
	if err != nil {
		return nil, nil, err
	}
	byID := map[string]*Erasure{}
	checks := map[string]time.Time{}
	for _, id := range ids {
		path := d.CertificateRef(id)
		b, err := d.Certificate(ctx, id)
		if err != nil {
			return nil, nil, err
		}
		p, err := parse(path, b)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		at, _ := time.Parse(time.RFC3339, p.IssuedAt)
		if p.Reverifies != nil {
			if at.After(checks[p.Reverifies.CertificateID]) {
				checks[p.Reverifies.CertificateID] = at
			}
			continue
		}
		byID[p.CertificateID] = &Erasure{Path: path, CertificateID: p.CertificateID, SubjectRef: p.SubjectRef, IssuedAt: at, LastChecked: at, Reverifiable: p.Reverifiable}
	}
	out := make([]Erasure, 0, len(byID))
	for id, e := range byID {
		if c := checks[id]; c.After(e.LastChecked) {
			e.LastChecked = c
		}
		out = append(out, *e)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].IssuedAt.Equal(out[j].IssuedAt) {
			return out[i].IssuedAt.Before(out[j].IssuedAt)
		}
		return out[i].CertificateID < out[j].CertificateID
	})
	return out, bad, nil
}

func parse(path string, b []byte) (*certificate.Predicate, error) {
	bu, err := certificate.DecodeBundle(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	st, err := certificate.Parse(bu.DSSEEnvelope)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &st.Predicate, nil
}

// Env is an opened installation.
type Env struct {
	Dir      *state.Dir
	Ledger   lineage.Ledger
	Log      *slog.Logger // nil: discarded
	Progress io.Writer    // human progress; nil: discarded
	Now      func() time.Time
}

// Outcome is the re-verification (or replay) of one erasure certificate.
type Outcome struct {
	Erasure Erasure
	Result  *saga.Result // nil when Err is set
	Err     error
}

// Reappeared reports whether erased records were found again (RESIDUAL).
func (o Outcome) Reappeared() bool {
	return o.Result != nil && o.Result.Statement.Predicate.Counts.Residual > 0
}

// Report is what one run did.
type Report struct {
	Outcomes []Outcome
	// NotDue counts the re-verifiable erasures not yet due; Skipped those
	// that say reverifiable: false (nothing to probe them with).
	NotDue, Skipped int
}

// Incomplete counts the outcomes that failed or whose certificate is not
// complete.
func (r *Report) Incomplete() int {
	n := 0
	for _, o := range r.Outcomes {
		if o.Err != nil || !o.Result.Statement.Predicate.Complete {
			n++
		}
	}
	return n
}

// Reappeared returns the outcomes where erased records came back.
func (r *Report) Reappeared() []Outcome {
	var out []Outcome
	for _, o := range r.Outcomes {
		if o.Reappeared() {
			out = append(out, o)
		}
	}
	return out
}

func (e *Env) log() *slog.Logger {
	if e.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return e.Log
}

func (e *Env) now() time.Time {
	if e.Now == nil {
		return time.Now()
	}
	return e.Now()
}

// Due re-verifies every re-verifiable erasure certificate whose last check
// is every or more ago, with the stores opened once. When erased records
// came back it logs an alert (level WARN, "erased data reappeared") per
// certificate; the caller raises its own (metric, webhook, exit code).
func Due(ctx context.Context, e *Env, every time.Duration) (*Report, error) {
	if every <= 0 {
		return nil, errors.New("no re-verification interval: set reverify.every in amnesia.yaml (e.g. 7d), or give --every")
	}
	all, bad, err := Erasures(ctx, saga.DurableFor(e.Dir, e.Ledger))
	if err != nil {
		return nil, err
	}
	rep := badOutcomes(bad)
	now := e.now()
	var due []Erasure
	for _, er := range all {
		switch {
		case !er.Reverifiable:
			rep.Skipped++
		case now.Before(er.NextAt(every)):
			rep.NotDue++
		default:
			due = append(due, er)
		}
	}
	return rep, e.run(ctx, rep, due, false)
}

// Replay re-applies, to stores restored from a backup taken at since, every
// erasure whose certificate was issued at or after since: each erased record
// found again by id is deleted again, and a certificate is issued per
// erasure, linked to it (saga.Reverification.Replay). Erasures that say
// reverifiable: false cannot be replayed (their stores' keys are not
// usable) and are counted in Skipped.
func Replay(ctx context.Context, e *Env, since time.Time) (*Report, error) {
	all, bad, err := Erasures(ctx, saga.DurableFor(e.Dir, e.Ledger))
	if err != nil {
		return nil, err
	}
	rep := badOutcomes(bad)
	var todo []Erasure
	for _, er := range all {
		switch {
		case er.IssuedAt.Before(since):
			rep.NotDue++
		case !er.Reverifiable:
			rep.Skipped++
		default:
			todo = append(todo, er)
		}
	}
	return rep, e.run(ctx, rep, todo, true)
}

// badOutcomes starts a report with the certificate files that do not parse,
// as failed outcomes: they are reported, and the others still run.
func badOutcomes(bad []error) *Report {
	rep := &Report{}
	for _, err := range bad {
		rep.Outcomes = append(rep.Outcomes, Outcome{Erasure: Erasure{CertificateID: "(unreadable certificate file)"}, Err: err})
	}
	return rep
}

func (e *Env) run(ctx context.Context, rep *Report, todo []Erasure, replay bool) error {
	if len(todo) == 0 {
		return nil
	}
	stores, failed := e.Dir.Config.OpenStores(ctx)
	defer func() {
		for _, s := range stores {
			s.Close()
		}
	}()
	for _, er := range todo {
		o := e.one(ctx, er, stores, failed, replay)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		rep.Outcomes = append(rep.Outcomes, o)
		if o.Reappeared() {
			p := o.Result.Statement.Predicate
			e.log().Warn("erased data reappeared", "certificate", er.CertificateID, "subject", er.SubjectRef,
				"new_certificate", o.Result.ID, "residual", p.Counts.Residual, "replay", replay, "stores", residualStores(p))
		}
	}
	return nil
}

func (e *Env) one(ctx context.Context, er Erasure, stores map[string]store.Store, failed map[string]error, replay bool) Outcome {
	b, err := saga.DurableFor(e.Dir, e.Ledger).Certificate(ctx, er.CertificateID)
	if err != nil {
		return Outcome{Erasure: er, Err: err}
	}
	orig, err := saga.CheckReverify(ctx, e.Dir, saga.DurableFor(e.Dir, e.Ledger), b, nil)
	if err != nil {
		return Outcome{Erasure: er, Err: err}
	}
	res, err := saga.Reverify(ctx, &saga.Reverification{
		Dir: e.Dir, Ledger: e.Ledger, Stores: stores, OpenErr: failed,
		Original: orig, Log: e.Log, Progress: e.Progress, Now: e.Now, Replay: replay,
	})
	return Outcome{Erasure: er, Result: res, Err: err}
}

// residualStores names the stores where records came back.
func residualStores(p certificate.Predicate) string {
	seen := map[string]bool{}
	var out []string
	for _, a := range p.Artifacts {
		if a.Outcome == certificate.Residual && !seen[a.Store] {
			seen[a.Store] = true
			out = append(out, a.Store)
		}
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}
