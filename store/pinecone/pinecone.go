// Package pinecone is an adapter for a Pinecone index (a managed vector
// database), through Pinecone's data-plane HTTP API: upsert, fetch, delete
// by ids, delete by metadata filter where the index type allows it (pod-based
// indexes; serverless ones refuse it), query, list by id prefix (serverless
// indexes), describe_index_stats.
//
// What it proves: deletion by key, and that no query path it can run
// returns the record afterwards: a fetch by id, a list by the id as prefix
// (serverless indexes), a query filtered on the subject tag, and a
// nearest-neighbour query with the record's own vector. Pinecone is
// eventually consistent: a deleted record can still be returned for a
// while, so the logical probe re-queries a record it still finds until it
// is gone or ConsistencyWait has passed, and then reports what it last saw.
//
// What it cannot prove: anything about Pinecone's storage. amnesia cannot
// read the files of a managed service; the most it can cite is the
// vendor's own deletion commitment (DeletionCommitmentURL: deleted records
// are soft-deleted, inaccessible, and permanently deleted within 90 days).
// The store's residue state is therefore always UNVERIFIED-managed, and the
// certificate never claims the physical level for it.
//
// The API key is read from the configuration, where it is given as $VAR
// (expanded from the environment at load); the adapter sends it only in
// the Api-Key header and never writes or logs it.
package pinecone

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/amnesia-dev/amnesia/store"
)

// Type is the adapter type name used in configuration.
const Type = "pinecone"

// SubjectKey is the metadata key that holds a record's subject tag;
// TextKey the one that holds its content (LangChain's PineconeVectorStore
// keeps the text under "text").
const (
	SubjectKey = "subject"
	TextKey    = "text"
)

// SimilarityK is how many neighbours the similarity probe asks for.
const SimilarityK = 10

// MaxTopK is the largest topK Pinecone's query accepts: the filter probe
// and BySubject see at most this many records of one subject (a query
// returning ids only, within Pinecone's 4 MB result limit).
const MaxTopK = 10000

// DefaultConsistencyWait bounds the probe's re-queries by default.
const DefaultConsistencyWait = 30 * time.Second

// StateManaged is the residue state the adapter always reports.
const StateManaged = "UNVERIFIED-managed"

// DeletionCommitmentURL is Pinecone's documented data deletion process,
// the vendor commitment the certificate cites.
const DeletionCommitmentURL = "https://docs.pinecone.io/guides/production/data-deletion"

// Options configure an adapter instance.
type Options struct {
	Name      string // the configured store name
	Host      string // the index host (https://…); http only on loopback
	APIKey    string
	Namespace string // "" is the default namespace
	// Dimensions, when set, must match the index's.
	Dimensions int
	// ConsistencyWait bounds how long ProbeLogical re-queries a record it
	// still finds (0: DefaultConsistencyWait).
	ConsistencyWait time.Duration
	// HTTPClient, when set, replaces the default client (30 s timeout).
	HTTPClient *http.Client
}

// Record is one vector with its metadata.
type Record struct {
	ID        string
	Subject   string // subject tag (metadata "subject")
	Content   string // metadata "text"
	Metadata  map[string]any
	Embedding []float32
}

// Store is the adapter.
type Store struct {
	name string
	ns   string
	c    *client
	dims int
	wait time.Duration
	host string // scheme://host, for messages
	// listUnsupported is set once the index refused list (pod-based).
	listUnsupported atomic.Bool
}

var (
	_ store.Store          = (*Store)(nil)
	_ store.EvidenceReader = (*Store)(nil)
	_ store.Reclaimer      = (*Store)(nil)
	_ store.ResidueMeter   = (*Store)(nil)
)

// Open connects to the index and reads its stats (dimension, namespaces).
// A Pinecone index is never created by amnesia: create is ignored, and an
// index that cannot be reached is an error wrapping store.ErrUnavailable.
func Open(ctx context.Context, o Options) (*Store, error) {
	u, err := parseHost(o.Host)
	if err != nil {
		return nil, fmt.Errorf("open pinecone store %q: %w", o.Name, err)
	}
	if o.APIKey == "" {
		return nil, fmt.Errorf("open pinecone store %q: api_key is empty: set api_key: $PINECONE_API_KEY and export that variable", o.Name)
	}
	hc := newHTTPClient(o.HTTPClient, 30*time.Second)
	wait := o.ConsistencyWait
	if wait <= 0 {
		wait = DefaultConsistencyWait
	}
	s := &Store{name: o.Name, ns: o.Namespace, c: &client{base: u, key: o.APIKey, hc: hc}, wait: wait, host: u.Scheme + "://" + u.Host}
	st, err := s.Stats(ctx)
	if err != nil {
		var ae *apiError
		if errors.As(err, &ae) && !errors.Is(err, store.ErrUnavailable) {
			return nil, fmt.Errorf("open pinecone store %q at %s: %w: %w", o.Name, s.host, store.ErrUnavailable, err)
		}
		return nil, fmt.Errorf("open pinecone store %q at %s: %w", o.Name, s.host, err)
	}
	if o.Dimensions > 0 && st.Dimension != 0 && st.Dimension != o.Dimensions {
		return nil, fmt.Errorf("open pinecone store %q at %s: the index has %d dimensions, the configuration says %d", o.Name, s.host, st.Dimension, o.Dimensions)
	}
	s.dims = st.Dimension
	if s.dims == 0 {
		s.dims = o.Dimensions
	}
	return s, nil
}

// Info implements store.Store. The adapter cannot force Pinecone to
// reclaim anything nor read its storage: it declares neither reclaim nor
// the physical probe (Reclaim only reports the residue state).
func (s *Store) Info() store.Info {
	return store.Info{Name: s.name, Type: Type, Capabilities: []store.Capability{
		store.CapDelete, store.CapProbeByID, store.CapProbeByFilter, store.CapProbeBySimilarity,
	}}
}

// Close implements store.Store.
func (s *Store) Close() error {
	s.c.hc.CloseIdleConnections()
	return nil
}

// Dimensions returns the index's dimension.
func (s *Store) Dimensions() int { return s.dims }

// Stats calls describe_index_stats: counts per namespace, dimension,
// metric. It reads no record.
func (s *Store) Stats(ctx context.Context) (Stats, error) {
	var st Stats
	err := s.c.do(ctx, "describe_index_stats", http.MethodPost, "/describe_index_stats", nil, struct{}{}, &st)
	return st, err
}

// Put upserts a record: the subject tag under metadata "subject", the
// content under "text".
func (s *Store) Put(ctx context.Context, r Record) error {
	if err := s.check(r); err != nil {
		return err
	}
	md := map[string]any{}
	for k, v := range r.Metadata {
		md[k] = v
	}
	if r.Subject != "" {
		md[SubjectKey] = r.Subject
	}
	if r.Content != "" {
		md[TextKey] = r.Content
	}
	req := struct {
		Vectors   []wireVector `json:"vectors"`
		Namespace string       `json:"namespace,omitempty"`
	}{Vectors: []wireVector{{ID: r.ID, Values: r.Embedding, Metadata: md}}, Namespace: s.ns}
	return s.c.do(ctx, "upsert", http.MethodPost, "/vectors/upsert", nil, req, nil)
}

// check refuses what Pinecone would refuse, before anything is written.
func (s *Store) check(r Record) error {
	if r.ID == "" {
		return errors.New("put vector: empty id")
	}
	if len(r.Embedding) == 0 {
		return errors.New("put vector: no embedding (amnesia does not embed text)")
	}
	if s.dims > 0 && len(r.Embedding) != s.dims {
		return fmt.Errorf("put vector: %d dimensions, the index has %d", len(r.Embedding), s.dims)
	}
	for k, v := range r.Metadata {
		if k == SubjectKey || k == TextKey {
			return fmt.Errorf("put vector: metadata key %q is reserved (subject tag and content): rename it", k)
		}
		if !metadataValue(v) {
			return fmt.Errorf("put vector: metadata %q is a %T: Pinecone keeps strings, numbers, booleans and lists of strings", k, v)
		}
	}
	md := map[string]any{TextKey: r.Content, SubjectKey: strings.Repeat("x", 80)} // a subject tag's size
	for k, v := range r.Metadata {
		md[k] = v
	}
	if b, err := json.Marshal(md); err != nil || len(b) > MaxMetadataBytes {
		return fmt.Errorf("put vector: the content and metadata take %d bytes: Pinecone keeps at most %d bytes of metadata per record (split the content into smaller chunks)", len(b), MaxMetadataBytes)
	}
	return nil
}

// MaxMetadataBytes is the most metadata Pinecone keeps per record (40 KB);
// the content is metadata too.
const MaxMetadataBytes = 40 << 10

func metadataValue(v any) bool {
	switch x := v.(type) {
	case string, bool, int, int32, int64, float32, float64:
		return true
	case []string:
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

// fetch returns the records among ids that fetch returns now.
func (s *Store) fetch(ctx context.Context, ids []string) (map[string]*Record, error) {
	out := map[string]*Record{}
	for len(ids) > 0 {
		n := min(len(ids), 100) // keep the URL short
		q := url.Values{"ids": ids[:n]}
		if s.ns != "" {
			q.Set("namespace", s.ns)
		}
		var resp fetchResponse
		if err := s.c.do(ctx, "fetch", http.MethodGet, "/vectors/fetch", q, nil, &resp); err != nil {
			return nil, err
		}
		for id, v := range resp.Vectors {
			out[id] = record(id, v.Values, v.Metadata)
		}
		ids = ids[n:]
	}
	return out, nil
}

func record(id string, values []float32, md map[string]any) *Record {
	r := &Record{ID: id, Embedding: values}
	for k, v := range md {
		switch k {
		case SubjectKey:
			r.Subject, _ = v.(string)
		case TextKey:
			r.Content, _ = v.(string)
		default:
			if r.Metadata == nil {
				r.Metadata = map[string]any{}
			}
			r.Metadata[k] = v
		}
	}
	return r
}

// Get returns the record with id as fetch returns it now, or nil.
func (s *Store) Get(ctx context.Context, id string) (*Record, error) {
	m, err := s.fetch(ctx, []string{id})
	if err != nil {
		return nil, err
	}
	return m[id], nil
}

// Neighbor is one query match.
type Neighbor struct {
	ID      string
	Subject string
	Score   float64 // Pinecone's score (cosine similarity for a cosine index)
}

// Search queries the k nearest records to q, optionally filtered on
// metadata (Pinecone's filter language), nearest first.
func (s *Store) Search(ctx context.Context, q []float32, k int, filter map[string]any) ([]Neighbor, error) {
	if k < 1 {
		return nil, nil
	}
	req := queryRequest{Namespace: s.ns, TopK: min(k, MaxTopK), Filter: filter, IncludeMetadata: true, Vector: q}
	var resp queryResponse
	if err := s.c.do(ctx, "query", http.MethodPost, "/query", nil, req, &resp); err != nil {
		return nil, err
	}
	out := make([]Neighbor, 0, len(resp.Matches))
	for _, m := range resp.Matches {
		sub, _ := m.Metadata[SubjectKey].(string)
		out = append(out, Neighbor{ID: m.ID, Subject: sub, Score: m.Score})
	}
	return out, nil
}

// unit returns a query vector for a filter-only query: the filter selects,
// the vector only orders.
func (s *Store) unit() ([]float32, error) {
	if s.dims <= 0 {
		return nil, errors.New("the index's dimension is not known (the index is empty and dimensions is not configured)")
	}
	v := make([]float32, s.dims)
	v[0] = 1
	return v, nil
}

// BySubject returns the ids of the records tagged with tag, as a query
// filtered on the tag returns them now (at most MaxTopK).
func (s *Store) BySubject(ctx context.Context, tag string) ([]string, error) {
	q, err := s.unit()
	if err != nil {
		return nil, fmt.Errorf("query by subject: %w", err)
	}
	return s.bySubject(ctx, tag, q)
}

// bySubject queries the ids (no metadata, no values: Pinecone limits a
// result to 4 MB) of up to MaxTopK records tagged with tag.
func (s *Store) bySubject(ctx context.Context, tag string, q []float32) ([]string, error) {
	req := queryRequest{Namespace: s.ns, TopK: MaxTopK, Filter: subjectFilter(tag), Vector: q}
	var resp queryResponse
	if err := s.c.do(ctx, "query", http.MethodPost, "/query", nil, req, &resp); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(resp.Matches))
	for _, m := range resp.Matches {
		out = append(out, m.ID)
	}
	sort.Strings(out)
	return out, nil
}

func subjectFilter(tag string) map[string]any {
	return map[string]any{SubjectKey: map[string]any{"$eq": tag}}
}

// errListUnsupported: the index refused list (pod-based indexes).
var errListUnsupported = errors.New("the index does not support list (pod-based)")

// List returns the ids that start with prefix, all pages. On a pod-based
// index, which has no list operation, it returns an error saying so.
func (s *Store) List(ctx context.Context, prefix string) ([]string, error) {
	if s.listUnsupported.Load() {
		return nil, errListUnsupported
	}
	var out []string
	tok := ""
	for {
		q := url.Values{"limit": {"100"}}
		if prefix != "" {
			q.Set("prefix", prefix)
		}
		if s.ns != "" {
			q.Set("namespace", s.ns)
		}
		if tok != "" {
			q.Set("paginationToken", tok)
		}
		var resp listResponse
		if err := s.c.do(ctx, "list", http.MethodGet, "/vectors/list", q, nil, &resp); err != nil {
			var ae *apiError
			if errors.As(err, &ae) && ae.Status == http.StatusBadRequest && strings.Contains(strings.ToLower(ae.Message), "serverless") {
				s.listUnsupported.Store(true)
				return nil, errListUnsupported
			}
			return nil, err
		}
		for _, v := range resp.Vectors {
			out = append(out, v.ID)
		}
		if resp.Pagination == nil || resp.Pagination.Next == "" {
			return out, nil
		}
		tok = resp.Pagination.Next
	}
}

// Delete implements store.Store: delete by ids, in batches of 1000.
// Pinecone answers 200 for ids that do not exist.
func (s *Store) Delete(ctx context.Context, keys []string) error {
	var ids []string
	for _, k := range keys {
		if k != "" {
			ids = append(ids, k)
		}
	}
	for len(ids) > 0 {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("delete vectors: %w", err)
		}
		n := min(len(ids), 1000)
		if err := s.c.do(ctx, "delete", http.MethodPost, "/vectors/delete", nil, deleteRequest{IDs: ids[:n], Namespace: s.ns}, nil); err != nil {
			return fmt.Errorf("delete vectors: %w", err)
		}
		ids = ids[n:]
	}
	return nil
}

// DeleteBySubject deletes every record tagged with tag. A pod-based index
// deletes by metadata filter; a serverless one refuses that, and then the
// records a filtered query returns (at most MaxTopK per round, until none
// is returned) are deleted by id. It says which way it went.
func (s *Store) DeleteBySubject(ctx context.Context, tag string) (method string, err error) {
	err = s.c.do(ctx, "delete", http.MethodPost, "/vectors/delete", nil, deleteRequest{Filter: subjectFilter(tag), Namespace: s.ns}, nil)
	if err == nil {
		return "delete by metadata filter", nil
	}
	var ae *apiError
	if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
		return "", fmt.Errorf("delete by subject: %w", err)
	}
	// A query returns at most MaxTopK ids, and deleted ones for a while
	// (eventual consistency): query again until it returns no id not
	// deleted yet.
	done := map[string]bool{}
	for {
		ids, err := s.BySubject(ctx, tag)
		if err != nil {
			return "", fmt.Errorf("delete by subject: the index refused a filtered delete, and the filtered query failed: %w", err)
		}
		var fresh []string
		for _, id := range ids {
			if !done[id] {
				fresh = append(fresh, id)
				done[id] = true
			}
		}
		if len(fresh) == 0 {
			break
		}
		if err := s.Delete(ctx, fresh); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("the index refused delete by metadata filter (serverless); deleted the %d ids filtered queries returned", len(done)), nil
}

// ReadEvidence implements store.EvidenceReader: the subject tag (for the
// filter probe) and the record's vector (for the similarity probe). There
// are no needles: no file of Pinecone's can be scanned.
func (s *Store) ReadEvidence(ctx context.Context, keys []string) (map[string]*store.Evidence, error) {
	m, err := s.fetch(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("read evidence: %w", err)
	}
	out := map[string]*store.Evidence{}
	for _, k := range keys {
		r := m[k]
		if r == nil {
			continue
		}
		e := &store.Evidence{Key: k, Vector: r.Embedding}
		if r.Subject != "" {
			e.Filter = map[string]string{SubjectKey: r.Subject}
		}
		out[k] = e
	}
	return out, nil
}

// ProbeLogical implements store.Store. For each key it runs a fetch by id,
// a list with the id as prefix (serverless indexes), a query filtered on
// the record's subject tag and a k=10 query with the record's own vector.
// A record still returned by any of them is queried again, with growing
// pauses, until none returns it or ConsistencyWait has passed: Pinecone
// makes a delete visible to reads only after a while. The result is what
// the last round saw; Methods says how long the probe waited.
func (s *Store) ProbeLogical(ctx context.Context, keys []string, ev map[string]*store.Evidence) ([]store.LogicalResult, error) {
	res := make([]store.LogicalResult, len(keys))
	pending := make([]int, len(keys))
	for i := range keys {
		pending[i] = i
	}
	start := time.Now()
	deadline := start.Add(s.wait)
	pause := 50 * time.Millisecond
	rounds := 0
	for {
		rounds++
		var again []int
		if err := s.probeRound(ctx, keys, ev, res, pending); err != nil {
			return nil, fmt.Errorf("probe: %w", err)
		}
		for _, i := range pending {
			if res[i].Found() {
				again = append(again, i)
			}
		}
		if len(again) == 0 || time.Now().Add(pause).After(deadline) {
			break
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("probe: %w", ctx.Err())
		case <-t.C:
		}
		pause = min(pause*2, 2*time.Second)
		pending = again
	}
	waited := time.Since(start).Round(time.Millisecond)
	note := fmt.Sprintf("eventual-consistency:%d-rounds-over-%s(bound-%s)", rounds, waited, s.wait)
	for i := range res {
		res[i].Methods = append(res[i].Methods, note)
	}
	return res, nil
}

// probeRound runs every query path for the keys at the indexes in idx.
func (s *Store) probeRound(ctx context.Context, keys []string, ev map[string]*store.Evidence, res []store.LogicalResult, idx []int) error {
	ids := make([]string, 0, len(idx))
	for _, i := range idx {
		ids = append(ids, keys[i])
	}
	got, err := s.fetch(ctx, ids)
	if err != nil {
		return err
	}
	bySubject := map[string]map[string]bool{}
	for _, i := range idx {
		k := keys[i]
		r := store.LogicalResult{Key: k, Methods: []string{"by-id:fetch"}}
		r.ByID = got[k] != nil
		if !s.listUnsupported.Load() {
			ls, err := s.List(ctx, k)
			switch {
			case errors.Is(err, errListUnsupported):
			case err != nil:
				return err
			default:
				r.Methods = append(r.Methods, "by-id:list-prefix")
				for _, id := range ls {
					r.ByID = r.ByID || id == k
				}
			}
		}
		e := ev[k]
		if e != nil && e.Filter[SubjectKey] != "" {
			tag := e.Filter[SubjectKey]
			r.Methods = append(r.Methods, "by-filter:"+SubjectKey)
			if _, ok := bySubject[tag]; !ok {
				q := e.Vector
				if len(q) == 0 {
					if q, err = s.unit(); err != nil {
						return err
					}
				}
				found, err := s.bySubject(ctx, tag, q)
				if err != nil {
					return err
				}
				bySubject[tag] = map[string]bool{}
				for _, id := range found {
					bySubject[tag][id] = true
				}
			}
			r.ByFilter = bySubject[tag][k]
		}
		if e != nil && len(e.Vector) > 0 {
			r.Methods = append(r.Methods, fmt.Sprintf("by-similarity:k=%d", SimilarityK))
			ns, err := s.Search(ctx, e.Vector, SimilarityK, nil)
			if err != nil {
				return err
			}
			for _, n := range ns {
				r.BySimilarity = r.BySimilarity || n.ID == k
			}
		}
		res[i] = r
	}
	return nil
}

// managedEvidence is what backs the UNVERIFIED-managed state.
func (s *Store) managedEvidence() string {
	return "Pinecone is a managed service: amnesia cannot read its storage, so nothing about physical deletion was measured. " +
		"The vendor's documented commitment (" + DeletionCommitmentURL + "): a deleted record is marked for deletion, is no longer accessible, " +
		"and is permanently deleted within 90 days; backups and collections made before the erasure keep their copies"
}

// Reclaim implements store.Reclaimer only to report the residue state:
// Pinecone offers no way to force physical deletion, so nothing is done.
func (s *Store) Reclaim(ctx context.Context) (store.ReclaimReport, error) {
	if err := ctx.Err(); err != nil {
		return store.ReclaimReport{}, err
	}
	return store.ReclaimReport{
		Method:   "none: Pinecone is managed and has no operation that forces physical deletion",
		State:    StateManaged,
		Evidence: s.managedEvidence(),
	}, nil
}

// MeasureResidue implements store.ResidueMeter: nothing can be measured,
// the state stays UNVERIFIED-managed.
func (s *Store) MeasureResidue(ctx context.Context, since time.Time) (store.ResidueReport, error) {
	if err := ctx.Err(); err != nil {
		return store.ResidueReport{}, err
	}
	return store.ResidueReport{State: StateManaged, Evidence: s.managedEvidence()}, nil
}

// Location names the index host and namespace, never the key.
func Location(c store.Config) string {
	u, err := parseHost(c.Host)
	if err != nil {
		return "(host not valid: see amnesia check)" // it may hold credentials: never shown
	}
	ns := c.Namespace
	if ns == "" {
		ns = "(default namespace)"
	}
	return u.Host + " namespace " + ns
}
