// Package mcpserver is amnesia's MCP server (Model Context Protocol, with the
// official Go SDK): the tools status, trace, preview, forget, request, verify
// and certificate, over stdio (`amnesia mcp`) and over streamable HTTP
// (mounted by `amnesia serve` at /mcp). Every tool calls the service layer
// (internal/service) with the caller's Principal: over stdio one token
// authenticated at start, over HTTP the bearer token of each request.
//
// Tool results hold counts, ids, refs and states only: never a raw subject
// id, never content, never a confirmation secret. `forget` never queues an
// erasure without a human's confirmation bound to the previewed set: the
// protocol's elicitation when the client supports it (the human sees the
// exact counts and the trace id and accepts or declines), otherwise a refusal
// that sends the human to the web page (/ui/requests/<id>), where the server
// issues the confirmation to the web session only.
package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/amnesia-dev/amnesia/internal/service"
)

// Options configure a Server.
type Options struct {
	// StateDir is the installation's state directory; status lists the
	// configured stores (name and type) from its amnesia.yaml. Empty: status
	// lists no stores.
	StateDir string
	// WebBase is the base URL of the web page (e.g. "http://127.0.0.1:7468"),
	// used in the message that sends the human to /ui/requests/<id> when the
	// client cannot elicit. Empty: the path alone.
	WebBase string
	// ForgetWait is how long forget waits for a confirmed erasure to finish
	// before it returns the request's state (default 2m). The erasure goes on
	// either way; the request tool reads its state later.
	ForgetWait time.Duration
	// Logger receives one line per tool call (tool, token id, outcome,
	// duration; never arguments). Nil: no logs.
	Logger *slog.Logger
	// Version is the server version reported to clients.
	Version string
}

// Server is amnesia's MCP server over one service.
type Server struct {
	svc     *service.Service
	opts    Options
	log     *slog.Logger
	pending *pendingStore
	schemas *mcp.SchemaCache
}

// New returns a Server over svc.
func New(svc *service.Service, opts Options) *Server {
	if opts.ForgetWait <= 0 {
		opts.ForgetWait = 2 * time.Minute
	}
	// A version text may span lines (amnesia version): its first line,
	// without the program's name.
	if i := strings.IndexByte(opts.Version, '\n'); i >= 0 {
		opts.Version = opts.Version[:i]
	}
	opts.Version = strings.TrimSpace(strings.TrimPrefix(opts.Version, "amnesia "))
	if opts.Version == "" {
		opts.Version = "dev"
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Server{svc: svc, opts: opts, log: log, pending: newPendingStore(), schemas: mcp.NewSchemaCache()}
}

// principalKey is where the HTTP transport's TokenInfo.Extra keeps the
// authenticated principal.
const principalKey = "amnesia.principal"

// principalFunc resolves the caller of one tool call.
type principalFunc func(req *mcp.CallToolRequest) (*service.Principal, error)

// mcpServer builds the SDK server with every tool, its calls made as who(req).
func (s *Server) mcpServer(who principalFunc) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "amnesia", Title: "amnesia", Version: s.opts.Version}, &mcp.ServerOptions{
		Instructions: instructions,
		Logger:       s.log,
		SchemaCache:  s.schemas,
	})
	s.addTools(srv, who)
	return srv
}

const instructions = `amnesia erases a person's data from this application's AI memory stores and proves it with a signed certificate.
Tools return counts, ids, references and states only, never the person's id or any content.
To erase: call preview (subject and reason) to create a request and see what would be erased, then forget with the request id.
forget asks the human to confirm the exact counts; without that confirmation nothing is erased.`

// Run serves one MCP session over t (for example &mcp.StdioTransport{}) as
// the principal p until the client disconnects or ctx ends.
func (s *Server) Run(ctx context.Context, t mcp.Transport, p *service.Principal) error {
	if p == nil {
		return errors.New("mcpserver: Run needs an authenticated principal")
	}
	fixed := *p
	srv := s.mcpServer(func(*mcp.CallToolRequest) (*service.Principal, error) { return &fixed, nil })
	return srv.Run(ctx, t)
}

// Handler is the streamable HTTP transport (mount it at /mcp). Every HTTP
// request must carry `Authorization: Bearer amn_...`; a session is bound to
// the token that opened it.
func (s *Server) Handler() http.Handler {
	srv := s.mcpServer(func(req *mcp.CallToolRequest) (*service.Principal, error) {
		if req.Extra != nil && req.Extra.TokenInfo != nil {
			if p, ok := req.Extra.TokenInfo.Extra[principalKey].(*service.Principal); ok && p != nil {
				return p, nil
			}
		}
		return nil, service.ErrUnauthorized
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Logger:         s.log,
		SessionTimeout: 30 * time.Minute,
	})
	return auth.RequireBearerToken(s.verifyToken, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
}

// verifyToken authenticates a bearer token with the service. The session's
// user is the token id, so another token cannot take over a session.
func (s *Server) verifyToken(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	p, err := s.svc.Authenticate(token)
	if err != nil || p == nil {
		// The message never holds the token.
		return nil, fmt.Errorf("%w: unknown or revoked token (create one with 'amnesia tokens create')", auth.ErrInvalidToken)
	}
	return &auth.TokenInfo{UserID: p.TokenID, Scopes: p.Scopes, Extra: map[string]any{principalKey: p}}, nil
}

// toolError turns a service error into the message a tool returns: it names
// what went wrong and what to do, and never holds the raw subject (secrets
// are scrubbed from it as a last resort).
func toolError(err error, secrets ...string) error {
	var inv *service.InvalidError
	var msg string
	switch {
	case errors.As(err, &inv):
		msg = "invalid input: " + inv.Error()
	case errors.Is(err, service.ErrUnauthorized):
		msg = "unauthorized: the token is unknown or revoked; create one with 'amnesia tokens create'"
	case errors.Is(err, service.ErrForbidden):
		msg = "forbidden: this token's role or scopes do not allow this"
	case errors.Is(err, service.ErrNotFound):
		msg = "not found: no such id in this token's scopes"
	case errors.Is(err, service.ErrExpired):
		msg = "expired: " + err.Error()
	case errors.Is(err, service.ErrConflict):
		msg = "conflict: " + err.Error()
	case errors.Is(err, service.ErrUnavailable):
		msg = "unavailable: " + err.Error()
	default:
		msg = err.Error()
	}
	return errors.New(scrub(msg, secrets...))
}

// scrub replaces each non-empty secret in msg.
func scrub(msg string, secrets ...string) string {
	for _, sec := range secrets {
		if strings.TrimSpace(sec) != "" {
			msg = strings.ReplaceAll(msg, sec, "[subject]")
		}
	}
	return msg
}

// logCall logs one tool call without its arguments.
func (s *Server) logCall(ctx context.Context, tool string, p *service.Principal, start time.Time, err error) {
	attrs := []any{"tool", tool, "duration_ms", time.Since(start).Milliseconds()}
	if p != nil {
		attrs = append(attrs, "token_id", p.TokenID)
	}
	if err != nil {
		attrs = append(attrs, "outcome", "error")
		s.log.WarnContext(ctx, "mcp tool call", attrs...)
		return
	}
	attrs = append(attrs, "outcome", "ok")
	s.log.InfoContext(ctx, "mcp tool call", attrs...)
}
