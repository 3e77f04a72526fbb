// Package weaviate is an adapter for a Weaviate server (tested with v1.35),
// spoken to over its REST and GraphQL API with net/http: amnesia needs
// eight calls (schema, batch write, get, batch delete, GraphQL Get with
// where and nearVector), and the official client (weaviate-go-client/v5)
// would link gRPC, go-openapi and their dependency trees into every amnesia
// binary for them. Speaking HTTP directly also keeps every error message
// under this package's control: a server's error can echo the filter
// value or vector it was sent, and those are personal data.
//
// One store is one Weaviate class (collection) with a single, unnamed
// vector. A record is an object; its key is the object's UUID, or, for a
// key that is not a UUID, the UUIDv5 of the key in a namespace of
// amnesia's own (KeyUUID), so that lineage keys need not be UUIDs. The
// subject tag lives in a text property (default "subject", tokenization
// field), the content in text properties (default: every text property of
// the class but the subject).
//
// What it proves: deletion by key (a batch delete with a where filter on
// the ids) and by subject (a batch delete with a where filter on the
// subject property); that neither a get by id, a where filter on the
// subject tag, nor a nearVector search with the record's own vector
// returns it; and, when data_dir names the server's PERSISTENCE_DATA_PATH
// on this machine, that no window of the record's text properties (as the
// object store writes them: JSON string bodies) nor of its vector
// (float32 little-endian) is left in any file of the class's directory:
// LSM segments (.db), write-ahead logs (.wal), HNSW commit logs, and
// everything else there.
//
// What it cannot force: Weaviate has no compaction API. A deleted object's
// bytes stay in the WAL until its memtable is flushed, and in an older
// segment until compaction merges it with the segment holding the
// tombstone. Reclaim therefore waits (the erasure's reclaim wait) for the
// server's own flush and compaction, and reports PENDING-weaviate-compaction
// naming the files that still hold bytes; docs/weaviate.md gives the server
// settings under which that wait ends, and Reclaim names the ones it can
// see are not in effect.
//
// What the byte scan cannot see: the inverted index keeps a text's words
// one token at a time (lower-cased), which no window finds, and the
// subject tag as a key (said, not waited for); compressed vector codes
// (the certificate then does not claim the physical level); the files of
// other replicas of a cluster.
package weaviate

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/amnesia-dev/amnesia/store"
)

// Type is the adapter type name used in configuration.
const Type = "weaviate"

// SimilarityK is how many neighbours the similarity probe asks for.
const SimilarityK = 10

// DefaultSubject is the property that holds the subject tag when the
// configuration names none.
const DefaultSubject = "subject"

// DefaultContent is the text property CapturePut writes a record's content
// to, and the one a class created by Open has.
const DefaultContent = "content"

// KeyProperty is the text property in which a class created by Open keeps
// each object's store key, so that a search can answer with keys (an
// object's id is the key's UUID, see KeyUUID). Classes without it answer
// searches with object UUIDs.
const KeyProperty = "amnesia_key"

// Record is one object.
type Record struct {
	ID         string // the store key (see KeyUUID)
	Subject    string
	Content    string         // written to the content property
	Properties map[string]any // other properties
	Vector     []float32
}

// Store is the adapter.
type Store struct {
	name       string
	base       string // scheme://host:port, no credentials
	token      string // bearer token (the DSN's password), or ""
	class      string
	subject    string
	content    []string // configured content properties; nil: every text property but the subject
	dims       int
	dataDir    string
	deleteOnly bool
	hasKey     bool // the class has KeyProperty
	poll       time.Duration
	hc         *http.Client

	mu      sync.Mutex
	watch   map[string]*store.Evidence // evidence of records read, by key (personal data, memory only)
	deleted map[string]bool            // object UUIDs deleted by this process, whose bytes Reclaim waits for
	started time.Time                  // first Reclaim call since the last delete
}

var (
	_ store.Store          = (*Store)(nil)
	_ store.EvidenceReader = (*Store)(nil)
	_ store.Reclaimer      = (*Store)(nil)
	_ store.PhysicalProber = (*Store)(nil)
)

// Options are what Open needs.
type Options struct {
	Name       string
	URL        string   // http://host:port, optionally http://:TOKEN@host:port for an API key
	Class      string   // the class (collection), starting with an upper-case letter
	Subject    string   // subject property; default "subject"
	Content    []string // content properties; default: every text property but the subject
	Dimensions int      // 0: not checked
	DataDir    string   // the server's PERSISTENCE_DATA_PATH on this machine, for the physical probe; "": none
	DeleteOnly bool     // reclaim: delete-only
	// Poll is how long one Reclaim call waits for the server's flush and
	// compaction; 0: DefaultPoll.
	Poll time.Duration
}

var classRE = regexp.MustCompile(`^[A-Z][_0-9A-Za-z]*$`)
var propRE = regexp.MustCompile(`^[_A-Za-z][_0-9A-Za-z]*$`)

// parseURL splits a configured URL into the base without credentials and
// the bearer token carried as its password.
func parseURL(raw string) (base, token string, err error) {
	if raw == "" {
		return "", "", errors.New("dsn is required: the Weaviate server's URL, e.g. http://127.0.0.1:8080 (an API key goes in as http://:KEY@host:port, or $VAR)")
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", "", errors.New("dsn must be the Weaviate server's URL, http://host:port or https://host:port")
	}
	if u.User != nil {
		token, _ = u.User.Password()
		if token == "" {
			token = u.User.Username()
		}
	}
	return u.Scheme + "://" + u.Host, token, nil
}

func validate(o Options) error {
	if _, _, err := parseURL(o.URL); err != nil {
		return err
	}
	if !classRE.MatchString(o.Class) {
		return fmt.Errorf("collection %q is not a Weaviate class name: it starts with an upper-case letter and has letters, digits and _ only (Weaviate capitalizes the first letter)", o.Class)
	}
	for _, p := range append([]string{o.Subject}, o.Content...) {
		if p != "" && !propRE.MatchString(p) {
			return fmt.Errorf("property %q is not a Weaviate property name (letters, digits and _)", p)
		}
	}
	if o.Dimensions < 0 {
		return errors.New("dimensions must be positive")
	}
	return nil
}

// Open connects to the server and checks the class. With create false a
// missing class is an error wrapping store.ErrUnavailable; with create true
// it is created with the subject and content properties, no vectorizer,
// and an HNSW index without compression.
func Open(ctx context.Context, o Options, create bool) (*Store, error) {
	if err := validate(o); err != nil {
		return nil, fmt.Errorf("open weaviate store %q: %w", o.Name, err)
	}
	base, token, _ := parseURL(o.URL)
	s := &Store{name: o.Name, base: base, token: token, class: o.Class, subject: o.Subject, content: o.Content,
		dims: o.Dimensions, dataDir: o.DataDir, deleteOnly: o.DeleteOnly, poll: o.Poll,
		hc: &http.Client{Timeout: 60 * time.Second}, watch: map[string]*store.Evidence{}, deleted: map[string]bool{}}
	if s.subject == "" {
		s.subject = DefaultSubject
	}
	if s.poll <= 0 {
		s.poll = DefaultPoll
	}
	cl, err := s.schema(ctx)
	if err != nil {
		return nil, fmt.Errorf("open weaviate store %q: %w", o.Name, err)
	}
	if cl == nil {
		if !create {
			return nil, fmt.Errorf("open weaviate store %q: %s has no class %s: %w", o.Name, s.base, s.class, store.ErrUnavailable)
		}
		if err := s.createClass(ctx); err != nil {
			return nil, fmt.Errorf("open weaviate store %q: %w", o.Name, err)
		}
		if cl, err = s.schema(ctx); err != nil || cl == nil {
			return nil, fmt.Errorf("open weaviate store %q: class %s not readable after creating it: %v", o.Name, s.class, err)
		}
	}
	if err := cl.usable(s.subject); err != nil {
		return nil, fmt.Errorf("open weaviate store %q: %s: %w", o.Name, s.class, err)
	}
	s.hasKey = cl.prop(KeyProperty) != nil
	return s, nil
}

// Location is where the store is, for people.
func (s *Store) Location() string { return s.base + " class " + s.class }

// Info implements store.Store. The physical probe is declared only when
// data_dir is set (without it there are no files to scan, and the erasure
// stops at the logical level); reclaim only when not delete-only.
func (s *Store) Info() store.Info {
	caps := []store.Capability{store.CapDelete, store.CapProbeByID, store.CapProbeByFilter, store.CapProbeBySimilarity}
	if !s.deleteOnly {
		caps = append(caps, store.CapReclaim)
	}
	if s.dataDir != "" {
		caps = append(caps, store.CapProbePhysical)
	}
	return store.Info{Name: s.name, Type: Type, Capabilities: caps}
}

// Close implements store.Store: it forgets the evidence this process held.
func (s *Store) Close() error {
	s.mu.Lock()
	s.watch, s.deleted = map[string]*store.Evidence{}, map[string]bool{}
	s.mu.Unlock()
	s.hc.CloseIdleConnections()
	return nil
}

// amnesiaNS is the UUIDv5 namespace of keys that are not UUIDs.
var amnesiaNS = [16]byte{0x6e, 0x3a, 0x1f, 0x52, 0x0b, 0x7d, 0x4c, 0x3e, 0x9a, 0x51, 0x2d, 0x84, 0xc0, 0x77, 0x19, 0xe6}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// KeyUUID is the object id of a store key: the key itself (lower-cased)
// when it is a UUID, else the UUIDv5 (RFC 9562) of the key in amnesia's
// namespace.
func KeyUUID(key string) string {
	if uuidRE.MatchString(key) {
		return strings.ToLower(key)
	}
	h := sha1.New()
	h.Write(amnesiaNS[:])
	h.Write([]byte(key))
	u := h.Sum(nil)[:16]
	u[6] = (u[6] & 0x0f) | 0x50
	u[8] = (u[8] & 0x3f) | 0x80
	x := hex.EncodeToString(u)
	return x[0:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:32]
}

// ---- HTTP ----

// apiError is an error the server answered. Its message holds the body
// only for requests that carry no personal data (schema calls).
type apiError struct {
	status int
	msg    string
}

func (e *apiError) Error() string { return e.msg }

// call sends a request and decodes the JSON answer into out (when not
// nil). private says the request carries personal data (an id is not, a
// subject tag, a property or a vector is): the server's answer is then
// left out of errors, which could echo it. A transport failure wraps
// store.ErrUnavailable, a 5xx too.
func (s *Store) call(ctx context.Context, method, path string, body any, out any, private bool) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, fmt.Errorf("%s %s: encode request: %v", method, redactPath(path), err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, rd)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %v", method, redactPath(path), err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return 0, fmt.Errorf("%s %s%s: %w: %v", method, s.base, redactPath(path), store.ErrUnavailable, scrubURLErr(err))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("%s %s: read answer: %w: %v", method, redactPath(path), store.ErrUnavailable, err)
	}
	if resp.StatusCode >= 300 {
		if resp.StatusCode == http.StatusNotFound {
			return resp.StatusCode, nil
		}
		msg := fmt.Sprintf("%s %s%s: server answered %s", method, s.base, redactPath(path), resp.Status)
		if !private {
			msg += ": " + strings.TrimSpace(string(b[:min(len(b), 400)]))
		}
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			msg += " (give the API key in dsn as http://:KEY@host:port)"
		}
		if resp.StatusCode >= 500 {
			return resp.StatusCode, fmt.Errorf("%s: %w", msg, store.ErrUnavailable)
		}
		return resp.StatusCode, &apiError{status: resp.StatusCode, msg: msg}
	}
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: answer is not the JSON expected: %v", method, redactPath(path), err)
		}
	}
	return resp.StatusCode, nil
}

// redactPath drops the query string (it may hold a key-derived id only,
// but nothing is lost by leaving it out).
func redactPath(p string) string {
	if i := strings.IndexByte(p, '?'); i >= 0 {
		return p[:i]
	}
	return p
}

// scrubURLErr removes the URL from a net/http error (it would carry
// nothing secret here, the base has no credentials, but keeps messages
// short).
func scrubURLErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// ---- schema ----

type property struct {
	Name         string   `json:"name"`
	DataType     []string `json:"dataType"`
	Tokenization string   `json:"tokenization,omitempty"`
}

type classDef struct {
	Class             string                     `json:"class"`
	Properties        []property                 `json:"properties"`
	Vectorizer        string                     `json:"vectorizer,omitempty"`
	VectorIndexType   string                     `json:"vectorIndexType,omitempty"`
	VectorIndexConfig map[string]any             `json:"vectorIndexConfig,omitempty"`
	VectorConfig      map[string]json.RawMessage `json:"vectorConfig,omitempty"`
}

func (c *classDef) prop(name string) *property {
	for i := range c.Properties {
		if c.Properties[i].Name == name {
			return &c.Properties[i]
		}
	}
	return nil
}

// usable says why this adapter cannot work on the class, or nil.
func (c *classDef) usable(subject string) error {
	if len(c.VectorConfig) > 0 && c.VectorIndexType == "" {
		return errors.New("the class uses named vectors (vectorConfig), which this adapter does not handle: it needs a class with one unnamed vector")
	}
	p := c.prop(subject)
	if p == nil {
		return fmt.Errorf("no property %q for the subject tag: set subject: to the property that holds it", subject)
	}
	if len(p.DataType) != 1 || p.DataType[0] != "text" {
		return fmt.Errorf("subject property %q has data type %v, want text", subject, p.DataType)
	}
	return nil
}

// compression names the vector compression the class's index uses
// (pq, bq, sq, rq), or "".
func (c *classDef) compression() string {
	for _, k := range []string{"pq", "bq", "sq", "rq"} {
		if m, ok := c.VectorIndexConfig[k].(map[string]any); ok && m["enabled"] == true {
			return k
		}
	}
	return ""
}

// cleanupInterval is the class's HNSW tombstone cleanup interval in
// seconds, or 0 when not given.
func (c *classDef) cleanupInterval() int {
	if f, ok := c.VectorIndexConfig["cleanupIntervalSeconds"].(float64); ok {
		return int(f)
	}
	return 0
}

func (s *Store) schema(ctx context.Context) (*classDef, error) {
	var c classDef
	st, err := s.call(ctx, http.MethodGet, "/v1/schema/"+s.class, nil, &c, false)
	if err != nil {
		return nil, err
	}
	if st == http.StatusNotFound || c.Class == "" {
		return nil, nil
	}
	return &c, nil
}

func (s *Store) createClass(ctx context.Context) error {
	props := []property{{Name: s.subject, DataType: []string{"text"}, Tokenization: "field"},
		{Name: KeyProperty, DataType: []string{"text"}, Tokenization: "field"}}
	content := s.content
	if len(content) == 0 {
		content = []string{DefaultContent}
	}
	for _, p := range content {
		if p != s.subject {
			props = append(props, property{Name: p, DataType: []string{"text"}})
		}
	}
	c := classDef{Class: s.class, Properties: props, Vectorizer: "none", VectorIndexType: "hnsw",
		VectorIndexConfig: map[string]any{"distance": "cosine"}}
	if _, err := s.call(ctx, http.MethodPost, "/v1/schema", c, nil, false); err != nil {
		var ae *apiError
		if errors.As(err, &ae) && strings.Contains(ae.msg, "already exists") {
			return nil
		}
		return fmt.Errorf("create class %s: %w", s.class, err)
	}
	return nil
}

// contentProps returns the properties whose text the physical probe looks
// for: the configured ones, else every text property but the subject.
func (s *Store) contentProps(c *classDef) []string {
	if len(s.content) > 0 {
		return s.content
	}
	var out []string
	for _, p := range c.Properties {
		if p.Name == s.subject || p.Name == KeyProperty || len(p.DataType) != 1 {
			continue
		}
		if p.DataType[0] == "text" || p.DataType[0] == "text[]" {
			out = append(out, p.Name)
		}
	}
	sort.Strings(out)
	return out
}

// ---- objects ----

type object struct {
	Class      string         `json:"class,omitempty"`
	ID         string         `json:"id"`
	Properties map[string]any `json:"properties,omitempty"`
	Vector     []float32      `json:"vector,omitempty"`
}

// Put writes (or replaces) a record.
func (s *Store) Put(ctx context.Context, r Record) error {
	return s.PutBatch(ctx, []Record{r})
}

// PutBatch writes records in one batch request.
func (s *Store) PutBatch(ctx context.Context, rs []Record) error {
	objs := make([]object, 0, len(rs))
	for _, r := range rs {
		if r.ID == "" {
			return errors.New("put object: empty id")
		}
		if len(r.Vector) == 0 {
			return errors.New("put object: no vector (amnesia does not embed text)")
		}
		if s.dims > 0 && len(r.Vector) != s.dims {
			return fmt.Errorf("put object: %d dimensions, the store is configured with %d", len(r.Vector), s.dims)
		}
		props := map[string]any{}
		for k, v := range r.Properties {
			props[k] = v
		}
		if r.Subject != "" {
			props[s.subject] = r.Subject
		}
		if r.Content != "" {
			props[s.writeContent()] = r.Content
		}
		if s.hasKey {
			props[KeyProperty] = r.ID
		}
		objs = append(objs, object{Class: s.class, ID: KeyUUID(r.ID), Properties: props, Vector: r.Vector})
	}
	var res []struct {
		ID     string `json:"id"`
		Result struct {
			Errors *struct {
				Error []struct {
					Message string `json:"message"`
				} `json:"error"`
			} `json:"errors"`
		} `json:"result"`
	}
	if _, err := s.call(ctx, http.MethodPost, "/v1/batch/objects", map[string]any{"objects": objs}, &res, true); err != nil {
		return fmt.Errorf("put objects: %w", err)
	}
	for i, r := range res {
		if r.Result.Errors != nil && len(r.Result.Errors.Error) > 0 {
			// The server's message can quote the object's values (a date
			// it could not parse): it stays in the server's answer.
			return fmt.Errorf("put objects: the server refused object %d of %d in class %s (its message is withheld: it may quote the object's values; check property names and types against the class, and the vector's dimensions)", i+1, len(objs), s.class)
		}
	}
	return nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s[:min(len(s), 200)]
}

// writeContent is the property Put writes Record.Content to.
func (s *Store) writeContent() string {
	if len(s.content) > 0 {
		return s.content[0]
	}
	return DefaultContent
}

// getObject returns the object with key's id, or nil.
func (s *Store) getObject(ctx context.Context, key string) (*object, error) {
	var o object
	st, err := s.call(ctx, http.MethodGet, "/v1/objects/"+s.class+"/"+KeyUUID(key)+"?include=vector", nil, &o, true)
	if err != nil {
		return nil, err
	}
	if st == http.StatusNotFound || o.ID == "" {
		return nil, nil
	}
	return &o, nil
}

// Get returns the record with key, or nil.
func (s *Store) Get(ctx context.Context, key string) (*Record, error) {
	o, err := s.getObject(ctx, key)
	if err != nil || o == nil {
		return nil, err
	}
	r := &Record{ID: key, Vector: o.Vector, Properties: map[string]any{}}
	for k, v := range o.Properties {
		switch k {
		case s.subject:
			r.Subject, _ = v.(string)
		case s.writeContent():
			r.Content, _ = v.(string)
		case KeyProperty:
		default:
			r.Properties[k] = v
		}
	}
	return r, nil
}

// Neighbor is one search result.
type Neighbor struct {
	ID       string // the store key when the class keeps it (KeyProperty), else the object UUID
	UUID     string
	Subject  string
	Distance float64
}

// gql runs a GraphQL Get on the class and returns its objects' ids,
// subjects and distances. args is the argument list of the class field.
func (s *Store) gql(ctx context.Context, args string) ([]Neighbor, error) {
	fields := s.subject
	if s.hasKey {
		fields += " " + KeyProperty
	}
	q := fmt.Sprintf("{ Get { %s(%s) { %s _additional { id distance } } } }", s.class, args, fields)
	var res struct {
		Data struct {
			Get map[string][]map[string]any `json:"Get"`
		} `json:"data"`
		Errors []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	if _, err := s.call(ctx, http.MethodPost, "/v1/graphql", map[string]string{"query": q}, &res, true); err != nil {
		return nil, err
	}
	if len(res.Errors) > 0 {
		// GraphQL errors can quote the query (a tag, a vector): say only
		// that there was one.
		return nil, fmt.Errorf("GraphQL query on class %s failed (%d errors; the server's messages are withheld because they may quote the query)", s.class, len(res.Errors))
	}
	var out []Neighbor
	for _, o := range res.Data.Get[s.class] {
		add, _ := o["_additional"].(map[string]any)
		n := Neighbor{}
		n.UUID, _ = add["id"].(string)
		n.ID = n.UUID
		if k, _ := o[KeyProperty].(string); k != "" {
			n.ID = k
		}
		n.Distance, _ = add["distance"].(float64)
		n.Subject, _ = o[s.subject].(string)
		out = append(out, n)
	}
	return out, nil
}

func gqlString(v string) string {
	b, _ := json.Marshal(v) // a JSON string is a GraphQL string
	return string(b)
}

func gqlVector(v []float32) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, f := range v {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatFloat(float64(f), 'g', -1, 32))
	}
	b.WriteByte(']')
	return b.String()
}

// Search returns the k objects nearest to q, nearest first.
func (s *Store) Search(ctx context.Context, q []float32, k int) ([]Neighbor, error) {
	ns, err := s.gql(ctx, fmt.Sprintf("nearVector: {vector: %s}, limit: %d", gqlVector(q), k))
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	return ns, nil
}

// hasSubjectAndID reports whether an object with the id and the subject
// tag is returned by a where filter on both.
func (s *Store) hasSubjectAndID(ctx context.Context, tag, key string) (bool, error) {
	where := fmt.Sprintf(`where: {operator: And, operands: [{path: [%q], operator: Equal, valueText: %s}, {path: ["id"], operator: Equal, valueText: %q}]}, limit: 1`,
		s.subject, gqlString(tag), KeyUUID(key))
	ns, err := s.gql(ctx, where)
	if err != nil {
		return false, fmt.Errorf("filter by subject: %w", err)
	}
	return len(ns) > 0, nil
}

// BySubject returns the UUIDs of up to limit objects tagged with tag.
func (s *Store) BySubject(ctx context.Context, tag string, limit int) ([]string, error) {
	ns, err := s.gql(ctx, fmt.Sprintf(`where: {path: [%q], operator: Equal, valueText: %s}, limit: %d`, s.subject, gqlString(tag), limit))
	if err != nil {
		return nil, fmt.Errorf("filter by subject: %w", err)
	}
	out := make([]string, 0, len(ns))
	for _, n := range ns {
		out = append(out, n.UUID)
	}
	sort.Strings(out)
	return out, nil
}

// batchDelete deletes the class's objects that where matches and returns
// how many it deleted.
func (s *Store) batchDelete(ctx context.Context, where map[string]any) (int, error) {
	body := map[string]any{"match": map[string]any{"class": s.class, "where": where}, "output": "minimal", "dryRun": false}
	var res struct {
		Results struct {
			Matches    int `json:"matches"`
			Successful int `json:"successful"`
			Failed     int `json:"failed"`
			Limit      int `json:"limit"`
		} `json:"results"`
	}
	if _, err := s.call(ctx, http.MethodDelete, "/v1/batch/objects", body, &res, true); err != nil {
		return 0, err
	}
	if res.Results.Failed > 0 {
		return res.Results.Successful, fmt.Errorf("the server failed to delete %d of %d matching objects", res.Results.Failed, res.Results.Matches)
	}
	if res.Results.Limit > 0 && res.Results.Matches >= res.Results.Limit {
		return res.Results.Successful, fmt.Errorf("the batch matched the server's limit of %d objects (QUERY_MAXIMUM_RESULTS): run it again", res.Results.Limit)
	}
	return res.Results.Successful, nil
}

// deleteBatch is how many ids one batch delete names.
const deleteBatch = 100

// Delete implements store.Store: batch deletes with a where filter on the
// objects' ids (ContainsAny), 100 ids at a time. Keys that do not exist
// are not an error.
func (s *Store) Delete(ctx context.Context, keys []string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete objects: %w", err)
	}
	var ids []string
	for _, k := range keys {
		if k != "" {
			ids = append(ids, KeyUUID(k))
		}
	}
	for i := 0; i < len(ids); i += deleteBatch {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("delete objects: %w", err)
		}
		chunk := ids[i:min(i+deleteBatch, len(ids))]
		if _, err := s.batchDelete(ctx, map[string]any{"path": []string{"id"}, "operator": "ContainsAny", "valueTextArray": chunk}); err != nil {
			return fmt.Errorf("delete objects of class %s: %w", s.class, err)
		}
	}
	s.markDeleted(ids)
	return nil
}

func (s *Store) markDeleted(ids []string) {
	s.mu.Lock()
	for _, id := range ids {
		s.deleted[id] = true
	}
	s.started = time.Time{}
	s.mu.Unlock()
}

// DeleteSubject deletes every object whose subject property equals tag,
// with batch deletes (a where filter on the subject property), and
// returns how many it deleted. The subject property must be tokenized as
// a whole (tokenization field): with word tokenization an Equal filter
// matches objects that share the tag's words, and the delete would remove
// other people's objects.
func (s *Store) DeleteSubject(ctx context.Context, tag string) (int, error) {
	if tag == "" {
		return 0, errors.New("delete by subject: empty subject tag")
	}
	cl, err := s.schema(ctx)
	if err != nil {
		return 0, fmt.Errorf("delete by subject: %w", err)
	}
	if cl == nil {
		return 0, fmt.Errorf("delete by subject: class %s is gone: %w", s.class, store.ErrUnavailable)
	}
	if p := cl.prop(s.subject); p == nil || p.Tokenization != "field" {
		return 0, fmt.Errorf("delete by subject: property %s of class %s is not tokenized as a whole (tokenization: field), so an Equal filter could match other subjects' objects: delete by key instead", s.subject, s.class)
	}
	ids, err := s.BySubject(ctx, tag, 10000)
	if err != nil {
		return 0, fmt.Errorf("delete by subject: %w", err)
	}
	s.markDeleted(ids)
	total := 0
	for {
		n, err := s.batchDelete(ctx, map[string]any{"path": []string{s.subject}, "operator": "Equal", "valueText": tag})
		total += n
		if err == nil {
			return total, nil
		}
		if n == 0 || !strings.Contains(err.Error(), "QUERY_MAXIMUM_RESULTS") {
			return total, fmt.Errorf("delete by subject in class %s: %w", s.class, err)
		}
	}
}

// URL is the server's base URL, without credentials.
func (s *Store) URL() string { return s.base }

// Class is the store's class.
func (s *Store) Class() string { return s.class }

// All returns every object of the class as a Record (ID is the store key
// when the class keeps it, else the object UUID).
func (s *Store) All(ctx context.Context) ([]Record, error) {
	var out []Record
	err := s.each(ctx, func(o *object) error {
		r := Record{ID: o.ID, Vector: o.Vector, Properties: map[string]any{}}
		for k, v := range o.Properties {
			switch k {
			case KeyProperty:
				if id, _ := v.(string); id != "" {
					r.ID = id
				}
			case s.subject:
				r.Subject, _ = v.(string)
			case s.writeContent():
				r.Content, _ = v.(string)
			default:
				r.Properties[k] = v
			}
		}
		out = append(out, r)
		return nil
	})
	return out, err
}
