package saga_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/demo"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
	"github.com/amnesia-dev/amnesia/store/sqlitevec"
	"github.com/amnesia-dev/amnesia/subject"
)

type fixture struct {
	dir    *state.Dir
	ledger *sqliteledger.Ledger
	docs   *capture.Docs
	vecs   *capture.Vectors
	rawD   *sqlitedoc.Store
	rawV   *sqlitevec.Store
	corpus *demo.Corpus
}

func newFixture(t *testing.T, people, docsEach int) *fixture {
	t.Helper()
	ctx := context.Background()
	root := t.TempDir()
	cfg := state.DefaultConfig()
	cfg.Stores = []state.StoreConfig{
		{Name: "docs", Type: sqlitedoc.Type, Path: filepath.Join(root, "docs.db")},
		{Name: "vectors", Type: sqlitevec.Type, Path: filepath.Join(root, "vectors.db"), Dimensions: demo.Dim},
	}
	sd, err := state.Init(filepath.Join(root, "state"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := sqliteledger.Open(ctx, sd.LedgerPath())
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{dir: sd, ledger: l, corpus: demo.Generate(3, people, docsEach)}
	if f.rawD, err = sqlitedoc.Open(ctx, "docs", cfg.Stores[0].Path, true); err != nil {
		t.Fatal(err)
	}
	if f.rawV, err = sqlitevec.Open(ctx, "vectors", cfg.Stores[1].Path, demo.Dim, true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.rawD.Close(); f.rawV.Close(); l.Close() })
	rec := capture.New(l, sd.Keyer, "")
	f.docs, f.vecs = rec.Docs(f.rawD), rec.Vectors(f.rawV)
	for _, d := range f.corpus.Docs {
		var mentions []string
		for _, m := range d.Mentions {
			mentions = append(mentions, f.corpus.People[m].ID)
		}
		f.put(t, d.ID, f.corpus.People[d.Owner].ID, d.Text, mentions)
	}
	return f
}

func (f *fixture) put(t *testing.T, id, owner, text string, mentions []string) {
	t.Helper()
	ctx := context.Background()
	if err := f.docs.Put(ctx, capture.Doc{ID: id, Kind: sqlitedoc.KindDocument, Subject: owner, Text: text, Mentions: mentions}); err != nil {
		t.Fatal(err)
	}
	for i, c := range demo.Chunk(text, demo.ChunkSize) {
		cid := fmt.Sprintf("%s#%d", id, i)
		if err := f.docs.Put(ctx, capture.Doc{ID: cid, Kind: sqlitedoc.KindChunk, Parent: id, Text: c, Mentions: mentions}); err != nil {
			t.Fatal(err)
		}
		if err := f.vecs.Put(ctx, capture.Vector{ID: cid, Embedding: demo.Embed(c, demo.Dim)}); err != nil {
			t.Fatal(err)
		}
	}
}

func (f *fixture) trace(t *testing.T, person int) *lineage.Trace {
	t.Helper()
	k, err := f.dir.Keyer.Key(f.dir.Config.Scope, f.corpus.People[person].ID)
	if err != nil {
		t.Fatal(err)
	}
	v, err := f.ledger.View(context.Background(), f.dir.Config.Scope, k)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := lineage.BuildTrace(v)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func (f *fixture) erase(t *testing.T, tr *lineage.Trace, stores map[string]store.Store, openErr map[string]error) (*saga.Result, error) {
	t.Helper()
	return saga.Run(context.Background(), &saga.Erasure{Dir: f.dir, Ledger: f.ledger, Stores: stores, OpenErr: openErr, Trace: tr, Reason: "TICKET-1"})
}

func TestEraseVerifiesPhysically(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 6, 6)
	tr := f.trace(t, 1)
	res, err := f.erase(t, tr, map[string]store.Store{"docs": f.rawD, "vectors": f.rawV}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := res.Statement.Predicate
	if !p.Complete {
		t.Fatalf("erasure incomplete: %+v", p.Counts)
	}
	if p.Counts.Verified != len(tr.Artifacts) || p.Counts.NeedsHuman != len(tr.Mentions) {
		t.Errorf("counts %+v for %d artifacts and %d mentions", p.Counts, len(tr.Artifacts), len(tr.Mentions))
	}
	if p.Counts.VerifiedPhysical*10 < p.Counts.Verified*8 {
		t.Errorf("only %d of %d artifacts verified physically", p.Counts.VerifiedPhysical, p.Counts.Verified)
	}
	for _, a := range p.Artifacts {
		if a.Outcome == certificate.Verified && a.Level == certificate.LevelPhysical {
			ph := a.Measurement.Physical
			if ph.FoundBefore == 0 || ph.FoundAfter != 0 {
				t.Errorf("%s VERIFIED(physical) with found_before=%d found_after=%d", a.ID, ph.FoundBefore, ph.FoundAfter)
			}
		}
	}
	if len(p.DeclaredScope) != 2 || len(p.OutOfScope) == 0 {
		t.Errorf("declared scope %d stores, out of scope %d entries", len(p.DeclaredScope), len(p.OutOfScope))
	}
	// Reads through capture see nothing of the subject; others are intact.
	if rs, err := f.docs.BySubject(ctx, f.corpus.People[1].ID); err != nil || len(rs) != 0 {
		t.Errorf("BySubject after erasure = %d records, %v", len(rs), err)
	}
	if rs, _ := f.docs.BySubject(ctx, f.corpus.People[2].ID); len(rs) == 0 {
		t.Errorf("another subject's records vanished")
	}
	// The certificate verifies offline with the public key file.
	pemBytes, _ := os.ReadFile(f.dir.PublicKeyPath())
	pub, err := certificate.ParsePublicKeyPEM(pemBytes)
	if err != nil {
		t.Fatal(err)
	}
	env, err := os.ReadFile(res.CertificatePath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := certificate.VerifyBundle(ctx, env, certificate.VerifyOptions{Keys: []certificate.TrustedKey{{Public: pub}}}); err != nil {
		t.Errorf("certificate does not verify: %v", err)
	}
	// Evidence is destroyed once the certificate is published.
	if m, _ := filepath.Glob(filepath.Join(f.dir.ErasureDir(res.ID), "evidence-*")); len(m) != 0 {
		t.Errorf("sealed evidence left behind: %v", m)
	}
	// Running it again is the same erasure: same certificate, nothing redone.
	again, err := f.erase(t, tr, map[string]store.Store{"docs": f.rawD, "vectors": f.rawV}, nil)
	if err != nil {
		t.Fatal(err)
	}
	env2, _ := os.ReadFile(again.CertificatePath)
	if string(env2) != string(env) || !again.Resumed {
		t.Errorf("re-running a finished erasure changed the certificate (resumed=%v)", again.Resumed)
	}
	// A new trace of the subject now says it is all erased.
	k, _ := f.dir.Keyer.Key(f.dir.Config.Scope, f.corpus.People[1].ID)
	v, _ := f.ledger.View(ctx, f.dir.Config.Scope, k)
	if tr2, err := lineage.BuildTrace(v); err == nil && len(tr2.Artifacts) != 0 {
		t.Errorf("trace after erasure still lists %d artifacts", len(tr2.Artifacts))
	}
	// Re-ingest of the erased subject is refused; of an erased document,
	// even with new consent.
	doc := capture.Doc{ID: tr.Plan[0].Delete[0], Kind: sqlitedoc.KindDocument, Subject: f.corpus.People[1].ID, Text: "again"}
	if err := f.docs.Put(ctx, doc); !errors.Is(err, capture.ErrSubjectErased) {
		t.Errorf("re-ingest after erasure = %v, want ErrSubjectErased", err)
	}
	err = f.docs.Put(capture.WithNewConsent(ctx, "test"), doc)
	if !errors.Is(err, lineage.ErrErased) {
		t.Errorf("re-ingest of an erased document with new consent = %v, want ErrErased", err)
	}
}

func TestStoreDownIsUnverified(t *testing.T) {
	f := newFixture(t, 4, 4)
	tr := f.trace(t, 2)
	down := fmt.Errorf("open vectors: %w", store.ErrUnavailable)
	res, err := f.erase(t, tr, map[string]store.Store{"docs": f.rawD}, map[string]error{"vectors": down})
	if err != nil {
		t.Fatal(err)
	}
	p := res.Statement.Predicate
	if p.Complete {
		t.Fatalf("erasure with a store down reported complete")
	}
	for _, a := range p.Artifacts {
		switch {
		case a.Outcome == certificate.NeedsHuman:
		case a.Store == "vectors" && a.Outcome != certificate.Unverified:
			t.Errorf("artifact in the failed store: %s, want UNVERIFIED", a.Outcome)
		case a.Store == "docs" && a.Outcome != certificate.Verified:
			t.Errorf("artifact in the healthy store: %s (%s)", a.Outcome, a.Reason)
		}
	}
	for _, s := range p.DeclaredScope {
		if s.Name == "vectors" && s.Residue != "UNVERIFIED-store-failed" {
			t.Errorf("failed store residue = %s", s.Residue)
		}
	}
	// The vectors were not deleted (the store was "down"), so a later trace
	// still lists them for another attempt.
	tr2 := f.trace(t, 2)
	for _, a := range tr2.Artifacts {
		if a.Store != "vectors" {
			t.Errorf("after a partial erasure the trace lists %s in %s", a.ID, a.Store)
		}
	}
	if len(tr2.Artifacts) == 0 {
		t.Errorf("the unverified vectors left the trace")
	}
}

func TestStaleTraceIsRefused(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 3, 3)
	tr := f.trace(t, 0)
	f.put(t, "late-doc", f.corpus.People[0].ID, "A late document that arrived after the trace was reviewed by the operator.", nil)
	_, err := f.erase(t, tr, map[string]store.Store{"docs": f.rawD, "vectors": f.rawV}, nil)
	if !errors.Is(err, saga.ErrStaleTrace) {
		t.Fatalf("erasing a stale trace = %v, want ErrStaleTrace", err)
	}
	if r, _ := f.rawD.Get(ctx, tr.Plan[0].Delete[0]); r == nil {
		t.Errorf("a refused erasure deleted data")
	}
}

// viewCounter counts the views read through it.
type viewCounter struct {
	lineage.Ledger
	views int
}

func (c *viewCounter) View(ctx context.Context, scope string, s subject.Key) (*lineage.View, error) {
	c.views++
	return c.Ledger.View(ctx, scope, s)
}

// CheckFresh takes a trace whose ledger head has not moved as fresh without
// reading the view again; a moved head (another subject's capture) reads
// it and compares; a change to the subject's own lineage is refused; a
// trace read back from JSON (no head) is compared in full.
func TestCheckFreshByHead(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 3, 2)
	tr := f.trace(t, 0)
	if tr.HeadSeq == 0 || tr.HeadHash == "" {
		t.Fatalf("a trace of a ledger with events has no head: %d %q", tr.HeadSeq, tr.HeadHash)
	}
	c := &viewCounter{Ledger: f.ledger}
	if err := saga.CheckFresh(ctx, c, tr); err != nil || c.views != 0 {
		t.Fatalf("unchanged ledger: %v after %d views, want fresh after none", err, c.views)
	}
	enc, err := tr.Encode()
	if err != nil {
		t.Fatal(err)
	}
	var back lineage.Trace
	if err := json.Unmarshal(enc, &back); err != nil {
		t.Fatal(err)
	}
	if err := saga.CheckFresh(ctx, c, &back); err != nil || c.views != 1 || back.HeadSeq != 0 {
		t.Fatalf("a trace read from JSON: %v after %d views (head %d), want fresh after one view", err, c.views, back.HeadSeq)
	}
	f.put(t, "other-doc", f.corpus.People[1].ID, "Another person's document, captured after the first person's trace was taken.", nil)
	if err := saga.CheckFresh(ctx, c, tr); err != nil || c.views != 2 {
		t.Fatalf("after another subject's capture: %v after %d views, want fresh after one more view", err, c.views)
	}
	f.put(t, "late-doc", f.corpus.People[0].ID, "A late document of the first person, captured after the trace was taken.", nil)
	if err := saga.CheckFresh(ctx, c, tr); !errors.Is(err, saga.ErrStaleTrace) {
		t.Fatalf("after the subject's own capture: %v, want ErrStaleTrace", err)
	}
}

func TestSuppressionHidesReadsAtOnce(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 3, 3)
	tr := f.trace(t, 0)
	var ids []string
	for _, a := range tr.Artifacts {
		ids = append(ids, a.ID)
	}
	key := tr.Plan[0].Delete[0]
	if r, _ := f.docs.Get(ctx, key); r == nil {
		t.Fatal("record not readable before suppression")
	}
	vec, _ := f.rawV.Get(ctx, tr.Plan[1].Delete[0])
	if err := f.ledger.Suppress(ctx, "er-test", ids); err != nil {
		t.Fatal(err)
	}
	if r, _ := f.docs.Get(ctx, key); r != nil {
		t.Errorf("suppressed record still returned by Get")
	}
	if rs, _ := f.docs.BySubject(ctx, f.corpus.People[0].ID); len(rs) != 0 {
		t.Errorf("suppressed records still returned by BySubject: %d", len(rs))
	}
	ns, err := f.vecs.Search(ctx, vec.Embedding, 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range ns {
		if n.ID == vec.ID {
			t.Errorf("suppressed vector still returned by Search")
		}
	}
	if raw, _ := f.rawD.Get(ctx, key); raw == nil {
		t.Errorf("suppression deleted the record; it must only hide it")
	}
}

func TestUnconfiguredStoreIsOutOfScope(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 2, 2)
	owner, _ := f.dir.Keyer.Key(f.dir.Config.Scope, f.corpus.People[0].ID)
	a := lineage.Artifact{ID: lineage.ArtifactID(f.dir.Keyer, "default", "cache", "c-1"), Scope: "default", Subject: owner, Kind: lineage.KindCache, Store: "cache", Key: "c-1", Digest: "x"}
	if err := f.ledger.Record(ctx, a); err != nil {
		t.Fatal(err)
	}
	res, err := f.erase(t, f.trace(t, 0), map[string]store.Store{"docs": f.rawD, "vectors": f.rawV}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := res.Statement.Predicate
	found := false
	for _, x := range p.Artifacts {
		if x.ID == a.ID {
			found = x.Outcome == certificate.OutOfScope
		}
	}
	listed := false
	for _, x := range p.OutOfScope {
		listed = listed || x.What == "store cache"
	}
	if !found || !listed || p.Complete {
		t.Errorf("unconfigured store: artifact out of scope=%v, listed=%v, complete=%v", found, listed, p.Complete)
	}
}

// countingStore counts Reclaim calls on a real adapter.
type countingStore struct {
	*sqlitedoc.Store
	reclaims int
}

func (c *countingStore) Reclaim(ctx context.Context) (store.ReclaimReport, error) {
	c.reclaims++
	return c.Store.Reclaim(ctx)
}

func TestBatchReclaimsOnce(t *testing.T) {
	f := newFixture(t, 6, 3)
	docs := &countingStore{Store: f.rawD}
	stores := map[string]store.Store{"docs": docs, "vectors": f.rawV}
	var es []*saga.Erasure
	for _, p := range []int{0, 2, 4} {
		es = append(es, &saga.Erasure{Dir: f.dir, Ledger: f.ledger, Stores: stores, Trace: f.trace(t, p), Reason: "BATCH-1"})
	}
	res, err := saga.RunBatch(context.Background(), es)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 || docs.reclaims != 1 {
		t.Fatalf("%d results, %d reclaims of docs; want 3 and 1", len(res), docs.reclaims)
	}
	for _, r := range res {
		p := r.Statement.Predicate
		if !p.Complete || p.Counts.VerifiedPhysical == 0 {
			t.Errorf("%s: complete=%v counts=%+v", r.ID, p.Complete, p.Counts)
		}
		if _, err := os.Stat(r.CertificatePath); err != nil {
			t.Errorf("certificate missing: %v", err)
		}
	}
	// Each erasure of the batch resumes alone to the same certificate.
	again, err := saga.Run(context.Background(), es[1])
	if err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(res[1].CertificatePath)
	b, _ := os.ReadFile(again.CertificatePath)
	if string(a) != string(b) {
		t.Errorf("re-running one erasure of a batch changed its certificate")
	}
}
