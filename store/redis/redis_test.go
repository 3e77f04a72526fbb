package redis_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/amnesia-dev/amnesia/store"
	redisstore "github.com/amnesia-dev/amnesia/store/redis"
	"github.com/amnesia-dev/amnesia/store/storetest"
)

// put writes one record of the layout under key, as the framework would.
func put(t *testing.T, s *redisstore.Store, layout, key, tag string, seed int) {
	t.Helper()
	ctx := context.Background()
	c := s.Client()
	var err error
	switch layout {
	case redisstore.LayoutChat:
		err = c.LPush(ctx, key, redisstore.Message("human", text(layout, seed)), redisstore.Message("ai", "Noted: "+text(layout, seed+1000))).Err()
	case redisstore.LayoutCache:
		err = c.HSet(ctx, key, "0", redisstore.Generation(text(layout, seed))).Err()
	default:
		_, err = s.PutSemantic(ctx, redisstore.SemanticEntry{ID: strings.TrimPrefix(key, s.Prefix()), Prompt: "question " + text(layout, seed+2000), Answer: text(layout, seed), Vector: vector(seed), SubjectTag: tag})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestRedisConformance runs the store contract for every layout against
// the test server, with its data directory.
func TestRedisConformance(t *testing.T) {
	addr, dir := shared(t)
	for i, layout := range redisstore.Layouts() {
		t.Run(layout, func(t *testing.T) {
			// Keys are the suite's own (rec-a, …): a database per layout,
			// and keys emptied at each Open so that every store starts empty.
			prefix := "rec-"
			dsn := fmt.Sprintf("redis://%s/%d", addr, 10+i)
			storetest.Run(t, storetest.Harness{
				Open: func(t *testing.T) store.Store {
					s := openStore(t, redisstore.Options{Name: "memory", Addr: dsn, Layout: layout, Prefix: prefix, DataDir: dir})
					ctx := context.Background()
					s.Client().Del(ctx, "rec-a", "rec-b", "rec-c", "rec-missing", s.IndexKey())
					return s
				},
				Put: func(t *testing.T, s store.Store, key, tag string, seed int) {
					put(t, s.(*redisstore.Store), layout, key, tag, seed)
				},
				NativeDelete: func(t *testing.T, s store.Store, key string) {
					if err := s.(*redisstore.Store).Client().Del(context.Background(), key).Err(); err != nil {
						t.Fatal(err)
					}
				},
				NativeLeavesBytes: true,
			})
		})
	}
}

// A native DEL leaves the values in the AOF and the RDB; amnesia's Delete
// and Reclaim leave none, and a restart of the server brings nothing back.
func TestRedisNativeDelLeavesBytesEraseLeavesNoneAcrossRestart(t *testing.T) {
	ctx := context.Background()
	srv := private(t)
	for _, layout := range redisstore.Layouts() {
		t.Run(layout, func(t *testing.T) {
			o := redisstore.Options{Name: "memory", Addr: srv.addr(), Layout: layout, Prefix: layout + ":", DataDir: srv.dir}
			s := openStore(t, o)
			native, erased, live := s.Prefix()+"native", s.Prefix()+"erased", s.Prefix()+"live"
			put(t, s, layout, native, "hmac:n", 1)
			put(t, s, layout, erased, "hmac:e", 2)
			put(t, s, layout, live, "hmac:l", 3)
			// An RDB from before the deletes, as a periodic save would leave.
			if err := s.Client().Save(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			ev, err := s.ReadEvidence(ctx, []string{native})
			if err != nil {
				t.Fatal(err)
			}
			ev2, err := s.ReadEvidence(ctx, []string{erased})
			if err != nil {
				t.Fatal(err)
			}
			ev3, err := s.ReadEvidence(ctx, []string{live})
			if err != nil {
				t.Fatal(err)
			}
			ev[erased], ev[live] = ev2[erased], ev3[live]
			for k, e := range ev {
				if e == nil || len(e.Needles) == 0 {
					t.Fatalf("no needles for %s", k)
				}
			}
			if err := s.Client().Del(ctx, native).Err(); err != nil {
				t.Fatal(err)
			}
			rep := physical(t, s, ev)
			if rep.Found[native] == 0 {
				t.Errorf("after a native DEL the probe found none of %s's bytes: it has no power", native)
			}
			if err := s.Delete(ctx, []string{erased}); err != nil {
				t.Fatal(err)
			}
			rc, err := s.Reclaim(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if rc.State != "" {
				t.Errorf("Reclaim state %q (%s), want none", rc.State, rc.Evidence)
			}
			rep = physical(t, s, ev)
			if n := rep.Found[erased]; n != 0 {
				t.Errorf("after Delete+Reclaim %d needles of the erased record remain", n)
			}
			if rep.Found[live] == 0 {
				t.Errorf("the live record is no longer found: the scan went blind")
			}
			// Restart: the server loads its files again.
			srv.stop()
			srv.start()
			s2 := openStore(t, o)
			res, err := s2.ProbeLogical(ctx, []string{erased, live}, ev)
			if err != nil {
				t.Fatal(err)
			}
			if res[0].Found() {
				t.Errorf("after a restart the erased record is back: %+v", res[0])
			}
			if !res[1].ByID {
				t.Errorf("after a restart the live record is gone: the restart lost data, the test proves nothing")
			}
			rep = physical(t, s2, ev)
			if n := rep.Found[erased]; n != 0 {
				t.Errorf("after a restart %d needles of the erased record are in the files", n)
			}
		})
	}
}

func physical(t *testing.T, s *redisstore.Store, ev map[string]*store.Evidence) store.ScanReport {
	t.Helper()
	rep, err := s.ProbePhysical(context.Background(), store.NewNeedleSet(ev))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Files == 0 || rep.Bytes == 0 {
		t.Fatalf("the physical probe read nothing: %+v", rep)
	}
	return rep
}

// A semantic-cache hash left behind when its index entry was deleted is
// no longer returned by the index, but the probe still finds it (EXISTS,
// and the SCAN of the prefix for its subject tag).
func TestRedisHashLeftBehindIndexEntryIsFound(t *testing.T) {
	ctx := context.Background()
	srv := private(t)
	s := openStore(t, redisstore.Options{Name: "semantic", Addr: srv.addr(), Layout: redisstore.LayoutSemantic})
	key, err := s.PutSemantic(ctx, redisstore.SemanticEntry{ID: "e1", Prompt: "q", Answer: text("x", 1), Vector: vector(1), SubjectTag: "hmac:abc"})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := s.ReadEvidence(ctx, []string{key})
	if err != nil {
		t.Fatal(err)
	}
	// The index entry goes (as DEL of a RediSearch-less index, or
	// FT.DROPINDEX without DD, would leave it), the hash stays.
	if err := s.Client().Del(ctx, s.IndexKey()).Err(); err != nil {
		t.Fatal(err)
	}
	ns, err := s.Search(ctx, vector(1), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(ns) != 0 {
		t.Fatalf("the index still returns %v after its entry was deleted", ns)
	}
	res, err := s.ProbeLogical(ctx, []string{key}, ev)
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].ByID || !res[0].ByFilter || res[0].BySimilarity {
		t.Errorf("probe of a hash left behind its index entry = %+v, want found by id and by the subject scan, not by the index", res[0])
	}
	if err := s.Delete(ctx, []string{key}); err != nil {
		t.Fatal(err)
	}
	res, err = s.ProbeLogical(ctx, []string{key}, ev)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Found() {
		t.Errorf("after Delete the hash is still found: %+v", res[0])
	}
}

// With reclaim: delete-only nothing is rewritten and the state says so;
// without data_dir the physical probe is not declared and Reclaim says why.
func TestRedisReclaimStates(t *testing.T) {
	ctx := context.Background()
	srv := private(t)
	s := openStore(t, redisstore.Options{Name: "c", Addr: srv.addr(), Layout: redisstore.LayoutCache, DeleteOnly: true, DataDir: srv.dir})
	if s.Info().Has(store.CapReclaim) {
		t.Errorf("delete-only store declares reclaim")
	}
	rc, err := s.Reclaim(ctx)
	if err != nil || rc.State != redisstore.StateDeferred {
		t.Errorf("delete-only Reclaim = %+v, %v; want %s", rc, err, redisstore.StateDeferred)
	}
	s2 := openStore(t, redisstore.Options{Name: "c", Addr: srv.addr(), Layout: redisstore.LayoutCache})
	if s2.Info().Has(store.CapProbePhysical) {
		t.Errorf("a store without data_dir declares the physical probe")
	}
	rc, err = s2.Reclaim(ctx)
	if err != nil || rc.State != redisstore.StateNoDataDir || !strings.Contains(rc.Evidence, "data_dir") {
		t.Errorf("Reclaim without data_dir = %+v, %v; want %s saying why", rc, err, redisstore.StateNoDataDir)
	}
}

func TestRedisCheck(t *testing.T) {
	ctx := context.Background()
	srv := private(t)
	c := store.Config{Name: "cache", Type: redisstore.Type, DSN: "redis://" + srv.addr() + "/0", Preset: redisstore.LayoutCache}
	has := func(ps []store.Problem, sev store.Severity, key, sub string) bool {
		for _, p := range ps {
			if p.Severity == sev && p.Key == key && strings.Contains(p.Message, sub) {
				return true
			}
		}
		return false
	}
	if ps := store.Check(ctx, c); !has(ps, store.SeverityWarning, "data_dir", "UNVERIFIED") || len(store.Errors(ps)) > 0 {
		t.Errorf("check without data_dir: %v", ps)
	}
	c.DataDir = srv.dir
	if ps := store.Check(ctx, c); len(ps) != 0 {
		t.Errorf("check of a ready store: %v", ps)
	}
	c.DataDir = t.TempDir()
	if ps := store.Check(ctx, c); !has(ps, store.SeverityWarning, "data_dir", "writes its files to") {
		t.Errorf("check with another directory as data_dir: %v", ps)
	}
	c.DataDir = ""
	c.Preset = "nope"
	if ps := store.Check(ctx, c); !has(ps, store.SeverityError, "", "not a Redis layout") {
		t.Errorf("check with an unknown preset: %v", ps)
	}
	c.Preset = ""
	c.DSN = "redis://:secretpw@127.0.0.1:1/0"
	ps := store.Check(ctx, c)
	if !has(ps, store.SeverityError, "dsn", "does not answer") {
		t.Errorf("check of an unreachable server: %v", ps)
	}
	for _, p := range ps {
		if strings.Contains(p.Message, "secretpw") {
			t.Errorf("a problem names the password: %s", p.Message)
		}
	}
}

// The layouts' JSON scaffolding is the same in every record of every
// store on the server: another store's live record must not make an
// erased record look residual. (Before needles left it out, the window
// `.", "return_val": ["{\"lc\": 1, …` of the erased entry matched the
// other store's entry.)
func TestRedisScaffoldingOfOtherStoresIsNotResidue(t *testing.T) {
	ctx := context.Background()
	srv := private(t)
	a := openStore(t, redisstore.Options{Name: "a", Addr: srv.addr(), Layout: redisstore.LayoutSemantic, Prefix: "a:", DataDir: srv.dir})
	b := openStore(t, redisstore.Options{Name: "b", Addr: "redis://" + srv.addr() + "/1", Layout: redisstore.LayoutSemantic, Prefix: "b:", DataDir: srv.dir})
	key, err := a.PutSemantic(ctx, redisstore.SemanticEntry{ID: "1", Prompt: text("a", 1), Answer: text("a", 2), Vector: vector(1)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.PutSemantic(ctx, redisstore.SemanticEntry{ID: "1", Prompt: text("b", 1), Answer: text("b", 2), Vector: vector(2)}); err != nil {
		t.Fatal(err)
	}
	ev, err := a.ReadEvidence(ctx, []string{key})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Delete(ctx, []string{key}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Reclaim(ctx); err != nil {
		t.Fatal(err)
	}
	if n := physical(t, a, ev).Found[key]; n != 0 {
		t.Errorf("%d needles of the erased entry found after reclaim: the other store's scaffolding matched", n)
	}
}

// LangChain's RedisCache writes its keys without a prefix (the md5 hex of
// prompt+llm_string): the cache layout's default prefix is empty, so the
// scans cover the database, whatever other keys it holds.
func TestRedisCacheWithoutPrefix(t *testing.T) {
	ctx := context.Background()
	srv := private(t)
	s := openStore(t, redisstore.Options{Name: "cache", Addr: srv.addr(), Layout: redisstore.LayoutCache, DataDir: srv.dir})
	key, err := s.PutCache(ctx, "what is my diagnosis?", "llm", text("cache", 1))
	if err != nil {
		t.Fatal(err)
	}
	if len(key) != 32 {
		t.Fatalf("key %q is not LangChain's bare md5 hex", key)
	}
	other, err := s.PutCache(ctx, "what is my address?", "llm", text("cache", 2))
	if err != nil {
		t.Fatal(err)
	}
	// Keys of other kinds in the same database, one of a type the adapter
	// does not read.
	if err := s.Client().XAdd(ctx, &goredis.XAddArgs{Stream: "events", Values: []string{"k", "v"}}).Err(); err != nil {
		t.Fatal(err)
	}
	ev, err := s.ReadEvidence(ctx, []string{key})
	if err != nil {
		t.Fatal(err)
	}
	if len(ev[key].Needles) == 0 {
		t.Fatal("no needles")
	}
	if err := s.Delete(ctx, []string{key}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reclaim(ctx); err != nil {
		t.Fatal(err)
	}
	if n := physical(t, s, ev).Found[key]; n != 0 {
		t.Errorf("%d needles remain after Delete+Reclaim", n)
	}
	if _, hit, _ := s.LookupCache(ctx, "what is my diagnosis?", "llm"); hit {
		t.Errorf("the erased prompt is still answered")
	}
	if a, hit, _ := s.LookupCache(ctx, "what is my address?", "llm"); !hit || a != text("cache", 2) {
		t.Errorf("the other entry %s is lost: %q %v", other, a, hit)
	}
}

// A rewrite that does not finish within reclaim_wait is reported as
// PENDING with what remains, and running the reclaim again once the server
// is done finishes it.
func TestRedisReclaimWaitBound(t *testing.T) {
	ctx := context.Background()
	srv := private(t)
	s := openStore(t, redisstore.Options{Name: "c", Addr: srv.addr(), Layout: redisstore.LayoutCache, Prefix: "c:", DataDir: srv.dir, ReclaimWait: 300 * time.Millisecond})
	for i := 0; i < 10; i++ {
		if _, err := s.PutCache(ctx, fmt.Sprint("prompt ", i), "llm", text("slow", i)); err != nil {
			t.Fatal(err)
		}
	}
	// Redis's own debug setting: each key takes 200 ms to write in a
	// rewrite or save.
	if err := s.Client().ConfigSet(ctx, "rdb-key-save-delay", "200000").Err(); err != nil {
		t.Skipf("this redis-server does not allow rdb-key-save-delay: %v", err)
	}
	rc, err := s.Reclaim(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rc.State != redisstore.StateAOFPending || !strings.Contains(rc.Evidence, "reclaim_wait") {
		t.Fatalf("Reclaim with a slow rewrite = %+v, want %s saying reclaim_wait passed", rc, redisstore.StateAOFPending)
	}
	if err := s.Client().ConfigSet(ctx, "rdb-key-save-delay", "0").Err(); err != nil {
		t.Fatal(err)
	}
	s2 := openStore(t, redisstore.Options{Name: "c", Addr: srv.addr(), Layout: redisstore.LayoutCache, Prefix: "c:", DataDir: srv.dir, ReclaimWait: 30 * time.Second})
	rc, err = s2.Reclaim(ctx)
	if err != nil || rc.State != "" {
		t.Fatalf("Reclaim again = %+v, %v; want done", rc, err)
	}
}

// With snapshots off and no RDB file, Reclaim writes none: a new dump
// would copy every live record to disk where the operator keeps none.
func TestRedisReclaimWritesNoNewRDB(t *testing.T) {
	ctx := context.Background()
	srv := private(t) // --save ""
	s := openStore(t, redisstore.Options{Name: "c", Addr: srv.addr(), Layout: redisstore.LayoutCache, Prefix: "c:", DataDir: srv.dir})
	if _, err := s.PutCache(ctx, "p", "llm", text("rdb", 1)); err != nil {
		t.Fatal(err)
	}
	rc, err := s.Reclaim(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(srv.dir, "dump.rdb")); err == nil {
		t.Errorf("Reclaim wrote dump.rdb on a server with snapshots off (steps %v)", rc.Steps)
	}
	if !strings.Contains(strings.Join(rc.Steps, "; "), "no BGSAVE") {
		t.Errorf("steps %v do not say why no BGSAVE ran", rc.Steps)
	}
}

func TestRedisValidate(t *testing.T) {
	base := store.Config{Name: "c", Type: redisstore.Type, DSN: "redis://:pw-secret@127.0.0.1:6379/0", Preset: redisstore.LayoutChat}
	if err := store.Validate(base); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for name, c := range map[string]struct {
		mod  func(*store.Config)
		want string
	}{
		"no dsn":           {func(c *store.Config) { c.DSN = "" }, "dsn is required"},
		"bad dsn":          {func(c *store.Config) { c.DSN = "user:pw-secret@nowhere" }, "neither a redis:// URL nor host:port"},
		"bad preset":       {func(c *store.Config) { c.Preset = "vectors" }, "not a Redis layout"},
		"bad reclaim":      {func(c *store.Config) { c.Reclaim = "later" }, "full (default) or delete-only"},
		"bad reclaim_wait": {func(c *store.Config) { c.ReclaimWait = "soon" }, "reclaim_wait"},
		"mapping content":  {func(c *store.Config) { c.Mapping = &store.Mapping{Content: []string{"text"}} }, "every field of a key is scanned"},
	} {
		cfg := base
		c.mod(&cfg)
		err := store.Validate(cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "pw-secret") {
			t.Errorf("%s: the error names the password: %v", name, err)
		}
	}
	if loc, _ := store.Location(base); loc != "127.0.0.1:6379/0" {
		t.Errorf("Location = %q", loc)
	}
}

// Windows another key under the prefix also holds (here a system prompt
// every session starts with) are set apart as shared, naming that key:
// after the erasure they are still in the files, and are not residue.
func TestRedisSharedWindowsNameTheOtherKey(t *testing.T) {
	ctx := context.Background()
	srv := private(t)
	s := openStore(t, redisstore.Options{Name: "chat", Addr: srv.addr(), Layout: redisstore.LayoutChat, DataDir: srv.dir})
	system := "You are the clinic's assistant. Never give medical advice; refer the patient to their doctor instead."
	a, err := s.AddMessage(ctx, "a", "system", system)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddMessage(ctx, "a", "human", text("shared", 1)); err != nil {
		t.Fatal(err)
	}
	b, err := s.AddMessage(ctx, "b", "system", system)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := s.ReadEvidence(ctx, []string{a})
	if err != nil {
		t.Fatal(err)
	}
	e := ev[a]
	if e.Shared == 0 || e.SharedWith[b] == 0 {
		t.Fatalf("shared %d, shared with %v: the system prompt's windows were not set apart as %s's", e.Shared, e.SharedWith, b)
	}
	if err := s.Delete(ctx, []string{a}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reclaim(ctx); err != nil {
		t.Fatal(err)
	}
	if n := physical(t, s, ev).Found[a]; n != 0 {
		t.Errorf("%d needles of session a found after the erasure", n)
	}
}
