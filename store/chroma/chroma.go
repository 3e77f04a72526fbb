// Package chroma is an adapter for a Chroma server (the chromadb package's
// own server, `chroma run`, 1.x), over its HTTP API v2: one collection of
// one tenant and database.
//
// What it proves: deletion by id (and by the subject tag, DeleteSubject);
// that neither a get by id, a get with a where filter on the subject key,
// nor a nearest-neighbour query with the record's own vector returns it;
// and, when the server's persist directory is readable here (data_dir),
// that no window of the record's document text (as stored in
// chroma.sqlite3: raw, and JSON-escaped in the embeddings queue) nor of its
// vector (float32 little-endian, as the queue and hnswlib's data_level0.bin
// keep it; normalised first in a cosine collection) is left in
// chroma.sqlite3 (+ -journal, -wal, -shm) or in any HNSW segment directory.
//
// Chroma's delete leaves bytes behind: hnswlib's markDelete keeps the
// vector in data_level0.bin, SQLite keeps deleted rows in free pages, and
// the embeddings queue keeps the add of every record until the vector
// segment is persisted (every sync_threshold operations, 1000 by default).
// A collection delete leaves its HNSW segment directory on disk. Reclaim
// therefore rebuilds the collection (see Reclaim), removes the segment
// directories no collection owns any more, merges the full-text index and
// VACUUMs chroma.sqlite3 with secure_delete on.
package chroma

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/amnesia-dev/amnesia/store"
)

// Type is the adapter type name used in configuration.
const Type = "chroma"

// SimilarityK is how many neighbours the similarity probe asks for.
const SimilarityK = 10

// DefaultSubjectKey is the metadata key that holds a record's subject tag
// unless the configuration's subject names another.
const DefaultSubjectKey = "subject"

// pageSize is how many records one get or add carries.
const pageSize = 500

// Record is one record of the collection.
type Record struct {
	ID        string
	Subject   string         // subject tag (metadata under the subject key)
	Document  string         // Chroma's document text
	Metadata  map[string]any // other metadata (strings, numbers, booleans)
	Embedding []float32
}

// Options configure Open.
type Options struct {
	Name       string // the configured store name
	DSN        string // http://host:port[?tenant=T&database=D]
	Collection string
	SubjectKey string // default DefaultSubjectKey
	Dimensions int    // when set, the collection must have this dimension
	DataDir    string // the server's persist directory (chroma run --path), when readable here
	// DeleteOnly: Reclaim does no physical work and reports
	// PENDING-reclaim-deferred.
	DeleteOnly bool
	// Configuration is the collection configuration a created collection
	// gets (e.g. {"hnsw": {"space": "cosine"}}); nil: Chroma's default.
	Configuration map[string]any
}

// Store is the adapter.
type Store struct {
	opt  Options
	c    *client
	subj string
}

var (
	_ store.Store          = (*Store)(nil)
	_ store.EvidenceReader = (*Store)(nil)
	_ store.Reclaimer      = (*Store)(nil)
	_ store.PhysicalProber = (*Store)(nil)
)

// Open connects to the server and finds the collection. With create false,
// a missing collection is an error wrapping store.ErrUnavailable; with
// create true it is created with o.Configuration.
func Open(ctx context.Context, o Options, create bool) (*Store, error) {
	srv, err := ParseDSN(o.DSN)
	if err != nil {
		return nil, fmt.Errorf("open chroma store %q: %w", o.Name, err)
	}
	if o.Collection == "" {
		return nil, fmt.Errorf("open chroma store %q: collection is required", o.Name)
	}
	if o.SubjectKey == "" {
		o.SubjectKey = DefaultSubjectKey
	}
	s := &Store{opt: o, c: newClient(srv), subj: o.SubjectKey}
	if err := s.c.heartbeat(ctx); err != nil {
		return nil, fmt.Errorf("open chroma store %q: %w", o.Name, err)
	}
	coll, err := s.c.getCollection(ctx, o.Collection)
	if isNotFound(err) && create {
		coll, err = s.c.createCollection(ctx, o.Collection, o.Configuration, nil)
	}
	if isNotFound(err) {
		return nil, fmt.Errorf("open chroma store %q: no collection %q at %s: %w", o.Name, o.Collection, srv.Location(), store.ErrUnavailable)
	}
	if err != nil {
		return nil, fmt.Errorf("open chroma store %q: collection %q: %w", o.Name, o.Collection, err)
	}
	if o.Dimensions > 0 && coll.Dimension != nil && *coll.Dimension != o.Dimensions {
		return nil, fmt.Errorf("open chroma store %q: collection %q has dimension %d, the configuration says %d", o.Name, o.Collection, *coll.Dimension, o.Dimensions)
	}
	return s, nil
}

// Info implements store.Store. The physical probe is declared only when
// the persist directory is configured; reclaim unless delete-only.
func (s *Store) Info() store.Info {
	caps := []store.Capability{store.CapDelete, store.CapProbeByID, store.CapProbeByFilter, store.CapProbeBySimilarity}
	if !s.opt.DeleteOnly {
		caps = append(caps, store.CapReclaim)
	}
	if s.opt.DataDir != "" {
		caps = append(caps, store.CapProbePhysical)
	}
	return store.Info{Name: s.opt.Name, Type: Type, Capabilities: caps}
}

// Close implements store.Store.
func (s *Store) Close() error {
	s.c.hc.CloseIdleConnections()
	return nil
}

// Collection returns the collection's name.
func (s *Store) Collection() string { return s.opt.Collection }

// SubjectKey returns the metadata key of the subject tag.
func (s *Store) SubjectKey() string { return s.subj }

// DataDir returns the configured persist directory, or "".
func (s *Store) DataDir() string { return s.opt.DataDir }

// coll looks the collection up by name: its id changes when a rebuild
// (amnesia's or anyone's) replaces it.
func (s *Store) coll(ctx context.Context) (*collection, error) {
	c, err := s.c.getCollection(ctx, s.opt.Collection)
	if isNotFound(err) {
		return nil, fmt.Errorf("collection %q: %w: it no longer exists", s.opt.Collection, store.ErrUnavailable)
	}
	if err != nil {
		return nil, fmt.Errorf("collection %q: %w", s.opt.Collection, err)
	}
	return c, nil
}

// Put adds or replaces a record (Chroma's upsert).
func (s *Store) Put(ctx context.Context, r Record) error {
	if r.ID == "" {
		return errors.New("put record: empty id")
	}
	if len(r.Embedding) == 0 {
		return errors.New("put record: no embedding (amnesia does not embed text)")
	}
	md := map[string]any{}
	for k, v := range r.Metadata {
		md[k] = v
	}
	if r.Subject != "" {
		md[s.subj] = r.Subject
	}
	c, err := s.coll(ctx)
	if err != nil {
		return fmt.Errorf("put record: %w", err)
	}
	if c.Dimension != nil && *c.Dimension != len(r.Embedding) {
		return fmt.Errorf("put record: %d dimensions, collection %q has %d", len(r.Embedding), s.opt.Collection, *c.Dimension)
	}
	doc := r.Document
	in := &records{IDs: []string{r.ID}, Embeddings: [][]float32{r.Embedding}, Documents: []*string{&doc}}
	if len(md) > 0 {
		in.Metadatas = []map[string]any{md}
	}
	if err := s.c.upsert(ctx, c.ID, "upsert", in); err != nil {
		return fmt.Errorf("put record: %w", err)
	}
	return nil
}

// Get returns the record with id, or nil.
func (s *Store) Get(ctx context.Context, id string) (*Record, error) {
	c, err := s.coll(ctx)
	if err != nil {
		return nil, err
	}
	rs, err := s.getRecords(ctx, c.ID, []string{id})
	if err != nil || len(rs) == 0 {
		return nil, err
	}
	return rs[0], nil
}

var allFields = []string{"documents", "metadatas", "embeddings"}

func (s *Store) getRecords(ctx context.Context, collID string, ids []string) ([]*Record, error) {
	var out []*Record
	for start := 0; start < len(ids); start += pageSize {
		g, err := s.c.get(ctx, collID, map[string]any{"ids": ids[start:min(len(ids), start+pageSize)], "include": allFields})
		if err != nil {
			return nil, fmt.Errorf("get records: %w", err)
		}
		out = append(out, s.decode(g)...)
	}
	return out, nil
}

func (s *Store) decode(g *records) []*Record {
	out := make([]*Record, 0, len(g.IDs))
	for i, id := range g.IDs {
		r := &Record{ID: id, Metadata: map[string]any{}}
		if i < len(g.Documents) && g.Documents[i] != nil {
			r.Document = *g.Documents[i]
		}
		if i < len(g.Embeddings) {
			r.Embedding = g.Embeddings[i]
		}
		if i < len(g.Metadatas) {
			for k, v := range g.Metadatas[i] {
				if k == s.subj {
					if t, ok := v.(string); ok {
						r.Subject = t
						continue
					}
				}
				r.Metadata[k] = v
			}
		}
		out = append(out, r)
	}
	return out
}

// each calls fn with every record of the collection, a page at a time.
func (s *Store) each(ctx context.Context, collID string, include []string, fn func(g *records) error) error {
	for offset := 0; ; offset += pageSize {
		g, err := s.c.get(ctx, collID, map[string]any{"limit": pageSize, "offset": offset, "include": include})
		if err != nil {
			return fmt.Errorf("list records: %w", err)
		}
		if len(g.IDs) == 0 {
			return nil
		}
		if err := fn(g); err != nil {
			return err
		}
		if len(g.IDs) < pageSize {
			return nil
		}
	}
}

// BySubject returns the ids of the records whose subject key holds tag (a
// get with where {subject_key: tag}).
func (s *Store) BySubject(ctx context.Context, tag string) ([]string, error) {
	c, err := s.coll(ctx)
	if err != nil {
		return nil, err
	}
	return s.bySubject(ctx, c.ID, tag)
}

func (s *Store) bySubject(ctx context.Context, collID, tag string) ([]string, error) {
	g, err := s.c.get(ctx, collID, map[string]any{"where": map[string]any{s.subj: tag}, "include": []string{}})
	if err != nil {
		return nil, fmt.Errorf("records by subject: %w", err)
	}
	ids := append([]string(nil), g.IDs...)
	sort.Strings(ids)
	return ids, nil
}

// Neighbor is one query result.
type Neighbor struct {
	ID       string
	Subject  string
	Distance float64 // in the collection's space
}

// Search returns the k records nearest q, nearest first.
func (s *Store) Search(ctx context.Context, q []float32, k int) ([]Neighbor, error) {
	c, err := s.coll(ctx)
	if err != nil {
		return nil, err
	}
	return s.search(ctx, c.ID, q, k)
}

func (s *Store) search(ctx context.Context, collID string, q []float32, k int) ([]Neighbor, error) {
	ns, err := s.searchMany(ctx, collID, [][]float32{q}, k)
	if err != nil {
		return nil, err
	}
	return ns[0], nil
}

// queryBatch is how many query vectors one request to Chroma's query
// endpoint carries.
const queryBatch = 100

// searchMany runs Chroma's query for every vector of qs, queryBatch per
// request (Chroma answers each query embedding of a request on its own);
// ns[i] is the answer to qs[i].
func (s *Store) searchMany(ctx context.Context, collID string, qs [][]float32, k int) ([][]Neighbor, error) {
	out := make([][]Neighbor, len(qs))
	for lo := 0; lo < len(qs); lo += queryBatch {
		part := qs[lo:min(lo+queryBatch, len(qs))]
		qr, err := s.c.query(ctx, collID, part, k, nil)
		if err != nil {
			return nil, fmt.Errorf("query: %w", err)
		}
		if len(qr.IDs) != 0 && len(qr.IDs) != len(part) {
			return nil, fmt.Errorf("query: Chroma answered %d of %d query embeddings", len(qr.IDs), len(part))
		}
		for j, ids := range qr.IDs {
			var ns []Neighbor
			for i, id := range ids {
				n := Neighbor{ID: id}
				if j < len(qr.Distances) && i < len(qr.Distances[j]) {
					n.Distance = qr.Distances[j][i]
				}
				if j < len(qr.Metadatas) && i < len(qr.Metadatas[j]) {
					n.Subject, _ = qr.Metadatas[j][i][s.subj].(string)
				}
				ns = append(ns, n)
			}
			out[lo+j] = ns
		}
	}
	return out, nil
}

// Delete implements store.Store: Chroma's delete by ids, in batches.
// Chroma accepts ids that do not exist.
func (s *Store) Delete(ctx context.Context, keys []string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete records: %w", err)
	}
	c, err := s.coll(ctx)
	if err != nil {
		return fmt.Errorf("delete records: %w", err)
	}
	var ids []string
	for _, k := range keys {
		if k != "" {
			ids = append(ids, k)
		}
	}
	for start := 0; start < len(ids); start += pageSize {
		if _, err := s.c.delete(ctx, c.ID, map[string]any{"ids": ids[start:min(len(ids), start+pageSize)]}); err != nil {
			return fmt.Errorf("delete records: %w", err)
		}
	}
	return nil
}

// DeleteSubject deletes every record whose subject key holds tag (Chroma's
// delete with where {subject_key: tag}) and returns the ids it deleted.
func (s *Store) DeleteSubject(ctx context.Context, tag string) ([]string, error) {
	if tag == "" {
		return nil, errors.New("delete by subject: empty subject tag")
	}
	c, err := s.coll(ctx)
	if err != nil {
		return nil, fmt.Errorf("delete by subject: %w", err)
	}
	ids, err := s.bySubject(ctx, c.ID, tag)
	if err != nil {
		return nil, fmt.Errorf("delete by subject: %w", err)
	}
	if _, err := s.c.delete(ctx, c.ID, map[string]any{"where": map[string]any{s.subj: tag}}); err != nil {
		return nil, fmt.Errorf("delete by subject: %w", err)
	}
	return ids, nil
}

// ReadEvidence implements store.EvidenceReader: windows of the document
// text as Chroma stores it (raw in embedding_metadata and the full-text
// content table; JSON-escaped in the embeddings queue, when that differs)
// and of the vector as float32 little-endian (the queue and hnswlib's
// data_level0.bin; in a cosine collection hnswlib stores the normalised
// vector, whose encoding is added too), the subject tag and the vector.
// Windows that another live record of the collection also holds are
// counted as Shared (documents by the holder's id, vectors anonymously).
func (s *Store) ReadEvidence(ctx context.Context, keys []string) (map[string]*store.Evidence, error) {
	c, err := s.coll(ctx)
	if err != nil {
		return nil, fmt.Errorf("read evidence: %w", err)
	}
	cosine := c.space() == "cosine"
	rs, err := s.getRecords(ctx, c.ID, keys)
	if err != nil {
		return nil, fmt.Errorf("read evidence: %w", err)
	}
	batch := map[string]bool{}
	for _, k := range keys {
		batch[k] = true
	}
	// A cosine collection's vectors: the exact bytes, read from the files
	// (see exactVectors); without data_dir there is no physical probe to
	// cut needles for.
	var raw, norm map[string][]byte
	if cosine && s.opt.DataDir != "" && len(rs) > 0 {
		approx := map[string][]float32{}
		for _, r := range rs {
			if len(r.Embedding) > 0 {
				approx[r.ID] = r.Embedding
			}
		}
		if raw, norm, err = s.exactVectors(ctx, c.ID, approx); err != nil {
			return nil, fmt.Errorf("read evidence: %w", err)
		}
	}
	out := map[string]*store.Evidence{}
	for _, r := range rs {
		e := &store.Evidence{Key: r.ID, Vector: r.Embedding}
		if r.Subject != "" {
			e.Filter = map[string]string{s.subj: r.Subject}
		}
		for _, b := range encodings(r.Document, nil, false) {
			e.AddWindows(b)
		}
		switch {
		case len(r.Embedding) == 0:
		case !cosine:
			e.AddWindows(float32LE(r.Embedding))
		default:
			// Both encodings are in the files; one not found here is
			// counted in RecordBytes but not covered, so the certificate
			// does not claim the physical level for it.
			for _, b := range [][]byte{raw[r.ID], norm[r.ID]} {
				if b != nil {
					e.AddWindows(b)
				} else {
					e.RecordBytes += 4 * len(r.Embedding)
				}
			}
		}
		out[r.ID] = e
	}
	if len(out) == 0 {
		return out, nil
	}
	others := func(fn func(string, []byte) error) error {
		return s.each(ctx, c.ID, []string{"documents", "embeddings"}, func(g *records) error {
			for _, r := range s.decode(g) {
				if batch[r.ID] {
					continue
				}
				for i, b := range encodings(r.Document, r.Embedding, cosine) {
					key := r.ID
					if i >= textEncodings(r.Document) {
						key = "" // a vector: see store.DropShared
					}
					if err := fn(key, b); err != nil {
						return err
					}
				}
			}
			return nil
		})
	}
	if err := store.DropShared(ctx, out, others); err != nil {
		return nil, fmt.Errorf("read evidence: %w", err)
	}
	return out, nil
}

// encodings returns the byte strings a record's document and vector are
// kept as in Chroma's files: the text encodings first (textEncodings of
// them), then the vector's.
func encodings(doc string, vec []float32, cosine bool) [][]byte {
	var out [][]byte
	if doc != "" {
		out = append(out, []byte(doc))
		if j := jsonText(doc); j != doc {
			out = append(out, []byte(j))
		}
	}
	if len(vec) > 0 {
		out = append(out, float32LE(vec))
		if cosine {
			out = append(out, float32LE(Normalize(vec)))
		}
	}
	return out
}

func textEncodings(doc string) int {
	switch {
	case doc == "":
		return 0
	case jsonText(doc) != doc:
		return 2
	}
	return 1
}

// jsonText is doc as serde_json writes it inside a JSON string (the
// embeddings queue's metadata column), without the quotes: control
// characters, quote and backslash escaped, everything else as is.
func jsonText(doc string) string {
	var b []byte
	for i := 0; i < len(doc); i++ {
		c := doc[i]
		switch {
		case c == '"':
			b = append(b, '\\', '"')
		case c == '\\':
			b = append(b, '\\', '\\')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c == '\b':
			b = append(b, '\\', 'b')
		case c == '\f':
			b = append(b, '\\', 'f')
		case c < 0x20:
			b = append(b, fmt.Sprintf("\\u%04x", c)...)
		default:
			b = append(b, c)
		}
	}
	return string(b)
}

// Normalize is hnswlib's normalize_vector as Chroma builds it: the sum of
// squares in float32, then each component times 1/(sqrt(sum)+1e-30).
func Normalize(v []float32) []float32 {
	var norm float32
	for _, x := range v {
		norm += x * x
	}
	inv := float32(1) / (float32(math.Sqrt(float64(norm))) + 1e-30)
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = x * inv
	}
	return out
}

func float32LE(v []float32) []byte { return store.Float32LE(v) }

// ProbeLogical implements store.Store: a get by id, a get with where on
// the subject key (when the evidence has the tag), and a k=10 query with
// the record's own vector (when the evidence has it).
func (s *Store) ProbeLogical(ctx context.Context, keys []string, ev map[string]*store.Evidence) ([]store.LogicalResult, error) {
	c, err := s.coll(ctx)
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	live := map[string]bool{}
	for start := 0; start < len(keys); start += pageSize {
		g, err := s.c.get(ctx, c.ID, map[string]any{"ids": keys[start:min(len(keys), start+pageSize)], "include": []string{}})
		if err != nil {
			return nil, fmt.Errorf("probe: %w", err)
		}
		for _, id := range g.IDs {
			live[id] = true
		}
	}
	bySubject := map[string]map[string]bool{}
	out := make([]store.LogicalResult, 0, len(keys))
	var qs [][]float32
	var qi []int // qs[j] is the vector of out[qi[j]]
	for _, k := range keys {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("probe: %w", err)
		}
		res := store.LogicalResult{Key: k, ByID: live[k], Methods: []string{"by-id"}}
		e := ev[k]
		if e != nil && e.Filter[s.subj] != "" {
			tag := e.Filter[s.subj]
			res.Methods = append(res.Methods, "by-filter:"+s.subj)
			if _, ok := bySubject[tag]; !ok {
				ids, err := s.bySubject(ctx, c.ID, tag)
				if err != nil {
					return nil, fmt.Errorf("probe: %w", err)
				}
				bySubject[tag] = map[string]bool{}
				for _, id := range ids {
					bySubject[tag][id] = true
				}
			}
			res.ByFilter = bySubject[tag][k]
		}
		if e != nil && len(e.Vector) > 0 {
			res.Methods = append(res.Methods, fmt.Sprintf("by-similarity:k=%d", SimilarityK))
			qs, qi = append(qs, e.Vector), append(qi, len(out))
		}
		out = append(out, res)
	}
	// Every key's vector in batched queries, not one request per key.
	ns, err := s.searchMany(ctx, c.ID, qs, SimilarityK)
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	for j, i := range qi {
		for _, n := range ns[j] {
			out[i].BySimilarity = out[i].BySimilarity || n.ID == out[i].Key
		}
	}
	return out, nil
}

// metadataValue checks that v is a metadata value Chroma keeps (string,
// number, boolean) and returns it as JSON would carry it.
func metadataValue(v any) (any, bool) {
	switch x := v.(type) {
	case string, bool, int, int32, int64, float32, float64, json.Number:
		return x, true
	}
	return nil, false
}
