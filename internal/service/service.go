// Package service is the one service layer every front end of `amnesia serve`
// calls: the HTTP API (internal/server), MCP (internal/mcpserver) and the web
// page (internal/web). It owns an opened installation (state directory, ledger,
// keyring, token store, request store) and exposes plain Go methods with typed
// errors. There is no HTTP in it.
package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/internal/erasure"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/transparency"
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
	// Host is the host name its worker claims for (worker.Worker.Host):
	// required when stores in files have owners.
	Host string
	// PollInterval of the worker loop and of the request bookkeeping
	// (default 1s).
	PollInterval time.Duration
	// Lease of a claimed erasure (default 30s; renewed every third of it):
	// how long the erasure of a killed serve waits before another claims
	// and resumes it.
	Lease time.Duration
	// Log receives structured logs (JSON; never personal data). Nil: the
	// installation's amnesia.log.
	Log *slog.Logger
	// Registerer receives the Prometheus metrics; nil: none registered.
	Registerer prometheus.Registerer
	// HTTPClient sends the callbacks (default: 10s timeout).
	HTTPClient *http.Client
	// NoWorker: Run keeps the requests' bookkeeping and callbacks but
	// claims no erasure (tests).
	NoWorker bool
	// ReverifyEvery overrides reverify.every (0: the configuration's; no
	// schedule when both are 0); ReverifyCheck is how often Run looks for
	// due erasures (default: every, at most an hour).
	ReverifyEvery, ReverifyCheck time.Duration
}

// ArtifactRef names one artifact in a store.
type ArtifactRef struct {
	Store string `json:"store" minLength:"1" maxLength:"128"`
	Key   string `json:"key" minLength:"1" maxLength:"1024"`
}

// LineageRecord is one artifact recorded through the API.
type LineageRecord struct {
	Store    string       `json:"store" minLength:"1" maxLength:"128" doc:"The configured store the record lives in."`
	Key      string       `json:"key" minLength:"1" maxLength:"1024" doc:"The record's key in its store; never personal data."`
	Kind     string       `json:"kind" enum:"source,chunk,embedding,cache,train,log"`
	Subject  string       `json:"subject,omitempty" maxLength:"512" doc:"Raw id of the person; required without a parent. Keyed at once, never stored."`
	Parent   *ArtifactRef `json:"parent,omitempty" doc:"The artifact this one derives from (recorded before)."`
	Content  *string      `json:"content,omitempty" doc:"UTF-8 text: digested with the installation's key, then dropped."`
	Vector   []float32    `json:"vector,omitempty" maxItems:"16384" doc:"An embedding: digested as little-endian float32 bytes, then dropped."`
	Mentions []string     `json:"mentions,omitempty" maxItems:"100" doc:"Raw ids of other people the record mentions."`
	// NewConsent marks the record as new consent of its subject: a subject
	// whose data was erased is refused (409) without it.
	NewConsent bool `json:"new_consent,omitempty" doc:"The subject gave new consent: needed to capture data of a subject that was erased; recorded in the ledger (keyed subject, time, the calling token's id)."`
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
	dir     *state.Dir
	ledger  lineage.Ledger
	reqs    lineage.RequestStore
	queue   lineage.Queue
	env     *erasure.Env
	tokens  *tokenCache
	log     *slog.Logger
	logFile *os.File
	opts    Options
	now     func() time.Time
	secret  []byte
	client  *http.Client
	metrics *metrics

	recMu     sync.Mutex
	recorders map[string]*capture.Recorder

	tlogMu sync.Mutex
	tlog   *transparency.Log

	// stale is set once this host's configuration is found not to be the
	// installation's (another host ran `amnesia config publish`): from then
	// on serve is not ready and refuses to record lineage, until it is
	// restarted with the installation's amnesia.yaml.
	stale atomic.Bool
}

// Open opens the installation in stateDir and its ledger (created when the
// state directory never had one, as an application's first capture does;
// a lost ledger is refused, as by every command).
func Open(ctx context.Context, stateDir string, opts Options) (*Service, error) {
	dir, err := state.Open(stateDir)
	if err != nil {
		return nil, err
	}
	l, err := dir.OpenLedger(ctx, state.LedgerChecked)
	if errors.Is(err, lineage.ErrNoLedger) {
		l, err = dir.OpenLedger(ctx, state.LedgerCreate)
	}
	if err != nil {
		return nil, err
	}
	s := &Service{dir: dir, ledger: l, opts: opts, recorders: map[string]*capture.Recorder{}}
	var ok bool
	if s.reqs, ok = l.(lineage.RequestStore); !ok {
		l.Close()
		return nil, fmt.Errorf("the ledger %T keeps no erasure requests", l)
	}
	if s.queue, ok = l.(lineage.Queue); !ok {
		l.Close()
		return nil, fmt.Errorf("the ledger %T has no erasure queue", l)
	}
	s.log = opts.Log
	if s.log == nil {
		f, err := os.OpenFile(dir.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			l.Close()
			return nil, fmt.Errorf("open log: %w", err)
		}
		s.logFile, s.log = f, slog.New(slog.NewJSONHandler(f, nil))
	}
	s.now = opts.Now
	if s.now == nil {
		s.now = time.Now
	}
	if s.opts.DefaultDue <= 0 {
		s.opts.DefaultDue = dir.Config.Serve.DueDuration()
	}
	if s.opts.PollInterval <= 0 {
		s.opts.PollInterval = time.Second
	}
	if s.opts.Lease <= 0 {
		s.opts.Lease = 30 * time.Second
	}
	if s.opts.WorkerID == "" {
		host, _ := os.Hostname()
		s.opts.WorkerID = fmt.Sprintf("serve:%s:%d", host, os.Getpid())
	}
	s.secret = opts.WebhookSecret
	if s.secret == nil && dir.Config.Serve.WebhookSecret != "" {
		s.secret = []byte(dir.Config.Serve.WebhookSecret)
	}
	s.client = opts.HTTPClient
	if s.client == nil {
		s.client = &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	s.env = &erasure.Env{Dir: dir, Ledger: l, Log: s.log, Via: "serve"}
	s.tokens = &tokenCache{stateDir: dir.Path}
	s.metrics = newMetrics(opts.Registerer)
	return s, nil
}

// Close releases the ledger.
func (s *Service) Close() error {
	err := s.ledger.Close()
	if s.logFile != nil {
		s.logFile.Close()
	}
	return err
}

// StateDir is the installation's state directory.
func (s *Service) StateDir() string { return s.dir.Path }

// Config is the installation's configuration.
func (s *Service) Config() *state.Config { return s.dir.Config }

// Logger is the service's structured log.
func (s *Service) Logger() *slog.Logger { return s.log }

// WebhookSecret is the HMAC secret of the intake endpoint (nil: intake refused).
func (s *Service) WebhookSecret() []byte { return s.secret }

// Ready reports whether the ledger is reachable and, with a shared
// (PostgreSQL) ledger, whether this host's configuration is still the
// installation's (one read of the ledger's configuration version).
func (s *Service) Ready(ctx context.Context) error {
	if _, _, err := s.ledger.Head(ctx); err != nil {
		s.log.Error("readiness: ledger unreachable", "err", err)
		return fmt.Errorf("%w: the ledger is not reachable", ErrUnavailable)
	}
	// A stale service stays stale until restart: no need to read the
	// version again.
	if s.stale.Load() {
		return s.staleErr()
	}
	if err := s.checkConfig(ctx); err != nil && !errors.Is(err, state.ErrConfigMismatch) {
		s.log.Error("readiness: configuration version unreadable", "err", err)
		return fmt.Errorf("%w: the ledger's configuration version cannot be read", ErrUnavailable)
	}
	return s.staleErr()
}

// checkConfig compares this host's configuration with the installation's
// version in the ledger (state.Dir.CheckConfig); a mismatch marks the
// service stale.
func (s *Service) checkConfig(ctx context.Context) error {
	err := s.dir.CheckConfig(ctx, s.ledger)
	if errors.Is(err, state.ErrConfigMismatch) {
		s.markStale(err)
	}
	return err
}

// markStale records that this host's configuration is no longer the
// installation's, and logs it once (the log names the sections that
// differ and the amnesia.yaml path, never a value; API answers say less).
func (s *Service) markStale(err error) {
	if s.stale.CompareAndSwap(false, true) {
		s.log.Error("this host's configuration is no longer the installation's: not ready, lineage is not recorded; restart serve with the installation's amnesia.yaml", "err", err)
	}
}

// ErrStaleConfig is what a stale service answers (with ErrUnavailable:
// HTTP 503): another host published a configuration this host does not
// have.
var ErrStaleConfig = errors.New("this host's configuration is no longer the installation's (another host ran `amnesia config publish`): restart serve with the installation's amnesia.yaml")

// staleErr is ErrStaleConfig (and ErrUnavailable) once the service is
// stale, nil before.
func (s *Service) staleErr() error {
	if s.stale.Load() {
		return fmt.Errorf("%w: %w", ErrUnavailable, ErrStaleConfig)
	}
	return nil
}
