package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/amnesia-dev/amnesia/internal/server"
	"github.com/amnesia-dev/amnesia/internal/service"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
)

const alice = "alice@example.org"

type env struct {
	t                                *testing.T
	url                              string
	svc                              *service.Service
	docs                             *sqlitedoc.Store
	capture, operator, auditor, beta string
	secret                           []byte
}

func newEnv(t *testing.T, rate float64) *env {
	t.Helper()
	root := t.TempDir()
	cfg := state.DefaultConfig()
	docPath := filepath.Join(root, "docs.db")
	cfg.Stores = []state.StoreConfig{{Name: "docs", Type: sqlitedoc.Type, Path: docPath}}
	sd, err := state.Init(filepath.Join(root, "state"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ds, err := sqlitedoc.Open(ctx, "docs", docPath, true)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	secret := []byte("test-webhook-secret")
	svc, err := service.Open(ctx, sd.Path, service.Options{PollInterval: 50 * time.Millisecond, Lease: 3 * time.Second, WebhookSecret: secret, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Service: svc, Registry: reg, MaxBody: 64 << 10, Rate: rate})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { svc.Run(runCtx); close(done) }()
	t.Cleanup(func() { stop(); <-done; hs.Close(); svc.Close(); ds.Close() })
	e := &env{t: t, url: hs.URL, svc: svc, docs: ds, secret: secret}
	tok := func(role service.Role, scope string) string {
		s, _, err := service.CreateToken(sd.Path, string(role), role, []string{scope}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	e.capture, e.operator, e.auditor = tok(service.RoleCapture, "default"), tok(service.RoleOperator, "default"), tok(service.RoleAuditor, "default")
	e.beta = tok(service.RoleOperator, "beta")
	return e
}

type resp struct {
	code int
	body []byte
	hdr  http.Header
}

func (e *env) do(method, path, token string, body any, hdr ...string) resp {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	case string:
		rd = strings.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req, _ := http.NewRequest(method, e.url+path, rd)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return resp{r.StatusCode, b, r.Header}
}

func (r resp) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("%d %s: %v", r.code, r.body, err)
	}
}

// want checks the status, and that a problem is problem+json and echoes no
// subject or token.
func (e *env) want(r resp, code int, what string) {
	e.t.Helper()
	if r.code != code {
		e.t.Fatalf("%s: status %d, want %d: %s", what, r.code, code, r.body)
	}
	if code >= 400 {
		if ct := r.hdr.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
			e.t.Fatalf("%s: content type %q, want application/problem+json", what, ct)
		}
		for _, secret := range []string{alice, e.capture, e.operator, e.auditor, e.beta, "/tmp", "state"} {
			if strings.Contains(string(r.body), secret) {
				e.t.Fatalf("%s: the problem echoes %q: %s", what, secret, r.body)
			}
		}
	}
}

func (e *env) ingest(id, owner string) {
	e.t.Helper()
	text := "Document " + id + " asks for a delivery of order 5521 to the depot at gate four next Monday morning."
	if err := e.docs.Put(context.Background(), sqlitedoc.Record{ID: id, Kind: sqlitedoc.KindDocument, Subject: "app", Text: text}); err != nil {
		e.t.Fatal(err)
	}
	r := e.do("POST", "/v1/lineage", e.capture, map[string]any{"records": []map[string]any{{"store": "docs", "key": id, "kind": "source", "subject": owner, "content": text}}})
	e.want(r, 200, "record")
}

func TestAPIEndToEnd(t *testing.T) {
	e := newEnv(t, 1000)
	e.ingest("d1", alice)
	e.ingest("d2", "bob@example.org")
	var sum service.TraceSummary
	r := e.do("POST", "/v1/trace", e.operator, map[string]string{"subject": alice})
	e.want(r, 200, "trace")
	r.json(t, &sum)
	if sum.Artifacts != 1 || sum.Stores[0].Kinds["source"] != 1 {
		t.Fatalf("trace = %+v", sum)
	}
	var req service.Request
	r = e.do("POST", "/v1/requests", e.operator, map[string]string{"subject": alice, "reason": "GDPR-Art17-ticket-9", "external_ref": "TCK-9"})
	e.want(r, 201, "create request")
	r.json(t, &req)
	var pv service.Preview
	r = e.do("POST", "/v1/requests/"+req.ID+"/preview", e.operator, map[string]any{})
	e.want(r, 200, "preview")
	r.json(t, &pv)
	e.want(e.do("POST", "/v1/requests/"+req.ID+"/confirm", e.beta, map[string]string{"confirmation": pv.Confirmation}), 403, "scope beta confirms")
	e.want(e.do("POST", "/v1/requests/"+req.ID+"/confirm", e.operator, map[string]string{"confirmation": pv.Confirmation}), 200, "confirm")
	e.want(e.do("POST", "/v1/requests/"+req.ID+"/confirm", e.operator, map[string]string{"confirmation": pv.Confirmation}), 409, "replayed confirmation")
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		r = e.do("GET", "/v1/requests/"+req.ID, e.auditor, nil)
		e.want(r, 200, "get request")
		r.json(t, &req)
		if req.State == service.StateDone || req.State == service.StateFailed {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if req.State != service.StateDone || req.CertificateID == "" {
		t.Fatalf("request = %+v", req)
	}
	var list struct{ Requests []service.Request }
	r = e.do("GET", "/v1/requests?state=done", e.auditor, nil)
	e.want(r, 200, "list")
	r.json(t, &list)
	if len(list.Requests) != 1 {
		t.Fatalf("done list = %+v", list)
	}
	r = e.do("GET", "/v1/certificates/"+req.CertificateID, e.auditor, nil)
	e.want(r, 200, "certificate")
	if r.hdr.Get("Content-Type") != "application/vnd.amnesia.certificate.v1+json" {
		t.Fatalf("certificate content type %q", r.hdr.Get("Content-Type"))
	}
	bundle := r.body
	e.want(e.do("GET", "/v1/certificates/"+req.CertificateID, e.beta, nil), 403, "scope beta reads the certificate")
	e.want(e.do("GET", "/v1/certificates/"+req.CertificateID, e.capture, nil), 403, "capture token reads the certificate")
	var v service.Verification
	r = e.do("POST", "/v1/verify", e.auditor, bundle, "Content-Type", "application/vnd.amnesia.certificate.v1+json")
	e.want(r, 200, "verify")
	r.json(t, &v)
	if !v.Valid || v.CertificateID != req.CertificateID {
		t.Fatalf("verify = %+v", v)
	}
	tampered := bytes.Replace(bundle, []byte(`"logIndex": `), []byte(`"logIndex": 9`), 1)
	r = e.do("POST", "/v1/verify", e.auditor, tampered, "Content-Type", "application/vnd.amnesia.certificate.v1+json")
	e.want(r, 200, "verify tampered")
	v = service.Verification{}
	r.json(t, &v)
	if v.Valid || v.ErrorKind == "" {
		t.Fatalf("tampered verify = %+v", v)
	}
	r = e.do("GET", "/v1/log/checkpoint", e.auditor, nil)
	e.want(r, 200, "checkpoint")
	if !strings.Contains(string(r.body), "\n\n") {
		t.Fatalf("checkpoint %q", r.body)
	}
	var pr struct {
		Proof    [][]byte `json:"proof"`
		LeafHash []byte   `json:"leaf_hash"`
	}
	r = e.do("GET", "/v1/log/inclusion?index="+itoa(v.LogIndex)+"&size="+itoa(v.LogIndex+1), e.auditor, nil)
	e.want(r, 200, "inclusion")
	r.json(t, &pr)
	if len(pr.LeafHash) != 32 {
		t.Fatalf("inclusion = %+v", pr)
	}
	e.want(e.do("GET", "/v1/log/consistency?old=1&new=1", e.auditor, nil), 200, "consistency")
	e.want(e.do("GET", "/v1/log/consistency?old=5&new=1", e.auditor, nil), 422, "consistency out of range")
	r = e.do("GET", "/v1/keys", e.capture, nil)
	e.want(r, 200, "keys")
	if !strings.Contains(string(r.body), "BEGIN PUBLIC KEY") {
		t.Fatalf("keys: %s", r.body)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestAPIAbuse(t *testing.T) {
	e := newEnv(t, 1000)
	e.ingest("d1", alice)
	// No token, a bad token, a token of the wrong role or scope.
	e.want(e.do("POST", "/v1/trace", "", map[string]string{"subject": alice}), 401, "no token")
	e.want(e.do("POST", "/v1/trace", "amn_notatoken", map[string]string{"subject": alice}), 401, "bad token")
	e.want(e.do("POST", "/v1/trace", "Basic x", map[string]string{"subject": alice}), 401, "not a bearer")
	e.want(e.do("POST", "/v1/trace", e.capture, map[string]string{"subject": alice}), 403, "capture traces")
	e.want(e.do("POST", "/v1/trace", e.auditor, map[string]string{"subject": alice}), 403, "auditor traces")
	e.want(e.do("POST", "/v1/trace", e.beta, map[string]string{"subject": alice, "scope": "default"}), 403, "scope beta traces default")
	e.want(e.do("POST", "/v1/trace", e.beta, map[string]string{"subject": alice}), 404, "scope beta traces its own scope")
	e.want(e.do("POST", "/v1/requests", e.beta, map[string]string{"subject": alice, "reason": "T-1", "scope": "default"}), 403, "scope beta creates in default")
	var req service.Request
	r := e.do("POST", "/v1/requests", e.operator, map[string]string{"subject": alice, "reason": "T-1"})
	e.want(r, 201, "create")
	r.json(t, &req)
	e.want(e.do("GET", "/v1/requests/"+req.ID, e.beta, nil), 403, "scope beta reads")
	e.want(e.do("POST", "/v1/requests/"+req.ID+"/preview", e.beta, nil), 403, "scope beta previews")
	var list struct{ Requests []service.Request }
	r = e.do("GET", "/v1/requests", e.beta, nil)
	e.want(r, 200, "scope beta lists")
	r.json(t, &list)
	if len(list.Requests) != 0 {
		t.Fatalf("scope beta sees %d requests", len(list.Requests))
	}
	// Oversized bodies, by Content-Length and chunked.
	big := `{"records":[{"store":"docs","key":"k","kind":"source","subject":"x","content":"` + strings.Repeat("a", 70<<10) + `"}]}`
	e.want(e.do("POST", "/v1/lineage", e.capture, big), 413, "oversized body")
	req2, _ := http.NewRequest("POST", e.url+"/v1/lineage", io.MultiReader(strings.NewReader(big)))
	req2.Header.Set("Authorization", "Bearer "+e.capture)
	req2.ContentLength = -1
	if r2, err := http.DefaultClient.Do(req2); err != nil || r2.StatusCode != 413 {
		t.Fatalf("chunked oversized body: %v %v", r2.StatusCode, err)
	}
	// Invalid input names the field, never the value.
	r = e.do("POST", "/v1/lineage", e.capture, map[string]any{"records": []map[string]any{{"store": "docs", "key": "alice@example.org", "kind": "source", "subject": alice}}})
	e.want(r, 422, "personal key")
	if !strings.Contains(string(r.body), "records[0].key") {
		t.Fatalf("personal key problem: %s", r.body)
	}
	r = e.do("POST", "/v1/lineage", e.capture, map[string]any{"records": []map[string]any{{"store": "docs", "key": "k", "kind": alice, "subject": alice}}})
	e.want(r, 422, "bad kind")
	e.want(e.do("POST", "/v1/lineage", e.capture, `{"records": [`), 400, "truncated JSON")
	e.want(e.do("GET", "/v1/certificates/..%2F..%2Fpepper", e.auditor, nil), 404, "path in a certificate id")
	// Webhooks: unsigned, badly signed, replayed outside the window.
	body := []byte(`{"request_id":"dg-1","identity":{"type":"email","value":"alice@example.org"}}`)
	e.want(e.do("POST", "/v1/intake/webhook", "", body), 401, "unsigned webhook")
	ts, sig := service.SignWebhook(e.secret, time.Now().Add(-10*time.Minute), body)
	e.want(e.do("POST", "/v1/intake/webhook", "", body, service.HeaderTimestamp, ts, service.HeaderSignature, sig), 401, "old webhook")
	ts, sig = service.SignWebhook([]byte("wrong"), time.Now(), body)
	e.want(e.do("POST", "/v1/intake/webhook", "", body, service.HeaderTimestamp, ts, service.HeaderSignature, sig), 401, "wrongly signed webhook")
}

func TestRateLimit(t *testing.T) {
	e := newEnv(t, 5)
	codes := map[int]int{}
	for i := 0; i < 12; i++ {
		r := e.do("GET", "/v1/keys", e.auditor, nil)
		codes[r.code]++
		if r.code == 429 && r.hdr.Get("Retry-After") == "" {
			t.Fatal("429 without Retry-After")
		}
	}
	if codes[200] < 5 || codes[429] == 0 || codes[200] > 7 {
		t.Fatalf("12 calls at 5/s: %v", codes)
	}
	// Another token has its own bucket.
	e.want(e.do("GET", "/v1/keys", e.operator, nil), 200, "another token")
}

func TestWebhookIntakeAndSignedCallback(t *testing.T) {
	e := newEnv(t, 1000)
	e.ingest("d1", alice)
	var mu sync.Mutex
	var got []byte
	var gotErr error
	cb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		got, gotErr = b, service.VerifyWebhook(e.secret, r.Header.Get(service.HeaderTimestamp), r.Header.Get(service.HeaderSignature), b, time.Now())
	}))
	defer cb.Close()
	body, _ := json.Marshal(map[string]any{"request_id": "dg-77", "identity": map[string]string{"type": "email", "value": alice}, "callback_url": cb.URL})
	ts, sig := service.SignWebhook(e.secret, time.Now(), body)
	r := e.do("POST", "/v1/intake/webhook", "", body, service.HeaderTimestamp, ts, service.HeaderSignature, sig)
	e.want(r, 202, "webhook")
	var id struct{ ID string }
	r.json(t, &id)
	r2 := e.do("POST", "/v1/intake/webhook", "", body, service.HeaderTimestamp, ts, service.HeaderSignature, sig)
	e.want(r2, 202, "redelivered webhook")
	var id2 struct{ ID string }
	r2.json(t, &id2)
	if id.ID == "" || id2.ID != id.ID {
		t.Fatalf("webhook ids %q, %q", id.ID, id2.ID)
	}
	var pv service.Preview
	r = e.do("POST", "/v1/requests/"+id.ID+"/preview", e.operator, nil)
	e.want(r, 200, "preview")
	r.json(t, &pv)
	e.want(e.do("POST", "/v1/requests/"+id.ID+"/confirm", e.operator, map[string]string{"confirmation": pv.Confirmation}), 200, "confirm")
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		done := got != nil
		mu.Unlock()
		if done {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if gotErr != nil || got == nil {
		t.Fatalf("callback %s, signature: %v", got, gotErr)
	}
	var c struct {
		RequestID, Status, CertificateSHA256 string `json:"-"`
	}
	var m map[string]any
	json.Unmarshal(got, &m)
	_ = c
	if m["request_id"] != "dg-77" || m["status"] != "completed" || !strings.HasPrefix(m["certificate_sha256"].(string), "sha256:") || strings.Contains(string(got), alice) {
		t.Fatalf("callback body %s", got)
	}
}

func TestOpsEndpoints(t *testing.T) {
	e := newEnv(t, 1000)
	e.want(e.do("GET", "/healthz", "", nil), 200, "healthz")
	e.want(e.do("GET", "/readyz", "", nil), 200, "readyz")
	r := e.do("GET", "/openapi.json", "", nil)
	e.want(r, 200, "openapi")
	want, _ := server.OpenAPI()
	var a, b any
	json.Unmarshal(r.body, &a)
	json.Unmarshal(want, &b)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		t.Fatal("/openapi.json is not the generated document")
	}
	e.ingest("d1", alice)
	time.Sleep(200 * time.Millisecond)
	r = e.do("GET", "/metrics", "", nil)
	e.want(r, 200, "metrics")
	for _, m := range []string{"amnesia_captured_records_total 1", "amnesia_queue_depth", "amnesia_requests_overdue", "amnesia_http_requests_total", "amnesia_erasures_total", "amnesia_step_duration_seconds"} {
		if !strings.Contains(string(r.body), m) {
			t.Errorf("/metrics lacks %s", m)
		}
	}
}

// MCP and the web page's login are rate-limited per client address like the
// API: a client hammering /ui/login or /mcp with guesses is slowed down,
// health checks are not.
func TestRateLimitCoversMCPAndLogin(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusUnauthorized) })
	srv, err := server.New(server.Options{Service: newEnv(t, 1000).svc, Registry: prometheus.NewRegistry(), Rate: 3,
		Mounts: map[string]http.Handler{"/mcp": ok, "/ui/": ok}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	for _, c := range []struct{ method, path string }{{"POST", "/ui/login"}, {"POST", "/mcp"}} {
		limited := 0
		for range 10 {
			req, _ := http.NewRequest(c.method, hs.URL+c.path, strings.NewReader("{}"))
			r, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			r.Body.Close()
			if r.StatusCode == http.StatusTooManyRequests {
				limited++
			}
		}
		if limited == 0 {
			t.Errorf("%s %s: 10 calls at 3/s, none limited", c.method, c.path)
		}
	}
	for range 10 {
		r, err := http.Get(hs.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode == http.StatusTooManyRequests {
			t.Fatal("/healthz is rate-limited")
		}
	}
}
