package demo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	chromemgo "github.com/philippgille/chromem-go"
	goredis "github.com/redis/go-redis/v9"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/internal/explain"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/chromem"
	"github.com/amnesia-dev/amnesia/store/file"
	redisstore "github.com/amnesia-dev/amnesia/store/redis"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
	"github.com/amnesia-dev/amnesia/store/sqlitevec"
)

// Sizes of the RAG demo's corpus.
const (
	RAGPeople   = 6
	RAGDocsEach = 2
	ragLLM      = "demo-llm temperature=0"
)

// ErrNoRedis is returned by RunRAG when no Redis server was given and
// redis-server is not on PATH.
var ErrNoRedis = errors.New("demo --rag needs Redis for its caches and chat memory: install redis-server (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis) so that the demo can start a private one, or give --redis HOST:PORT of a server it may write to")

// RAGOptions configure RunRAG.
type RAGOptions struct {
	// RedisAddr is a Redis server to use; "" starts a private redis-server
	// in the demo directory (it must be on PATH).
	RedisAddr string
	// RedisDir is RedisAddr's data directory, when this process may read
	// it; without it the Redis stores' physical level is not measured.
	RedisDir string
}

// RAGStore is one store's line of the RAG demo's report.
type RAGStore struct {
	Name string `json:"name"`
	Type string `json:"type"`
	What string `json:"what"`
	// The native delete of the first person.
	Native RAGNative `json:"native_delete"`
	// The amnesia erasure of the second person.
	Amnesia RAGAmnesia `json:"amnesia"`
}

// RAGNative is what a native delete left in one store.
type RAGNative struct {
	Action     string `json:"action"`      // what the application did
	Records    int    `json:"records"`     // the person's records in the store
	Answerable int    `json:"answerable"`  // still returned by a query path
	BytesFound int    `json:"bytes_found"` // whose bytes are still in the store's files
	// Measured is false when the store's files could not be read (Redis
	// without its data directory).
	Measured bool `json:"bytes_measured"`
}

// RAGAmnesia is what amnesia's certificate says of one store.
type RAGAmnesia struct {
	Records  int            `json:"records"`
	Kinds    map[string]int `json:"kinds"`    // lineage kinds: source, chunk, embedding, cache, log, train`
	Outcomes map[string]int `json:"outcomes"` // e.g. "VERIFIED(physical)": 3
	Residue  string         `json:"residue"`
	Evidence string         `json:"evidence"`
}

// RAGReport is what `amnesia demo --rag --json` prints.
type RAGReport struct {
	Dir    string     `json:"dir"`
	Redis  string     `json:"redis"` // "private redis-server" or the address given
	Stores []RAGStore `json:"stores"`
	// Whether the caches still answered the person's own question after
	// the native delete, and after amnesia's erasure.
	CacheAnswersAfterNative  bool   `json:"cache_answers_after_native_delete"`
	CacheAnswersAfterAmnesia bool   `json:"cache_answers_after_amnesia"`
	Certificate              string `json:"certificate"`
	PublicKey                string `json:"public_key"`
	Verified                 bool   `json:"verified"`
	Complete                 bool   `json:"complete"`
}

// ragApp is the demo's RAG application: its stores and what it asked.
type ragApp struct {
	c        *Corpus
	stores   map[string]store.Store
	order    []string
	what     map[string]string
	cache    *redisstore.Store
	semcache *redisstore.Store
	memPath  string
	question map[int]string // person -> the question they asked
}

// RunRAG tells the story of a whole RAG application in dir (empty or
// absent): two vector stores, an exact and a semantic LLM cache and chat
// memory in Redis, a conversation log and a fine-tuning set.
func RunRAG(ctx context.Context, dir string, o RAGOptions, w io.Writer) (*RAGReport, error) {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("demo: %s is not empty; give an empty or new directory", dir)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, err
	}
	rep := &RAGReport{Dir: abs}
	addr, rdir := o.RedisAddr, o.RedisDir
	prefix := "amnesia-demo:"
	if addr == "" {
		srv, err := startRedis(ctx, filepath.Join(abs, "redis"))
		if err != nil {
			return nil, err
		}
		defer srv.stop()
		addr, rdir = srv.addr, srv.dir
		rep.Redis = "private redis-server on " + addr + ", files in " + rdir
	} else {
		// Someone's server: keys of this run only, removed at the end.
		var b [4]byte
		rand.Read(b[:])
		prefix += hex.EncodeToString(b[:]) + ":"
		rep.Redis = addr
		if rdir == "" {
			rep.Redis += " (no data directory given: its files are not read)"
		}
	}

	cfg := state.DefaultConfig()
	cfg.Stores = []state.StoreConfig{
		{Name: "docs", Type: sqlitedoc.Type, Path: filepath.Join(abs, "docs.db")},
		{Name: "vectors", Type: sqlitevec.Type, Path: filepath.Join(abs, "vectors.db"), Dimensions: Dim},
		{Name: "memory", Type: chromem.Type, Path: filepath.Join(abs, "memory"), Collection: "notes"},
		{Name: "cache", Type: redisstore.Type, DSN: addr, Preset: redisstore.LayoutCache, Table: prefix + "cache:", DataDir: rdir},
		{Name: "semcache", Type: redisstore.Type, DSN: addr, Preset: redisstore.LayoutSemantic, Table: prefix + "semcache:", DataDir: rdir, Dimensions: Dim},
		{Name: "chat", Type: redisstore.Type, DSN: addr, Preset: redisstore.LayoutChat, Table: prefix + "chat:", DataDir: rdir},
		{Name: "log", Type: file.Type, Path: filepath.Join(abs, "conversations.jsonl"), Format: file.JSONL, Key: "id", Subject: "subject", Content: []string{"text"}},
		{Name: "train", Type: file.Type, Path: filepath.Join(abs, "finetune.csv"), Format: file.CSV, Key: "id", Subject: "subject", Content: []string{"text"}},
	}
	sd, err := state.Init(filepath.Join(abs, "state"), cfg)
	if err != nil {
		return nil, err
	}
	ledger, err := sqliteledger.Open(ctx, sd.LedgerPath())
	if err != nil {
		return nil, err
	}
	defer ledger.Close()
	logf, err := os.OpenFile(sd.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()

	app := &ragApp{c: Generate(Seed, RAGPeople, RAGDocsEach), stores: map[string]store.Store{}, question: map[int]string{},
		memPath: cfg.Stores[2].Path,
		what: map[string]string{
			"docs": "source documents and chunks (SQLite)", "vectors": "chunk embeddings (sqlite-vec)",
			"memory": "long-term memory notes (chromem-go)", "cache": "exact LLM cache (Redis, LangChain RedisCache)",
			"semcache": "semantic LLM cache (Redis, RedisSemanticCache)", "chat": "chat memory (Redis, RedisChatMessageHistory)",
			"log": "conversation log (JSONL)", "train": "fine-tuning set (CSV)",
		}}
	for _, sc := range cfg.Stores {
		s, err := store.Open(ctx, sc, true)
		if err != nil {
			return nil, fmt.Errorf("demo: open %s: %w", sc.Name, err)
		}
		defer s.Close()
		app.stores[sc.Name] = s
		app.order = append(app.order, sc.Name)
	}
	app.cache = app.stores["cache"].(*redisstore.Store)
	app.semcache = app.stores["semcache"].(*redisstore.Store)
	if o.RedisAddr != "" {
		defer app.dropRedis(context.WithoutCancel(ctx))
	}
	rec := capture.New(ledger, sd.Keyer, cfg.Scope)

	fmt.Fprintf(w, "1. A RAG application: %d people's documents, chunked and embedded into sqlite-vec and chromem-go;\n", len(app.c.People))
	fmt.Fprintf(w, "   each asks a question: the answer is cached (exact and semantic cache in Redis), the chat kept in\n")
	fmt.Fprintf(w, "   Redis chat memory, the turn logged to JSONL and exported to a CSV fine-tuning set; lineage through capture\n")
	fmt.Fprintf(w, "   Redis: %s\n", rep.Redis)
	if err := app.ingest(ctx, rec); err != nil {
		return nil, err
	}

	native, target := 0, 1
	fmt.Fprintf(w, "\n2. Native delete of one person, as the application would do it: DELETE from the document and vector\n")
	fmt.Fprintf(w, "   tables, chromem-go Delete, DEL of the chat session; the caches, log and training set are not touched\n")
	natives, err := app.nativeDelete(ctx, ledger, sd, native)
	if err != nil {
		return nil, err
	}
	rep.CacheAnswersAfterNative, err = app.cacheAnswers(ctx, native)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "\n   %-9s %-46s %-9s %-10s %s\n", "STORE", "WHAT", "RECORDS", "ANSWERED", "BYTES FOUND")
	for _, name := range app.order {
		n := natives[name]
		bytes := strconv.Itoa(n.BytesFound)
		if !n.Measured {
			bytes = "not measured"
		}
		fmt.Fprintf(w, "   %-9s %-46s %-9d %-10d %s   (%s)\n", name, app.what[name], n.Records, n.Answerable, bytes, n.Action)
	}
	fmt.Fprintf(w, "   the caches still answer the person's own question: %v\n", rep.CacheAnswersAfterNative)

	fmt.Fprintf(w, "\n3. amnesia forget of another person: every store the lineage reaches, caches derived from the answers included\n")
	k, err := sd.Keyer.Key(cfg.Scope, app.c.People[target].ID)
	if err != nil {
		return nil, err
	}
	v, err := ledger.View(ctx, cfg.Scope, k)
	if err != nil {
		return nil, err
	}
	t, err := lineage.BuildTrace(v)
	if err != nil {
		return nil, err
	}
	res, err := saga.Run(ctx, &saga.Erasure{
		Dir: sd, Ledger: ledger, Stores: app.stores, Trace: t, Reason: "DEMO-RAG-0001",
		Log: slog.New(slog.NewJSONHandler(logf, nil)), Progress: w,
	})
	if err != nil {
		return nil, err
	}
	p := res.Statement.Predicate
	amnesia := map[string]*RAGAmnesia{}
	for _, a := range p.Artifacts {
		x := amnesia[a.Store]
		if x == nil {
			x = &RAGAmnesia{Outcomes: map[string]int{}, Kinds: map[string]int{}}
			amnesia[a.Store] = x
		}
		x.Records++
		x.Kinds[a.Kind]++
		o := a.Outcome
		if a.Level != "" {
			o += "(" + a.Level + ")"
		}
		x.Outcomes[o]++
	}
	for _, s := range p.DeclaredScope {
		if x := amnesia[s.Name]; x != nil {
			x.Residue, x.Evidence = s.Residue, s.Evidence
		}
	}
	rep.CacheAnswersAfterAmnesia, err = app.cacheAnswers(ctx, target)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "\n   %-9s %-20s %-9s %-24s %s\n", "STORE", "KINDS", "RECORDS", "OUTCOME", "STORE RESIDUE")
	for _, name := range app.order {
		x := amnesia[name]
		if x == nil {
			x = &RAGAmnesia{Outcomes: map[string]int{}, Kinds: map[string]int{}, Residue: "NOT-TOUCHED"}
		}
		fmt.Fprintf(w, "   %-9s %-20s %-9d %-24s %s\n", name, outcomes(x.Kinds), x.Records, outcomes(x.Outcomes), x.Residue)
		rep.Stores = append(rep.Stores, RAGStore{Name: name, Type: app.stores[name].Info().Type, What: app.what[name], Native: natives[name], Amnesia: *x})
	}
	fmt.Fprintf(w, "   the caches still answer the person's own question: %v\n", rep.CacheAnswersAfterAmnesia)
	explain.Write(w, p, "   ", 100)
	rep.Certificate, rep.PublicKey, rep.Complete = res.CertificatePath, sd.PublicKeyPath(), p.Complete

	fmt.Fprintf(w, "\n4. Offline verification with only the certificate and the public key\n")
	rep.Verified, err = verifyFiles(ctx, rep.Certificate, rep.PublicKey)
	if err != nil {
		fmt.Fprintf(w, "   INVALID: %v\n", err)
	} else {
		fmt.Fprintf(w, "   valid: signed by %s\n", p.KeyID)
	}
	fmt.Fprintf(w, "\n   certificate: %s\n   public key:  %s\n   check it yourself: amnesia verify %s --public-key %s\n",
		rep.Certificate, rep.PublicKey, rep.Certificate, rep.PublicKey)
	return rep, nil
}

func outcomes(m map[string]int) string {
	if len(m) == 0 {
		return "-"
	}
	var parts []string
	for o, n := range m {
		parts = append(parts, fmt.Sprintf("%d %s", n, o))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// ingest writes the corpus and one conversation per person through capture.
func (a *ragApp) ingest(ctx context.Context, rec *capture.Recorder) error {
	docs := rec.Docs(a.stores["docs"].(*sqlitedoc.Store))
	vecs := rec.Vectors(a.stores["vectors"].(*sqlitevec.Store))
	mem := rec.Vectors(a.stores["memory"].(*chromem.Store))
	chat := rec.Docs(a.stores["chat"].(*redisstore.Store))
	logs := rec.Docs(a.stores["log"].(*file.Store))
	train := a.stores["train"].(*file.Store)
	first := map[int]string{} // person -> the first chunk of their first document
	firstID := map[int]string{}
	for _, d := range a.c.Docs {
		if err := docs.Put(ctx, capture.Doc{ID: d.ID, Kind: sqlitedoc.KindDocument, Subject: a.c.People[d.Owner].ID, Text: d.Text}); err != nil {
			return err
		}
		for i, text := range Chunk(d.Text, ChunkSize) {
			id := fmt.Sprintf("%s#%d", d.ID, i)
			if err := docs.Put(ctx, capture.Doc{ID: id, Kind: sqlitedoc.KindChunk, Parent: d.ID, Text: text}); err != nil {
				return err
			}
			if err := vecs.Put(ctx, capture.Vector{ID: id, Embedding: Embed(text, Dim)}); err != nil {
				return err
			}
			if _, ok := first[d.Owner]; !ok {
				first[d.Owner], firstID[d.Owner] = text, id
				// The assistant keeps a memory note of what it learnt.
				if err := mem.Put(ctx, capture.Vector{ID: "mem-" + id, Of: id, Embedding: Embed("memory: "+text, Dim), Content: "memory: " + text}); err != nil {
					return err
				}
			}
		}
	}
	for i, p := range a.c.People {
		q := fmt.Sprintf("Hello, this is %s from %s: what is the status of my request?", p.Name, p.City)
		answer := "According to our records: " + first[i]
		a.question[i] = q
		session := fmt.Sprintf("session-%02d", i)
		sessionKey := a.stores["chat"].(*redisstore.Store).SessionKey(session)
		if err := chat.Put(ctx, capture.Doc{ID: sessionKey, Kind: capture.KindChat, Subject: p.ID, Text: q}); err != nil {
			return err
		}
		if err := chat.Put(ctx, capture.Doc{ID: sessionKey, Kind: capture.KindChat, Subject: p.ID, Text: answer, Metadata: map[string]any{"type": "ai"}}); err != nil {
			return err
		}
		turn := fmt.Sprintf("turn-%02d", i)
		if err := logs.Put(ctx, capture.Doc{ID: turn + "-q", Kind: capture.KindChat, Subject: p.ID, Text: q}); err != nil {
			return err
		}
		if err := logs.Put(ctx, capture.Doc{ID: turn + "-a", Kind: capture.KindChat, Subject: p.ID, Text: answer}); err != nil {
			return err
		}
		// The caches: what the application writes after the LLM call,
		// recorded as derived from the chunk the answer came from.
		key, err := a.cache.PutCache(ctx, q, ragLLM, answer)
		if err != nil {
			return err
		}
		tag, err := rec.SubjectKey(p.ID)
		if err != nil {
			return err
		}
		skey, err := a.semcache.PutSemantic(ctx, redisstore.SemanticEntry{ID: fmt.Sprintf("%02d", i), Prompt: q, Answer: answer, Vector: Embed(q, Dim), SubjectTag: tag.String()})
		if err != nil {
			return err
		}
		ex := "Q: " + q + "\nA: " + answer
		for _, art := range []capture.Artifact{
			{Store: "cache", Key: key, Kind: lineage.KindCache, ParentStore: "docs", ParentKey: firstID[i], Content: []byte(answer)},
			{Store: "semcache", Key: skey, Kind: lineage.KindCache, ParentStore: "docs", ParentKey: firstID[i], Content: []byte(answer)},
			{Store: "train", Key: "ft-" + turn, Kind: lineage.KindTrain, ParentStore: "log", ParentKey: turn + "-a", Content: []byte(ex)},
		} {
			if _, _, err := rec.RecordArtifact(ctx, art); err != nil {
				return err
			}
		}
		if err := train.Append(ctx, map[string]string{"id": "ft-" + turn, "subject": tag.String(), "text": ex}); err != nil {
			return err
		}
	}
	return nil
}

// cacheAnswers reports whether the exact or the semantic cache still
// answers person i's question.
func (a *ragApp) cacheAnswers(ctx context.Context, i int) (bool, error) {
	q := a.question[i]
	_, hit, err := a.cache.LookupCache(ctx, q, ragLLM)
	if err != nil || hit {
		return hit, err
	}
	_, hit, err = a.semcache.LookupSemantic(ctx, Embed(q, Dim), 0.95)
	return hit, err
}

// nativeDelete deletes person i's data the way the application would,
// then measures with amnesia's probes what each store still holds.
func (a *ragApp) nativeDelete(ctx context.Context, l lineage.Ledger, sd *state.Dir, i int) (map[string]RAGNative, error) {
	k, err := sd.Keyer.Key(sd.Config.Scope, a.c.People[i].ID)
	if err != nil {
		return nil, err
	}
	v, err := l.View(ctx, sd.Config.Scope, k)
	if err != nil {
		return nil, err
	}
	t, err := lineage.BuildTrace(v)
	if err != nil {
		return nil, err
	}
	evs := map[string]map[string]*store.Evidence{}
	for _, p := range t.Plan {
		ev, err := a.stores[p.Store].(store.EvidenceReader).ReadEvidence(ctx, p.Delete)
		if err != nil {
			return nil, err
		}
		evs[p.Store] = ev
	}
	out := map[string]RAGNative{}
	for _, p := range t.Plan {
		n := RAGNative{Records: len(p.Delete), Action: "not touched"}
		switch p.Store {
		case "docs":
			n.Action = "DELETE FROM documents"
			err = plainDelete(ctx, a.stores["docs"].(*sqlitedoc.Store).Path(), "documents", p.Delete)
		case "vectors":
			n.Action = "DELETE FROM vectors"
			err = plainDelete(ctx, a.stores["vectors"].(*sqlitevec.Store).Path(), "vectors", p.Delete)
		case "memory":
			n.Action = "chromem-go Delete"
			err = chromemDelete(ctx, a.memPath, "notes", p.Delete)
		case "chat":
			n.Action = "DEL of the chat session"
			err = a.stores["chat"].(*redisstore.Store).Client().Del(ctx, p.Delete...).Err()
		}
		if err != nil {
			return nil, fmt.Errorf("native delete in %s: %w", p.Store, err)
		}
		res, err := a.stores[p.Store].ProbeLogical(ctx, p.Delete, evs[p.Store])
		if err != nil {
			return nil, err
		}
		for _, r := range res {
			if r.Found() {
				n.Answerable++
			}
		}
		if pp, ok := a.stores[p.Store].(store.PhysicalProber); ok && a.stores[p.Store].Info().Has(store.CapProbePhysical) {
			rep, err := pp.ProbePhysical(ctx, store.NewNeedleSet(evs[p.Store]))
			if err != nil {
				return nil, err
			}
			n.BytesFound, n.Measured = rep.FoundKeys(), true
		}
		out[p.Store] = n
	}
	return out, nil
}

// chromemDelete is the application's own chromem-go Delete.
func chromemDelete(ctx context.Context, path, coll string, ids []string) error {
	db, err := chromemgo.NewPersistentDB(path, false)
	if err != nil {
		return err
	}
	c := db.GetCollection(coll, nil)
	if c == nil {
		return fmt.Errorf("no collection %q", coll)
	}
	return c.Delete(ctx, nil, nil, ids...)
}

// dropRedis removes the keys this run wrote to a server it was given.
func (a *ragApp) dropRedis(ctx context.Context) {
	for _, s := range []string{"cache", "semcache", "chat"} {
		r := a.stores[s].(*redisstore.Store)
		var keys []string
		it := r.Client().Scan(ctx, 0, r.Prefix()+"*", 1000).Iterator()
		for it.Next(ctx) {
			keys = append(keys, it.Val())
		}
		keys = append(keys, r.IndexKey())
		r.Client().Del(ctx, keys...)
	}
}

// redisServer is a private redis-server the demo started.
type redisServer struct {
	addr, dir string
	cmd       *exec.Cmd
}

// startRedis starts redis-server on a free loopback port with its files
// (AOF on) in dir.
func startRedis(ctx context.Context, dir string) (*redisServer, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, ErrNoRedis
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	s := &redisServer{addr: "127.0.0.1:" + strconv.Itoa(port), dir: dir}
	s.cmd = exec.Command(bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", dir,
		"--appendonly", "yes", "--save", "", "--logfile", filepath.Join(dir, "redis.log"))
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("demo: start redis-server: %w", err)
	}
	for i := 0; i < 100; i++ {
		if c, err := net.Dial("tcp", s.addr); err == nil {
			c.Close()
			return s, nil
		}
		select {
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	s.stop()
	return nil, fmt.Errorf("demo: redis-server on %s did not answer within 5s: see %s", s.addr, filepath.Join(dir, "redis.log"))
}

func (s *redisServer) stop() {
	c := goredis.NewClient(&goredis.Options{Addr: s.addr, Protocol: 2, DisableIdentity: true})
	c.Shutdown(context.Background())
	c.Close()
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
}
