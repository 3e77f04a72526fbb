package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/amnesia-dev/amnesia/internal/service"
)

// confirmInput is the key of forget's elicitation in the multi round-trip
// input requests (the client echoes it back with the human's answer).
const confirmInput = "confirm_erasure"

// pendingConfirmation is a preview's confirmation waiting for the human's
// answer. It stays in this process: the model never sees the confirmation
// secret, only the client holds the opaque handle (RequestState) until the
// answer comes back, and the handle is single-use.
type pendingConfirmation struct {
	requestID    string
	traceID      string
	tokenID      string
	confirmation string
	expires      time.Time
}

type pendingStore struct {
	mu sync.Mutex
	m  map[string]*pendingConfirmation
}

func newPendingStore() *pendingStore { return &pendingStore{m: map[string]*pendingConfirmation{}} }

// put keeps pc and returns its handle (random, 32 bytes).
func (ps *pendingStore) put(pc *pendingConfirmation) (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	h := "mcpc_" + base64.RawURLEncoding.EncodeToString(b[:])
	ps.mu.Lock()
	defer ps.mu.Unlock()
	now := time.Now()
	for k, v := range ps.m {
		if now.After(v.expires) {
			delete(ps.m, k)
		}
	}
	ps.m[h] = pc
	return h, nil
}

// take removes and returns the confirmation of handle h, nil when there is
// none (never issued, already used, or expired).
func (ps *pendingStore) take(h string) *pendingConfirmation {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	pc := ps.m[h]
	delete(ps.m, h)
	if pc == nil || time.Now().After(pc.expires) {
		return nil
	}
	return pc
}

// canElicitForm reports whether the client declared form elicitation (an
// empty elicitation capability means form, for older clients).
func canElicitForm(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	ip := ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.Elicitation == nil {
		return false
	}
	e := ip.Capabilities.Elicitation
	return e.Form != nil || e.URL == nil
}

// webPath is the page where the human confirms request id.
func (s *Server) webPath(id string) string {
	return strings.TrimRight(s.opts.WebBase, "/") + "/ui/requests/" + id
}

// forget asks the human to confirm the previewed set and, on acceptance,
// queues the erasure and waits for it.
//
// It runs in two rounds (multi round-trip requests, SEP-2322; the SDK does
// the same through ServerSession.Elicit for clients on older protocol
// versions): the first previews the request again, keeps the confirmation
// here and returns the elicitation; the second, with the human's answer,
// confirms or not.
func (s *Server) forget(ctx context.Context, req *mcp.CallToolRequest, p *service.Principal, in RequestInput) (*mcp.CallToolResult, ForgetOutput, error) {
	if req.Params.RequestState != "" || len(req.Params.InputResponses) > 0 {
		return s.forgetAnswer(ctx, req, p, in)
	}
	r, err := s.svc.Request(ctx, p, in.RequestID)
	if err != nil {
		return nil, ForgetOutput{}, toolError(err)
	}
	switch r.State {
	case service.StateQueued, service.StateRunning, service.StateDone, service.StateFailed, service.StatePaused:
		return nil, ForgetOutput{Confirmed: r.State != service.StateFailed, Request: requestOutput(r),
			Message: "this request was already confirmed; its state is " + r.State + " (nothing new was queued)"}, nil
	}
	if !canElicitForm(req.Session) {
		url := s.webPath(r.ID)
		where := "the web page " + url
		if s.opts.WebBase == "" {
			where = "the web page of this server, " + url
		}
		msg := fmt.Sprintf("Not erased: this MCP client cannot ask the human to confirm. The human confirms the erasure of request %s in %s (log in with an operator token); it shows the same counts. Call the request tool afterwards for its state and certificate.", r.ID, where)
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}},
			ForgetOutput{Confirmed: false, Request: requestOutput(r), ConfirmAt: url, Message: msg}, nil
	}
	pv, err := s.svc.Preview(ctx, p, r.ID)
	if err != nil {
		return nil, ForgetOutput{}, toolError(err)
	}
	handle, err := s.pending.put(&pendingConfirmation{requestID: r.ID, traceID: pv.TraceID, tokenID: p.TokenID,
		confirmation: pv.Confirmation, expires: pv.ExpiresAt})
	if err != nil {
		return nil, ForgetOutput{}, err
	}
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{confirmInput: &mcp.ElicitParams{
			Mode:    "form",
			Message: confirmMessage(r, pv),
			RequestedSchema: &jsonschema.Schema{
				Type: "object",
				Properties: map[string]*jsonschema.Schema{
					"confirm": {Type: "boolean", Title: "Erase now",
						Description: fmt.Sprintf("Erase exactly the %d artifacts of trace %s; this cannot be undone", pv.Counts.Artifacts, pv.TraceID)},
				},
				Required: []string{"confirm"},
			},
		}},
		RequestState: handle,
	}, ForgetOutput{}, nil
}

// confirmMessage is what the human reads: the request, the exact counts and
// the trace id they are bound to. No subject id, no content.
func confirmMessage(r *service.Request, pv *service.Preview) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Erase the data of subject %s (scope %s) for request %s?\n", pv.Counts.SubjectRef, pv.Counts.Scope, r.ID)
	fmt.Fprintf(&b, "Reason: %s\n", r.Reason)
	fmt.Fprintf(&b, "Trace %s: %d artifacts", pv.TraceID, pv.Counts.Artifacts)
	if pv.Counts.AlreadyErased > 0 {
		fmt.Fprintf(&b, " (%d already erased)", pv.Counts.AlreadyErased)
	}
	if pv.Counts.Mentions > 0 {
		fmt.Fprintf(&b, ", %d mentions in other people's records", pv.Counts.Mentions)
	}
	b.WriteString(".\n")
	stores := append([]service.StoreCount{}, pv.Counts.Stores...)
	sort.Slice(stores, func(i, j int) bool { return stores[i].Store < stores[j].Store })
	for _, sc := range stores {
		kinds := make([]string, 0, len(sc.Kinds))
		for k, n := range sc.Kinds {
			kinds = append(kinds, fmt.Sprintf("%d %s", n, k))
		}
		sort.Strings(kinds)
		fmt.Fprintf(&b, "- %s: %d records (%s)\n", sc.Store, sc.Records, strings.Join(kinds, ", "))
	}
	fmt.Fprintf(&b, "This confirmation is bound to this trace and expires at %s. Erasure cannot be undone.", pv.ExpiresAt.UTC().Format(time.RFC3339))
	return b.String()
}

// forgetAnswer is forget's second round: the human's answer.
func (s *Server) forgetAnswer(ctx context.Context, req *mcp.CallToolRequest, p *service.Principal, in RequestInput) (*mcp.CallToolResult, ForgetOutput, error) {
	pc := s.pending.take(req.Params.RequestState)
	if pc == nil || pc.tokenID != p.TokenID || pc.requestID != in.RequestID {
		return nil, ForgetOutput{}, errors.New("not erased: this confirmation is unknown, already used or expired; call forget again")
	}
	answer, _ := req.Params.InputResponses[confirmInput].(*mcp.ElicitResult)
	if answer == nil || answer.Action != "accept" || answer.Content["confirm"] != true {
		r, err := s.svc.Request(ctx, p, pc.requestID)
		if err != nil {
			return nil, ForgetOutput{}, toolError(err)
		}
		action := "gave no answer"
		if answer != nil {
			switch answer.Action {
			case "decline":
				action = "declined"
			case "cancel":
				action = "cancelled"
			case "accept":
				action = "did not tick the confirmation"
			}
		}
		return nil, ForgetOutput{Confirmed: false, Request: requestOutput(r),
			Message: "Not erased: the human " + action + ". Nothing was queued; the request stays " + r.State + "."}, nil
	}
	r, err := s.svc.Confirm(ctx, p, pc.requestID, pc.confirmation)
	if err != nil {
		if errors.Is(err, service.ErrConflict) || errors.Is(err, service.ErrExpired) {
			return nil, ForgetOutput{}, fmt.Errorf("not erased: %v; call forget again to confirm the current counts", toolError(err))
		}
		return nil, ForgetOutput{}, toolError(err)
	}
	r, err = s.waitDone(ctx, p, r)
	if err != nil {
		return nil, ForgetOutput{}, toolError(err)
	}
	out := ForgetOutput{Confirmed: true, Request: requestOutput(r)}
	switch r.State {
	case service.StateDone:
		out.Message = "Erased. Certificate " + r.CertificateID + "; fetch it with the certificate tool, verify it with verify."
		if r.Complete != nil && !*r.Complete {
			out.Message = "Erased, but not every artifact could be verified (the certificate says which). Certificate " + r.CertificateID + "."
		}
	case service.StateFailed:
		out.Message = "The erasure failed: " + r.Error
	default:
		out.Message = "Confirmed and queued; the erasure is " + r.State + ". Call the request tool for its state and certificate."
	}
	return nil, out, nil
}

// waitDone polls request r until it is done, failed or paused, or until
// ForgetWait passes, and returns its last state.
func (s *Server) waitDone(ctx context.Context, p *service.Principal, r *service.Request) (*service.Request, error) {
	deadline := time.Now().Add(s.opts.ForgetWait)
	for {
		switch r.State {
		case service.StateDone, service.StateFailed, service.StatePaused:
			return r, nil
		}
		if time.Now().After(deadline) {
			return r, nil
		}
		select {
		case <-ctx.Done():
			return r, nil
		case <-time.After(200 * time.Millisecond):
		}
		next, err := s.svc.Request(ctx, p, r.ID)
		if err != nil {
			if ctx.Err() != nil {
				return r, nil
			}
			return nil, err
		}
		r = next
	}
}
