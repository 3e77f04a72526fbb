// Package web is the web page of `amnesia serve` for the people who handle
// erasure requests: sign in with a token, find a subject, see counts per
// store and kind, erase with a reason, follow progress, read the
// certificate in plain words, download it and verify it in the browser.
//
// The page is embedded (static/, embed.FS): no external assets, no
// framework, a strict Content-Security-Policy. Signing in exchanges a token
// for a session cookie (amnesia_session: random 32 bytes, HttpOnly,
// SameSite=Strict, Secure under TLS, 8 hours) kept in a server-side map, and
// a CSRF token that every non-GET request must carry in the X-CSRF-Token
// header. Every API call re-authenticates the token behind the session, so a
// revoked token ends its sessions. Subjects travel only in POST bodies and
// are never logged.
package web

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/amnesia-dev/amnesia/internal/service"
)

//go:embed static
var staticFS embed.FS

// CookieName is the session cookie's name.
const CookieName = "amnesia_session"

// CSRFHeader is the header every non-GET request of a session carries.
const CSRFHeader = "X-CSRF-Token"

// SessionTTL is how long a session lasts after sign-in.
const SessionTTL = 8 * time.Hour

// maxSessions bounds the session map; the oldest session goes first.
const maxSessions = 10000

// CSP is the page's Content-Security-Policy.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// Options configure the handler.
type Options struct {
	// Secure marks the session cookie Secure (serve sets it under TLS).
	Secure bool
	// Logger receives one line per failed request (method, route, status),
	// never a body. Nil: slog.Default().
	Logger *slog.Logger
	// Now overrides the clock (tests).
	Now func() time.Time
}

// Handler serves the page at / and /ui/....
type Handler struct {
	svc  *service.Service
	opts Options
	mux  *http.ServeMux

	mu       sync.Mutex
	sessions map[[32]byte]*session // by SHA-256 of the cookie value
}

type session struct {
	token   string // the bearer token, re-authenticated on every call
	csrf    string
	expires time.Time
	created time.Time
}

// New returns the web handler over svc.
func New(svc *service.Service, o Options) *Handler {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	h := &Handler{svc: svc, opts: o, mux: http.NewServeMux(), sessions: map[[32]byte]*session{}}
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		panic(err) // the embedded directory exists at build time
	}
	files := http.FileServerFS(static)
	page := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		http.ServeFileFS(w, r, static, "index.html")
	}
	h.mux.HandleFunc("GET /{$}", page)
	h.mux.HandleFunc("GET /ui/{$}", page)
	h.mux.HandleFunc("GET /ui/requests", page)
	h.mux.HandleFunc("GET /ui/requests/{id}", page)
	h.mux.HandleFunc("GET /ui/verify", page)
	h.mux.Handle("GET /ui/static/", http.StripPrefix("/ui/static/", noDirs(files)))
	h.mux.HandleFunc("POST /ui/login", h.login)
	h.mux.HandleFunc("POST /ui/logout", h.withSession(h.logout))
	h.mux.HandleFunc("GET /ui/api/session", h.withSession(h.sessionInfo))
	h.mux.HandleFunc("GET /ui/api/keys", h.withSession(h.keys))
	h.mux.HandleFunc("POST /ui/api/trace", h.withSession(h.trace))
	h.mux.HandleFunc("POST /ui/api/requests", h.withSession(h.createRequest))
	h.mux.HandleFunc("GET /ui/api/requests", h.withSession(h.listRequests))
	h.mux.HandleFunc("GET /ui/api/requests/{id}", h.withSession(h.getRequest))
	h.mux.HandleFunc("POST /ui/api/requests/{id}/preview", h.withSession(h.preview))
	h.mux.HandleFunc("POST /ui/api/requests/{id}/confirm", h.withSession(h.confirm))
	h.mux.HandleFunc("GET /ui/api/certificates/{id}", h.withSession(h.certificate))
	h.mux.HandleFunc("POST /ui/api/verify", h.withSession(h.verify))
	return h
}

// Patterns are the paths the handler serves, for a server that mounts it
// next to other handlers on one ServeMux.
var Patterns = []string{"/{$}", "/ui/"}

// ServeHTTP sets the security headers and dispatches.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", CSP)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	hd.Set("Cross-Origin-Resource-Policy", "same-origin")
	if strings.HasPrefix(r.URL.Path, "/ui/api/") || r.URL.Path == "/ui/login" || r.URL.Path == "/ui/logout" {
		hd.Set("Cache-Control", "no-store")
	}
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	h.mux.ServeHTTP(sw, r)
	if sw.status >= 400 {
		// The route pattern, never the path's values, the query or a body.
		h.opts.Logger.Info("web request", "method", r.Method, "route", r.Pattern, "status", sw.status)
	}
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// noDirs refuses directory listings of the static files.
func noDirs(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "" || strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func randomToken() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func sessionKey(cookie string) [32]byte { return sha256.Sum256([]byte(cookie)) }

// newSession stores a session for token and returns its cookie value and
// CSRF token.
func (h *Handler) newSession(token string) (string, *session) {
	now := h.opts.Now()
	id := randomToken()
	s := &session{token: token, csrf: randomToken(), created: now, expires: now.Add(SessionTTL)}
	h.mu.Lock()
	defer h.mu.Unlock()
	for k, v := range h.sessions {
		if !now.Before(v.expires) {
			delete(h.sessions, k)
		}
	}
	for len(h.sessions) >= maxSessions {
		var oldest [32]byte
		var at time.Time
		for k, v := range h.sessions {
			if at.IsZero() || v.created.Before(at) {
				oldest, at = k, v.created
			}
		}
		delete(h.sessions, oldest)
	}
	h.sessions[sessionKey(id)] = s
	return id, s
}

// lookup returns the live session of r's cookie.
func (h *Handler) lookup(r *http.Request) ([32]byte, *session) {
	c, err := r.Cookie(CookieName)
	if err != nil || c.Value == "" {
		return [32]byte{}, nil
	}
	k := sessionKey(c.Value)
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.sessions[k]
	if s == nil {
		return k, nil
	}
	if !h.opts.Now().Before(s.expires) {
		delete(h.sessions, k)
		return k, nil
	}
	return k, s
}

func (h *Handler) drop(k [32]byte) {
	h.mu.Lock()
	delete(h.sessions, k)
	h.mu.Unlock()
}

func (h *Handler) setCookie(w http.ResponseWriter, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{
		Name:     CookieName,
		Value:    value,
		Path:     "/",
		MaxAge:   maxAge,
		HttpOnly: true,
		Secure:   h.opts.Secure,
		SameSite: http.SameSiteStrictMode,
	})
}

// sameOrigin refuses a state-changing request another site's page sent: a
// present Origin header must name this host, and Sec-Fetch-Site, when the
// browser sends it, must not be cross-site.
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return false
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	o = strings.TrimPrefix(strings.TrimPrefix(o, "https://"), "http://")
	return o == r.Host
}

type sessionHandler func(w http.ResponseWriter, r *http.Request, p *service.Principal, s *session)

// withSession resolves the session, checks the CSRF token on every
// non-GET, re-authenticates the session's token and calls next.
func (h *Handler) withSession(next sessionHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		k, s := h.lookup(r)
		if s == nil {
			writeError(w, http.StatusUnauthorized, "not signed in, or the session expired: sign in with your token")
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			got := r.Header.Get(CSRFHeader)
			if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(s.csrf)) != 1 || !sameOrigin(r) {
				writeError(w, http.StatusForbidden, "missing or wrong "+CSRFHeader+" header: reload the page and sign in again")
				return
			}
		}
		p, err := h.svc.Authenticate(s.token)
		if err != nil {
			h.drop(k)
			h.setCookie(w, "", -1)
			writeError(w, http.StatusUnauthorized, "the token behind this session is no longer valid: sign in again")
			return
		}
		next(w, r, p, s)
	}
}
