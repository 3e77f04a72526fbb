// Package redis is an adapter for the AI memory an application keeps in
// Redis: an exact LLM cache (prompt hash -> answer), a semantic cache
// (embedding -> answer) and chat memory (a list of JSON messages per
// session), in the layouts LangChain, langchain-redis (redisvl) and
// langchaingo write (see Preset and docs/redis.md).
//
// A record is one Redis key: lineage names it by the key, Delete runs DEL
// (and drops the key from the adapter's index set), and the logical probe
// asks EXISTS, the index (SISMEMBER, and a nearest-neighbour search over
// the index's vectors), and a SCAN of the key prefix for hashes that carry
// the subject tag.
//
// After DEL the value stays in the AOF and the last RDB until Redis
// rewrites them. Reclaim runs BGREWRITEAOF and BGSAVE and waits for both,
// and for the AOF's history files to go, within reclaim_wait; otherwise it
// reports PENDING with what remains. The physical probe reads the AOF
// (Redis 7 multi-part: appendonlydir/*) and the RDB when data_dir names the
// server's directory, decompressing LZF-compressed strings of RDB files;
// without data_dir the physical level is UNVERIFIED and says why.
package redis

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/amnesia-dev/amnesia/store"
)

// Type is the adapter type name used in configuration.
const Type = "redis"

// SimilarityK is how many neighbours the similarity probe asks the index for.
const SimilarityK = 10

// DefaultReclaimWait bounds how long Reclaim waits for the AOF rewrite and
// the RDB save to finish.
const DefaultReclaimWait = 60 * time.Second

// Layouts (Config.Preset).
const (
	// LayoutChat: LangChain's RedisChatMessageHistory: one list per session,
	// key "message_store:<session>", each element a message as JSON
	// (message_to_dict: {"type": "human", "data": {"content": …}}), newest
	// first (LPUSH).
	LayoutChat = "chat"
	// LayoutCache: LangChain's RedisCache (langchain_community, exact): one
	// hash per prompt, key the md5 hex of prompt+llm_string (LangChain
	// writes no prefix: the default prefix is empty, so the adapter's scans
	// cover the whole database; a prefix can be configured), fields "0",
	// "1", … each a serialized Generation (dumps).
	LayoutCache = "cache"
	// LayoutSemantic: LangChain's RedisSemanticCache (langchain_community,
	// over its Redis vector store; langchaingo's redisvector has the same
	// content fields): one hash per entry under "doc:cache:", fields
	// "content" (the prompt), "content_vector" (float32 little-endian
	// bytes) and the metadata fields "llm_string", "prompt" and
	// "return_val" (the serialized generations, a JSON list).
	LayoutSemantic = "semantic-cache"
	// LayoutRedisVL: langchain-redis's RedisSemanticCache (redisvl
	// SemanticCache): hashes under "llmcache:", fields "prompt",
	// "response", "prompt_vector" (float32 bytes), "metadata".
	LayoutRedisVL = "redisvl-semantic-cache"
)

// layout is one preset's key prefix and hash fields.
type layout struct {
	name    string
	prefix  string
	vector  string // hash field holding the vector ("" for none)
	subject string // hash field holding the subject tag ("" for none)
}

var layouts = map[string]layout{
	LayoutChat:     {name: LayoutChat, prefix: "message_store:"},
	LayoutCache:    {name: LayoutCache, prefix: ""},
	LayoutSemantic: {name: LayoutSemantic, prefix: "doc:cache:", vector: "content_vector", subject: "subject"},
	LayoutRedisVL:  {name: LayoutRedisVL, prefix: "llmcache:", vector: "prompt_vector", subject: "subject"},
}

// Layouts returns the preset names, sorted.
func Layouts() []string {
	out := make([]string, 0, len(layouts))
	for k := range layouts {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Options configure a Store.
type Options struct {
	Name    string
	Addr    string // redis://[user:pass@]host:port[/db] or host:port
	Layout  string // a preset name; "" is LayoutCache
	Prefix  string // key prefix; "" is the layout's
	Mapping *store.Mapping
	// DataDir is the server's data directory (CONFIG GET dir) as this
	// process can read it; "" leaves the physical level UNVERIFIED.
	DataDir     string
	DeleteOnly  bool          // reclaim: delete-only
	ReclaimWait time.Duration // 0 is DefaultReclaimWait
	Dimensions  int
}

// Store is the adapter.
type Store struct {
	o   Options
	lay layout
	rdb *goredis.Client
	loc string
}

var (
	_ store.Store          = (*Store)(nil)
	_ store.EvidenceReader = (*Store)(nil)
	_ store.Reclaimer      = (*Store)(nil)
	_ store.PhysicalProber = (*Store)(nil)
)

// parseAddr turns a DSN into client options.
func parseAddr(addr string) (*goredis.Options, error) {
	if addr == "" {
		return nil, errors.New("dsn is required: redis://host:port/db (or host:port)")
	}
	if strings.Contains(addr, "://") {
		o, err := goredis.ParseURL(addr)
		if err != nil {
			return nil, fmt.Errorf("dsn is not a Redis URL (want redis://host:port/db): %v", redactURL(err.Error(), addr))
		}
		return o, nil
	}
	host, port, err := net.SplitHostPort(addr)
	if n, perr := strconv.Atoi(port); err != nil || perr != nil || n <= 0 || n > 65535 || strings.ContainsAny(host, "@/") {
		return nil, errors.New("dsn is neither a redis:// URL nor host:port")
	}
	return &goredis.Options{Addr: addr}, nil
}

// redactURL removes addr (which may hold a password) from msg.
func redactURL(msg, addr string) string { return strings.ReplaceAll(msg, addr, "<dsn>") }

// location names the server for people: host:port/db, no credentials.
func location(o *goredis.Options) string { return fmt.Sprintf("%s/%d", o.Addr, o.DB) }

func resolveLayout(o Options) (layout, error) {
	name := o.Layout
	if name == "" {
		name = LayoutCache
	}
	l, ok := layouts[name]
	if !ok {
		return layout{}, fmt.Errorf("preset %q is not a Redis layout: use one of %s", name, strings.Join(Layouts(), ", "))
	}
	if o.Prefix != "" {
		l.prefix = o.Prefix
	}
	if m := o.Mapping; m != nil {
		if m.Table != "" {
			l.prefix = m.Table
		}
		if m.Vector != "" {
			l.vector = m.Vector
		}
		if m.Subject != nil {
			if m.Subject.Column == "" {
				return layout{}, errors.New("mapping.subject: a Redis hash keeps the subject tag in a field: give column: <field>")
			}
			l.subject = m.Subject.Column
		}
		if m.Key != "" || m.Parent != nil || len(m.Content) > 0 || len(m.Collections) > 0 || m.CollectionTable != "" {
			return layout{}, errors.New("mapping: a Redis store reads only table (the key prefix), subject and vector (every field of a key is scanned, so there is no content to name): remove the other keys")
		}
	}
	if l.prefix == "" && l.name != LayoutCache {
		return layout{}, errors.New("the key prefix is empty: set table: <prefix> (e.g. message_store:)")
	}
	return l, nil
}

// Open connects to the server. With create false an unreachable server is
// an error wrapping store.ErrUnavailable (Redis creates keys on write, so
// there is nothing else to create).
func Open(ctx context.Context, o Options) (*Store, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	lay, err := resolveLayout(o)
	if err != nil {
		return nil, fmt.Errorf("open redis store %q: %w", o.Name, err)
	}
	co, err := parseAddr(o.Addr)
	if err != nil {
		return nil, fmt.Errorf("open redis store %q: %w", o.Name, err)
	}
	co.Protocol = 2
	co.DisableIdentity = true
	if o.ReclaimWait <= 0 {
		o.ReclaimWait = DefaultReclaimWait
	}
	s := &Store{o: o, lay: lay, rdb: goredis.NewClient(co), loc: location(co)}
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		s.rdb.Close()
		return nil, fmt.Errorf("open redis store %q at %s: %w: %v", o.Name, s.loc, store.ErrUnavailable, err)
	}
	return s, nil
}

// Client returns the underlying client (for tests and the demo: what an
// application would do natively).
func (s *Store) Client() *goredis.Client { return s.rdb }

// Prefix returns the key prefix of the store's layout.
func (s *Store) Prefix() string { return s.lay.prefix }

// IndexKey is the set the adapter keeps the keys of a semantic cache's
// entries in: the index a RediSearch-less application searches (Debian's
// redis-server has no search module).
func (s *Store) IndexKey() string { return "idx:" + s.lay.prefix }

// Location names the server and prefix for people.
func (s *Store) Location() string { return s.loc + " " + s.lay.prefix + "*" }

// Info implements store.Store. The physical probe is declared only with a
// data directory to read.
func (s *Store) Info() store.Info {
	caps := []store.Capability{store.CapDelete, store.CapProbeByID}
	if s.lay.vector != "" || s.lay.subject != "" {
		caps = append(caps, store.CapProbeByFilter)
	}
	if s.lay.vector != "" {
		caps = append(caps, store.CapProbeBySimilarity)
	}
	if !s.o.DeleteOnly {
		caps = append(caps, store.CapReclaim)
	}
	if s.o.DataDir != "" {
		caps = append(caps, store.CapProbePhysical)
	}
	return store.Info{Name: s.o.Name, Type: Type, Capabilities: caps}
}

// Close implements store.Store.
func (s *Store) Close() error { return s.rdb.Close() }

// CacheKey is the key LangChain's RedisCache gives a prompt under prefix:
// prefix + md5 hex of prompt+llmString.
func CacheKey(prefix, prompt, llmString string) string {
	h := md5.Sum([]byte(prompt + llmString))
	return prefix + hex.EncodeToString(h[:])
}

// jsonString encodes v as a JSON string literal the way Python's
// json.dumps does for ASCII text (no HTML escaping).
func jsonString(v string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}

// Generation is the JSON LangChain's dumps() writes for a Generation
// (json.dumps: ", " and ": " separators, keys in its order).
func Generation(text string) string {
	return `{"lc": 1, "type": "constructor", "id": ["langchain", "schema", "output", "Generation"], "kwargs": {"text": ` + jsonString(text) + `, "type": "Generation"}}`
}

// PutCache writes an exact-cache entry as LangChain's RedisCache does and
// returns its key.
func (s *Store) PutCache(ctx context.Context, prompt, llmString, answer string) (string, error) {
	key := CacheKey(s.lay.prefix, prompt, llmString)
	if err := s.rdb.HSet(ctx, key, "0", Generation(answer)).Err(); err != nil {
		return "", fmt.Errorf("put cache entry: %w", err)
	}
	return key, nil
}

// LookupCache is the application's exact-cache read: the answer cached for
// prompt, or "" and false.
func (s *Store) LookupCache(ctx context.Context, prompt, llmString string) (string, bool, error) {
	v, err := s.rdb.HGet(ctx, CacheKey(s.lay.prefix, prompt, llmString), "0").Result()
	if errors.Is(err, goredis.Nil) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("look up cache: %w", err)
	}
	var g struct {
		Kwargs struct {
			Text string `json:"text"`
		} `json:"kwargs"`
	}
	if json.Unmarshal([]byte(v), &g) != nil {
		return v, true, nil
	}
	return g.Kwargs.Text, true, nil
}

// SemanticEntry is one semantic-cache entry.
type SemanticEntry struct {
	ID         string // the part of the key after the prefix
	Prompt     string
	Answer     string
	Vector     []float32
	LLMString  string // the model and its settings (LangChain's llm_string)
	SubjectTag string // optional; kept in the subject field
}

// PutSemantic writes a semantic-cache entry in the layout's fields and adds
// it to the index set; it returns the key.
func (s *Store) PutSemantic(ctx context.Context, e SemanticEntry) (string, error) {
	if s.lay.vector == "" {
		return "", fmt.Errorf("put semantic entry: store %q has layout %s, which keeps no vector", s.o.Name, s.lay.name)
	}
	if e.ID == "" || len(e.Vector) == 0 {
		return "", errors.New("put semantic entry: id and vector are required")
	}
	if s.o.Dimensions > 0 && len(e.Vector) != s.o.Dimensions {
		return "", fmt.Errorf("put semantic entry: %d dimensions, the store is configured with %d", len(e.Vector), s.o.Dimensions)
	}
	key := s.lay.prefix + e.ID
	fields := map[string]any{s.lay.vector: string(store.Float32LE(e.Vector))}
	switch s.lay.name {
	case LayoutRedisVL:
		fields["prompt"], fields["response"], fields["metadata"] = e.Prompt, e.Answer, "{}"
	default:
		fields["content"], fields["prompt"], fields["llm_string"] = e.Prompt, e.Prompt, e.LLMString
		fields["return_val"] = "[" + Generation(e.Answer) + "]"
	}
	if e.SubjectTag != "" && s.lay.subject != "" {
		fields[s.lay.subject] = e.SubjectTag
	}
	pipe := s.rdb.TxPipeline()
	pipe.HSet(ctx, key, fields)
	pipe.SAdd(ctx, s.IndexKey(), key)
	if _, err := pipe.Exec(ctx); err != nil {
		return "", fmt.Errorf("put semantic entry: %w", err)
	}
	return key, nil
}

// Neighbor is one semantic search result.
type Neighbor struct {
	Key        string
	Similarity float64
}

// LookupSemantic is the application's semantic-cache hit: the answer of the
// nearest entry when its similarity is at least threshold.
func (s *Store) LookupSemantic(ctx context.Context, q []float32, threshold float64) (string, bool, error) {
	ns, err := s.Search(ctx, q, 1)
	if err != nil || len(ns) == 0 || ns[0].Similarity < threshold {
		return "", false, err
	}
	m, err := s.rdb.HGetAll(ctx, ns[0].Key).Result()
	if err != nil {
		return "", false, fmt.Errorf("look up semantic cache: %w", err)
	}
	if a, ok := m["response"]; ok {
		return a, true, nil
	}
	var gs []struct {
		Kwargs struct {
			Text string `json:"text"`
		} `json:"kwargs"`
	}
	if json.Unmarshal([]byte(m["return_val"]), &gs) == nil && len(gs) > 0 {
		return gs[0].Kwargs.Text, true, nil
	}
	return m["return_val"], true, nil
}

// Message is the JSON LangChain's RedisChatMessageHistory writes for a
// message: json.dumps(message_to_dict(message)).
func Message(typ, content string) string {
	return `{"type": ` + jsonString(typ) + `, "data": {"content": ` + jsonString(content) +
		`, "additional_kwargs": {}, "response_metadata": {}, "type": ` + jsonString(typ) + `, "name": null, "id": null, "example": false}}`
}

// scaffold holds the bytes the layouts' writers put around content (JSON
// keys, the Generation and message wrappers, plain and as nested JSON
// strings): they are the same in every record and are no one's data, so a
// window that lies wholly inside them is not a needle.
var scaffold = func() [][]byte {
	var out [][]byte
	add := func(s string) {
		out = append(out, []byte(s))
		q := jsonString(s)
		out = append(out, []byte(q[1:len(q)-1])) // the same, nested in a JSON string
	}
	add(Generation(""))
	for _, t := range []string{"human", "ai", "system", "tool", "function", "chat"} {
		add(Message(t, ""))
	}
	return out
}()

// scaffoldSlack is how many bytes of content a window may hold and still
// count as scaffolding: a window of 32 bytes that is scaffolding but for
// its first or last few (the closing quote of a prompt, "." and the keys
// after it) matches the same spot of any other record.
const scaffoldSlack = 8

// dropScaffold removes from e the needles that lie inside the layouts'
// scaffolding (see scaffold) but for at most scaffoldSlack bytes at one
// end. Like the windows Tile skips for too few distinct bytes, they carry
// no information about the record; every other byte of content stays in
// a needle (windows start every 8 bytes).
func dropScaffold(e *store.Evidence) {
	keep := e.Needles[:0]
	for _, n := range e.Needles {
		if !isScaffold(n) {
			keep = append(keep, n)
		}
	}
	e.Needles = keep
}

func isScaffold(n []byte) bool {
	for i := 0; i <= scaffoldSlack && i < len(n); i++ {
		for _, s := range scaffold {
			if bytes.Contains(s, n[i:]) || bytes.Contains(s, n[:len(n)-i]) {
				return true
			}
		}
	}
	return false
}

// SessionKey is the chat-memory list key of a session.
func (s *Store) SessionKey(session string) string { return s.lay.prefix + session }

// AddMessage pushes a message onto a session's list, as LangChain's
// RedisChatMessageHistory.add_message does (LPUSH), and returns the key.
func (s *Store) AddMessage(ctx context.Context, session, typ, content string) (string, error) {
	key := s.SessionKey(session)
	if err := s.rdb.LPush(ctx, key, Message(typ, content)).Err(); err != nil {
		return "", fmt.Errorf("add message: %w", err)
	}
	return key, nil
}

// Messages returns a session's messages' contents, oldest first.
func (s *Store) Messages(ctx context.Context, session string) ([]string, error) {
	vs, err := s.rdb.LRange(ctx, s.SessionKey(session), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("read messages: %w", err)
	}
	out := make([]string, 0, len(vs))
	for i := len(vs) - 1; i >= 0; i-- {
		var m struct {
			Data struct {
				Content string `json:"content"`
			} `json:"data"`
		}
		if json.Unmarshal([]byte(vs[i]), &m) == nil {
			out = append(out, m.Data.Content)
		} else {
			out = append(out, vs[i])
		}
	}
	return out, nil
}

// Delete implements store.Store: DEL each key and drop it from the index
// set. Keys that do not exist are not an error.
func (s *Store) Delete(ctx context.Context, keys []string) error {
	var ks []string
	for _, k := range keys {
		if k != "" {
			ks = append(ks, k)
		}
	}
	if len(ks) == 0 {
		return ctx.Err()
	}
	pipe := s.rdb.TxPipeline()
	pipe.Del(ctx, ks...)
	if s.lay.vector != "" {
		members := make([]any, len(ks))
		for i, k := range ks {
			members[i] = k
		}
		pipe.SRem(ctx, s.IndexKey(), members...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("delete keys at %s: %w", s.loc, err)
	}
	return nil
}

// errUnsupported is read's error for a key of a type the adapter cannot
// read (a stream, a module type such as RedisJSON).
var errUnsupported = errors.New("unsupported key type")

// value is what one key holds: its type and the byte strings it keeps.
type value struct {
	typ    string
	fields map[string]string // hash
	elems  []string          // string (one), list, set
}

func (s *Store) read(ctx context.Context, key string) (*value, error) {
	typ, err := s.rdb.Type(ctx, key).Result()
	if err != nil {
		return nil, err
	}
	v := &value{typ: typ}
	switch typ {
	case "none":
		return nil, nil
	case "string":
		x, err := s.rdb.Get(ctx, key).Result()
		if errors.Is(err, goredis.Nil) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		v.elems = []string{x}
	case "hash":
		m, err := s.rdb.HGetAll(ctx, key).Result()
		if err != nil {
			return nil, err
		}
		if len(m) == 0 {
			return nil, nil
		}
		v.fields = m
	case "list":
		v.elems, err = s.rdb.LRange(ctx, key, 0, -1).Result()
	case "set":
		v.elems, err = s.rdb.SMembers(ctx, key).Result()
	case "zset":
		v.elems, err = s.rdb.ZRange(ctx, key, 0, -1).Result()
	default:
		return nil, fmt.Errorf("%w: key type %s (string, hash, list, set, zset are)", errUnsupported, typ)
	}
	if err != nil {
		return nil, err
	}
	return v, nil
}

// readMany reads keys in two round trips (TYPE, then the reads), for the
// scans over a prefix; a key of a type the adapter does not read, or gone
// meanwhile, is nil.
func (s *Store) readMany(ctx context.Context, keys []string) ([]*value, error) {
	pipe := s.rdb.Pipeline()
	types := make([]*goredis.StatusCmd, len(keys))
	for i, k := range keys {
		types[i] = pipe.Type(ctx, k)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	pipe = s.rdb.Pipeline()
	cmds := make([]goredis.Cmder, len(keys))
	for i, k := range keys {
		switch types[i].Val() {
		case "string":
			cmds[i] = pipe.Get(ctx, k)
		case "hash":
			cmds[i] = pipe.HGetAll(ctx, k)
		case "list":
			cmds[i] = pipe.LRange(ctx, k, 0, -1)
		case "set":
			cmds[i] = pipe.SMembers(ctx, k)
		case "zset":
			cmds[i] = pipe.ZRange(ctx, k, 0, -1)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, goredis.Nil) {
		return nil, err
	}
	out := make([]*value, len(keys))
	for i, c := range cmds {
		switch c := c.(type) {
		case *goredis.StringCmd:
			if c.Err() == nil {
				out[i] = &value{typ: "string", elems: []string{c.Val()}}
			}
		case *goredis.MapStringStringCmd:
			if c.Err() == nil && len(c.Val()) > 0 {
				out[i] = &value{typ: "hash", fields: c.Val()}
			}
		case *goredis.StringSliceCmd:
			if c.Err() == nil && len(c.Val()) > 0 {
				out[i] = &value{typ: types[i].Val(), elems: c.Val()}
			}
		}
	}
	return out, nil
}

// parts returns the byte strings a value keeps, each once, the subject tag
// field left out (it is shared by the subject's records and is a digest).
func (s *Store) parts(v *value) [][]byte {
	var out [][]byte
	if v.fields != nil {
		names := make([]string, 0, len(v.fields))
		for f := range v.fields {
			if f != s.lay.subject || s.lay.subject == "" {
				names = append(names, f)
			}
		}
		sort.Strings(names)
		for _, f := range names {
			out = append(out, []byte(v.fields[f]))
		}
		return out
	}
	for _, e := range v.elems {
		out = append(out, []byte(e))
	}
	return out
}

// ReadEvidence implements store.EvidenceReader: windows of every value the
// key holds, as Redis stores it (the string, each hash field's value, each
// list element: the vector field's float32 bytes and the messages' JSON
// included), the subject tag of a hash, and its vector. Windows another key
// under the prefix also holds are counted as Shared.
func (s *Store) ReadEvidence(ctx context.Context, keys []string) (map[string]*store.Evidence, error) {
	out := map[string]*store.Evidence{}
	batch := map[string]bool{}
	for _, k := range keys {
		batch[k] = true
		v, err := s.read(ctx, k)
		if err != nil {
			return nil, fmt.Errorf("read evidence at %s: %w", s.loc, err)
		}
		if v == nil {
			continue
		}
		e := &store.Evidence{Key: k}
		for _, p := range s.parts(v) {
			e.AddWindows(p)
		}
		if v.fields != nil {
			if tag := v.fields[s.lay.subject]; s.lay.subject != "" && tag != "" {
				e.Filter = map[string]string{s.lay.subject: tag}
			}
			if s.lay.vector != "" {
				e.Vector = decodeFloat32([]byte(v.fields[s.lay.vector]))
			}
		}
		dropScaffold(e)
		out[k] = e
	}
	if len(out) == 0 {
		return out, nil
	}
	others := func(fn func(string, []byte) error) error {
		var batchKeys []string
		flush := func() error {
			vs, err := s.readMany(ctx, batchKeys)
			if err != nil {
				return err
			}
			for i, v := range vs {
				if v == nil {
					continue // gone, or not of a type the adapter reads
				}
				for _, p := range s.parts(v) {
					if err := fn(batchKeys[i], p); err != nil {
						return err
					}
				}
			}
			batchKeys = batchKeys[:0]
			return nil
		}
		err := s.scanPrefix(ctx, func(key string) error {
			if batch[key] {
				return nil
			}
			batchKeys = append(batchKeys, key)
			if len(batchKeys) == 500 {
				return flush()
			}
			return nil
		})
		if err != nil {
			return err
		}
		return flush()
	}
	if err := store.DropShared(ctx, out, others); err != nil {
		return nil, fmt.Errorf("read evidence: %w", err)
	}
	return out, nil
}

// scanPrefix calls fn with every key under the store's prefix (SCAN MATCH).
func (s *Store) scanPrefix(ctx context.Context, fn func(key string) error) error {
	it := s.rdb.Scan(ctx, 0, globEscape(s.lay.prefix)+"*", 1000).Iterator()
	for it.Next(ctx) {
		if err := fn(it.Val()); err != nil {
			return err
		}
	}
	return it.Err()
}

// globEscape escapes Redis glob metacharacters.
func globEscape(p string) string {
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`)
	return r.Replace(p)
}

func isWrongType(err error) bool { return err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE") }

func decodeFloat32(b []byte) []float32 {
	if len(b) == 0 || len(b)%4 != 0 {
		return nil
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// parseWait reads reclaim_wait.
func parseWait(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		if n, err2 := strconv.Atoi(s); err2 == nil && n > 0 {
			return time.Duration(n) * time.Second, nil
		}
		return 0, fmt.Errorf("reclaim_wait %q is not a positive Go duration (e.g. 60s, 5m)", s)
	}
	return d, nil
}
