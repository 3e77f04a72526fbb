package pgvector_test

import (
	"context"
	"crypto/ed25519"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/pgvector"
)

// Against the services' PostgreSQL: with nearby configured, a record of
// Bob's that quotes half of Alice's text and a vector close to Alice's are
// NEEDS_HUMAN candidates with their measurement; Bob's unrelated record is
// not; nothing of Bob's is deleted; drift is measured; the certificate
// verifies.
func TestSagaNearDuplicates(t *testing.T) {
	ctx := context.Background()
	c := config(t)
	c.Nearby = &store.Nearby{Quotes: true, Paraphrases: true, ControlQueries: 3}
	cfg := state.DefaultConfig()
	cfg.Stores = []state.StoreConfig{c}
	d, err := state.Init(filepath.Join(t.TempDir(), "state"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := sqliteledger.Open(ctx, d.LedgerPath())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	opened, err := d.Config.OpenStore(ctx, c, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { opened.Close() })
	s := opened.(*pgvector.Store)
	alice, _ := d.Keyer.Key(d.Config.Scope, "alice@example.org")
	for i, key := range []string{"a-1", "a-2"} {
		if err := s.Put(ctx, pgvector.Record{ID: key, Subject: alice.String(), Embedding: vector(80 + i), Content: text(80 + i)}); err != nil {
			t.Fatal(err)
		}
		if err := l.Record(ctx, lineage.Artifact{ID: lineage.ArtifactID(d.Keyer, d.Config.Scope, c.Name, key), Scope: d.Config.Scope, Subject: alice,
			Kind: lineage.KindEmbedding, Store: c.Name, Key: key, Digest: lineage.ContentDigest(d.Keyer, []byte(text(80+i)))}); err != nil {
			t.Fatal(err)
		}
	}
	near := vector(80)
	for i := range near {
		if i%5 == 0 {
			near[i] += 0.05
		}
	}
	want := store.Cosine(near, vector(80))
	bob := map[string]pgvector.Record{
		"b-quote": {ID: "b-quote", Subject: "bob", Embedding: vector(90), Content: "Bob forwarded: " + text(80)[:360] + " and added " + text(93)},
		"b-para":  {ID: "b-para", Subject: "bob", Embedding: near, Content: text(91)},
		"b-other": {ID: "b-other", Subject: "bob", Embedding: vector(92), Content: text(92)},
	}
	for _, r := range bob {
		if err := s.Put(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	v, err := l.View(ctx, d.Config.Scope, alice)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := lineage.BuildTrace(v)
	if err != nil {
		t.Fatal(err)
	}
	res, err := saga.Run(ctx, &saga.Erasure{Dir: d, Ledger: l, Stores: map[string]store.Store{c.Name: s}, Trace: tr, Reason: "NEAR-1"})
	if err != nil && res == nil {
		t.Fatal(err)
	}
	p := res.Statement.Predicate
	id := func(key string) string { return lineage.ArtifactID(d.Keyer, d.Config.Scope, c.Name, key) }
	got := map[string]*certificate.Near{}
	for _, a := range p.Artifacts {
		if a.Kind == certificate.KindNearDuplicate {
			if a.Outcome != certificate.NeedsHuman || a.Measurement.Deleted {
				t.Errorf("candidate %+v", a)
			}
			got[a.ID+" "+a.Measurement.Near.Method] = a.Measurement.Near
		}
	}
	q := got[id("b-quote")+" quote"]
	if q == nil || q.Of != id("a-1") || q.Similarity < 0.2 || q.Similarity >= 0.9 || math.Abs(float64(q.Windows)/float64(q.OfWindows)-q.Similarity) > 1e-4 {
		t.Errorf("quote candidate %+v (all: %v)", q, got)
	}
	pp := got[id("b-para")+" paraphrase"]
	if pp == nil || pp.Of != id("a-1") || math.Abs(pp.Similarity-want) > 1e-3 {
		t.Errorf("paraphrase candidate %+v, want cosine %.4f to a-1 (all: %v)", pp, want, got)
	}
	if len(got) != 2 {
		t.Errorf("candidates %v: want the quote and the paraphrase only", got)
	}
	for key := range bob {
		if r, err := s.Get(ctx, key); err != nil || r == nil {
			t.Errorf("Bob's record %s is gone (%v)", key, err)
		}
	}
	for _, key := range []string{"a-1", "a-2"} {
		if a := artifactByID(p, id(key)); a == nil || a.Outcome != certificate.Verified {
			t.Errorf("Alice's %s: %+v", key, a)
		}
	}
	sem := p.Semantic
	t.Logf("quote %+v paraphrase %+v semantic %+v", q, pp, sem)
	if sem == nil || len(sem.Drift) != 1 || sem.Drift[0].Queries != 3 || sem.Drift[0].OverlapAtK != 0.6 || sem.Drift[0].ErasedNeighbours != 6 || sem.Drift[0].OverlapUnerasedAtK != 1 {
		// 5 records, k = 10: every query's 5 neighbours before, 3 after
		// (Alice's 2 deleted): 3/5; none of Bob's left the neighbourhood.
		t.Errorf("semantic %+v", sem)
	}
	b, err := os.ReadFile(res.CertificatePath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := certificate.VerifyBundle(ctx, b, certificate.VerifyOptions{Keys: []certificate.TrustedKey{{Public: d.Key.Public().(ed25519.PublicKey)}}}); err != nil {
		t.Fatalf("certificate does not verify: %v", err)
	}
	enc, _ := certificate.Encode(res.Statement)
	for _, sec := range []string{"b-quote", "b-para", "b-other", "alice@example.org", text(80)[:40], text(91)[:40]} {
		if strings.Contains(string(enc), sec) {
			t.Errorf("the certificate holds %q", sec)
		}
	}
}

func artifactByID(p certificate.Predicate, id string) *certificate.Artifact {
	for i := range p.Artifacts {
		if p.Artifacts[i].ID == id {
			return &p.Artifacts[i]
		}
	}
	return nil
}
