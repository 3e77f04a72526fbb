package web_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/internal/service"
	"github.com/amnesia-dev/amnesia/internal/web"
)

// site is the web handler on a test server over a real installation.
type site struct {
	t        *testing.T
	stateDir string
	svc      *service.Service
	srv      *httptest.Server
	logs     *syncBuffer // the web handler's and the service's logs
	now      time.Time
}

func newSite(t *testing.T, o web.Options) *site {
	t.Helper()
	s := &site{t: t, stateDir: installation(t), logs: &syncBuffer{}, now: time.Now()}
	s.svc = openService(t, s.stateDir, s.logs)
	o.Logger = slog.New(slog.NewJSONHandler(s.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if o.Now == nil {
		o.Now = func() time.Time { return s.now }
	}
	s.srv = httptest.NewServer(web.New(s.svc, o))
	t.Cleanup(s.srv.Close)
	return s
}

// client is a browser-like client: a cookie jar and the CSRF token.
type client struct {
	s    *site
	http *http.Client
	csrf string
}

func (s *site) client() *client {
	jar, _ := cookiejar.New(nil)
	return &client{s: s, http: &http.Client{Jar: jar}}
}

type resp struct {
	status int
	header http.Header
	body   string
}

func (c *client) do(method, path, body string, hdr map[string]string) resp {
	c.s.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, c.s.srv.URL+path, r)
	if err != nil {
		c.s.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := c.http.Do(req)
	if err != nil {
		c.s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return resp{res.StatusCode, res.Header, string(b)}
}

// post sends a JSON body with the session's CSRF token.
func (c *client) post(path, body string) resp {
	return c.do("POST", path, body, map[string]string{web.CSRFHeader: c.csrf})
}

func (c *client) login(tok string) resp {
	c.s.t.Helper()
	r := c.do("POST", "/ui/login", `{"token":"`+tok+`"}`, nil)
	if r.status == 200 {
		var out struct {
			CSRF string `json:"csrf"`
		}
		if err := json.Unmarshal([]byte(r.body), &out); err != nil || out.CSRF == "" {
			c.s.t.Fatalf("login answer without a CSRF token: %s", r.body)
		}
		c.csrf = out.CSRF
	}
	return r
}

func TestSecurityHeaders(t *testing.T) {
	srv := httptest.NewServer(web.New(nil, web.Options{Logger: slog.New(slog.DiscardHandler)}))
	defer srv.Close()
	for _, path := range []string{"/", "/ui/requests/req_0123456789abcdef", "/ui/static/app.js", "/ui/static/style.css", "/ui/api/session", "/ui/static/nope.js"} {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		h := res.Header
		if got := h.Get("Content-Security-Policy"); got != web.CSP {
			t.Errorf("%s: CSP %q", path, got)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: nosniff %q, referrer %q", path, h.Get("X-Content-Type-Options"), h.Get("Referrer-Policy"))
		}
	}
	if !strings.Contains(web.CSP, "script-src 'self';") || !strings.Contains(web.CSP, "frame-ancestors 'none'") || strings.Contains(web.CSP, "unsafe") {
		t.Fatalf("CSP %q", web.CSP)
	}
	// The page loads nothing from elsewhere and runs no inline script or style.
	res, _ := http.Get(srv.URL + "/")
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	page := string(b)
	for _, bad := range []string{"http://", "https://", "<script>", " style=", " onclick=", " onload="} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q", bad)
		}
	}
	if res, _ := http.Get(srv.URL + "/ui/static/"); res.StatusCode != 404 {
		t.Errorf("static directory listing: %d", res.StatusCode)
	}
	res, _ = http.Get(srv.URL + "/ui/static/app.js")
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/javascript") {
		t.Errorf("app.js served as %q", ct)
	}
}

func TestLoginCookie(t *testing.T) {
	for _, secure := range []bool{false, true} {
		s := newSite(t, web.Options{Secure: secure})
		tok, _ := token(t, s.stateDir, service.RoleOperator)
		c := s.client()
		r := c.login(tok)
		if r.status != 200 {
			t.Fatalf("login: %d %s", r.status, r.body)
		}
		if strings.Contains(r.body, tok) {
			t.Fatal("the login answer echoes the token")
		}
		raw := r.header.Values("Set-Cookie")
		if len(raw) != 1 {
			t.Fatalf("Set-Cookie: %q", raw)
		}
		ck, err := http.ParseSetCookie(raw[0])
		if err != nil {
			t.Fatal(err)
		}
		if ck.Name != web.CookieName || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/" || ck.Secure != secure {
			t.Errorf("cookie %q: want HttpOnly, SameSite=Strict, Path=/, Secure=%v", raw[0], secure)
		}
		if len(ck.Value) != 43 || ck.MaxAge != int(web.SessionTTL/time.Second) {
			t.Errorf("cookie value of %d characters (want 43: 32 random bytes), max-age %d", len(ck.Value), ck.MaxAge)
		}
		if strings.Contains(ck.Value, tok) || strings.Contains(tok, ck.Value) {
			t.Error("the cookie carries the token")
		}
		// The session works, then ends at logout.
		if r := c.do("GET", "/ui/api/session", "", nil); r.status != 200 || !strings.Contains(r.body, `"role":"operator"`) {
			t.Fatalf("session: %d %s", r.status, r.body)
		}
		if r := c.post("/ui/logout", "{}"); r.status != 200 {
			t.Fatalf("logout: %d %s", r.status, r.body)
		}
		if r := c.do("GET", "/ui/api/session", "", nil); r.status != 401 {
			t.Fatalf("session after logout: %d", r.status)
		}
	}
}

func TestLoginRefused(t *testing.T) {
	s := newSite(t, web.Options{})
	tok, id := token(t, s.stateDir, service.RoleOperator)
	c := s.client()
	for _, tc := range []struct {
		name   string
		body   string
		hdr    map[string]string
		status int
	}{
		{"unknown token", `{"token":"amn_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}`, nil, 401},
		{"empty token", `{"token":""}`, nil, 400},
		{"a form post", "token=" + tok, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415},
		{"another site's page", `{"token":"` + tok + `"}`, map[string]string{"Origin": "https://evil.example"}, 403},
		{"cross-site fetch", `{"token":"` + tok + `"}`, map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
	} {
		r := c.do("POST", "/ui/login", tc.body, tc.hdr)
		if r.status != tc.status || len(r.header.Values("Set-Cookie")) != 0 {
			t.Errorf("%s: %d, cookies %q; want %d and no cookie", tc.name, r.status, r.header.Values("Set-Cookie"), tc.status)
		}
	}
	// A revoked token ends its sessions.
	if r := c.login(tok); r.status != 200 {
		t.Fatalf("login: %d", r.status)
	}
	if err := service.RevokeToken(s.stateDir, id, time.Now()); err != nil {
		t.Fatal(err)
	}
	// The service re-reads tokens.json at most every half second.
	deadline := time.Now().Add(3 * time.Second)
	for {
		r := c.do("GET", "/ui/api/requests", "", nil)
		if r.status == 401 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a revoked token's session: %d %s", r.status, r.body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r := c.do("GET", "/ui/api/session", "", nil); r.status != 401 {
		t.Fatalf("the session of a revoked token was kept: %d", r.status)
	}
	if r := c.login(tok); r.status != 401 {
		t.Fatalf("login with a revoked token: %d", r.status)
	}
}

func TestSessionExpires(t *testing.T) {
	s := newSite(t, web.Options{})
	tok, _ := token(t, s.stateDir, service.RoleOperator)
	c := s.client()
	c.login(tok)
	s.now = s.now.Add(web.SessionTTL - time.Minute)
	if r := c.do("GET", "/ui/api/session", "", nil); r.status != 200 {
		t.Fatalf("before expiry: %d", r.status)
	}
	s.now = s.now.Add(2 * time.Minute)
	if r := c.do("GET", "/ui/api/session", "", nil); r.status != 401 {
		t.Fatalf("after 8 hours: %d", r.status)
	}
}

func TestCSRF(t *testing.T) {
	s := newSite(t, web.Options{})
	tok, _ := token(t, s.stateDir, service.RoleOperator)
	c := s.client()
	c.login(tok)
	other := s.client()
	other.login(tok)
	body := `{"scope":"","subject":"` + subjectA + `"}`
	// A token one character off: the first character changed to another
	// one (a fixed replacement equals the token once in 64 sessions).
	wrong := "x" + c.csrf[1:]
	if c.csrf[0] == 'x' {
		wrong = "y" + c.csrf[1:]
	}
	for _, tc := range []struct {
		name string
		hdr  map[string]string
	}{
		{"no header", nil},
		{"empty header", map[string]string{web.CSRFHeader: ""}},
		{"wrong header", map[string]string{web.CSRFHeader: wrong}},
		{"another session's token", map[string]string{web.CSRFHeader: other.csrf}},
		{"right token from another site", map[string]string{web.CSRFHeader: c.csrf, "Origin": "https://evil.example"}},
	} {
		for _, path := range []string{"/ui/api/trace", "/ui/api/requests", "/ui/logout", "/ui/api/requests/req_0123456789abcdef/confirm"} {
			r := c.do("POST", path, body, tc.hdr)
			if r.status != 403 || !strings.Contains(r.body, web.CSRFHeader) {
				t.Errorf("%s, POST %s: %d %s; want 403 naming the header", tc.name, path, r.status, r.body)
			}
		}
	}
	// Nothing was created by the refused posts.
	r := c.do("GET", "/ui/api/requests", "", nil)
	if r.status != 200 || !strings.Contains(r.body, `"requests":[]`) {
		t.Fatalf("requests after refused posts: %d %s", r.status, r.body)
	}
	if r := c.post("/ui/api/trace", body); r.status != 200 {
		t.Fatalf("trace with the CSRF header: %d %s", r.status, r.body)
	}
	// Without a session: 401, not the page's CSRF error.
	if r := s.client().do("POST", "/ui/api/trace", body, map[string]string{web.CSRFHeader: c.csrf}); r.status != 401 {
		t.Fatalf("no session: %d", r.status)
	}
}

func TestRoles(t *testing.T) {
	s := newSite(t, web.Options{})
	aud, _ := token(t, s.stateDir, service.RoleAuditor)
	op, _ := token(t, s.stateDir, service.RoleOperator, "another-tenant")
	c := s.client()
	c.login(aud)
	if r := c.post("/ui/api/trace", `{"subject":"`+subjectA+`"}`); r.status != 403 || strings.Contains(r.body, subjectA) {
		t.Fatalf("auditor trace: %d %s", r.status, r.body)
	}
	if r := c.do("GET", "/ui/api/requests", "", nil); r.status != 200 {
		t.Fatalf("auditor request list: %d %s", r.status, r.body)
	}
	c2 := s.client()
	if r := c2.login(op); r.status != 200 {
		t.Fatalf("login: %d %s", r.status, r.body)
	}
	if r := c2.post("/ui/api/trace", `{"scope":"default","subject":"`+subjectA+`"}`); r.status != 403 {
		t.Fatalf("trace outside the token's scopes: %d %s", r.status, r.body)
	}
}

// TestFlowAndNoSubjectInLogs: trace, create, preview and confirm through
// the page's API; the subject appears in no log line, no answer and no
// stored request.
func TestFlowAndNoSubjectInLogs(t *testing.T) {
	s := newSite(t, web.Options{})
	tok, _ := token(t, s.stateDir, service.RoleOperator)
	c := s.client()
	c.login(tok)
	var answers []string
	post := func(path, body string, want int) string {
		t.Helper()
		r := c.post(path, body)
		if r.status != want {
			t.Fatalf("POST %s: %d %s", path, r.status, r.body)
		}
		answers = append(answers, r.body)
		return r.body
	}
	var tr service.TraceSummary
	json.Unmarshal([]byte(post("/ui/api/trace", `{"subject":"`+subjectA+`"}`, 200)), &tr)
	if tr.Artifacts == 0 || len(tr.Stores) != 2 {
		t.Fatalf("trace: %+v", tr)
	}
	post("/ui/api/trace", `{"subject":"`+subjectA+`", "extra": 1}`, 400)
	post("/ui/api/requests", `{"subject":"`+subjectA+`","reason":""}`, 400)
	post("/ui/api/requests", `{"subject":"`+subjectA+`","reason":"GDPR Art. 17","due":"tomorrow"}`, 400)
	var created struct {
		Request *service.Request `json:"request"`
		Preview *service.Preview `json:"preview"`
	}
	json.Unmarshal([]byte(post("/ui/api/requests", `{"subject":"`+subjectA+`","reason":"GDPR Art. 17","external_ref":"TICKET-1"}`, 201)), &created)
	if created.Request == nil || created.Preview == nil || created.Preview.Confirmation == "" || created.Preview.Counts.Artifacts != tr.Artifacts {
		t.Fatalf("create: %+v", created)
	}
	id := created.Request.ID
	post("/ui/api/requests/"+id+"/confirm", `{"confirmation":"cnf_wrong"}`, 409)
	var req service.Request
	json.Unmarshal([]byte(post("/ui/api/requests/"+id+"/confirm", `{"confirmation":"`+created.Preview.Confirmation+`"}`, 200)), &req)
	if req.State != service.StateQueued {
		t.Fatalf("confirmed request in state %q", req.State)
	}
	post("/ui/api/requests/"+id+"/confirm", `{"confirmation":"`+created.Preview.Confirmation+`"}`, 409)
	r := c.do("GET", "/ui/api/requests?state=queued", "", nil)
	if r.status != 200 || !strings.Contains(r.body, id) {
		t.Fatalf("queued list: %d %s", r.status, r.body)
	}
	answers = append(answers, r.body)
	if r := c.do("GET", "/ui/api/requests?state=bogus", "", nil); r.status != 400 {
		t.Fatalf("bogus state: %d", r.status)
	}
	// Drive the worker until the request is done.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.svc.Run(ctx) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		r := c.do("GET", "/ui/api/requests/"+id, "", nil)
		json.Unmarshal([]byte(r.body), &req)
		if req.State == service.StateDone || req.State == service.StateFailed || time.Now().After(deadline) {
			answers = append(answers, r.body)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	<-done
	if req.State != service.StateDone || req.CertificateID == "" {
		t.Fatalf("request ended %q (error %q)", req.State, req.Error)
	}
	cr := c.do("GET", "/ui/api/certificates/"+req.CertificateID, "", nil)
	if cr.status != 200 || cr.header.Get("Content-Type") != "application/vnd.amnesia.certificate.v1+json" ||
		!strings.HasPrefix(cr.header.Get("Content-Disposition"), "attachment;") {
		t.Fatalf("certificate: %d %q %q", cr.status, cr.header.Get("Content-Type"), cr.header.Get("Content-Disposition"))
	}
	vr := c.do("POST", "/ui/api/verify", cr.body, map[string]string{web.CSRFHeader: c.csrf})
	if vr.status != 200 || !strings.Contains(vr.body, `"valid":true`) {
		t.Fatalf("server verify: %d %s", vr.status, vr.body)
	}
	answers = append(answers, cr.body)

	logs := s.logs.String()
	if !strings.Contains(logs, `"status":409`) {
		t.Fatalf("the web log holds no line for the refused confirmation:\n%s", logs)
	}
	for _, canary := range []string{subjectA, "Canary", "alice"} {
		if strings.Contains(logs, canary) {
			t.Errorf("the logs hold %q", canary)
		}
		for _, a := range answers {
			if strings.Contains(a, canary) {
				t.Errorf("an answer holds %q: %s", canary, a)
			}
		}
	}
}

// TestAssetsSelfContained: the page's files load nothing from elsewhere and
// never parse data as HTML.
func TestAssetsSelfContained(t *testing.T) {
	files, err := filepath.Glob("static/*")
	if err != nil || len(files) < 5 {
		t.Fatalf("static files: %v %v", files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// The predicate type is a name, not an address the page loads.
		s := strings.ReplaceAll(string(b), `"https://amnesia.dev/erasure-certificate/v1"`, "")
		for _, bad := range []string{"http://", "https://", "innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "@import", "url(http"} {
			if strings.Contains(s, bad) {
				t.Errorf("%s holds %q", f, bad)
			}
		}
	}
}
