package pinecone_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/pinecone"
	"github.com/amnesia-dev/amnesia/store/pinecone/pineconefake"
	"github.com/amnesia-dev/amnesia/store/storetest"
)

const (
	dim    = 16
	apiKey = "pcsk_test_6a1f0c9e2b7d4e58" // a key for the fake only
)

func vector(seed int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(math.Sin(float64(seed*dim+i)*1.37)) + float32(seed)*1e-3
	}
	return v
}

func fake(t *testing.T, o pineconefake.Options) *pineconefake.Server {
	t.Helper()
	if o.APIKey == "" {
		o.APIKey = apiKey
	}
	if o.Dimension == 0 {
		o.Dimension = dim
	}
	f := pineconefake.New(o)
	t.Cleanup(f.Close)
	return f
}

func open(t *testing.T, f *pineconefake.Server, ns string, wait time.Duration) *pinecone.Store {
	t.Helper()
	s, err := pinecone.Open(context.Background(), pinecone.Options{Name: "vecs", Host: f.URL, APIKey: apiKey, Namespace: ns, Dimensions: dim, ConsistencyWait: wait})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// put upserts and waits until the fake shows the record, as an
// application that reads its own writes would.
func put(t *testing.T, f *pineconefake.Server, s *pinecone.Store, ns, key, tag string, seed int) {
	t.Helper()
	err := s.Put(context.Background(), pinecone.Record{ID: key, Subject: tag, Content: fmt.Sprintf("note %d for the test", seed), Embedding: vector(seed), Metadata: map[string]any{"source": "chat"}})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); !f.Visible(ns, key); {
		if time.Now().After(deadline) {
			t.Fatalf("%s never became visible", key)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The conformance suite runs against the fake with eventual consistency
// on: upserts and deletes become visible only after a lag, so every probe
// after a Delete must wait for it (bounded re-query).
func TestPineconeConformance(t *testing.T) {
	for _, pod := range []bool{false, true} {
		t.Run(fmt.Sprintf("pod=%v", pod), func(t *testing.T) {
			var f *pineconefake.Server
			storetest.Run(t, storetest.Harness{
				Open: func(t *testing.T) store.Store {
					f = fake(t, pineconefake.Options{Pod: pod, UpsertLag: 30 * time.Millisecond, DeleteLag: 150 * time.Millisecond})
					return open(t, f, "tenant-a", 800*time.Millisecond)
				},
				Put: func(t *testing.T, s store.Store, key, tag string, seed int) {
					put(t, f, s.(*pinecone.Store), "tenant-a", key, tag, seed)
				},
				ReclaimReportsStateOnly: true,
			})
		})
	}
}

func methods(r store.LogicalResult) string { return strings.Join(r.Methods, ",") }

// A delete that Pinecone makes visible only after a while: the probe
// re-queries until the record is gone and says so; with a bound shorter
// than the lag it reports the record as still found, never as gone.
func TestEventualConsistencyRequery(t *testing.T) {
	ctx := context.Background()
	f := fake(t, pineconefake.Options{DeleteLag: 400 * time.Millisecond})
	s := open(t, f, "", 3*time.Second)
	put(t, f, s, "", "a", "hmac:aa", 1)
	put(t, f, s, "", "b", "hmac:bb", 2)
	ev, err := s.ReadEvidence(ctx, []string{"a"})
	if err != nil || ev["a"] == nil || ev["a"].Filter[pinecone.SubjectKey] != "hmac:aa" || len(ev["a"].Vector) != dim {
		t.Fatalf("evidence: %+v, %v", ev, err)
	}
	if len(ev["a"].Needles) != 0 {
		t.Errorf("evidence has %d needles: there is no file to scan", len(ev["a"].Needles))
	}
	if err := s.Delete(ctx, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	if !f.Visible("", "a") {
		t.Fatal("the fake made the delete visible at once: the test would not exercise the re-query")
	}
	start := time.Now()
	res, err := s.ProbeLogical(ctx, []string{"a"}, ev)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Found() {
		t.Fatalf("deleted record still found after the bounded re-query: %+v", res[0])
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("probe returned after %s, before the delete could be visible", d)
	}
	for _, m := range []string{"by-id:fetch", "by-id:list-prefix", "by-filter:subject", "by-similarity:k=10", "eventual-consistency:"} {
		if !strings.Contains(methods(res[0]), m) {
			t.Errorf("methods %q lack %s", methods(res[0]), m)
		}
	}

	// A bound shorter than the lag: the record is reported as found.
	short := open(t, f, "", 100*time.Millisecond)
	if err := short.Delete(ctx, []string{"b"}); err != nil {
		t.Fatal(err)
	}
	evb, _ := short.ReadEvidence(ctx, []string{"b"})
	res, err = short.ProbeLogical(ctx, []string{"b"}, evb)
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].ByID || !res[0].ByFilter || !res[0].BySimilarity {
		t.Errorf("record whose delete is not visible yet, probed with a short bound: %+v, want found by every path", res[0])
	}
}

// Every request carries Api-Key and X-Pinecone-API-Version; a wrong key is
// refused with a message that names what to fix and never the key.
func TestHeadersAndKey(t *testing.T) {
	ctx := context.Background()
	f := fake(t, pineconefake.Options{})
	s := open(t, f, "", time.Second)
	put(t, f, s, "", "a", "hmac:aa", 1)
	if _, err := s.ProbeLogical(ctx, []string{"a"}, nil); err != nil {
		t.Fatal(err)
	}
	if v := f.VersionsSeen(); len(v) != 1 || v[pinecone.APIVersion] == 0 {
		t.Errorf("API versions sent: %v, want only %s", v, pinecone.APIVersion)
	}
	wrong := "pcsk_wrong_93e1d2c4"
	_, err := pinecone.Open(ctx, pinecone.Options{Name: "vecs", Host: f.URL, APIKey: wrong})
	if err == nil || !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "api_key") {
		t.Fatalf("open with a wrong key: %v", err)
	}
	if strings.Contains(err.Error(), wrong) || strings.Contains(err.Error(), apiKey) {
		t.Fatalf("error names the key: %v", err)
	}
	for _, host := range []string{"http://example.com", "ftp://127.0.0.1", "https://user:pw@idx.pinecone.io"} {
		if _, err := pinecone.Open(ctx, pinecone.Options{Host: host, APIKey: apiKey}); err == nil {
			t.Errorf("host %s accepted", host)
		}
	}
	if _, err := pinecone.Open(ctx, pinecone.Options{Host: f.URL}); err == nil || !strings.Contains(err.Error(), "api_key: $") {
		t.Errorf("open without a key: %v", err)
	}
}

// Delete by subject: a pod-based index deletes by metadata filter; a
// serverless one refuses that (400), and the adapter deletes the ids a
// filtered query returns. Another subject's records stay.
func TestDeleteBySubject(t *testing.T) {
	ctx := context.Background()
	for _, pod := range []bool{true, false} {
		f := fake(t, pineconefake.Options{Pod: pod})
		s := open(t, f, "ns", time.Second)
		put(t, f, s, "ns", "a1", "hmac:aa", 1)
		put(t, f, s, "ns", "a2", "hmac:aa", 2)
		put(t, f, s, "ns", "b1", "hmac:bb", 3)
		how, err := s.DeleteBySubject(ctx, "hmac:aa")
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]string{true: "metadata filter", false: "refused"}[pod]; !strings.Contains(how, want) {
			t.Errorf("pod=%v: method %q, want %q", pod, how, want)
		}
		if f.Visible("ns", "a1") || f.Visible("ns", "a2") || !f.Visible("ns", "b1") {
			t.Errorf("pod=%v: after DeleteBySubject a1=%v a2=%v b1=%v", pod, f.Visible("ns", "a1"), f.Visible("ns", "a2"), f.Visible("ns", "b1"))
		}
	}
}

// List by prefix runs on serverless indexes only; on a pod-based one the
// probe says it did not run instead of failing.
func TestListOnlyServerless(t *testing.T) {
	ctx := context.Background()
	for _, pod := range []bool{false, true} {
		f := fake(t, pineconefake.Options{Pod: pod})
		s := open(t, f, "", time.Second)
		for i := 0; i < 130; i++ {
			put(t, f, s, "", fmt.Sprintf("doc1#%03d", i), "hmac:aa", i)
		}
		put(t, f, s, "", "doc2#000", "hmac:aa", 500)
		ids, err := s.List(ctx, "doc1#")
		if pod {
			if err == nil {
				t.Errorf("pod index: List succeeded")
			}
		} else if err != nil || len(ids) != 130 {
			t.Errorf("serverless List(doc1#): %d ids, %v; want 130 over two pages", len(ids), err)
		}
		res, err := s.ProbeLogical(ctx, []string{"doc2#000"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if has := strings.Contains(methods(res[0]), "by-id:list-prefix"); has == pod || !res[0].ByID {
			t.Errorf("pod=%v: methods %q, found %v", pod, methods(res[0]), res[0].ByID)
		}
	}
}

// The residue state is always UNVERIFIED-managed, citing the vendor's
// deletion commitment; the adapter claims neither reclaim nor a physical
// probe.
func TestManagedState(t *testing.T) {
	ctx := context.Background()
	f := fake(t, pineconefake.Options{})
	s := open(t, f, "", time.Second)
	info := s.Info()
	if info.Has(store.CapReclaim) || info.Has(store.CapProbePhysical) {
		t.Errorf("capabilities %v claim reclaim or a physical probe", info.Capabilities)
	}
	if _, ok := store.Store(s).(store.PhysicalProber); ok {
		t.Errorf("the adapter implements a physical probe")
	}
	rr, err := s.Reclaim(ctx)
	if err != nil || rr.State != "UNVERIFIED-managed" || !strings.Contains(rr.Evidence, pinecone.DeletionCommitmentURL) {
		t.Errorf("reclaim: %+v, %v", rr, err)
	}
	mr, err := s.MeasureResidue(ctx, time.Now())
	if err != nil || mr.State != "UNVERIFIED-managed" {
		t.Errorf("residue: %+v, %v", mr, err)
	}
}

// The readiness check reads stats only: a good configuration gets the
// managed warning only; a wrong key, dimension or host is an error that
// names the key to fix and never the API key.
func TestCheck(t *testing.T) {
	ctx := context.Background()
	f := fake(t, pineconefake.Options{})
	s := open(t, f, "", time.Second)
	put(t, f, s, "", "a", "hmac:aa", 1)
	good := store.Config{Name: "vecs", Type: pinecone.Type, Host: f.URL, APIKey: apiKey, Dimensions: dim}
	ps := store.Check(ctx, good)
	if len(store.Errors(ps)) != 0 || len(ps) != 1 || !strings.Contains(ps[0].Message, "UNVERIFIED-managed") {
		t.Errorf("good config: %v", ps)
	}
	before := f.Calls("/vectors/fetch") + f.Calls("/query") + f.Calls("/vectors/list")
	cases := []struct {
		c   func(*store.Config)
		key string
	}{
		{func(c *store.Config) { c.APIKey = "pcsk_wrong_key_777" }, "api_key"},
		{func(c *store.Config) { c.Dimensions = dim + 1 }, "dimensions"},
		{func(c *store.Config) { c.Host = "http://127.0.0.1:1" }, "host"},
		{func(c *store.Config) { c.APIKey = "" }, ""},
		{func(c *store.Config) { c.ConsistencyWait = "soon" }, ""},
	}
	for i, tc := range cases {
		c := good
		tc.c(&c)
		errs := store.Errors(store.Check(ctx, c))
		if len(errs) == 0 || errs[0].Key != tc.key {
			t.Errorf("case %d: %v, want an error on %q", i, errs, tc.key)
			continue
		}
		if strings.Contains(errs[0].Message, "pcsk_") {
			t.Errorf("case %d: message names the key: %s", i, errs[0].Message)
		}
	}
	if after := f.Calls("/vectors/fetch") + f.Calls("/query") + f.Calls("/vectors/list"); after != before {
		t.Errorf("Check read records (%d record reads)", after-before)
	}
	nsc := good
	nsc.Namespace = "nobody-here"
	if ps := store.Check(ctx, nsc); len(store.Errors(ps)) != 0 || ps[0].Key != "namespace" {
		t.Errorf("empty namespace: %v, want a warning on namespace", ps)
	}
}

// A host that redirects never gets the key forwarded: Go's client would
// send the Api-Key header on to the redirect's target.
func TestNoRedirectCarriesTheKey(t *testing.T) {
	var leaked atomic.Bool
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Api-Key") != "" {
			leaked.Store(true)
		}
		w.WriteHeader(http.StatusOK)
		w.Write([]byte(`{"dimension": 16, "namespaces": {}}`))
	}))
	defer elsewhere.Close()
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	_, err := pinecone.Open(context.Background(), pinecone.Options{Name: "vecs", Host: redirector.URL, APIKey: apiKey})
	if err == nil || !strings.Contains(err.Error(), "307") {
		t.Errorf("open through a redirect: %v, want the 307 refused", err)
	}
	if ps := store.Errors(store.Check(context.Background(), store.Config{Name: "vecs", Type: pinecone.Type, Host: redirector.URL, APIKey: apiKey})); len(ps) == 0 {
		t.Errorf("check through a redirect: no error")
	}
	if leaked.Load() {
		t.Fatal("the API key was sent to the redirect's target")
	}
}

// The filter query asks for ids only: with metadata, a subject's records
// would exceed Pinecone's 4 MB result limit long before topK.
func TestFilterQueryWithinResultLimit(t *testing.T) {
	ctx := context.Background()
	old := pineconefake.MaxResultBytes
	pineconefake.MaxResultBytes = 4000 // the fake's limit, scaled down with the records
	defer func() { pineconefake.MaxResultBytes = old }()
	f := fake(t, pineconefake.Options{DeleteLag: 50 * time.Millisecond})
	s := open(t, f, "", time.Second)
	for i := 0; i < 40; i++ {
		err := s.Put(ctx, pinecone.Record{ID: fmt.Sprintf("rec-%02d", i), Subject: "hmac:aa", Content: strings.Repeat("a long chat message ", 10), Embedding: vector(i)})
		if err != nil {
			t.Fatal(err)
		}
	}
	ids, err := s.BySubject(ctx, "hmac:aa")
	if err != nil || len(ids) != 40 {
		t.Fatalf("BySubject: %d ids, %v", len(ids), err)
	}
	how, err := s.DeleteBySubject(ctx, "hmac:aa")
	if err != nil || !strings.Contains(how, "40 ids") {
		t.Fatalf("DeleteBySubject: %q, %v", how, err)
	}
	f.Settle()
	if ids, _ := s.BySubject(ctx, "hmac:aa"); len(ids) != 0 {
		t.Errorf("after DeleteBySubject: %d left", len(ids))
	}
}

// Location names host and namespace, and never a host's credentials.
func TestLocation(t *testing.T) {
	if got := pinecone.Location(store.Config{Host: "https://idx-1.svc.pinecone.io", Namespace: "t1"}); got != "idx-1.svc.pinecone.io namespace t1" {
		t.Errorf("Location = %q", got)
	}
	if got := pinecone.Location(store.Config{Host: "https://u:s3cret@idx-1.svc.pinecone.io"}); strings.Contains(got, "s3cret") {
		t.Errorf("Location = %q shows the credentials", got)
	}
}

// Content over Pinecone's 40 KB of metadata per record is refused before
// anything is written, with what to do.
func TestMetadataLimit(t *testing.T) {
	ctx := context.Background()
	f := fake(t, pineconefake.Options{})
	s := open(t, f, "", time.Second)
	big := strings.Repeat("a sentence of a very long document. ", 1200)
	err := s.Put(ctx, pinecone.Record{ID: "big", Subject: "hmac:aa", Content: big, Embedding: vector(1)})
	if err == nil || !strings.Contains(err.Error(), "smaller chunks") || strings.Contains(err.Error(), "a sentence") {
		t.Errorf("Put of %d bytes of content: %v", len(big), err)
	}
	if f.Calls("/vectors/upsert") != 0 {
		t.Errorf("the oversized record was sent")
	}
}
