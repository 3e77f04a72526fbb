// Package server is the HTTP front end of `amnesia serve`: the JSON API of
// internal/service, built with huma (OpenAPI 3.1, committed as openapi.json
// and served at /openapi.json), bearer-token authentication, a request body
// limit, per-token rate limits, RFC 9457 problem+json errors that never
// echo personal data, tokens or paths, JSON logs, Prometheus metrics at
// /metrics, TLS when configured, and graceful shutdown.
package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/amnesia-dev/amnesia/internal/service"
	"github.com/amnesia-dev/amnesia/internal/state"
)

// APIVersion is the version of the HTTP API in its OpenAPI document.
const APIVersion = "1.0.0"

// Options configure a Server.
type Options struct {
	Service *service.Service
	Log     *slog.Logger // JSON request log; nil: the service's
	// Registry collects the metrics served at /metrics (the service's
	// metrics should be registered on it too). Nil: a new one.
	Registry *prometheus.Registry
	MaxBody  int64   // request body limit (default 1 MiB)
	Rate     float64 // per-token requests per second, burst the same (default 50)
	// MetricsToken: /metrics needs a valid bearer token (any role).
	MetricsToken bool
	// Mounts are other handlers served by the same listener, by ServeMux
	// pattern: the web page ("/", "/ui/") and MCP ("/mcp"). They get the
	// body limit and the request log, not the bearer check.
	Mounts map[string]http.Handler
}

// Server is the HTTP server of the API.
type Server struct {
	opts    Options
	handler http.Handler
	log     *slog.Logger
	limiter *limiter
	reqs    *prometheus.CounterVec
	dur     *prometheus.HistogramVec
}

// apiConfig is the huma configuration: OpenAPI 3.1 at /openapi.json, no
// docs page, no $schema links in responses.
func apiConfig() huma.Config {
	c := huma.DefaultConfig("amnesia", APIVersion)
	c.Info.Description = "The HTTP API of amnesia serve: record lineage, trace, erasure requests (preview, confirm, execute), certificates and the transparency log. Errors are RFC 9457 problem+json."
	c.CreateHooks = nil
	c.DocsPath = ""
	c.SchemasPath = ""
	c.OpenAPIPath = "/openapi"
	c.Components.SecuritySchemes = map[string]*huma.SecurityScheme{
		"bearer": {Type: "http", Scheme: "bearer", Description: "amnesia tokens create --role R --scope S"},
	}
	return c
}

// OpenAPI returns the API's OpenAPI 3.1 document as committed in
// internal/server/openapi.json.
func OpenAPI() ([]byte, error) {
	api := humago.New(http.NewServeMux(), apiConfig())
	register(api, nil, state.DefaultServeMaxBody)
	b, err := json.MarshalIndent(api.OpenAPI(), "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// New builds the server's handler.
func New(o Options) (*Server, error) {
	if o.Service == nil {
		return nil, errors.New("server: no service")
	}
	if o.MaxBody <= 0 {
		o.MaxBody = state.DefaultServeMaxBody
	}
	if o.Rate <= 0 {
		o.Rate = state.DefaultServeRate
	}
	if o.Registry == nil {
		o.Registry = prometheus.NewRegistry()
	}
	s := &Server{opts: o, log: o.Log, limiter: newLimiter(o.Rate)}
	if s.log == nil {
		s.log = o.Service.Logger()
	}
	s.reqs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "amnesia_http_requests_total", Help: "HTTP requests by method and status code."}, []string{"method", "code"})
	s.dur = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "amnesia_http_request_duration_seconds", Help: "HTTP request duration by method.", Buckets: prometheus.ExponentialBuckets(0.0005, 3, 12)}, []string{"method"})
	if err := o.Registry.Register(s.reqs); err != nil {
		return nil, err
	}
	if err := o.Registry.Register(s.dur); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	api := humago.New(mux, apiConfig())
	register(api, o.Service, o.MaxBody)
	metrics := promhttp.HandlerFor(o.Registry, promhttp.HandlerOpts{})
	mux.Handle("GET /metrics", metrics)
	for pattern, h := range o.Mounts {
		mux.Handle(pattern, http.MaxBytesHandler(h, o.MaxBody))
	}
	s.handler = s.middleware(mux)
	return s, nil
}

// Handler is the server's http.Handler (tests use it with httptest).
func (s *Server) Handler() http.Handler { return s.handler }

type ctxKey int

const (
	principalKey ctxKey = iota
	loggerKey
)

func principal(ctx context.Context) *service.Principal {
	p, _ := ctx.Value(principalKey).(*service.Principal)
	return p
}

func loggerOf(ctx context.Context) *slog.Logger {
	l, _ := ctx.Value(loggerKey).(*slog.Logger)
	return l
}

// needsToken reports whether a path is under the bearer check.
func (s *Server) needsToken(r *http.Request) bool {
	p := r.URL.Path
	switch {
	case p == "/v1/intake/webhook":
		return false
	case strings.HasPrefix(p, "/v1/"):
		return true
	case p == "/metrics":
		return s.opts.MetricsToken
	}
	return false
}

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// middleware authenticates, rate-limits, logs and counts every request.
func (s *Server) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		tokenID := ""
		defer func() {
			code := sw.code
			if code == 0 {
				code = http.StatusOK
			}
			s.reqs.WithLabelValues(r.Method, strconv.Itoa(code)).Inc()
			s.dur.WithLabelValues(r.Method).Observe(time.Since(start).Seconds())
			// The path holds ids only (subjects travel in bodies); no query, no headers.
			s.log.Info("http", "method", r.Method, "path", r.URL.Path, "status", code, "ms", time.Since(start).Milliseconds(), "token", tokenID)
		}()
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if r.ContentLength > s.opts.MaxBody && !(r.URL.Path == "/v1/verify" && r.ContentLength <= service.MaxBundle) {
			writeProblem(sw, http.StatusRequestEntityTooLarge, "the request body is larger than serve.max_body")
			return
		}
		ctx := context.WithValue(r.Context(), loggerKey, s.log)
		rateKey := "ip:" + clientIP(r)
		if s.needsToken(r) {
			tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok {
				sw.Header().Set("WWW-Authenticate", `Bearer realm="amnesia"`)
				writeProblem(sw, http.StatusUnauthorized, "a bearer token is required: Authorization: Bearer amn_...")
				return
			}
			p, err := s.opts.Service.Authenticate(strings.TrimSpace(tok))
			if err != nil {
				if !s.limiter.allow("bad:"+clientIP(r), time.Now()) {
					writeRateLimited(sw)
					return
				}
				code, msg := http.StatusUnauthorized, "the token is not valid (unknown, revoked or malformed)"
				if errors.Is(err, service.ErrUnavailable) {
					code, msg = http.StatusServiceUnavailable, "the token store is not readable"
				}
				sw.Header().Set("WWW-Authenticate", `Bearer realm="amnesia", error="invalid_token"`)
				writeProblem(sw, code, msg)
				return
			}
			tokenID, rateKey = p.TokenID, "tok:"+p.TokenID
			ctx = context.WithValue(ctx, principalKey, p)
		}
		if rateLimited(r.URL.Path) && !s.limiter.allow(rateKey, time.Now()) {
			writeRateLimited(sw)
			return
		}
		next.ServeHTTP(sw, r.WithContext(ctx))
	})
}

// rateLimited: the API (per token, or per client address before a token is
// known), and MCP and the web page's login and calls (per client address:
// they check their own tokens and sessions after this). Health, readiness,
// metrics and the page's static files are not limited.
func rateLimited(p string) bool {
	return strings.HasPrefix(p, "/v1/") || p == "/mcp" || strings.HasPrefix(p, "/mcp/") || strings.HasPrefix(p, "/ui/")
}

func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func writeRateLimited(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	writeProblem(w, http.StatusTooManyRequests, "rate limit of this token reached (serve.rate); retry after a second")
}

// writeProblem writes an RFC 9457 problem outside huma (auth, limits).
func writeProblem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(&huma.ErrorModel{Status: status, Title: http.StatusText(status), Detail: detail})
}

// limiter is a token bucket per key: rate per second, burst max(rate, 1).
type limiter struct {
	mu      sync.Mutex
	rate    float64
	burst   float64
	buckets map[string]*bucket
	swept   time.Time
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newLimiter(rate float64) *limiter {
	return &limiter{rate: rate, burst: max(rate, 1), buckets: map[string]*bucket{}}
}

func (l *limiter) allow(key string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.swept) > time.Minute { // forget idle buckets (they are full again)
		for k, b := range l.buckets {
			if now.Sub(b.last) > time.Minute {
				delete(l.buckets, k)
			}
		}
		l.swept = now
	}
	b := l.buckets[key]
	if b == nil {
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[key] = b
	}
	b.tokens = min(l.burst, b.tokens+now.Sub(b.last).Seconds()*l.rate)
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// Serve serves on ln until ctx ends, then shuts down gracefully: it stops
// accepting, lets requests in flight finish (up to grace), and returns. With
// certFile and keyFile it speaks TLS (1.2 or later).
func (s *Server) Serve(ctx context.Context, ln net.Listener, certFile, keyFile string, grace time.Duration) error {
	hs := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      120 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	errc := make(chan error, 1)
	go func() {
		if certFile != "" {
			hs.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
			errc <- hs.ServeTLS(ln, certFile, keyFile)
		} else {
			errc <- hs.Serve(ln)
		}
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := hs.Shutdown(sctx)
	if e := <-errc; !errors.Is(e, http.ErrServerClosed) && err == nil {
		err = e
	}
	return err
}
