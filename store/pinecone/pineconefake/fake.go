// Package pineconefake is a local fake of Pinecone's data-plane HTTP API,
// for tests: the endpoints amnesia's pinecone adapter calls, with Pinecone's
// paths, headers, JSON shapes and status codes, and its eventual
// consistency (a write becomes visible to fetch, query and list only after
// a configurable delay).
//
// It is not Pinecone. It implements, in memory:
//
//	POST /vectors/upsert        {vectors:[{id,values,metadata}], namespace} -> {upsertedCount}
//	GET  /vectors/fetch         ?ids=a&ids=b&namespace=ns -> {vectors:{id:{id,values,metadata}}, namespace, usage}
//	POST /vectors/delete        {ids | deleteAll | filter, namespace} -> {}
//	POST /query                 {vector | id, topK, filter, includeValues, includeMetadata, namespace} -> {matches, namespace, usage}
//	GET  /vectors/list          ?prefix=&limit=&paginationToken=&namespace= -> {vectors:[{id}], pagination:{next}, namespace, usage}
//	POST /describe_index_stats  {} -> {namespaces:{ns:{vectorCount}}, dimension, indexFullness, totalVectorCount, metric, vectorType}
//
// Errors are Pinecone's data-plane rpcStatus body ({"code", "message",
// "details"}) with the HTTP status Pinecone uses: 400 INVALID_ARGUMENT (code
// 3), 401 UNAUTHENTICATED (code 16), 404 NOT_FOUND (code 5). As in
// Pinecone, a serverless index refuses delete by metadata filter and a
// pod-based index refuses list. The messages are the fake's own wording.
package pineconefake

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultNamespace is the name Pinecone gives the namespace a request
// without one addresses.
const DefaultNamespace = "__default__"

// Versions are the X-Pinecone-API-Version values the fake accepts; a
// request without the header gets the first.
var Versions = []string{"2025-04", "2025-01", "2025-10"}

// MaxResultBytes is the largest query result the fake sends, as Pinecone
// limits a result to 4 MB.
var MaxResultBytes = 4 << 20

// Options configures a fake index.
type Options struct {
	APIKey    string // the key every request must carry in Api-Key
	Dimension int    // the index's dimension
	// Pod makes the index pod-based: delete by metadata filter works, list
	// does not. The default is serverless (the reverse).
	Pod bool
	// UpsertLag and DeleteLag delay when an upsert or a delete becomes
	// visible to fetch, query, list and stats (Pinecone is eventually
	// consistent).
	UpsertLag time.Duration
	DeleteLag time.Duration
}

// Server is a fake index.
type Server struct {
	*httptest.Server
	opt Options

	mu      sync.Mutex
	ns      map[string]map[string]*vector // visible state
	pending []op                          // writes not yet visible, in order
	// Versions seen, and requests per path, for tests.
	seenVersions map[string]int
	calls        map[string]int
}

type vector struct {
	ID       string         `json:"id"`
	Values   []float32      `json:"values"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

type op struct {
	at  time.Time
	ns  string
	id  string
	vec *vector // nil: delete
}

// New starts a fake index on a loopback port. Close it when done.
func New(opt Options) *Server {
	if opt.Dimension <= 0 {
		panic("pineconefake: Dimension must be positive")
	}
	s := &Server{opt: opt, ns: map[string]map[string]*vector{}, seenVersions: map[string]int{}, calls: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /vectors/upsert", s.upsert)
	mux.HandleFunc("GET /vectors/fetch", s.fetch)
	mux.HandleFunc("POST /vectors/delete", s.delete)
	mux.HandleFunc("POST /query", s.query)
	mux.HandleFunc("GET /vectors/list", s.list)
	mux.HandleFunc("POST /describe_index_stats", s.stats)
	mux.HandleFunc("GET /describe_index_stats", s.stats)
	s.Server = httptest.NewServer(s.auth(mux))
	return s
}

// Calls returns how many requests reached path.
func (s *Server) Calls(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[path]
}

// VersionsSeen returns the X-Pinecone-API-Version values requests carried
// ("" for none), with their counts.
func (s *Server) VersionsSeen() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.seenVersions {
		out[k] = v
	}
	return out
}

// Settle makes every pending write visible now.
func (s *Server) Settle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range s.pending {
		s.apply(o)
	}
	s.pending = nil
}

// Visible reports whether id is visible in namespace ns ("" is the
// default) now.
func (s *Server) Visible(ns, id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance()
	_, ok := s.ns[nsName(ns)][id]
	return ok
}

func nsName(ns string) string {
	if ns == "" {
		return DefaultNamespace
	}
	return ns
}

// advance applies the pending writes that are due. Callers hold mu.
func (s *Server) advance() {
	now := time.Now()
	i := 0
	for ; i < len(s.pending) && !s.pending[i].at.After(now); i++ {
		s.apply(s.pending[i])
	}
	s.pending = s.pending[i:]
}

func (s *Server) apply(o op) {
	m := s.ns[o.ns]
	if o.vec == nil {
		if m != nil {
			delete(m, o.id)
			if len(m) == 0 {
				delete(s.ns, o.ns) // Pinecone drops an empty namespace
			}
		}
		return
	}
	if m == nil {
		m = map[string]*vector{}
		s.ns[o.ns] = m
	}
	m[o.id] = o.vec
}

// write queues a write to become visible after lag. Writes stay in order:
// a write never becomes visible before an earlier one.
func (s *Server) write(o op, lag time.Duration) {
	o.at = time.Now().Add(lag)
	if n := len(s.pending); n > 0 && s.pending[n-1].at.After(o.at) {
		o.at = s.pending[n-1].at
	}
	if len(s.pending) == 0 && lag <= 0 {
		s.apply(o)
		return
	}
	s.pending = append(s.pending, o)
}

// rpcStatus is Pinecone's data-plane error body.
type rpcStatus struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Details []any  `json:"details"`
}

func fail(w http.ResponseWriter, status, code int, format string, a ...any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(rpcStatus{Code: code, Message: fmt.Sprintf(format, a...), Details: []any{}})
}

func bad(w http.ResponseWriter, format string, a ...any) {
	fail(w, http.StatusBadRequest, 3, format, a...)
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func (s *Server) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := r.Header.Get("X-Pinecone-API-Version")
		s.mu.Lock()
		s.seenVersions[v]++
		s.calls[r.URL.Path]++
		s.mu.Unlock()
		if key := r.Header.Get("Api-Key"); key == "" || key != s.opt.APIKey {
			fail(w, http.StatusUnauthorized, 16, "Invalid API Key")
			return
		}
		if v != "" && !contains(Versions, v) {
			bad(w, "unsupported API version %q", v)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		bad(w, "invalid request body: %v", err)
		return false
	}
	return true
}

func (s *Server) upsert(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Vectors   []vector `json:"vectors"`
		Namespace string   `json:"namespace"`
	}
	if !decode(w, r, &req) {
		return
	}
	if len(req.Vectors) == 0 || len(req.Vectors) > 1000 {
		bad(w, "vectors: between 1 and 1000 vectors per upsert, got %d", len(req.Vectors))
		return
	}
	for _, v := range req.Vectors {
		if v.ID == "" || len(v.ID) > 512 {
			bad(w, "vector id must be 1 to 512 characters")
			return
		}
		if len(v.Values) != s.opt.Dimension {
			bad(w, "Vector dimension %d does not match the dimension of the index %d", len(v.Values), s.opt.Dimension)
			return
		}
		for k, mv := range v.Metadata {
			if !validMetadata(mv) {
				bad(w, "Metadata value for field %q must be a string, number, boolean or list of strings", k)
				return
			}
		}
		if b, _ := json.Marshal(v.Metadata); len(b) > 40<<10 {
			bad(w, "Metadata size is %d bytes, which exceeds the limit of %d bytes per vector", len(b), 40<<10)
			return
		}
	}
	s.mu.Lock()
	s.advance()
	ns := nsName(req.Namespace)
	for i := range req.Vectors {
		v := req.Vectors[i]
		v.Values = append([]float32(nil), v.Values...)
		s.write(op{ns: ns, id: v.ID, vec: &v}, s.opt.UpsertLag)
	}
	s.mu.Unlock()
	reply(w, map[string]any{"upsertedCount": len(req.Vectors)})
}

func validMetadata(v any) bool {
	switch x := v.(type) {
	case string, float64, bool:
		return true
	case []any:
		for _, e := range x {
			if _, ok := e.(string); !ok {
				return false
			}
		}
		return true
	}
	return false
}

func (s *Server) fetch(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	ids := q["ids"]
	if len(ids) == 0 {
		bad(w, "ids: at least one id is required")
		return
	}
	if len(ids) > 1000 {
		bad(w, "ids: at most 1000 ids per fetch")
		return
	}
	s.mu.Lock()
	s.advance()
	ns := nsName(q.Get("namespace"))
	out := map[string]*vector{}
	for _, id := range ids {
		if v, ok := s.ns[ns][id]; ok {
			out[id] = v
		}
	}
	resp := map[string]any{"vectors": out, "namespace": q.Get("namespace"), "usage": map[string]int{"readUnits": 1}}
	b, _ := json.Marshal(resp)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

func (s *Server) delete(w http.ResponseWriter, r *http.Request) {
	var req struct {
		IDs       []string       `json:"ids"`
		DeleteAll bool           `json:"deleteAll"`
		Namespace string         `json:"namespace"`
		Filter    map[string]any `json:"filter"`
	}
	if !decode(w, r, &req) {
		return
	}
	modes := 0
	for _, b := range []bool{len(req.IDs) > 0, req.DeleteAll, req.Filter != nil} {
		if b {
			modes++
		}
	}
	if modes != 1 {
		bad(w, "exactly one of ids, deleteAll and filter is required")
		return
	}
	if len(req.IDs) > 1000 {
		bad(w, "ids: at most 1000 ids per delete")
		return
	}
	if req.Filter != nil && !s.opt.Pod {
		bad(w, "Serverless and Starter indexes do not support deleting with metadata filtering")
		return
	}
	s.mu.Lock()
	s.advance()
	ns := nsName(req.Namespace)
	var ids []string
	switch {
	case len(req.IDs) > 0:
		ids = req.IDs
	default:
		for id, v := range s.ns[ns] {
			ok := req.DeleteAll
			if !ok {
				m, err := match(req.Filter, v.Metadata)
				if err != nil {
					s.mu.Unlock()
					bad(w, "filter: %v", err)
					return
				}
				ok = m
			}
			if ok {
				ids = append(ids, id)
			}
		}
		sort.Strings(ids)
	}
	for _, id := range ids {
		s.write(op{ns: ns, id: id}, s.opt.DeleteLag)
	}
	s.mu.Unlock()
	reply(w, map[string]any{})
}

func (s *Server) query(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Namespace       string         `json:"namespace"`
		TopK            int            `json:"topK"`
		Filter          map[string]any `json:"filter"`
		IncludeValues   bool           `json:"includeValues"`
		IncludeMetadata bool           `json:"includeMetadata"`
		Vector          []float32      `json:"vector"`
		ID              string         `json:"id"`
	}
	if !decode(w, r, &req) {
		return
	}
	if req.TopK < 1 || req.TopK > 10000 {
		bad(w, "topK must be between 1 and 10000")
		return
	}
	if (len(req.Vector) > 0) == (req.ID != "") {
		bad(w, "exactly one of vector and id is required")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance()
	ns := nsName(req.Namespace)
	q := req.Vector
	if req.ID != "" {
		v, ok := s.ns[ns][req.ID]
		if !ok {
			fail(w, http.StatusNotFound, 5, "vector with id %q not found in namespace", req.ID)
			return
		}
		q = v.Values
	}
	if len(q) != s.opt.Dimension {
		bad(w, "Query vector dimension %d does not match the dimension of the index %d", len(q), s.opt.Dimension)
		return
	}
	type match_ struct {
		ID       string         `json:"id"`
		Score    float64        `json:"score"`
		Values   []float32      `json:"values"`
		Metadata map[string]any `json:"metadata,omitempty"`
	}
	var ms []match_
	for id, v := range s.ns[ns] {
		if req.Filter != nil {
			ok, err := match(req.Filter, v.Metadata)
			if err != nil {
				bad(w, "filter: %v", err)
				return
			}
			if !ok {
				continue
			}
		}
		m := match_{ID: id, Score: cosine(q, v.Values), Values: []float32{}}
		if req.IncludeValues {
			m.Values = v.Values
		}
		if req.IncludeMetadata {
			m.Metadata = v.Metadata
		}
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool {
		if ms[i].Score != ms[j].Score {
			return ms[i].Score > ms[j].Score
		}
		return ms[i].ID < ms[j].ID
	})
	if len(ms) > req.TopK {
		ms = ms[:req.TopK]
	}
	if ms == nil {
		ms = []match_{}
	}
	resp := map[string]any{"matches": ms, "namespace": req.Namespace, "usage": map[string]int{"readUnits": 5}}
	b, _ := json.Marshal(resp)
	if len(b) > MaxResultBytes {
		bad(w, "Query result size exceeds the 4MB limit: lower topK or leave out metadata and values")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

func cosine(a, b []float32) float64 {
	var d, na, nb float64
	for i := range a {
		d += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return d / math.Sqrt(na*nb)
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	if s.opt.Pod {
		bad(w, "List operation is only supported for serverless indexes")
		return
	}
	q := r.URL.Query()
	limit := 100
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 100 {
			bad(w, "limit must be between 1 and 100")
			return
		}
		limit = n
	}
	s.mu.Lock()
	s.advance()
	var ids []string
	for id := range s.ns[nsName(q.Get("namespace"))] {
		if strings.HasPrefix(id, q.Get("prefix")) {
			ids = append(ids, id)
		}
	}
	s.mu.Unlock()
	sort.Strings(ids)
	if tok := q.Get("paginationToken"); tok != "" {
		i := sort.SearchStrings(ids, tok)
		if i < len(ids) && ids[i] == tok {
			i++
		}
		ids = ids[i:]
	}
	resp := map[string]any{"namespace": q.Get("namespace"), "usage": map[string]int{"readUnits": 1}}
	if len(ids) > limit {
		ids = ids[:limit]
		resp["pagination"] = map[string]string{"next": ids[limit-1]}
	}
	out := make([]map[string]string, 0, len(ids))
	for _, id := range ids {
		out = append(out, map[string]string{"id": id})
	}
	resp["vectors"] = out
	reply(w, resp)
}

func (s *Server) stats(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && r.ContentLength != 0 {
		var req struct {
			Filter map[string]any `json:"filter"`
		}
		if !decode(w, r, &req) {
			return
		}
		if req.Filter != nil && !s.opt.Pod {
			bad(w, "Serverless and Starter indexes do not support describing index stats with metadata filtering")
			return
		}
	}
	s.mu.Lock()
	s.advance()
	nss := map[string]map[string]int{}
	total := 0
	for ns, m := range s.ns {
		nss[ns] = map[string]int{"vectorCount": len(m)}
		total += len(m)
	}
	s.mu.Unlock()
	reply(w, map[string]any{"namespaces": nss, "dimension": s.opt.Dimension, "indexFullness": 0, "totalVectorCount": total, "metric": "cosine", "vectorType": "dense"})
}

// match evaluates a Pinecone metadata filter: field: value (equality),
// field: {$eq|$ne|$gt|$gte|$lt|$lte|$in|$nin|$exists: …}, $and and $or.
func match(f map[string]any, md map[string]any) (bool, error) {
	for k, v := range f {
		switch k {
		case "$and", "$or":
			xs, ok := v.([]any)
			if !ok {
				return false, fmt.Errorf("%s takes a list of filters", k)
			}
			any_ := false
			all := true
			for _, x := range xs {
				sub, ok := x.(map[string]any)
				if !ok {
					return false, fmt.Errorf("%s takes a list of filters", k)
				}
				m, err := match(sub, md)
				if err != nil {
					return false, err
				}
				any_ = any_ || m
				all = all && m
			}
			if (k == "$and" && !all) || (k == "$or" && !any_) {
				return false, nil
			}
		default:
			ops, ok := v.(map[string]any)
			if !ok {
				ops = map[string]any{"$eq": v}
			}
			for o, arg := range ops {
				m, err := cmp(o, md[k], arg, md != nil && md[k] != nil)
				if err != nil {
					return false, err
				}
				if !m {
					return false, nil
				}
			}
		}
	}
	return true, nil
}

func cmp(o string, have, arg any, exists bool) (bool, error) {
	eq := func(a, b any) bool {
		if l, ok := a.([]any); ok { // a list field matches when it holds b
			for _, e := range l {
				if e == b {
					return true
				}
			}
			return false
		}
		return a == b
	}
	switch o {
	case "$eq":
		return exists && eq(have, arg), nil
	case "$ne":
		return !exists || !eq(have, arg), nil
	case "$in", "$nin":
		xs, ok := arg.([]any)
		if !ok {
			return false, fmt.Errorf("%s takes a list", o)
		}
		in := false
		for _, x := range xs {
			in = in || (exists && eq(have, x))
		}
		return in == (o == "$in"), nil
	case "$exists":
		b, ok := arg.(bool)
		if !ok {
			return false, fmt.Errorf("$exists takes a boolean")
		}
		return exists == b, nil
	case "$gt", "$gte", "$lt", "$lte":
		a, ok1 := have.(float64)
		b, ok2 := arg.(float64)
		if !ok2 {
			return false, fmt.Errorf("%s takes a number", o)
		}
		if !ok1 {
			return false, nil
		}
		switch o {
		case "$gt":
			return a > b, nil
		case "$gte":
			return a >= b, nil
		case "$lt":
			return a < b, nil
		}
		return a <= b, nil
	}
	return false, fmt.Errorf("unknown operator %s", o)
}
