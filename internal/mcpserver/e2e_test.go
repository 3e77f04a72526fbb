package mcpserver_test

// End to end with the SDK's own client, over both transports: streamable
// HTTP against an httptest server on the service, and stdio against the
// built `amnesia mcp`.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/mcpserver"
	"github.com/amnesia-dev/amnesia/internal/service"
)

// recorder keeps everything the MCP client saw, for the leak checks.
type recorder struct {
	mu   sync.Mutex
	seen []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, s)
}

func (r *recorder) all() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.seen, "\n")
}

// answer is how a test client's human answers an elicitation.
type answer int

const (
	noElicitation answer = iota // the client cannot elicit
	accept
	decline
)

// elicitations counts and records what the human was asked.
type elicitations struct {
	mu       sync.Mutex
	messages []string
}

func newClient(a answer, rec *recorder, el *elicitations) *mcp.Client {
	opts := &mcp.ClientOptions{}
	if a != noElicitation {
		opts.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			rec.add(req.Params.Message)
			el.mu.Lock()
			el.messages = append(el.messages, req.Params.Message)
			el.mu.Unlock()
			if a == accept {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
			}
			return &mcp.ElicitResult{Action: "decline"}, nil
		}
	}
	return mcp.NewClient(&mcp.Implementation{Name: "amnesia-test-client", Version: "v0"}, opts)
}

// call calls a tool, records its whole result and decodes its structured
// output into out (when not nil and the result is not an error).
func call(t *testing.T, cs *mcp.ClientSession, rec *recorder, name string, args any, out any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	raw, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	rec.add(string(raw))
	if out != nil && !res.IsError {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: structured output %s: %v", name, b, err)
		}
	}
	return res
}

func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// connector opens a client session for a client.
type connector func(t *testing.T, c *mcp.Client) *mcp.ClientSession

// scenario is the whole MCP conversation, run over each transport.
func scenario(t *testing.T, f *fixture, connect connector) {
	rec := &recorder{}
	defer func() { assertNoLeak(t, "the MCP results", rec.all()) }()

	el := &elicitations{}
	cs := connect(t, newClient(accept, rec, el))
	defer cs.Close()

	// The tools.
	var names []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if want := []string{"certificate", "forget", "preview", "request", "status", "trace", "verify"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}

	// status: the token and the configured stores.
	var st mcpserver.StatusOutput
	if res := call(t, cs, rec, "status", map[string]any{}, &st); res.IsError {
		t.Fatalf("status: %s", resultText(res))
	}
	if st.Role != string(service.RoleOperator) || len(st.Stores) != 2 || st.Stores[0].Name != "docs" || st.Stores[1].Name != "vectors" {
		t.Errorf("status = %+v, want the operator role and the stores docs, vectors", st)
	}

	// trace: the counts of what capture recorded.
	var tr mcpserver.TraceOutput
	if res := call(t, cs, rec, "trace", map[string]any{"subject": alice.raw}, &tr); res.IsError {
		t.Fatalf("trace: %s", resultText(res))
	}
	if tr.Artifacts != f.artifacts[alice.raw] || tr.TraceID == "" || tr.SubjectRef == "" {
		t.Errorf("trace = %+v, want %d artifacts, a trace id and a subject ref", tr, f.artifacts[alice.raw])
	}
	perStore := 0
	for _, s := range tr.Stores {
		perStore += s.Records
	}
	if perStore != tr.Artifacts {
		t.Errorf("trace: the stores hold %d records, the trace counts %d artifacts", perStore, tr.Artifacts)
	}

	// Refusals do not echo the subject either: a subject never recorded,
	// a reason that holds the subject's id.
	if res := call(t, cs, rec, "trace", map[string]any{"subject": nobody.raw}, nil); !res.IsError {
		t.Errorf("trace of a subject never recorded: %s, want an error", resultText(res))
	} else {
		t.Logf("trace of a subject never recorded: %s", resultText(res))
	}
	if res := call(t, cs, rec, "preview", map[string]any{"subject": bob.raw, "reason": "erase " + bob.raw + " now"}, nil); !res.IsError {
		t.Errorf("preview with the subject's id in the reason: %s, want a refusal", resultText(res))
	} else {
		t.Logf("preview with the subject's id in the reason: %s", resultText(res))
	}

	// preview: a request and its counts, never the confirmation.
	var pv mcpserver.PreviewOutput
	res := call(t, cs, rec, "preview", map[string]any{"subject": alice.raw, "reason": "GDPR Art. 17 request"}, &pv)
	if res.IsError {
		t.Fatalf("preview: %s", resultText(res))
	}
	if !strings.HasPrefix(pv.RequestID, "req_") || pv.State != service.StatePreviewed || pv.Counts.Artifacts != f.artifacts[alice.raw] {
		t.Fatalf("preview = %+v, want a previewed request of %d artifacts", pv, f.artifacts[alice.raw])
	}
	if strings.Contains(rec.all(), "cnf_") {
		t.Errorf("a result holds a confirmation secret:\n%s", rec.all())
	}

	// forget, the human accepts: erased, with a certificate.
	var fo mcpserver.ForgetOutput
	res = call(t, cs, rec, "forget", map[string]any{"request_id": pv.RequestID}, &fo)
	if res.IsError {
		t.Fatalf("forget: %s", resultText(res))
	}
	if len(el.messages) != 1 {
		t.Fatalf("the human was asked %d times, want once", len(el.messages))
	}
	if msg := el.messages[0]; !strings.Contains(msg, strconv.Itoa(f.artifacts[alice.raw])+" artifacts") || !strings.Contains(msg, fo.Request.TraceID) || !strings.Contains(msg, pv.RequestID) {
		t.Errorf("the human was asked %q: want the request id, the trace id %s and the count %d", msg, fo.Request.TraceID, f.artifacts[alice.raw])
	}
	if !fo.Confirmed || fo.Request.State != service.StateDone || fo.Request.CertificateID == "" {
		t.Fatalf("forget = %+v, want a confirmed, done request with a certificate id", fo)
	}
	if n := f.docsLeft(t, alice); n != 0 {
		t.Errorf("after forget, %d of alice's records are still in docs.db", n)
	}
	if n := f.docsLeft(t, bob); n == 0 {
		t.Errorf("forget of alice erased bob's records")
	}

	// status again: the erasure queue holds the done erasure, and each
	// store's delete persistence latency read from its journal.
	st = mcpserver.StatusOutput{}
	if res := call(t, cs, rec, "status", map[string]any{}, &st); res.IsError {
		t.Fatalf("status: %s", resultText(res))
	} else if strings.Contains(resultText(res), alice.raw) {
		t.Errorf("status holds the subject's id: %s", resultText(res))
	}
	if q := st.ErasureQueue; q == nil || q.Counts.Done != 1 || q.Counts.Waiting+q.Counts.Running != 0 || q.Attention || len(q.Latency) != 2 {
		t.Errorf("status after forget: erasure queue %+v, want one done erasure and the latency of docs and vectors", q)
	} else {
		for _, l := range q.Latency {
			if l.Erasure == "" || (l.State == "clean") != (l.LatencyMS != nil) {
				t.Errorf("status after forget: latency %+v", l)
			}
		}
	}

	// request, certificate, verify.
	var ro mcpserver.RequestOutput
	if res := call(t, cs, rec, "request", map[string]any{"request_id": pv.RequestID}, &ro); res.IsError || ro.State != service.StateDone || ro.CertificateID != fo.Request.CertificateID {
		t.Errorf("request = %+v (%s), want done with certificate %s", ro, resultText(res), fo.Request.CertificateID)
	}
	var co mcpserver.CertificateOutput
	if res := call(t, cs, rec, "certificate", map[string]any{"certificate_id": fo.Request.CertificateID}, &co); res.IsError || !json.Valid([]byte(co.Bundle)) || len(co.SHA256) != 64 {
		t.Fatalf("certificate = %+v (%s), want the bundle", co, resultText(res))
	}
	for _, args := range []map[string]any{{"certificate_id": fo.Request.CertificateID}, {"bundle": co.Bundle}} {
		var vo mcpserver.VerifyOutput
		if res := call(t, cs, rec, "verify", args, &vo); res.IsError || !vo.Valid {
			t.Errorf("verify %v = %+v (%s), want valid", slices.Collect(mapKeys(args)), vo, resultText(res))
		}
	}
	tampered := tamperBundle(t, co.Bundle)
	var vo mcpserver.VerifyOutput
	if res := call(t, cs, rec, "verify", map[string]any{"bundle": tampered}, &vo); res.IsError || vo.Valid || vo.ErrorKind != "tampered" {
		t.Errorf("verify of a tampered bundle = %+v (%s), want invalid, tampered", vo, resultText(res))
	}

	// forget, the human declines: nothing erased.
	el2 := &elicitations{}
	cs2 := connect(t, newClient(decline, rec, el2))
	defer cs2.Close()
	before := f.docsLeft(t, bob)
	call(t, cs2, rec, "preview", map[string]any{"subject": bob.raw, "reason": "GDPR Art. 17 request"}, &pv)
	fo = mcpserver.ForgetOutput{}
	res = call(t, cs2, rec, "forget", map[string]any{"request_id": pv.RequestID}, &fo)
	if res.IsError || fo.Confirmed || fo.Request.State != service.StatePreviewed || len(el2.messages) != 1 {
		t.Errorf("forget, declined = %+v (%s; asked %d times), want not confirmed, the request still previewed", fo, resultText(res), len(el2.messages))
	}
	if after := f.docsLeft(t, bob); after != before || before == 0 {
		t.Errorf("a declined forget left %d of bob's %d records", after, before)
	}

	// forget from a client that cannot elicit: refused, sent to the web page.
	cs3 := connect(t, newClient(noElicitation, rec, nil))
	defer cs3.Close()
	before = f.docsLeft(t, carol)
	call(t, cs3, rec, "preview", map[string]any{"subject": carol.raw, "reason": "GDPR Art. 17 request"}, &pv)
	res = call(t, cs3, rec, "forget", map[string]any{"request_id": pv.RequestID}, nil)
	if !res.IsError || !strings.Contains(resultText(res), "/ui/requests/"+pv.RequestID) {
		t.Errorf("forget without elicitation: %s (error %v), want a refusal naming /ui/requests/%s", resultText(res), res.IsError, pv.RequestID)
	}
	call(t, cs3, rec, "request", map[string]any{"request_id": pv.RequestID}, &ro)
	if ro.State != service.StatePreviewed {
		t.Errorf("after a refused forget the request is %s, want previewed", ro.State)
	}
	if after := f.docsLeft(t, carol); after != before || before == 0 {
		t.Errorf("a refused forget left %d of carol's %d records", after, before)
	}

	// An answer nobody was asked for (a forged request state) erases nothing.
	before = f.docsLeft(t, dave)
	call(t, cs3, rec, "preview", map[string]any{"subject": dave.raw, "reason": "GDPR Art. 17 request"}, &pv)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	forged, err := cs3.CallTool(ctx, &mcp.CallToolParams{Name: "forget", Arguments: map[string]any{"request_id": pv.RequestID},
		RequestState:   "mcpc_forged",
		InputResponses: mcp.InputResponseMap{"confirm_erasure": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}}})
	if err == nil && !forged.IsError {
		b, _ := json.Marshal(forged)
		t.Errorf("forget with a forged confirmation answered %s, want a refusal", b)
	}
	if after := f.docsLeft(t, dave); after != before || before == 0 {
		t.Errorf("a forged confirmation left %d of dave's %d records", after, before)
	}
}

// tamperBundle flips "complete" in the signed payload of a bundle.
func tamperBundle(t *testing.T, bundle string) string {
	t.Helper()
	b, err := certificate.DecodeBundle([]byte(bundle))
	if err != nil {
		t.Fatal(err)
	}
	var env map[string]any
	if err := json.Unmarshal(b.DSSEEnvelope, &env); err != nil {
		t.Fatal(err)
	}
	payload, err := base64.StdEncoding.DecodeString(env["payload"].(string))
	if err != nil {
		t.Fatal(err)
	}
	changed := bytes.Replace(payload, []byte(`"complete":true`), []byte(`"complete":false`), 1)
	if bytes.Equal(changed, payload) {
		t.Fatalf("the certificate's payload holds no \"complete\":true")
	}
	// In the envelope's canonical member order, so only the payload is wrong.
	if b.DSSEEnvelope, err = json.Marshal(struct {
		PayloadType any `json:"payloadType"`
		Payload     any `json:"payload"`
		Signatures  any `json:"signatures"`
	}{env["payloadType"], base64.StdEncoding.EncodeToString(changed), env["signatures"]}); err != nil {
		t.Fatal(err)
	}
	out, err := certificate.EncodeBundle(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func mapKeys(m map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// bearer adds a token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// httpServer serves the MCP handler on the fixture's service, with the
// service's worker running; logs go to the returned buffer.
func httpServer(t *testing.T, f *fixture) (*httptest.Server, *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	svc, err := service.Open(ctx, f.state(), service.Options{PollInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("open service: %v", err)
	}
	done := make(chan struct{})
	go func() { defer close(done); svc.Run(ctx) }()
	srv := mcpserver.New(svc, mcpserver.Options{StateDir: f.state(), Logger: log, ForgetWait: 2 * time.Minute})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
		cancel()
		<-done
		svc.Close()
	})
	return ts, logs
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func httpConnector(ts *httptest.Server, token string) connector {
	return func(t *testing.T, c *mcp.Client) *mcp.ClientSession {
		t.Helper()
		tr := &mcp.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}, MaxRetries: -1}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cs, err := c.Connect(ctx, tr, nil)
		if err != nil {
			t.Fatalf("connect over HTTP: %v", err)
		}
		// A stateful streamable HTTP server speaks the protocol up to
		// 2025-11-25 (2026-07-28 is stateless only, where the server could
		// not ask the human): the SDK's client falls back to it, and the
		// server sends elicitation/create during forget's call.
		checkProtocol(t, cs, "2025-11-25")
		return cs
	}
}

func checkProtocol(t *testing.T, cs *mcp.ClientSession, want string) {
	t.Helper()
	if got := cs.InitializeResult().ProtocolVersion; got != want {
		cs.Close()
		t.Fatalf("the session speaks protocol %s, want %s", got, want)
	}
}

func TestStreamableHTTP(t *testing.T) {
	f := buildFixture(t)
	ts, logs := httpServer(t, f)
	scenario(t, f, httpConnector(ts, f.token(t, service.RoleOperator)))
	assertNoLeak(t, "the MCP server's log", logs.String())
	if !strings.Contains(logs.String(), `"tool":"forget"`) {
		t.Errorf("the MCP server logged no forget call:\n%s", logs.String())
	}
	f.assertLogClean(t)
}

func TestStreamableHTTPAuth(t *testing.T) {
	f := buildFixture(t)
	ts, _ := httpServer(t, f)
	c := newClient(noElicitation, &recorder{}, nil)
	for name, token := range map[string]string{"no token": "", "unknown token": "amn_" + strings.Repeat("A", 43)} {
		tr := &mcp.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}, MaxRetries: -1}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cs, err := c.Connect(ctx, tr, nil)
		cancel()
		if err == nil {
			cs.Close()
			t.Errorf("%s: connected, want a refusal", name)
		}
	}
	// An auditor may trace nothing and erase nothing.
	rec := &recorder{}
	cs := httpConnector(ts, f.token(t, service.RoleAuditor))(t, newClient(accept, rec, &elicitations{}))
	defer cs.Close()
	res := call(t, cs, rec, "preview", map[string]any{"subject": alice.raw, "reason": "GDPR Art. 17 request"}, nil)
	if !res.IsError || !strings.Contains(resultText(res), "forbidden") {
		t.Errorf("preview as an auditor: %s, want forbidden", resultText(res))
	}
	if n := f.docsLeft(t, alice); n == 0 {
		t.Error("an auditor's calls erased alice's records")
	}
	assertNoLeak(t, "the auditor's results", rec.all())
}

func TestStdio(t *testing.T) {
	// Over stdio the SDK's client speaks 2026-07-28 by default: forget's
	// first round returns the question as an input request and the client
	// retries the call with the human's answer (SEP-2322). With 2025-11-25
	// the server sends elicitation/create during the call.
	for _, protocol := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(protocol, func(t *testing.T) {
			f := buildFixture(t)
			tokenFile := filepath.Join(t.TempDir(), "token")
			if err := os.WriteFile(tokenFile, []byte(f.token(t, service.RoleOperator)+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			var stderrs []*syncBuffer
			connect := func(t *testing.T, c *mcp.Client) *mcp.ClientSession {
				t.Helper()
				cmd := exec.Command(amnesiaBin, "--state", f.state(), "mcp", "--token-file", tokenFile)
				cmd.Env = cleanEnv()
				stderr := &syncBuffer{}
				stderrs = append(stderrs, stderr)
				cmd.Stderr = stderr
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
				if err != nil {
					t.Fatalf("connect over stdio: %v\n%s", err, stderr.String())
				}
				checkProtocol(t, cs, protocol)
				return cs
			}
			scenario(t, f, connect)
			for _, s := range stderrs {
				assertNoLeak(t, "amnesia mcp's stderr", s.String())
			}
			f.assertLogClean(t)
		})
	}
}

func TestStdioToken(t *testing.T) {
	f := buildFixture(t)
	dir := t.TempDir()
	loose := filepath.Join(dir, "loose")
	if err := os.WriteFile(loose, []byte(f.token(t, service.RoleOperator)), 0o644); err != nil {
		t.Fatal(err)
	}
	unknown := filepath.Join(dir, "unknown")
	if err := os.WriteFile(unknown, []byte("amn_"+strings.Repeat("B", 43)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no token", nil, "AMNESIA_TOKEN"},
		{"token file readable by others", []string{"--token-file", loose}, "chmod 600"},
		{"unknown token", []string{"--token-file", unknown}, "unknown or revoked"},
	} {
		cmd := exec.Command(amnesiaBin, append([]string{"--state", f.state(), "mcp"}, tc.args...)...)
		cmd.Env = cleanEnv()
		cmd.Stdin = strings.NewReader("")
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("%s: amnesia mcp exited with %v:\n%s\nwant a failure saying %q", tc.name, err, out, tc.want)
		}
		if strings.Contains(string(out), "amn_") {
			t.Errorf("%s: the error shows the token:\n%s", tc.name, out)
		}
	}
}

// cleanEnv is the environment without amnesia's own variables.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AMNESIA_") {
			out = append(out, kv)
		}
	}
	return out
}
