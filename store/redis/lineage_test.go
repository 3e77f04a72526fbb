package redis_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/store"
	redisstore "github.com/amnesia-dev/amnesia/store/redis"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
)

// A cache entry derived from an erased answer is found through lineage,
// not similarity: the exact cache's key is a hash of the prompt, and the
// semantic cache's vector is the prompt's (here unrelated to the answer),
// so no similarity search with the answer's own vector would reach them.
// capture records each entry with the answer as its parent; the erasure of
// the answer's owner deletes both entries and verifies them physically.
func TestRedisCacheDerivedFromErasedAnswerIsErasedThroughLineage(t *testing.T) {
	ctx := context.Background()
	srv := private(t)
	dir := t.TempDir()
	cfg := state.DefaultConfig()
	cfg.Stores = []state.StoreConfig{
		{Name: "answers", Type: sqlitedoc.Type, Path: filepath.Join(dir, "answers.db")},
		{Name: "cache", Type: redisstore.Type, DSN: srv.addr(), Preset: redisstore.LayoutCache, Table: "cache:", DataDir: srv.dir},
		{Name: "semantic", Type: redisstore.Type, DSN: srv.addr(), Preset: redisstore.LayoutSemantic, DataDir: srv.dir},
	}
	sd, err := state.Init(filepath.Join(dir, "state"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ledger, err := sqliteledger.Open(ctx, sd.LedgerPath())
	if err != nil {
		t.Fatal(err)
	}
	defer ledger.Close()
	stores := map[string]store.Store{}
	for _, c := range cfg.Stores {
		s, err := store.Open(ctx, c, true)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		stores[c.Name] = s
	}
	rec := capture.New(ledger, sd.Keyer, cfg.Scope)
	answers := rec.Docs(stores["answers"].(*sqlitedoc.Store))
	cache := stores["cache"].(*redisstore.Store)
	sem := stores["semantic"].(*redisstore.Store)

	// Two people; alice's answer is cached in both caches.
	for i, who := range []string{"alice@example.org", "bob@example.org"} {
		id := []string{"ans-1", "ans-2"}[i]
		answer := text(who, i)
		if err := answers.Put(ctx, capture.Doc{ID: id, Kind: sqlitedoc.KindDocument, Subject: who, Text: answer}); err != nil {
			t.Fatal(err)
		}
		prompt := "what did the doctor say? #" + id
		key, err := cache.PutCache(ctx, prompt, "llm=test", answer)
		if err != nil {
			t.Fatal(err)
		}
		skey, err := sem.PutSemantic(ctx, redisstore.SemanticEntry{ID: id, Prompt: prompt, Answer: answer, Vector: vector(100 + i)})
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range []capture.Artifact{
			{Store: "cache", Key: key, Kind: lineage.KindCache, ParentStore: "answers", ParentKey: id, Content: []byte(answer)},
			{Store: "semantic", Key: skey, Kind: lineage.KindCache, ParentStore: "answers", ParentKey: id, Content: []byte(answer)},
		} {
			if _, _, err := rec.RecordArtifact(ctx, a); err != nil {
				t.Fatal(err)
			}
		}
	}
	entries, _ := cache.Client().Keys(ctx, cache.Prefix()+"*").Result()
	if len(entries) != 2 {
		t.Fatalf("cache holds %d entries, want 2", len(entries))
	}

	k, err := sd.Keyer.Key(cfg.Scope, "alice@example.org")
	if err != nil {
		t.Fatal(err)
	}
	v, err := ledger.View(ctx, cfg.Scope, k)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := lineage.BuildTrace(v)
	if err != nil {
		t.Fatal(err)
	}
	res, err := saga.Run(ctx, &saga.Erasure{Dir: sd, Ledger: ledger, Stores: stores, Trace: tr, Reason: "TEST-1"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, a := range res.Statement.Predicate.Artifacts {
		got[a.Store+"/"+a.Kind] = a.Outcome + "(" + a.Level + ")"
	}
	for _, want := range []string{"cache/cache", "semantic/cache"} {
		if got[want] != certificate.Verified+"(physical)" {
			t.Errorf("%s: %q, want %s(physical) (all: %v)", want, got[want], certificate.Verified, got)
		}
	}
	// alice's entries are gone, bob's answer is still served from both caches.
	if _, hit, _ := cache.LookupCache(ctx, "what did the doctor say? #ans-1", "llm=test"); hit {
		t.Errorf("the exact cache still answers alice's prompt")
	}
	if a, hit, _ := cache.LookupCache(ctx, "what did the doctor say? #ans-2", "llm=test"); !hit || a != text("bob@example.org", 1) {
		t.Errorf("the exact cache lost bob's entry: %q %v", a, hit)
	}
	if _, hit, _ := sem.LookupSemantic(ctx, vector(100), 0.99); hit {
		t.Errorf("the semantic cache still answers alice's prompt")
	}
	if _, hit, _ := sem.LookupSemantic(ctx, vector(101), 0.99); !hit {
		t.Errorf("the semantic cache lost bob's entry")
	}
}

// capture.Docs over a Redis chat store: messages are pushed as LangChain
// does, the session is one artifact, and a semantic store refuses a write
// without its vector.
func TestRedisCaptureDocs(t *testing.T) {
	ctx := context.Background()
	srv := private(t)
	dir := t.TempDir()
	sd, err := state.Init(filepath.Join(dir, "state"), state.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	ledger, err := sqliteledger.Open(ctx, sd.LedgerPath())
	if err != nil {
		t.Fatal(err)
	}
	defer ledger.Close()
	rec := capture.New(ledger, sd.Keyer, sd.Config.Scope)
	chat := openStore(t, redisstore.Options{Name: "chat", Addr: srv.addr(), Layout: redisstore.LayoutChat})
	docs := rec.Docs(chat)
	key := chat.SessionKey("s1")
	if err := docs.Put(ctx, capture.Doc{ID: key, Kind: capture.KindChat, Subject: "alice@example.org", Text: "my address is 1 Elm St"}); err != nil {
		t.Fatal(err)
	}
	if err := docs.Put(ctx, capture.Doc{ID: key, Kind: capture.KindChat, Subject: "alice@example.org", Text: "noted", Metadata: map[string]any{"type": "ai"}}); err != nil {
		t.Fatal(err)
	}
	ms, err := chat.Messages(ctx, "s1")
	if err != nil || len(ms) != 2 || ms[0] != "my address is 1 Elm St" || ms[1] != "noted" {
		t.Fatalf("messages = %q, %v", ms, err)
	}
	raw, _ := chat.Client().LIndex(ctx, key, 0).Result()
	if !strings.HasPrefix(raw, `{"type": "ai", "data": {"content": "noted", "additional_kwargs": {}`) {
		t.Errorf("newest element %s is not LangChain's message_to_dict JSON", raw)
	}
	if err := docs.Put(ctx, capture.Doc{ID: "elsewhere:s2", Kind: capture.KindChat, Subject: "bob@example.org", Text: "x"}); err == nil || !strings.Contains(err.Error(), "must start with") {
		t.Errorf("a key outside the prefix: %v", err)
	}
	sem := openStore(t, redisstore.Options{Name: "sem", Addr: srv.addr(), Layout: redisstore.LayoutSemantic})
	err = rec.Docs(sem).Put(ctx, capture.Doc{ID: sem.Prefix() + "1", Kind: capture.KindDocument, Subject: "bob@example.org", Text: "answer"})
	if err == nil || !strings.Contains(err.Error(), `Metadata["vector"]`) {
		t.Errorf("a semantic entry without its vector: %v", err)
	}
}
