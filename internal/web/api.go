package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/amnesia-dev/amnesia/internal/service"
)

// Body limits: a JSON form, and a certificate bundle to verify.
const (
	maxForm   = 64 << 10
	maxBundle = 1 << 20
)

type problem struct {
	Status int    `json:"status"`
	Error  string `json:"error"`
	Field  string `json:"field,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true)
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, problem{Status: status, Error: msg})
}

// serviceError maps a service error to a status and a message that never
// carries personal data: the service's errors carry none, and an
// unexpected one is not echoed.
func (h *Handler) serviceError(w http.ResponseWriter, r *http.Request, err error) {
	var inv *service.InvalidError
	switch {
	case errors.As(err, &inv):
		writeJSON(w, http.StatusBadRequest, problem{Status: 400, Error: inv.Error(), Field: inv.Field})
	case errors.Is(err, service.ErrInvalid):
		writeError(w, http.StatusBadRequest, "the input is not valid: check the form")
	case errors.Is(err, service.ErrUnauthorized):
		writeError(w, http.StatusUnauthorized, "not signed in: sign in with your token")
	case errors.Is(err, service.ErrForbidden):
		writeError(w, http.StatusForbidden, "your token's role or scopes do not allow this")
	case errors.Is(err, service.ErrNotFound):
		writeError(w, http.StatusNotFound, "not found")
	case errors.Is(err, service.ErrExpired):
		writeError(w, http.StatusGone, "the confirmation expired: preview the request again")
	case errors.Is(err, service.ErrConflict):
		writeError(w, http.StatusConflict, "the request changed since it was previewed, or the confirmation was used: preview it again")
	case errors.Is(err, service.ErrUnavailable):
		writeError(w, http.StatusServiceUnavailable, "the ledger is not reachable: try again later")
	default:
		// The service's errors hold no personal data; still, the page
		// shows a fixed text and the log only the error's kind.
		h.opts.Logger.Error("web service call failed", "route", r.Pattern, "error_type", errType(err))
		writeError(w, http.StatusInternalServerError, "the server could not do this; its log says more")
	}
}

func errType(err error) string {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return strings.SplitN(err.Error(), ":", 2)[0]
		}
		err = u
	}
}

// readJSON decodes a JSON body strictly into v.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		writeError(w, http.StatusUnsupportedMediaType, "send the form as application/json")
		return false
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxForm))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, "the form is too large")
		} else {
			writeError(w, http.StatusBadRequest, "the form is not the JSON this page sends: reload the page")
		}
		return false
	}
	return true
}

type loginIn struct {
	Token string `json:"token"`
}

type sessionOut struct {
	CSRF      string             `json:"csrf"`
	Principal *service.Principal `json:"principal"`
	Expires   time.Time          `json:"expires"`
}

func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		writeError(w, http.StatusForbidden, "sign in from this server's own page")
		return
	}
	var in loginIn
	if !readJSON(w, r, &in) {
		return
	}
	tok := strings.TrimSpace(in.Token)
	if tok == "" {
		writeError(w, http.StatusBadRequest, "paste your token (amn_…) to sign in")
		return
	}
	p, err := h.svc.Authenticate(tok)
	if err != nil {
		writeError(w, http.StatusUnauthorized, "this token is not valid (unknown or revoked): ask for a token with `amnesia tokens create`")
		return
	}
	// A session cookie already present is replaced, never reused.
	if k, s := h.lookup(r); s != nil {
		h.drop(k)
	}
	id, s := h.newSession(tok)
	h.setCookie(w, id, int(SessionTTL/time.Second))
	writeJSON(w, http.StatusOK, sessionOut{CSRF: s.csrf, Principal: p, Expires: s.expires})
}

func (h *Handler) logout(w http.ResponseWriter, r *http.Request, _ *service.Principal, _ *session) {
	if k, s := h.lookup(r); s != nil {
		h.drop(k)
	}
	h.setCookie(w, "", -1)
	writeJSON(w, http.StatusOK, map[string]bool{"signed_out": true})
}

func (h *Handler) sessionInfo(w http.ResponseWriter, r *http.Request, p *service.Principal, s *session) {
	writeJSON(w, http.StatusOK, sessionOut{CSRF: s.csrf, Principal: p, Expires: s.expires})
}

func (h *Handler) keys(w http.ResponseWriter, r *http.Request, p *service.Principal, _ *session) {
	keys, err := h.svc.PublicKeys(r.Context(), p)
	if err != nil {
		h.serviceError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"keys": keys})
}

type traceIn struct {
	Scope   string `json:"scope"`
	Subject string `json:"subject"`
}

func (h *Handler) trace(w http.ResponseWriter, r *http.Request, p *service.Principal, _ *session) {
	var in traceIn
	if !readJSON(w, r, &in) {
		return
	}
	if strings.TrimSpace(in.Subject) == "" {
		writeJSON(w, http.StatusBadRequest, problem{Status: 400, Error: "type the subject's identifier", Field: "subject"})
		return
	}
	t, err := h.svc.Trace(r.Context(), p, in.Scope, in.Subject)
	if err != nil {
		h.serviceError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

type createIn struct {
	Scope       string `json:"scope"`
	Subject     string `json:"subject"`
	Reason      string `json:"reason"`
	ExternalRef string `json:"external_ref"`
	Due         string `json:"due"` // YYYY-MM-DD or RFC 3339; empty: the default
}

type createOut struct {
	Request *service.Request `json:"request"`
	Preview *service.Preview `json:"preview,omitempty"`
	Error   string           `json:"preview_error,omitempty"`
}

// createRequest creates a request and previews it at once: the page shows
// the counts and asks the person to confirm.
func (h *Handler) createRequest(w http.ResponseWriter, r *http.Request, p *service.Principal, _ *session) {
	var in createIn
	if !readJSON(w, r, &in) {
		return
	}
	if strings.TrimSpace(in.Subject) == "" {
		writeJSON(w, http.StatusBadRequest, problem{Status: 400, Error: "type the subject's identifier", Field: "subject"})
		return
	}
	if strings.TrimSpace(in.Reason) == "" {
		writeJSON(w, http.StatusBadRequest, problem{Status: 400, Error: "give the reason for the erasure (e.g. GDPR Art. 17 request)", Field: "reason"})
		return
	}
	nr := service.NewRequest{Scope: in.Scope, Subject: in.Subject, Reason: strings.TrimSpace(in.Reason), ExternalRef: strings.TrimSpace(in.ExternalRef)}
	if d := strings.TrimSpace(in.Due); d != "" {
		t, err := time.Parse(time.RFC3339, d)
		if err != nil {
			t, err = time.Parse(time.DateOnly, d)
		}
		if err != nil {
			writeJSON(w, http.StatusBadRequest, problem{Status: 400, Error: "the due date is not a date (YYYY-MM-DD)", Field: "due"})
			return
		}
		nr.Due = &t
	}
	req, err := h.svc.CreateRequest(r.Context(), p, nr)
	if err != nil {
		h.serviceError(w, r, err)
		return
	}
	out := createOut{Request: req}
	if pv, err := h.svc.Preview(r.Context(), p, req.ID); err != nil {
		out.Error = "the request was created but could not be previewed; open it from the request list and preview it again"
	} else {
		out.Preview = pv
		if again, err := h.svc.Request(r.Context(), p, req.ID); err == nil {
			out.Request = again
		}
	}
	writeJSON(w, http.StatusCreated, out)
}

var requestStates = map[string]bool{"": true, service.StateReceived: true, service.StatePreviewed: true,
	service.StateQueued: true, service.StateRunning: true, service.StateDone: true, service.StateFailed: true, service.StatePaused: true}

func (h *Handler) listRequests(w http.ResponseWriter, r *http.Request, p *service.Principal, _ *session) {
	q := r.URL.Query()
	f := service.RequestFilter{State: q.Get("state"), Limit: 500}
	if !requestStates[f.State] {
		writeJSON(w, http.StatusBadRequest, problem{Status: 400, Error: "unknown state: one of received, previewed, queued, running, done, failed, paused", Field: "state"})
		return
	}
	switch q.Get("overdue") {
	case "":
	case "true":
		t := true
		f.Overdue = &t
	case "false":
		t := false
		f.Overdue = &t
	default:
		writeJSON(w, http.StatusBadRequest, problem{Status: 400, Error: "overdue is true or false", Field: "overdue"})
		return
	}
	list, err := h.svc.Requests(r.Context(), p, f)
	if err != nil {
		h.serviceError(w, r, err)
		return
	}
	if list == nil {
		list = []service.Request{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"requests": list})
}

func (h *Handler) getRequest(w http.ResponseWriter, r *http.Request, p *service.Principal, _ *session) {
	req, err := h.svc.Request(r.Context(), p, r.PathValue("id"))
	if err != nil {
		h.serviceError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, req)
}

func (h *Handler) preview(w http.ResponseWriter, r *http.Request, p *service.Principal, _ *session) {
	pv, err := h.svc.Preview(r.Context(), p, r.PathValue("id"))
	if err != nil {
		h.serviceError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, pv)
}

type confirmIn struct {
	Confirmation string `json:"confirmation"`
}

func (h *Handler) confirm(w http.ResponseWriter, r *http.Request, p *service.Principal, _ *session) {
	var in confirmIn
	if !readJSON(w, r, &in) {
		return
	}
	if in.Confirmation == "" {
		writeJSON(w, http.StatusBadRequest, problem{Status: 400, Error: "preview the request first: confirming needs its confirmation", Field: "confirmation"})
		return
	}
	req, err := h.svc.Confirm(r.Context(), p, r.PathValue("id"), in.Confirmation)
	if err != nil {
		h.serviceError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, req)
}

var safeName = regexp.MustCompile(`[^A-Za-z0-9._-]`)

func (h *Handler) certificate(w http.ResponseWriter, r *http.Request, p *service.Principal, _ *session) {
	id := r.PathValue("id")
	b, err := h.svc.Certificate(r.Context(), p, id)
	if err != nil {
		h.serviceError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/vnd.amnesia.certificate.v1+json")
	w.Header().Set("Content-Disposition", `attachment; filename="`+safeName.ReplaceAllString(id, "_")+`.amnesia-certificate.json"`)
	_, _ = w.Write(b)
}

// verify asks the server too (the installation's keyring as trust), next
// to the page's own check.
func (h *Handler) verify(w http.ResponseWriter, r *http.Request, p *service.Principal, _ *session) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBundle))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "the certificate file is larger than 1 MiB")
		return
	}
	if len(bytes.TrimSpace(body)) == 0 {
		writeError(w, http.StatusBadRequest, "choose a certificate file")
		return
	}
	v, err := h.svc.Verify(r.Context(), p, body)
	if err != nil {
		h.serviceError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}
