package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/internal/queuestatus"
	"github.com/amnesia-dev/amnesia/internal/service"
)

// TestQueueStatusAPI: GET /v1/status lists the queue as `amnesia status
// --json` does, for operator and auditor tokens, restricted to the token's
// scopes; a capture token is refused, no token is 401, a limit out of range
// 422. The body holds no subject id and no document text.
func TestQueueStatusAPI(t *testing.T) {
	e := newEnv(t, 1000)
	e.ingest("d1", alice)
	var req service.Request
	r := e.do("POST", "/v1/requests", e.operator, map[string]string{"subject": alice, "reason": "GDPR-Art17-ticket-9"})
	e.want(r, 201, "create request")
	r.json(t, &req)
	var pv service.Preview
	r = e.do("POST", "/v1/requests/"+req.ID+"/preview", e.operator, map[string]any{})
	e.want(r, 200, "preview")
	r.json(t, &pv)
	e.want(e.do("POST", "/v1/requests/"+req.ID+"/confirm", e.operator, map[string]string{"confirmation": pv.Confirmation}), 200, "confirm")
	var rep queuestatus.Report
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		r = e.do("GET", "/v1/status?all=true", e.auditor, nil)
		e.want(r, 200, "status")
		rep = queuestatus.Report{}
		r.json(t, &rep)
		if rep.Counts.Done == 1 {
			break
		}
	}
	if rep.Counts.Done != 1 || rep.Counts.Waiting+rep.Counts.Running+rep.Counts.Failed != 0 || rep.Attention || len(rep.History) != 1 || rep.Limit != 100 {
		t.Fatalf("status after the erasure: %s", r.body)
	}
	h := rep.History[0]
	if h.State != queuestatus.StateDone || h.Certificate == "" || !strings.HasPrefix(h.SubjectRef, "hmac:") || h.Due == nil {
		t.Errorf("the done erasure listed as %+v", h)
	}
	if len(rep.Latency) != 1 || rep.Latency[0].Store != "docs" || rep.Latency[0].Erasure != h.Erasure {
		t.Errorf("latency %+v (unread %d)", rep.Latency, rep.LatencyUnread)
	}
	for _, s := range []string{alice, "alice", "delivery of order"} {
		if strings.Contains(string(r.body), s) {
			t.Errorf("status body holds %q: %s", s, r.body)
		}
	}
	r = e.do("GET", "/v1/status", e.operator, nil)
	e.want(r, 200, "status as operator")
	rep = queuestatus.Report{}
	r.json(t, &rep)
	if rep.Counts.Done != 1 || rep.History != nil {
		t.Errorf("status without all: %s", r.body)
	}
	r = e.do("GET", "/v1/status?all=true", e.beta, nil)
	e.want(r, 200, "status of scope beta")
	rep = queuestatus.Report{}
	r.json(t, &rep)
	if rep.Counts.Done != 0 || len(rep.History) != 0 || len(rep.Latency) != 0 {
		t.Errorf("a scope beta token sees the default scope's queue: %s", r.body)
	}
	e.want(e.do("GET", "/v1/status", e.capture, nil), 403, "status with a capture token")
	e.want(e.do("GET", "/v1/status", "", nil), 401, "status without a token")
	e.want(e.do("GET", "/v1/status?limit=0", e.auditor, nil), 422, "status limit 0")
	e.want(e.do("GET", "/v1/status?limit=5000", e.auditor, nil), 422, "status limit 5000")
}
