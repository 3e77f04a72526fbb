package web_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/server"
	"github.com/amnesia-dev/amnesia/internal/service"
	"github.com/amnesia-dev/amnesia/internal/web"
)

// TestBrowserErasure drives the page in headless Chromium through a whole
// erasure: sign in, find a subject, read the counts, erase with a reason,
// confirm the preview, follow the request to done, read the certificate in
// plain words, verify it in the browser (VALID), then upload a certificate
// with one byte of its payload changed (INVALID, naming the signature).
// It also confirms, on /ui/requests/<id>, a request an agent created and
// previewed (the MCP fallback). Screenshots are kept in the test's
// artifact directory (and in testdata/screenshots with
// AMNESIA_UPDATE_SCREENSHOTS=1).
func TestBrowserErasure(t *testing.T) {
	ctx := newBrowser(t)
	stateDir := installation(t)
	logs := &syncBuffer{}
	svc := openService(t, stateDir, logs)
	// The server amnesia serve runs: the HTTP API with the page mounted.
	logger := slog.New(slog.NewJSONHandler(logs, nil))
	api, err := server.New(server.Options{Service: svc, Log: logger, Mounts: map[string]http.Handler{
		"/": web.New(svc, web.Options{Logger: logger}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	runCtx, stop := context.WithCancel(context.Background())
	worker := make(chan error, 1)
	go func() { worker <- svc.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-worker })
	tok, _ := token(t, stateDir, service.RoleOperator)
	aud, _ := token(t, stateDir, service.RoleAuditor)

	// Every exception and every CSP violation the page causes fails the test.
	var mu sync.Mutex
	var problems []string
	chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+e.ExceptionDetails.Text+" "+exceptionText(e.ExceptionDetails))
		case *log.EventEntryAdded:
			if strings.Contains(e.Entry.Text, "Content Security Policy") || strings.Contains(e.Entry.Text, "Refused to") {
				problems = append(problems, "console: "+e.Entry.Text)
			}
		}
	})
	step := func(name string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		if err := chromedp.Do(sctx, actions...); err != nil {
			shot(t, ctx, "failed")
			flash, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("flash").textContent`))
			t.Fatalf("%s: %v (the page says %q; screenshot failed.png)", name, err, flash)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}

	step("open the page", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.ID("token")))
	shot(t, ctx, "01-sign-in")
	step("sign in",
		chromedp.SendKeys(chromedp.ID("token"), tok),
		chromedp.Click(chromedp.ID("login-submit")),
		chromedp.WaitVisible(chromedp.ID("subject")))
	if who := text("#who-name"); !strings.Contains(who, "operator") {
		t.Fatalf("signed in as %q", who)
	}

	step("find the subject",
		chromedp.SendKeys(chromedp.ID("subject"), subjectA),
		chromedp.Click(chromedp.ID("trace-submit")),
		chromedp.WaitVisible(chromedp.CSS(`#trace-table tr[data-store="vectors"]`)))
	counts := text("#trace-table")
	if !strings.Contains(counts, "docs") || !strings.Contains(counts, "vectors") || !strings.Contains(counts, "chunk") {
		t.Fatalf("counts table: %q", counts)
	}
	shot(t, ctx, "02-counts")

	step("erase with a reason",
		chromedp.SendKeys(chromedp.ID("reason"), "GDPR Art. 17 request"),
		chromedp.SendKeys(chromedp.ID("external-ref"), "TICKET-4711"),
		chromedp.Click(chromedp.ID("erase-submit")),
		chromedp.WaitVisible(chromedp.ID("confirm")))
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	if !strings.Contains(loc, "/ui/requests/req_") || strings.Contains(loc, "alice") {
		t.Fatalf("request page at %s", loc)
	}
	if v, _ := chromedp.Run(ctx, chromedp.Value(chromedp.ID("subject"))); v != "" {
		t.Fatal("the subject stays in the form after the request was created")
	}
	if s := text("#preview-summary"); !strings.Contains(s, "artifacts in 2 stores") {
		t.Fatalf("preview: %q", s)
	}
	shot(t, ctx, "03-preview")

	step("confirm and follow to done",
		chromedp.Click(chromedp.ID("confirm")),
		chromedp.WaitVisible(chromedp.CSS("#req-words .words")))
	if p := text("#progress li.now"); p != "done" {
		t.Fatalf("progress at %q", p)
	}
	words := text("#req-words")
	for _, want := range []string{"Per store", "docs", "vectors", "physical", "Not covered by this certificate", "GDPR Art. 17 request"} {
		if !strings.Contains(words, want) {
			t.Errorf("the certificate in plain words lacks %q:\n%s", want, words)
		}
	}
	href, _ := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.ID("download"), "href"))
	if !strings.HasPrefix(href.Value, "/ui/api/certificates/") {
		t.Fatalf("download link %q", href.Value)
	}
	shot(t, ctx, "04-certificate")

	step("verify in the browser",
		chromedp.Click(chromedp.ID("verify-here")),
		chromedp.WaitVisible(chromedp.CSS("#req-verify-result .verdict-big")))
	if v := text("#req-verify-result .verdict-big"); v != "VALID" {
		t.Fatalf("verdict %q: %s", v, text("#req-verify-result"))
	}
	shot(t, ctx, "05-verified")

	// A tampered certificate: one byte of the signed payload changed.
	p, err := svc.Authenticate(tok)
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := svc.Requests(context.Background(), p, service.RequestFilter{State: service.StateDone})
	if err != nil || len(reqs) != 1 {
		t.Fatalf("done requests: %v %v", reqs, err)
	}
	// Downloaded as an auditor would, through the HTTP API.
	req, _ := http.NewRequest("GET", srv.URL+"/v1/certificates/"+reqs[0].CertificateID, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("GET /v1/certificates: %v %v", res, err)
	}
	bundle, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	tampered := tamperPayload(t, bundle)
	path := filepath.Join(t.TempDir(), "tampered.json")
	if err := os.WriteFile(path, tampered, 0o600); err != nil {
		t.Fatal(err)
	}
	step("upload the tampered certificate",
		chromedp.Click(chromedp.ID("tab-verify")),
		chromedp.WaitVisible(chromedp.ID("bundle-file")),
		chromedp.Poll[chromedp.Void](`document.getElementById("pubkey").value.includes("PUBLIC KEY")`),
		chromedp.SetUploadFiles(chromedp.ID("bundle-file"), []string{path}),
		chromedp.Click(chromedp.ID("verify-submit")),
		chromedp.WaitVisible(chromedp.CSS("#verify-result .verdict-big")))
	if v := text("#verify-result .verdict-big"); v != "INVALID — signature" {
		t.Fatalf("tampered verdict %q", v)
	}
	if r := text("#verify-result .verdict-reason"); !strings.Contains(r, "signature does not verify") {
		t.Fatalf("tampered reason %q", r)
	}
	shot(t, ctx, "06-tampered")

	// The MCP fallback: an agent created and previewed a request; the human
	// confirms it on its page.
	agentReq, err := svc.CreateRequest(context.Background(), p, service.NewRequest{Subject: subjectB, Reason: "asked through the assistant"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Preview(context.Background(), p, agentReq.ID); err != nil {
		t.Fatal(err)
	}
	step("open the agent's request", chromedp.Navigate(srv.URL+"/ui/requests/"+agentReq.ID), chromedp.WaitVisible(chromedp.ID("preview-btn")))
	step("preview and confirm it",
		chromedp.Click(chromedp.ID("preview-btn")),
		chromedp.WaitVisible(chromedp.ID("confirm")),
		chromedp.Click(chromedp.ID("confirm")),
		chromedp.WaitVisible(chromedp.CSS(`#req-cert:not([hidden]) .words`)))

	step("list the requests",
		chromedp.Click(chromedp.ID("tab-requests")),
		chromedp.WaitVisible(chromedp.CSS(`#requests-table tr[data-id="`+agentReq.ID+`"]`)))
	list := text("#requests-table")
	if strings.Count(list, "done") != 2 || !strings.Contains(list, "TICKET-4711") {
		t.Fatalf("request list:\n%s", list)
	}
	shot(t, ctx, "07-requests")

	// An auditor signs in to the request list; tracing and erasing are not offered.
	step("sign out", chromedp.Click(chromedp.ID("logout")), chromedp.WaitVisible(chromedp.ID("token")))
	step("sign in as an auditor",
		chromedp.SendKeys(chromedp.ID("token"), aud),
		chromedp.Click(chromedp.ID("login-submit")),
		chromedp.WaitVisible(chromedp.CSS(`#requests-table tr[data-id="`+agentReq.ID+`"]`)),
		chromedp.WaitNotVisible(chromedp.ID("tab-erase")))

	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Errorf("the page reported:\n%s", strings.Join(problems, "\n"))
	}
	for _, canary := range []string{subjectA, subjectB, "Canary"} {
		if strings.Contains(logs.String(), canary) {
			t.Errorf("the logs hold %q", canary)
		}
	}
}

// tamperPayload changes one byte of a bundle's signed payload and keeps the
// bundle's canonical form.
func tamperPayload(t *testing.T, bundle []byte) []byte {
	t.Helper()
	var b certificate.Bundle
	if err := json.Unmarshal(bundle, &b); err != nil {
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
	i := bytes.Index(payload, []byte("GDPR"))
	if i < 0 {
		t.Fatal("the payload holds no reason to change")
	}
	payload[i] = 'X'
	env["payload"] = base64.StdEncoding.EncodeToString(payload)
	b.DSSEEnvelope, _ = json.Marshal(env)
	out, err := certificate.EncodeBundle(&b)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(out, bundle) {
		t.Fatal("tampering changed nothing")
	}
	return out
}

func exceptionText(d *runtime.ExceptionDetails) string {
	if d.Exception != nil {
		return d.Exception.Description
	}
	return ""
}
