// Package service is the one service layer every front end of `amnesia serve`
// calls: the HTTP API (internal/server), MCP (internal/mcpserver) and the web
// page (internal/web). It owns an opened installation (state directory, ledger,
// keyring, token store, request store) and exposes plain Go methods with typed
// errors. There is no HTTP in it.
package service

import (
	"context"
	"errors"
	"time"
)

// Role is what a token may do.
type Role string

const (
	// RoleCapture records lineage only.
	RoleCapture Role = "capture"
	// RoleOperator traces, previews, confirms and erases, and may do what an auditor does.
	RoleOperator Role = "operator"
	// RoleAuditor reads certificates, verifies bundles, reads the log and the request list.
	RoleAuditor Role = "auditor"
)

// Errors every front end maps to a status. They never carry personal data,
// tokens or paths.
var (
	ErrUnauthorized = errors.New("unauthorized")
	ErrForbidden    = errors.New("forbidden")
	ErrNotFound     = errors.New("not found")
	ErrConflict     = errors.New("conflict")
	ErrExpired      = errors.New("expired")
	ErrInvalid      = errors.New("invalid input")
	ErrUnavailable  = errors.New("unavailable")
)

// InvalidError is an ErrInvalid naming the field that was wrong (never its value).
type InvalidError struct {
	Field  string // JSON path of the field, e.g. "records[3].kind"
	Reason string // what is wrong and what to do, without the value
}

func (e *InvalidError) Error() string { return e.Field + ": " + e.Reason }
func (e *InvalidError) Unwrap() error { return ErrInvalid }

// Invalid builds an InvalidError.
func Invalid(field, reason string) error { return &InvalidError{Field: field, Reason: reason} }

// Principal is an authenticated token.
type Principal struct {
	TokenID string   `json:"token_id"`
	Name    string   `json:"name"`
	Role    Role     `json:"role"`
	Scopes  []string `json:"scopes"`
}

// Options configure Open.
type Options struct {
	// DefaultDue is the due date of a request created without one (default 720h).
	DefaultDue time.Duration
	// WebhookSecret is the HMAC secret of the intake endpoint and of callbacks.
	WebhookSecret []byte
	// Now overrides the clock (tests).
	Now func() time.Time
	// WorkerID names this process in queue claims (default host-pid).
	WorkerID string
	// PollInterval of the worker loop (default 1s).
	PollInterval time.Duration
}

// ArtifactRef names one artifact in a store.
type ArtifactRef struct {
	Store string `json:"store"`
	Key   string `json:"key"`
}

// LineageRecord is one artifact recorded through the API.
type LineageRecord struct {
	Store    string       `json:"store"`
	Key      string       `json:"key"`
	Kind     string       `json:"kind"` // source|chunk|embedding|cache|train|log
	Subject  string       `json:"subject,omitempty"`
	Parent   *ArtifactRef `json:"parent,omitempty"`
	Content  *string      `json:"content,omitempty"`
	Vector   []float32    `json:"vector,omitempty"`
	Mentions []string     `json:"mentions,omitempty"`
}

// RecordResult counts what Record did.
type RecordResult struct {
	Recorded  int `json:"recorded"`
	Unchanged int `json:"unchanged"`
}

// StoreCount is the per-store count of a trace.
type StoreCount struct {
	Store   string         `json:"store"`
	Kinds   map[string]int `json:"kinds"`
	Records int            `json:"records"`
}

// TraceSummary is a trace with counts only, never content.
type TraceSummary struct {
	TraceID       string       `json:"trace_id"`
	SubjectRef    string       `json:"subject_ref"`
	Scope         string       `json:"scope"`
	Artifacts     int          `json:"artifacts"`
	Mentions      int          `json:"mentions"`
	AlreadyErased int          `json:"already_erased"`
	Stores        []StoreCount `json:"stores"`
}

// Request states.
const (
	StateReceived  = "received"
	StatePreviewed = "previewed"
	StateQueued    = "queued"
	StateRunning   = "running"
	StateDone      = "done"
	StateFailed    = "failed"
	StatePaused    = "paused"
)

// NewRequest creates an erasure request.
type NewRequest struct {
	Scope       string     `json:"scope,omitempty"`
	Subject     string     `json:"subject"`
	Reason      string     `json:"reason"`
	ExternalRef string     `json:"external_ref,omitempty"`
	Due         *time.Time `json:"due,omitempty"`
	CallbackURL string     `json:"callback_url,omitempty"`
}

// Request is an erasure request. The raw subject is never stored.
type Request struct {
	ID                string    `json:"id"`
	State             string    `json:"state"`
	Overdue           bool      `json:"overdue"`
	ReceivedAt        time.Time `json:"received_at"`
	DueAt             time.Time `json:"due_at"`
	UpdatedAt         time.Time `json:"updated_at"`
	ExternalRef       string    `json:"external_ref,omitempty"`
	Reason            string    `json:"reason"`
	SubjectRef        string    `json:"subject_ref"`
	Scope             string    `json:"scope"`
	TraceID           string    `json:"trace_id,omitempty"`
	ErasureID         string    `json:"erasure_id,omitempty"`
	CertificateID     string    `json:"certificate_id,omitempty"`
	CertificateSHA256 string    `json:"certificate_sha256,omitempty"`
	Complete          *bool     `json:"complete,omitempty"`
	Error             string    `json:"error,omitempty"`
	HasCallback       bool      `json:"has_callback"`
}

// Preview is the result of previewing a request.
type Preview struct {
	TraceID      string       `json:"trace_id"`
	Counts       TraceSummary `json:"counts"`
	Confirmation string       `json:"confirmation"`
	ExpiresAt    time.Time    `json:"expires_at"`
}

// RequestFilter selects requests.
type RequestFilter struct {
	State   string // empty: all
	Overdue *bool  // nil: all
	Limit   int    // 0: all
}

// Verification is the outcome of verifying a bundle.
type Verification struct {
	Valid         bool   `json:"valid"`
	KeyID         string `json:"key_id,omitempty"`
	CertificateID string `json:"certificate_id,omitempty"`
	LogIndex      int64  `json:"log_index"`
	Complete      bool   `json:"complete"`
	ErrorKind     string `json:"error_kind,omitempty"`
	Error         string `json:"error,omitempty"`
}

// WebhookIntake is a request arriving from a privacy request platform.
type WebhookIntake struct {
	RequestID   string     `json:"request_id"`
	Identity    Identity   `json:"identity"`
	DueAt       *time.Time `json:"due_at,omitempty"`
	CallbackURL string     `json:"callback_url,omitempty"`
	Reason      string     `json:"reason,omitempty"`
}

// Identity of a webhook intake.
type Identity struct {
	Type  string `json:"type"`
	Value string `json:"value"`
}

// PublicKey is one of the installation's public keys.
type PublicKey struct {
	KeyID string `json:"key_id"`
	PEM   string `json:"pem"`
}

// Service is an opened installation.
type Service struct {
	stateDir string
	opts     Options
}

var errNotYet = errors.New("not implemented yet")

// Open opens the installation in stateDir.
func Open(ctx context.Context, stateDir string, opts Options) (*Service, error) {
	return &Service{stateDir: stateDir, opts: opts}, nil
}

// Close releases the ledger.
func (s *Service) Close() error { return nil }

// Authenticate resolves a bearer token.
func (s *Service) Authenticate(token string) (*Principal, error) { return nil, ErrUnauthorized }

// Record records lineage.
func (s *Service) Record(ctx context.Context, p *Principal, scope string, recs []LineageRecord) (RecordResult, error) {
	return RecordResult{}, errNotYet
}

// Trace counts what the ledger holds for a subject.
func (s *Service) Trace(ctx context.Context, p *Principal, scope, rawSubject string) (*TraceSummary, error) {
	return nil, errNotYet
}

// CreateRequest creates an erasure request.
func (s *Service) CreateRequest(ctx context.Context, p *Principal, in NewRequest) (*Request, error) {
	return nil, errNotYet
}

// Intake creates a request from a verified webhook (the caller checked the HMAC).
func (s *Service) Intake(ctx context.Context, in WebhookIntake) (*Request, error) {
	return nil, errNotYet
}

// Preview traces a request and issues a single-use confirmation.
func (s *Service) Preview(ctx context.Context, p *Principal, id string) (*Preview, error) {
	return nil, errNotYet
}

// Confirm queues a previewed request.
func (s *Service) Confirm(ctx context.Context, p *Principal, id, confirmation string) (*Request, error) {
	return nil, errNotYet
}

// Request returns one request.
func (s *Service) Request(ctx context.Context, p *Principal, id string) (*Request, error) {
	return nil, errNotYet
}

// Requests lists requests in the principal's scopes.
func (s *Service) Requests(ctx context.Context, p *Principal, f RequestFilter) ([]Request, error) {
	return nil, errNotYet
}

// Certificate returns a certificate bundle's bytes.
func (s *Service) Certificate(ctx context.Context, p *Principal, id string) ([]byte, error) {
	return nil, errNotYet
}

// Verify verifies an uploaded bundle against the installation's keyring.
func (s *Service) Verify(ctx context.Context, p *Principal, bundle []byte) (*Verification, error) {
	return nil, errNotYet
}

// Checkpoint returns the transparency log's signed checkpoint.
func (s *Service) Checkpoint(ctx context.Context, p *Principal) (string, error) {
	return "", errNotYet
}

// ConsistencyProof proves the log of size newSize extends the one of size oldSize.
func (s *Service) ConsistencyProof(ctx context.Context, p *Principal, oldSize, newSize uint64) ([][]byte, error) {
	return nil, errNotYet
}

// InclusionProof proves leaf index is in the log of size size.
func (s *Service) InclusionProof(ctx context.Context, p *Principal, index, size uint64) (proof [][]byte, leafHash []byte, err error) {
	return nil, nil, errNotYet
}

// PublicKeys returns the installation's public keys.
func (s *Service) PublicKeys(ctx context.Context, p *Principal) ([]PublicKey, error) {
	return nil, errNotYet
}

// Ready reports whether the ledger is reachable.
func (s *Service) Ready(ctx context.Context) error { return errNotYet }

// Run is the worker loop: runs queued requests, calls callbacks; stops on ctx.
func (s *Service) Run(ctx context.Context) error { <-ctx.Done(); return nil }
