package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/internal/server"
	"github.com/amnesia-dev/amnesia/internal/service"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
)

// fuzzTarget is a server over a fresh installation, without a worker, and
// tokens of every role.
type fuzzTarget struct {
	h                          http.Handler
	capture, operator, auditor string
	secret                     []byte
	reqID                      string
}

func newFuzzTarget(f *testing.F) *fuzzTarget {
	root := f.TempDir()
	cfg := state.DefaultConfig()
	cfg.Stores = []state.StoreConfig{{Name: "docs", Type: sqlitedoc.Type, Path: filepath.Join(root, "docs.db")}}
	sd, err := state.Init(filepath.Join(root, "state"), cfg)
	if err != nil {
		f.Fatal(err)
	}
	secret := []byte("fuzz-secret")
	svc, err := service.Open(context.Background(), sd.Path, service.Options{NoWorker: true, WebhookSecret: secret})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { svc.Close() })
	srv, err := server.New(server.Options{Service: svc, MaxBody: 64 << 10, Rate: 1e9})
	if err != nil {
		f.Fatal(err)
	}
	ft := &fuzzTarget{h: srv.Handler(), secret: secret}
	for _, r := range []service.Role{service.RoleCapture, service.RoleOperator, service.RoleAuditor} {
		s, _, err := service.CreateToken(sd.Path, "fuzz", r, []string{"default"}, time.Now())
		if err != nil {
			f.Fatal(err)
		}
		switch r {
		case service.RoleCapture:
			ft.capture = s
		case service.RoleOperator:
			ft.operator = s
		default:
			ft.auditor = s
		}
	}
	// One recorded subject and one request, so that decoders reach the service.
	text := "a note"
	op, _ := svc.Authenticate(ft.operator)
	cp, _ := svc.Authenticate(ft.capture)
	if _, err := svc.Record(context.Background(), cp, "", []service.LineageRecord{{Store: "docs", Key: "k1", Kind: "source", Subject: "fuzz@example.org", Content: &text}}); err != nil {
		f.Fatal(err)
	}
	r, err := svc.CreateRequest(context.Background(), op, service.NewRequest{Subject: "fuzz@example.org", Reason: "T-1"})
	if err != nil {
		f.Fatal(err)
	}
	ft.reqID = r.ID
	return ft
}

// check sends body and fails on a server error or an error that is not a
// problem+json document.
func (ft *fuzzTarget) check(t *testing.T, method, path, token string, body []byte, hdr ...string) {
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	ft.h.ServeHTTP(w, req)
	if w.Code >= 500 {
		t.Fatalf("%s %s: %d %s", method, path, w.Code, w.Body)
	}
	if w.Code >= 400 {
		var p struct {
			Status int    `json:"status"`
			Title  string `json:"title"`
		}
		if !strings.HasPrefix(w.Header().Get("Content-Type"), "application/problem+json") || json.Unmarshal(w.Body.Bytes(), &p) != nil || p.Status != w.Code {
			t.Fatalf("%s %s: %d is not a problem+json document: %q %s", method, path, w.Code, w.Header().Get("Content-Type"), w.Body)
		}
		if strings.Contains(w.Body.String(), "fuzz@example.org") || strings.Contains(w.Body.String(), ft.operator) {
			t.Fatalf("%s %s: the problem echoes a subject or token: %s", method, path, w.Body)
		}
	}
}

func FuzzLineageBody(f *testing.F) {
	ft := newFuzzTarget(f)
	f.Add([]byte(`{"records":[{"store":"docs","key":"k2","kind":"chunk","parent":{"store":"docs","key":"k1"},"content":"x"}]}`))
	f.Add([]byte(`{"scope":"default","records":[{"store":"docs","key":"v1","kind":"embedding","subject":"s@example.org","vector":[0.5,1e38,-0]}]}`))
	f.Add([]byte(`{"records":[]}`))
	f.Add([]byte(`{"records":[{"store":"docs","key":"k1","kind":"source","subject":"other@example.org"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) { ft.check(t, "POST", "/v1/lineage", ft.capture, body) })
}

func FuzzRequestBodies(f *testing.F) {
	ft := newFuzzTarget(f)
	f.Add(uint8(0), []byte(`{"subject":"fuzz@example.org","reason":"T-2","due":"2099-01-01T00:00:00Z","callback_url":"http://127.0.0.1:1/cb"}`))
	f.Add(uint8(1), []byte(`{"subject":"fuzz@example.org"}`))
	f.Add(uint8(2), []byte(`{"confirmation":"cnf_x"}`))
	f.Add(uint8(3), []byte(`{}`))
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		switch which % 4 {
		case 0:
			ft.check(t, "POST", "/v1/requests", ft.operator, body)
		case 1:
			ft.check(t, "POST", "/v1/trace", ft.operator, body)
		case 2:
			ft.check(t, "POST", "/v1/requests/"+ft.reqID+"/confirm", ft.operator, body)
		default:
			ft.check(t, "POST", "/v1/requests/"+ft.reqID+"/preview", ft.operator, body)
		}
	})
}

func FuzzWebhookIntake(f *testing.F) {
	ft := newFuzzTarget(f)
	f.Add([]byte(`{"request_id":"dg-1","identity":{"type":"email","value":"fuzz@example.org"},"due_at":"2099-01-01T00:00:00Z"}`), true)
	f.Add([]byte(`{"request_id":"","identity":{}}`), true)
	f.Add([]byte(`not json`), false)
	f.Fuzz(func(t *testing.T, body []byte, sign bool) {
		ts, sig := service.SignWebhook(ft.secret, time.Now(), body)
		if !sign {
			sig = "v1=AAAA"
		}
		ft.check(t, "POST", "/v1/intake/webhook", "", body, service.HeaderTimestamp, ts, service.HeaderSignature, sig)
	})
}

func FuzzVerifyBody(f *testing.F) {
	ft := newFuzzTarget(f)
	f.Add([]byte(`{"mediaType":"application/vnd.amnesia.certificate.v1+json","dsseEnvelope":{},"logEntry":{}}`))
	f.Add([]byte(`{"payloadType":"x","payload":"","signatures":[]}`))
	f.Fuzz(func(t *testing.T, body []byte) { ft.check(t, "POST", "/v1/verify", ft.auditor, body) })
}

func FuzzQueryDecoders(f *testing.F) {
	ft := newFuzzTarget(f)
	f.Add("old=1&new=1", "state=done&overdue=true", "index=0&size=1")
	f.Add("old=-1&new=x", "state=%00", "index=18446744073709551615&size=1")
	f.Fuzz(func(t *testing.T, cons, list, incl string) {
		for _, p := range []string{"/v1/log/consistency?" + cons, "/v1/requests?" + list, "/v1/log/inclusion?" + incl} {
			if _, err := url.ParseRequestURI(p); err != nil || strings.ContainsAny(p, " #") {
				return // not a request target a client can send
			}
			ft.check(t, "GET", p, ft.auditor, nil)
		}
	})
}
