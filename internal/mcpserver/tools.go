package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/amnesia-dev/amnesia/internal/queuestatus"
	"github.com/amnesia-dev/amnesia/internal/service"
	"github.com/amnesia-dev/amnesia/internal/state"
)

// ---- inputs ----

// StatusInput takes nothing.
type StatusInput struct{}

// TraceInput names a subject.
type TraceInput struct {
	Subject string `json:"subject" jsonschema:"the person's id as the application records it (never echoed back)"`
	Scope   string `json:"scope,omitempty" jsonschema:"the tenant; empty for the token's default scope"`
}

// PreviewInput creates an erasure request.
type PreviewInput struct {
	Subject     string `json:"subject" jsonschema:"the person's id as the application records it (never echoed back)"`
	Reason      string `json:"reason" jsonschema:"why the data is erased, e.g. 'GDPR Art. 17 request' (no personal data)"`
	Scope       string `json:"scope,omitempty" jsonschema:"the tenant; empty for the token's default scope"`
	ExternalRef string `json:"external_ref,omitempty" jsonschema:"the id of the request in another system (no personal data)"`
	Due         string `json:"due,omitempty" jsonschema:"due date, RFC 3339; empty for the installation's default"`
}

// RequestInput names a request.
type RequestInput struct {
	RequestID string `json:"request_id" jsonschema:"the request id (req_...) preview returned"`
}

// VerifyInput is a certificate bundle to verify, given whole or by id.
type VerifyInput struct {
	Bundle        string `json:"bundle,omitempty" jsonschema:"the certificate bundle's JSON text"`
	CertificateID string `json:"certificate_id,omitempty" jsonschema:"or the id of a certificate this installation issued"`
}

// CertificateInput names a certificate.
type CertificateInput struct {
	CertificateID string `json:"certificate_id" jsonschema:"the certificate id a finished request names"`
}

// ---- outputs ----

// StoreInfo is one configured store.
type StoreInfo struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// QueueCounts counts the requests waiting for or in an erasure.
type QueueCounts struct {
	Queued  int `json:"queued"`
	Running int `json:"running"`
}

// StatusOutput describes the installation as the caller's token sees it.
type StatusOutput struct {
	TokenID  string         `json:"token_id"`
	Role     string         `json:"role"`
	Scopes   []string       `json:"scopes"`
	Stores   []StoreInfo    `json:"stores"`
	Requests map[string]int `json:"requests" jsonschema:"requests in the token's scopes, by state"`
	Overdue  int            `json:"overdue" jsonschema:"requests past their due date and not done"`
	Queue    QueueCounts    `json:"queue"`
	// ErasureQueue is the ledger's erasure queue as GET /v1/status gives
	// it (the same object, restricted to the token's scopes, errors by
	// class): counts, overdue and unresolved failures, the first open
	// erasures and each store's delete persistence latency. Absent for a
	// token whose role does not read it (operator and auditor do).
	ErasureQueue *queuestatus.Report `json:"erasure_queue,omitempty" jsonschema:"the erasure queue: counts, overdue, unresolved failures, open erasures (keyed subject refs only), each store's delete persistence latency"`
	Note         string              `json:"note,omitempty"`
}

// statusOpenLimit is how many open erasures status lists.
const statusOpenLimit = 20

// StoreCount is the count of one store in a trace.
type StoreCount struct {
	Store   string         `json:"store"`
	Kinds   map[string]int `json:"kinds"`
	Records int            `json:"records"`
}

// TraceOutput is a trace in counts.
type TraceOutput struct {
	TraceID       string       `json:"trace_id"`
	SubjectRef    string       `json:"subject_ref" jsonschema:"keyed reference of the subject (not the id)"`
	Scope         string       `json:"scope"`
	Artifacts     int          `json:"artifacts"`
	Mentions      int          `json:"mentions"`
	AlreadyErased int          `json:"already_erased"`
	Stores        []StoreCount `json:"stores"`
}

// PreviewOutput is a new request and what erasing it would touch.
type PreviewOutput struct {
	RequestID string      `json:"request_id"`
	State     string      `json:"state"`
	DueAt     string      `json:"due_at"`
	Counts    TraceOutput `json:"counts"`
	Next      string      `json:"next"`
}

// RequestOutput is a request's state.
type RequestOutput struct {
	RequestID         string `json:"request_id"`
	State             string `json:"state"`
	Overdue           bool   `json:"overdue"`
	ReceivedAt        string `json:"received_at"`
	DueAt             string `json:"due_at"`
	UpdatedAt         string `json:"updated_at,omitempty"`
	Reason            string `json:"reason"`
	ExternalRef       string `json:"external_ref,omitempty"`
	SubjectRef        string `json:"subject_ref"`
	Scope             string `json:"scope"`
	TraceID           string `json:"trace_id,omitempty"`
	ErasureID         string `json:"erasure_id,omitempty"`
	CertificateID     string `json:"certificate_id,omitempty"`
	CertificateSHA256 string `json:"certificate_sha256,omitempty"`
	Complete          *bool  `json:"complete,omitempty"`
	Error             string `json:"error,omitempty"`
}

// ForgetOutput is what forget did.
type ForgetOutput struct {
	Confirmed bool          `json:"confirmed" jsonschema:"whether the human confirmed the erasure"`
	Request   RequestOutput `json:"request"`
	ConfirmAt string        `json:"confirm_at,omitempty" jsonschema:"the web page where the human confirms, when the client cannot ask"`
	Message   string        `json:"message"`
}

// VerifyOutput is the outcome of verifying a bundle.
type VerifyOutput struct {
	Valid         bool   `json:"valid"`
	KeyID         string `json:"key_id,omitempty"`
	CertificateID string `json:"certificate_id,omitempty"`
	LogIndex      int64  `json:"log_index"`
	Complete      bool   `json:"complete"`
	ErrorKind     string `json:"error_kind,omitempty"`
	Error         string `json:"error,omitempty"`
}

// CertificateOutput is a certificate bundle.
type CertificateOutput struct {
	CertificateID string `json:"certificate_id"`
	MediaType     string `json:"media_type"`
	SHA256        string `json:"sha256"`
	Bundle        string `json:"bundle" jsonschema:"the bundle's JSON text (DSSE envelope, log entry); it holds refs and counts, never personal data"`
}

// certificateMediaType is the bundle's media type (as GET /v1/certificates/{id}).
const certificateMediaType = "application/vnd.amnesia.certificate.v1+json"

func (s *Server) addTools(srv *mcp.Server, who principalFunc) {
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	mcp.AddTool(srv, &mcp.Tool{Name: "status", Title: "Installation status",
		Description: "The installation as this token sees it: its role and scopes, the configured stores, requests by state, overdue requests, queued and running erasures; for operator and auditor tokens the erasure queue (counts, overdue and unresolved failed erasures, the first 20 open ones with their last error, each store's delete persistence latency).",
		Annotations: ro}, wrap(s, "status", who, s.status))
	mcp.AddTool(srv, &mcp.Tool{Name: "trace", Title: "Trace a subject",
		Description: "Count what the ledger records for a subject: artifacts per store and kind, mentions, already erased. Returns counts and a trace id, never content or the subject's id.",
		Annotations: ro}, wrap(s, "trace", who, s.trace))
	mcp.AddTool(srv, &mcp.Tool{Name: "preview", Title: "Create and preview an erasure request",
		Description: "Create an erasure request for a subject with a reason, and preview it: the counts that erasing would touch and the request id. Nothing is erased; call forget with the request id next.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(false)}}, wrap(s, "preview", who, s.preview))
	mcp.AddTool(srv, &mcp.Tool{Name: "forget", Title: "Erase a previewed request",
		Description: "Erase the data of a previewed request, after the human confirms the exact counts: the client asks the human (elicitation); a client that cannot ask gets the web page where the human confirms, and nothing is erased here. Returns the request's state and, when done, the certificate id.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true)}}, wrap(s, "forget", who, s.forget))
	mcp.AddTool(srv, &mcp.Tool{Name: "request", Title: "Request status",
		Description: "The state of an erasure request: received, previewed, queued, running, done, failed or paused; when done, its certificate id and whether the erasure was complete.",
		Annotations: ro}, wrap(s, "request", who, s.request))
	mcp.AddTool(srv, &mcp.Tool{Name: "verify", Title: "Verify a certificate",
		Description: "Verify a certificate bundle (given whole, or by the id of one this installation issued) against the installation's keyring and transparency log.",
		Annotations: ro}, wrap(s, "verify", who, s.verify))
	mcp.AddTool(srv, &mcp.Tool{Name: "certificate", Title: "Fetch a certificate",
		Description: "Fetch a certificate bundle by id: the signed statement of what was erased and how it was verified (refs and counts, never personal data).",
		Annotations: ro}, wrap(s, "certificate", who, s.certificate))
}

func ptr[T any](v T) *T { return &v }

// handler is a tool's body, called with the resolved principal.
type handler[In, Out any] func(ctx context.Context, req *mcp.CallToolRequest, p *service.Principal, in In) (*mcp.CallToolResult, Out, error)

// wrap resolves the principal, runs h and logs the call (never its arguments).
func wrap[In, Out any](s *Server, tool string, who principalFunc, h handler[In, Out]) mcp.ToolHandlerFor[In, Out] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		start := time.Now()
		var zero Out
		p, err := who(req)
		if err != nil {
			s.logCall(ctx, tool, nil, start, err)
			return nil, zero, toolError(err)
		}
		res, out, err := h(ctx, req, p, in)
		s.logCall(ctx, tool, p, start, err)
		return res, out, err
	}
}

func (s *Server) status(ctx context.Context, _ *mcp.CallToolRequest, p *service.Principal, _ StatusInput) (*mcp.CallToolResult, StatusOutput, error) {
	out := StatusOutput{TokenID: p.TokenID, Role: string(p.Role), Scopes: append([]string{}, p.Scopes...),
		Stores: []StoreInfo{}, Requests: map[string]int{}}
	if s.opts.StateDir != "" {
		cfg, err := state.LoadConfig(filepath.Join(s.opts.StateDir, "amnesia.yaml"))
		if err != nil {
			return nil, StatusOutput{}, errors.New("the installation's configuration cannot be read; run 'amnesia check'")
		}
		for _, st := range cfg.Stores {
			out.Stores = append(out.Stores, StoreInfo{Name: st.Name, Type: st.Type})
		}
	}
	reqs, err := s.svc.Requests(ctx, p, service.RequestFilter{})
	switch {
	case errors.Is(err, service.ErrForbidden):
		out.Note = "this token's role does not read requests"
	case err != nil:
		return nil, StatusOutput{}, toolError(err)
	}
	for _, r := range reqs {
		out.Requests[r.State]++
		if r.Overdue {
			out.Overdue++
		}
		switch r.State {
		case service.StateQueued:
			out.Queue.Queued++
		case service.StateRunning:
			out.Queue.Running++
		}
	}
	q, err := s.svc.QueueStatus(ctx, p, statusOpenLimit, false)
	switch {
	case errors.Is(err, service.ErrForbidden):
		out.Note = strings.TrimPrefix(out.Note+"; this token's role does not read the erasure queue", "; ")
	case errors.Is(err, queuestatus.ErrNoQueue):
		// A ledger without a queue (nothing queued yet): nothing to show.
	case err != nil:
		return nil, StatusOutput{}, toolError(err)
	default:
		out.ErasureQueue = q
	}
	return nil, out, nil
}

func (s *Server) trace(ctx context.Context, _ *mcp.CallToolRequest, p *service.Principal, in TraceInput) (*mcp.CallToolResult, TraceOutput, error) {
	if strings.TrimSpace(in.Subject) == "" {
		return nil, TraceOutput{}, errors.New("invalid input: subject is empty; give the person's id as the application records it")
	}
	t, err := s.svc.Trace(ctx, p, in.Scope, in.Subject)
	if errors.Is(err, service.ErrNotFound) {
		return nil, TraceOutput{}, errors.New(noLineage)
	}
	if err != nil {
		return nil, TraceOutput{}, toolError(err, in.Subject)
	}
	return nil, traceOutput(t), nil
}

// noLineage is the answer for a subject the ledger holds nothing of.
const noLineage = "nothing is recorded for this subject in this scope: check the id (as the application records it) and the scope"

func traceOutput(t *service.TraceSummary) TraceOutput {
	out := TraceOutput{TraceID: t.TraceID, SubjectRef: t.SubjectRef, Scope: t.Scope, Artifacts: t.Artifacts,
		Mentions: t.Mentions, AlreadyErased: t.AlreadyErased, Stores: []StoreCount{}}
	for _, sc := range t.Stores {
		kinds := map[string]int{}
		for k, v := range sc.Kinds {
			kinds[k] = v
		}
		out.Stores = append(out.Stores, StoreCount{Store: sc.Store, Kinds: kinds, Records: sc.Records})
	}
	sort.Slice(out.Stores, func(i, j int) bool { return out.Stores[i].Store < out.Stores[j].Store })
	return out
}

func (s *Server) preview(ctx context.Context, _ *mcp.CallToolRequest, p *service.Principal, in PreviewInput) (*mcp.CallToolResult, PreviewOutput, error) {
	if strings.TrimSpace(in.Subject) == "" {
		return nil, PreviewOutput{}, errors.New("invalid input: subject is empty; give the person's id as the application records it")
	}
	nr := service.NewRequest{Scope: in.Scope, Subject: in.Subject, Reason: in.Reason, ExternalRef: in.ExternalRef}
	if in.Due != "" {
		due, err := time.Parse(time.RFC3339, in.Due)
		if err != nil {
			return nil, PreviewOutput{}, errors.New("invalid input: due is not an RFC 3339 time (e.g. 2026-12-31T00:00:00Z)")
		}
		nr.Due = &due
	}
	r, err := s.svc.CreateRequest(ctx, p, nr)
	if err != nil {
		return nil, PreviewOutput{}, toolError(err, in.Subject)
	}
	pv, err := s.svc.Preview(ctx, p, r.ID)
	if errors.Is(err, service.ErrNotFound) {
		return nil, PreviewOutput{}, fmt.Errorf("request %s was created, but %s", r.ID, noLineage)
	}
	if err != nil {
		return nil, PreviewOutput{}, toolError(err, in.Subject)
	}
	// pv.Confirmation is dropped here: the model never holds it.
	return nil, PreviewOutput{
		RequestID: r.ID, State: service.StatePreviewed, DueAt: r.DueAt.UTC().Format(time.RFC3339),
		Counts: traceOutput(&pv.Counts),
		Next:   "call forget with request_id " + r.ID + " to erase; the human confirms the counts before anything is erased",
	}, nil
}

func (s *Server) request(ctx context.Context, _ *mcp.CallToolRequest, p *service.Principal, in RequestInput) (*mcp.CallToolResult, RequestOutput, error) {
	r, err := s.svc.Request(ctx, p, in.RequestID)
	if err != nil {
		return nil, RequestOutput{}, toolError(err)
	}
	return nil, requestOutput(r), nil
}

func requestOutput(r *service.Request) RequestOutput {
	out := RequestOutput{
		RequestID: r.ID, State: r.State, Overdue: r.Overdue, Reason: r.Reason, ExternalRef: r.ExternalRef,
		SubjectRef: r.SubjectRef, Scope: r.Scope, TraceID: r.TraceID, ErasureID: r.ErasureID,
		CertificateID: r.CertificateID, CertificateSHA256: r.CertificateSHA256, Complete: r.Complete, Error: r.Error,
		ReceivedAt: timeText(r.ReceivedAt), DueAt: timeText(r.DueAt), UpdatedAt: timeText(r.UpdatedAt),
	}
	return out
}

func timeText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func (s *Server) verify(ctx context.Context, _ *mcp.CallToolRequest, p *service.Principal, in VerifyInput) (*mcp.CallToolResult, VerifyOutput, error) {
	var bundle []byte
	switch {
	case in.Bundle != "" && in.CertificateID != "":
		return nil, VerifyOutput{}, errors.New("invalid input: give bundle or certificate_id, not both")
	case in.Bundle != "":
		bundle = []byte(in.Bundle)
	case in.CertificateID != "":
		b, err := s.svc.Certificate(ctx, p, in.CertificateID)
		if err != nil {
			return nil, VerifyOutput{}, toolError(err)
		}
		bundle = b
	default:
		return nil, VerifyOutput{}, errors.New("invalid input: give bundle (the bundle's JSON text) or certificate_id")
	}
	v, err := s.svc.Verify(ctx, p, bundle)
	if err != nil {
		return nil, VerifyOutput{}, toolError(err)
	}
	return nil, VerifyOutput{Valid: v.Valid, KeyID: v.KeyID, CertificateID: v.CertificateID, LogIndex: v.LogIndex,
		Complete: v.Complete, ErrorKind: v.ErrorKind, Error: v.Error}, nil
}

func (s *Server) certificate(ctx context.Context, _ *mcp.CallToolRequest, p *service.Principal, in CertificateInput) (*mcp.CallToolResult, CertificateOutput, error) {
	b, err := s.svc.Certificate(ctx, p, in.CertificateID)
	if err != nil {
		return nil, CertificateOutput{}, toolError(err)
	}
	sum := sha256.Sum256(b)
	return nil, CertificateOutput{CertificateID: in.CertificateID, MediaType: certificateMediaType,
		SHA256: hex.EncodeToString(sum[:]), Bundle: string(b)}, nil
}
