package service

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/worker"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/subject"
)

// ConfirmationTTL is how long a preview's confirmation stays valid.
const ConfirmationTTL = 10 * time.Minute

// reqDoc is a request as the ledger keeps it (lineage.RequestRow.Body): the
// public fields and what only the service reads. No raw subject id.
type reqDoc struct {
	Request
	SubjectKey  string       `json:"subject_key"` // full keyed digest, hex
	CallbackURL string       `json:"callback_url,omitempty"`
	Confirm     *confirmDoc  `json:"confirm,omitempty"`
	Callback    *callbackDoc `json:"callback,omitempty"`
	Version     int64        `json:"-"`
}

type confirmDoc struct {
	SHA256    string    `json:"sha256"`
	TraceID   string    `json:"trace_id"`
	ExpiresAt time.Time `json:"expires_at"`
	Used      bool      `json:"used"`
}

// callbackDoc is the delivery of the signed callback when a request ends.
type callbackDoc struct {
	State     string    `json:"state"` // pending, delivered, gave_up
	Attempts  int       `json:"attempts"`
	NextAt    time.Time `json:"next_at"`
	LastError string    `json:"last_error,omitempty"`
}

func (s *Service) getDoc(ctx context.Context, id string) (*reqDoc, error) {
	if !validID(id, "req_") {
		return nil, fmt.Errorf("%w: no such request", ErrNotFound)
	}
	row, err := s.reqs.GetRequest(ctx, id)
	if errors.Is(err, lineage.ErrNotFound) {
		return nil, fmt.Errorf("%w: no such request", ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return decodeDoc(row)
}

func decodeDoc(row *lineage.RequestRow) (*reqDoc, error) {
	var d reqDoc
	if err := json.Unmarshal(row.Body, &d); err != nil {
		return nil, fmt.Errorf("request %s: stored body does not parse", row.ID)
	}
	d.Version = row.Version
	return &d, nil
}

func (d *reqDoc) row() (lineage.RequestRow, error) {
	b, err := json.Marshal(d)
	if err != nil {
		return lineage.RequestRow{}, err
	}
	return lineage.RequestRow{ID: d.ID, Scope: d.Scope, State: d.State, TraceID: d.TraceID, Version: d.Version, Body: b}, nil
}

// update stores d if nobody changed it since it was read (ErrConflict).
func (s *Service) update(ctx context.Context, d *reqDoc) error {
	d.UpdatedAt = s.now().UTC()
	r, err := d.row()
	if err != nil {
		return err
	}
	if err := s.reqs.UpdateRequest(ctx, r); errors.Is(err, lineage.ErrRequestChanged) {
		return fmt.Errorf("%w: the request changed meanwhile; read it again", ErrConflict)
	} else if err != nil {
		return err
	}
	d.Version++
	return nil
}

func (s *Service) public(d *reqDoc) *Request {
	r := d.Request
	r.Overdue = r.State != StateDone && s.now().After(r.DueAt)
	r.HasCallback = d.CallbackURL != ""
	return &r
}

func validID(id, prefix string) bool {
	if !strings.HasPrefix(id, prefix) || len(id) > 80 {
		return false
	}
	for _, c := range id[len(prefix):] {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

func checkCallbackURL(u string) error {
	if u == "" {
		return nil
	}
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" || len(u) > 2048 || p.User != nil {
		return Invalid("callback_url", "want an http:// or https:// URL without credentials, at most 2048 bytes")
	}
	return nil
}

// newDoc checks a new request and builds it (not stored).
func (s *Service) newDoc(id, scope, raw, reason, externalRef string, due *time.Time, callback string) (*reqDoc, error) {
	k, err := s.subjectKey(scope, raw)
	if err != nil {
		return nil, err
	}
	reason = strings.TrimSpace(reason)
	if reason == "" || len(reason) > 200 {
		return nil, Invalid("reason", "required: the ticket or legal basis the erasure answers, at most 200 characters, e.g. GDPR-Art17-ticket-4711")
	}
	if subject.CheckFreeText("reason", reason) != nil || subject.CheckNotSubject("reason", reason, raw) != nil {
		return nil, Invalid("reason", "looks like personal data: it goes into the certificate; give a ticket reference instead")
	}
	if len(externalRef) > 200 || subject.CheckFreeText("external_ref", externalRef) != nil || subject.CheckNotSubject("external_ref", externalRef, raw) != nil {
		return nil, Invalid("external_ref", "at most 200 characters and no personal data: the id the request has in your ticket system")
	}
	if err := checkCallbackURL(callback); err != nil {
		return nil, err
	}
	now := s.now().UTC().Truncate(time.Second)
	dueAt := now.Add(s.opts.DefaultDue)
	if due != nil {
		if !due.After(now) {
			return nil, Invalid("due", "must be in the future (RFC 3339)")
		}
		if due.After(now.Add(lineage.MaxDue)) {
			return nil, Invalid("due", "must be at most one month (744h, GDPR Art. 12(3)) after the request")
		}
		dueAt = due.UTC()
	}
	return &reqDoc{
		Request: Request{ID: id, State: StateReceived, ReceivedAt: now, DueAt: dueAt, UpdatedAt: now,
			ExternalRef: externalRef, Reason: reason, SubjectRef: k.Ref(), Scope: scope},
		SubjectKey: k.String(), CallbackURL: callback,
	}, nil
}

func (s *Service) insert(ctx context.Context, d *reqDoc) error {
	r, err := d.row()
	if err != nil {
		return err
	}
	if err := s.reqs.InsertRequest(ctx, r); err != nil {
		return err
	}
	d.Version = 1
	s.log.Info("erasure request received", "request", d.ID, "scope", d.Scope, "subject", d.SubjectRef, "due", d.DueAt.Format(time.RFC3339))
	return nil
}

// CreateRequest creates an erasure request. The raw subject is not stored:
// the request keeps the keyed subject only.
func (s *Service) CreateRequest(ctx context.Context, p *Principal, in NewRequest) (*Request, error) {
	scope, err := s.allow(p, in.Scope, RoleOperator)
	if err != nil {
		return nil, err
	}
	d, err := s.newDoc("req_"+randomHex(8), scope, in.Subject, in.Reason, in.ExternalRef, in.Due, in.CallbackURL)
	if err != nil {
		return nil, err
	}
	if err := s.insert(ctx, d); err != nil {
		return nil, err
	}
	return s.public(d), nil
}

// IntakeID is the request id of a webhook's request_id: a redelivered
// webhook finds the request it created.
func IntakeID(requestID string) string {
	sum := sha256.Sum256([]byte("amnesia.intake/v1\n" + requestID))
	return "req_" + hex.EncodeToString(sum[:8])
}

// Intake creates a request from a webhook whose signature the caller
// checked. It lands in the installation's default scope in state received:
// an operator previews and confirms it. Redelivery returns the same request.
func (s *Service) Intake(ctx context.Context, in WebhookIntake) (*Request, error) {
	if in.RequestID == "" || len(in.RequestID) > 200 || subject.CheckFreeText("request_id", in.RequestID) != nil {
		return nil, Invalid("request_id", "required: the platform's request id, at most 200 characters, no personal data")
	}
	if in.Identity.Value == "" {
		return nil, Invalid("identity.value", "required: the identity to erase")
	}
	id := IntakeID(in.RequestID)
	if d, err := s.getDoc(ctx, id); err == nil {
		return s.public(d), nil
	}
	reason := in.Reason
	if reason == "" {
		reason = "privacy-request " + in.RequestID
	}
	d, err := s.newDoc(id, s.dir.Config.Scope, in.Identity.Value, reason, in.RequestID, in.DueAt, in.CallbackURL)
	if err != nil {
		return nil, err
	}
	if err := s.insert(ctx, d); errors.Is(err, lineage.ErrRequestExists) {
		if d, err := s.getDoc(ctx, id); err == nil {
			return s.public(d), nil
		}
	} else if err != nil {
		return nil, err
	}
	return s.public(d), nil
}

// owned loads a request and checks that p may touch its scope.
func (s *Service) owned(ctx context.Context, p *Principal, id string, roles ...Role) (*reqDoc, error) {
	if p == nil {
		return nil, ErrUnauthorized
	}
	if !p.can(roles...) {
		return nil, fmt.Errorf("%w: a %s token may not do this", ErrForbidden, p.Role)
	}
	d, err := s.getDoc(ctx, id)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(p.Scopes, d.Scope) {
		return nil, fmt.Errorf("%w: the token may not touch this scope", ErrForbidden)
	}
	return d, nil
}

// Preview traces a request's subject (resuming the trace of an unfinished
// erasure of it, as `amnesia forget` does) and issues a confirmation bound
// to the request and that trace: single use, valid ConfirmationTTL. A new
// preview replaces an earlier confirmation.
func (s *Service) Preview(ctx context.Context, p *Principal, id string) (*Preview, error) {
	d, err := s.owned(ctx, p, id, RoleOperator)
	if err != nil {
		return nil, err
	}
	switch d.State {
	case StateReceived, StatePreviewed, StateFailed:
	default:
		return nil, fmt.Errorf("%w: the request is %s; only a received, previewed or failed request is previewed", ErrConflict, d.State)
	}
	k, err := subject.ParseKey(d.SubjectKey)
	if err != nil {
		return nil, err
	}
	start := s.now()
	t, _, err := s.env.Begin(ctx, k, d.Scope)
	if err != nil {
		return nil, traceError(err)
	}
	s.metrics.step.WithLabelValues("trace").Observe(s.now().Sub(start).Seconds())
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	cnf := "cnf_" + base64.RawURLEncoding.EncodeToString(secret)
	exp := s.now().UTC().Add(ConfirmationTTL).Truncate(time.Second)
	d.Confirm = &confirmDoc{SHA256: tokenHash(cnf), TraceID: t.ID, ExpiresAt: exp}
	d.State, d.TraceID, d.Error = StatePreviewed, t.ID, ""
	if err := s.update(ctx, d); err != nil {
		return nil, err
	}
	s.log.Info("erasure request previewed", "request", d.ID, "trace", t.ID, "artifacts", len(t.Artifacts))
	return &Preview{TraceID: t.ID, Counts: *summarize(t), Confirmation: cnf, ExpiresAt: exp}, nil
}

// Confirm checks the confirmation of the latest preview (bound to this
// request and its trace, unexpired, unused), checks that a new trace is the
// same set, and queues the erasure for the worker loop (of this or any serve
// process on the ledger). A confirmation is used once, even by concurrent
// calls in several processes.
func (s *Service) Confirm(ctx context.Context, p *Principal, id, confirmation string) (*Request, error) {
	d, err := s.owned(ctx, p, id, RoleOperator)
	if err != nil {
		return nil, err
	}
	c := d.Confirm
	if c == nil {
		return nil, fmt.Errorf("%w: preview the request first", ErrConflict)
	}
	if !strings.HasPrefix(confirmation, "cnf_") || subtle.ConstantTimeCompare([]byte(tokenHash(confirmation)), []byte(c.SHA256)) != 1 {
		return nil, fmt.Errorf("%w: the confirmation is not the latest preview's of this request; preview again", ErrConflict)
	}
	if c.Used {
		return nil, fmt.Errorf("%w: the confirmation was already used", ErrConflict)
	}
	if s.now().After(c.ExpiresAt) {
		return nil, fmt.Errorf("%w: the confirmation expired; preview again", ErrExpired)
	}
	k, err := subject.ParseKey(d.SubjectKey)
	if err != nil {
		return nil, err
	}
	t, _, err := s.env.Begin(ctx, k, d.Scope)
	if err != nil {
		return nil, traceError(err)
	}
	if t.ID != c.TraceID {
		return nil, fmt.Errorf("%w: the set to erase changed since the preview; preview again", ErrConflict)
	}
	// Single use first: of concurrent confirmations, one wins the update.
	c.Used = true
	d.State = StateQueued
	if err := s.update(ctx, d); err != nil {
		return nil, fmt.Errorf("%w: the confirmation was already used", ErrConflict)
	}
	if err := worker.EnqueueDue(ctx, s.env, t, d.Reason, queueDue(d.DueAt)); err != nil {
		d.State, d.Error = StateFailed, "could not queue the erasure: "+safeReason(err)
		if uerr := s.update(ctx, d); uerr != nil {
			s.log.Error("request: record the queue failure", "request", d.ID, "err", uerr)
		}
		if errors.Is(err, saga.ErrStaleTrace) {
			return nil, fmt.Errorf("%w: the set to erase changed while it was confirmed; preview again", ErrConflict)
		}
		return nil, fmt.Errorf("queue the erasure: %w", err)
	}
	s.log.Info("erasure request confirmed", "request", d.ID, "trace", t.ID, "token", p.TokenID)
	return s.public(d), nil
}

// Request returns one request.
func (s *Service) Request(ctx context.Context, p *Principal, id string) (*Request, error) {
	d, err := s.owned(ctx, p, id, RoleOperator, RoleAuditor)
	if err != nil {
		return nil, err
	}
	return s.public(d), nil
}

// Requests lists the requests in the principal's scopes, oldest first.
func (s *Service) Requests(ctx context.Context, p *Principal, f RequestFilter) ([]Request, error) {
	if p == nil {
		return nil, ErrUnauthorized
	}
	if !p.can(RoleOperator, RoleAuditor) {
		return nil, fmt.Errorf("%w: a %s token may not do this", ErrForbidden, p.Role)
	}
	switch f.State {
	case "", StateReceived, StatePreviewed, StateQueued, StateRunning, StateDone, StateFailed, StatePaused:
	default:
		return nil, Invalid("state", "want received, previewed, queued, running, done, failed or paused")
	}
	docs, err := s.allDocs(ctx)
	if err != nil {
		return nil, err
	}
	out := []Request{}
	for _, d := range docs {
		if !slices.Contains(p.Scopes, d.Scope) || (f.State != "" && d.State != f.State) {
			continue
		}
		r := s.public(d)
		if f.Overdue != nil && r.Overdue != *f.Overdue {
			continue
		}
		out = append(out, *r)
		if f.Limit > 0 && len(out) == f.Limit {
			break
		}
	}
	return out, nil
}

// AllRequests lists every request of every scope (the CLI's `amnesia
// requests`, run by whoever holds the state directory).
func (s *Service) AllRequests(ctx context.Context, f RequestFilter) ([]Request, error) {
	return s.Requests(ctx, &Principal{Role: RoleAuditor, Scopes: s.scopes(ctx)}, f)
}

func (s *Service) scopes(ctx context.Context) []string {
	docs, _ := s.allDocs(ctx)
	var sc []string
	for _, d := range docs {
		if !slices.Contains(sc, d.Scope) {
			sc = append(sc, d.Scope)
		}
	}
	return sc
}

func (s *Service) allDocs(ctx context.Context) ([]*reqDoc, error) {
	rows, err := s.reqs.ListRequests(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*reqDoc, 0, len(rows))
	for i := range rows {
		d, err := decodeDoc(&rows[i])
		if err != nil {
			s.log.Error("request unreadable", "request", rows[i].ID, "err", err)
			continue
		}
		out = append(out, d)
	}
	return out, nil
}

// queueDue is the due date a request's erasure is queued with: the
// request's, brought into the range the queue takes (lineage.CheckDue): an
// overdue request is due a minute from now (its window closes at once, the
// margin being at least a minute).
func queueDue(due time.Time) time.Time {
	now := time.Now()
	if lo := now.Add(time.Minute); due.Before(lo) {
		return lo
	}
	if hi := now.Add(lineage.MaxDue - time.Minute); due.After(hi) {
		return hi
	}
	return due
}
