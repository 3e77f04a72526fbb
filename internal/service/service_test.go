package service_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/internal/service"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
)

const alice = "alice@example.org"

type fixture struct {
	svc      *service.Service
	state    string
	docs     *sqlitedoc.Store
	capture  *service.Principal
	operator *service.Principal
	auditor  *service.Principal
	other    *service.Principal // operator of scope "beta" only
	clock    *clock
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// newFixture is an installation with one SQLite document store "docs" and
// tokens of every role for scope "default", plus an operator of "beta".
func newFixture(t *testing.T, ledger string) *fixture {
	t.Helper()
	root := t.TempDir()
	cfg := state.DefaultConfig()
	docPath := filepath.Join(root, "docs.db")
	cfg.Stores = []state.StoreConfig{{Name: "docs", Type: sqlitedoc.Type, Path: docPath}}
	cfg.Ledger = ledger
	sd, err := state.Init(filepath.Join(root, "state"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ds, err := sqlitedoc.Open(ctx, "docs", docPath, true)
	if err != nil {
		t.Fatal(err)
	}
	ck := &clock{t: time.Now()}
	svc, err := service.Open(ctx, sd.Path, service.Options{Now: ck.now, PollInterval: 50 * time.Millisecond, Lease: 3 * time.Second, WebhookSecret: []byte("whsec")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close(); ds.Close() })
	f := &fixture{svc: svc, state: sd.Path, docs: ds, clock: ck}
	tok := func(role service.Role, scopes ...string) *service.Principal {
		secret, _, err := service.CreateToken(sd.Path, string(role)+"-test", role, scopes, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		p, err := svc.Authenticate(secret)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	f.capture, f.operator, f.auditor = tok(service.RoleCapture, "default"), tok(service.RoleOperator, "default"), tok(service.RoleAuditor, "default")
	f.other = tok(service.RoleOperator, "beta")
	return f
}

// ingest writes a document and its chunk to the store, as an application
// does, and records their lineage through the service.
func (f *fixture) ingest(t *testing.T, id, owner string) {
	t.Helper()
	ctx := context.Background()
	text := "Document " + id + " asks for a delivery of order 5521 to the depot at gate four next Monday morning."
	chunk := text[:40]
	if err := f.docs.Put(ctx, sqlitedoc.Record{ID: id, Kind: sqlitedoc.KindDocument, Subject: "app", Text: text}); err != nil {
		t.Fatal(err)
	}
	if err := f.docs.Put(ctx, sqlitedoc.Record{ID: id + "#0", Kind: sqlitedoc.KindChunk, Subject: "app", Parent: id, Text: chunk}); err != nil {
		t.Fatal(err)
	}
	res, err := f.svc.Record(ctx, f.capture, "", []service.LineageRecord{
		{Store: "docs", Key: id, Kind: "source", Subject: owner, Content: &text},
		{Store: "docs", Key: id + "#0", Kind: "chunk", Parent: &service.ArtifactRef{Store: "docs", Key: id}, Content: &chunk},
	})
	if err != nil || res.Recorded != 2 {
		t.Fatalf("record: %+v, %v", res, err)
	}
}

func TestRecordTraceAndRoles(t *testing.T) {
	f := newFixture(t, "")
	ctx := context.Background()
	f.ingest(t, "d1", alice)
	text := "Document d1 asks for a delivery of order 5521 to the depot at gate four next Monday morning."
	res, err := f.svc.Record(ctx, f.capture, "default", []service.LineageRecord{{Store: "docs", Key: "d1", Kind: "source", Subject: alice, Content: &text}})
	if err != nil || res.Unchanged != 1 || res.Recorded != 0 {
		t.Fatalf("re-record: %+v, %v; want 1 unchanged", res, err)
	}
	sum, err := f.svc.Trace(ctx, f.operator, "", alice)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Artifacts != 2 || len(sum.Stores) != 1 || sum.Stores[0].Kinds["chunk"] != 1 || sum.Stores[0].Kinds["source"] != 1 || sum.Stores[0].Records != 2 {
		t.Fatalf("trace summary = %+v", sum)
	}
	// Roles.
	if _, err := f.svc.Trace(ctx, f.capture, "", alice); !errors.Is(err, service.ErrForbidden) {
		t.Fatalf("capture token traced: %v", err)
	}
	if _, err := f.svc.Record(ctx, f.operator, "", []service.LineageRecord{{Store: "docs", Key: "x", Kind: "source", Subject: alice}}); !errors.Is(err, service.ErrForbidden) {
		t.Fatalf("operator token recorded: %v", err)
	}
	// Scope B cannot trace scope A, and is not told whether the subject exists.
	_, errA := f.svc.Trace(ctx, f.other, "default", alice)
	_, errNone := f.svc.Trace(ctx, f.other, "default", "nobody@example.org")
	if !errors.Is(errA, service.ErrForbidden) || errA.Error() != errNone.Error() {
		t.Fatalf("scope beta tracing default: %v / %v", errA, errNone)
	}
	// Invalid records name the index and field, never the value.
	_, err = f.svc.Record(ctx, f.capture, "", []service.LineageRecord{
		{Store: "docs", Key: "ok", Kind: "source", Subject: alice},
		{Store: "docs", Key: "x", Kind: "blob", Subject: alice},
	})
	var ie *service.InvalidError
	if !errors.As(err, &ie) || ie.Field != "records[1].kind" || strings.Contains(err.Error(), alice) {
		t.Fatalf("bad kind: %v", err)
	}
	_, err = f.svc.Record(ctx, f.capture, "", []service.LineageRecord{{Store: "docs", Key: "alice@example.org-1", Kind: "source", Subject: alice}})
	if !errors.As(err, &ie) || ie.Field != "records[0].key" || strings.Contains(err.Error(), alice) {
		t.Fatalf("personal key: %v", err)
	}
	// Revoked tokens are refused.
	toks, _ := service.ListTokens(f.state)
	secret, info, _ := service.CreateToken(f.state, "short-lived", service.RoleAuditor, []string{"default"}, time.Now())
	if err := service.RevokeToken(f.state, info.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Authenticate(secret); !errors.Is(err, service.ErrUnauthorized) {
		t.Fatalf("revoked token: %v", err)
	}
	b, _ := os.ReadFile(service.TokensPath(f.state))
	if strings.Contains(string(b), secret) || len(toks) != 4 {
		t.Fatalf("tokens.json holds a secret, or has %d tokens", len(toks))
	}
	if fi, _ := os.Stat(service.TokensPath(f.state)); fi.Mode().Perm() != 0o600 {
		t.Fatalf("tokens.json mode %v", fi.Mode())
	}
}

func TestRequestLifecycle(t *testing.T) {
	f := newFixture(t, "")
	ctx := context.Background()
	f.ingest(t, "d1", alice)
	f.ingest(t, "d2", "bob@example.org")
	r, err := f.svc.CreateRequest(ctx, f.operator, service.NewRequest{Subject: alice, Reason: "GDPR-Art17-ticket-4711", ExternalRef: "TCK-4711"})
	if err != nil {
		t.Fatal(err)
	}
	if r.State != service.StateReceived || r.DueAt.Sub(r.ReceivedAt) != 720*time.Hour || r.SubjectRef == "" {
		t.Fatalf("new request = %+v", r)
	}
	if _, err := f.svc.Request(ctx, f.other, r.ID); !errors.Is(err, service.ErrForbidden) {
		t.Fatalf("scope beta read a default request: %v", err)
	}
	if _, err := f.svc.Preview(ctx, f.other, r.ID); !errors.Is(err, service.ErrForbidden) {
		t.Fatalf("scope beta previewed a default request: %v", err)
	}
	if _, err := f.svc.Preview(ctx, f.auditor, r.ID); !errors.Is(err, service.ErrForbidden) {
		t.Fatalf("auditor previewed: %v", err)
	}
	pv, err := f.svc.Preview(ctx, f.operator, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if pv.Counts.Artifacts != 2 || !strings.HasPrefix(pv.Confirmation, "cnf_") {
		t.Fatalf("preview = %+v", pv)
	}
	// The set changes after the preview: the confirmation is refused.
	text := "a new note"
	if _, err := f.svc.Record(ctx, f.capture, "", []service.LineageRecord{{Store: "docs", Key: "d1-note", Kind: "source", Subject: alice, Content: &text}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Confirm(ctx, f.operator, r.ID, pv.Confirmation); !errors.Is(err, service.ErrConflict) || !strings.Contains(err.Error(), "changed since the preview") {
		t.Fatalf("confirm after the set changed: %v", err)
	}
	f.docs.Put(ctx, sqlitedoc.Record{ID: "d1-note", Kind: sqlitedoc.KindDocument, Subject: "app", Text: text})
	// Expired.
	pv, err = f.svc.Preview(ctx, f.operator, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	f.clock.add(11 * time.Minute)
	if _, err := f.svc.Confirm(ctx, f.operator, r.ID, pv.Confirmation); !errors.Is(err, service.ErrExpired) {
		t.Fatalf("expired confirmation: %v", err)
	}
	pv, err = f.svc.Preview(ctx, f.operator, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Confirm(ctx, f.operator, r.ID, "cnf_wrong"); !errors.Is(err, service.ErrConflict) {
		t.Fatalf("wrong confirmation: %v", err)
	}
	// Concurrent confirmations: exactly one queues the erasure.
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, refused := 0, 0
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := f.svc.Confirm(ctx, f.operator, r.ID, pv.Confirmation)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				ok++
			} else if errors.Is(err, service.ErrConflict) {
				refused++
			} else {
				t.Errorf("confirm: %v", err)
			}
		}()
	}
	wg.Wait()
	if ok != 1 || refused != 3 {
		t.Fatalf("concurrent confirmations: %d accepted, %d refused", ok, refused)
	}
	if _, err := f.svc.Confirm(ctx, f.operator, r.ID, pv.Confirmation); !errors.Is(err, service.ErrConflict) {
		t.Fatalf("replayed confirmation: %v", err)
	}
	// The worker loop erases it.
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- f.svc.Run(runCtx) }()
	deadline := time.Now().Add(60 * time.Second)
	var got *service.Request
	for time.Now().Before(deadline) {
		if got, err = f.svc.Request(ctx, f.auditor, r.ID); err != nil {
			t.Fatal(err)
		}
		if got.State == service.StateDone || got.State == service.StateFailed {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	if got.State != service.StateDone || got.CertificateID == "" || !strings.HasPrefix(got.CertificateSHA256, "sha256:") || got.Complete == nil {
		t.Fatalf("request after the worker = %+v", got)
	}
	if rec, _ := f.docs.Get(ctx, "d1"); rec != nil {
		t.Fatal("d1 is still in the store")
	}
	if rec, _ := f.docs.Get(ctx, "d2"); rec == nil {
		t.Fatal("bob's d2 was erased")
	}
	bundle, err := f.svc.Certificate(ctx, f.auditor, got.CertificateID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Certificate(ctx, f.other, got.CertificateID); !errors.Is(err, service.ErrForbidden) {
		t.Fatalf("scope beta read a default certificate: %v", err)
	}
	if _, err := f.svc.Certificate(ctx, f.auditor, "../../etc/passwd"); !errors.Is(err, service.ErrNotFound) {
		t.Fatalf("path certificate id: %v", err)
	}
	v, err := f.svc.Verify(ctx, f.auditor, bundle)
	if err != nil || !v.Valid || v.CertificateID != got.CertificateID || v.Complete != *got.Complete {
		t.Fatalf("verify = %+v, %v", v, err)
	}
	tampered := []byte(strings.Replace(string(bundle), `"logIndex": `, `"logIndex": 1`, 1))
	if v, err := f.svc.Verify(ctx, f.auditor, tampered); err != nil || v.Valid || v.ErrorKind == "" {
		t.Fatalf("tampered verify = %+v, %v", v, err)
	}
	cp, err := f.svc.Checkpoint(ctx, f.auditor)
	if err != nil || !strings.Contains(cp, "\n") {
		t.Fatalf("checkpoint %q, %v", cp, err)
	}
	if _, leaf, err := f.svc.InclusionProof(ctx, f.auditor, uint64(v.LogIndex), uint64(v.LogIndex)+1); err != nil && !errors.Is(err, service.ErrInvalid) || (err == nil && len(leaf) != 32) {
		t.Fatalf("inclusion: %v", err)
	}
	list, err := f.svc.Requests(ctx, f.auditor, service.RequestFilter{State: service.StateDone})
	if err != nil || len(list) != 1 {
		t.Fatalf("done requests = %v, %v", list, err)
	}
	if list, _ := f.svc.Requests(ctx, f.other, service.RequestFilter{}); len(list) != 0 {
		t.Fatalf("scope beta lists %d default requests", len(list))
	}
	// No raw subject in the ledger's request rows or the log.
	for _, p := range []string{filepath.Join(f.state, "ledger.db"), filepath.Join(f.state, "amnesia.log")} {
		b, _ := os.ReadFile(p)
		if strings.Contains(string(b), alice) {
			t.Fatalf("%s holds the raw subject", filepath.Base(p))
		}
	}
}

func TestOverdueAndWebhookIntake(t *testing.T) {
	f := newFixture(t, "")
	ctx := context.Background()
	due := f.clock.now().Add(time.Hour)
	in := service.WebhookIntake{RequestID: "dg-123", Identity: service.Identity{Type: "email", Value: alice}, DueAt: &due}
	r, err := f.svc.Intake(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	again, err := f.svc.Intake(ctx, in)
	if err != nil || again.ID != r.ID || r.ExternalRef != "dg-123" {
		t.Fatalf("redelivered intake: %+v, %v (first %s)", again, err, r.ID)
	}
	f.clock.add(2 * time.Hour)
	yes := true
	list, err := f.svc.Requests(ctx, f.operator, service.RequestFilter{Overdue: &yes})
	if err != nil || len(list) != 1 || !list[0].Overdue {
		t.Fatalf("overdue list = %+v, %v", list, err)
	}
	ts, sig := service.SignWebhook([]byte("whsec"), time.Now(), []byte(`{"a":1}`))
	if err := service.VerifyWebhook([]byte("whsec"), ts, sig, []byte(`{"a":1}`), time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := service.VerifyWebhook([]byte("whsec"), ts, sig, []byte(`{"a":2}`), time.Now()); !errors.Is(err, service.ErrUnauthorized) {
		t.Fatalf("changed body: %v", err)
	}
	if err := service.VerifyWebhook([]byte("whsec"), ts, sig, []byte(`{"a":1}`), time.Now().Add(6*time.Minute)); !errors.Is(err, service.ErrUnauthorized) {
		t.Fatalf("old timestamp: %v", err)
	}
}
