// Package chromem is an adapter for chromem-go (github.com/philippgille/chromem-go),
// an embedded Go vector store, in its persistent mode: a DB directory with
// one subdirectory per collection and, in it, one gob file per document
// (".gob", or ".gob.gz" when the DB is compressed).
//
// chromem-go's Delete removes the document from the process's memory and
// unlinks its file. This adapter zeroes the file first (atomicfile.Shred),
// then deletes through chromem-go, and fsyncs the directory.
//
// What it proves: deletion by key; that in the collection as a process
// that loads the DB now would hold it (read from the files after the
// delete), neither a lookup by id (nor the document's file: it is gone), a
// filter on the subject tag, nor a nearest-neighbour search with the
// record's own vector returns it; and that no window of the record's
// content, nor of its embedding in the encoding chromem-go writes (gob:
// each component as a float64, byte reversed, variable-length), is left in
// any file of the collection's directory, gzip-compressed files read
// decompressed.
//
// What it cannot prove: chromem-go keeps every document of a DB in the
// memory of each process that opened it. An application process that
// loaded the DB before the erasure keeps the deleted documents in memory,
// and serves them, until it reloads the DB; amnesia cannot see another
// process's memory. Reclaim reports this as its residue state.
package chromem

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/gob"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	chromem "github.com/philippgille/chromem-go"

	"github.com/amnesia-dev/amnesia/internal/atomicfile"
	"github.com/amnesia-dev/amnesia/store"
)

// Type is the adapter type name used in configuration.
const Type = "chromem"

// SimilarityK is how many neighbours the similarity probe asks for.
const SimilarityK = 10

// SubjectKey is the metadata key that holds a document's subject tag.
const SubjectKey = "subject"

// StateAppMemory is the residue state Reclaim reports: the files are
// measured, the memory of application processes is not.
const StateAppMemory = "UNVERIFIED-app-memory-until-reload"

// Record is one document.
type Record struct {
	ID        string
	Subject   string // subject tag (metadata "subject")
	Content   string
	Metadata  map[string]string // other metadata
	Embedding []float32
}

// Store is the adapter.
type Store struct {
	name     string
	path     string
	coll     string
	compress bool
	db       *chromem.DB
	c        *chromem.Collection // this process's copy, which Put and Delete write through
	dims     int                 // embedding size, once known

	// decoded holds the documents load decoded, by the SHA-256 of the
	// bytes of the file each was decoded from (load.go).
	mu      sync.Mutex
	decoded map[[sha256.Size]byte]*chromem.Document
}

var (
	_ store.Store          = (*Store)(nil)
	_ store.EvidenceReader = (*Store)(nil)
	_ store.Reclaimer      = (*Store)(nil)
	_ store.PhysicalProber = (*Store)(nil)
)

// noEmbed is the collection's embedding function: amnesia never embeds
// text (chromem-go's default would call OpenAI).
func noEmbed(context.Context, string) ([]float32, error) {
	return nil, errors.New("chromem store: documents must come with their embedding (amnesia does not embed text)")
}

// Open opens the collection coll of the persistent chromem-go DB at path.
// With create false, a missing DB directory or collection is an error
// wrapping store.ErrUnavailable; with create true both are created.
func Open(ctx context.Context, name, path, coll string, compress, create bool) (*Store, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if path == "" || coll == "" {
		return nil, errors.New("open chromem store: path and collection are required")
	}
	if !create {
		if _, err := os.Stat(filepath.Join(path, hash2hex(coll))); err != nil {
			return nil, fmt.Errorf("open chromem store %s: collection %q: %w: %v", path, coll, store.ErrUnavailable, err)
		}
	}
	db, err := chromem.NewPersistentDB(path, compress)
	if err != nil {
		return nil, fmt.Errorf("open chromem store %s: %w: %v", path, store.ErrUnavailable, err)
	}
	c := db.GetCollection(coll, noEmbed)
	if c == nil {
		if !create {
			return nil, fmt.Errorf("open chromem store %s: no collection %q (is compress: %v right? chromem-go reads only files of its mode): %w", path, coll, compress, store.ErrUnavailable)
		}
		c, err = db.CreateCollection(coll, nil, noEmbed)
		if err != nil {
			return nil, fmt.Errorf("open chromem store %s: create collection: %w", path, err)
		}
	}
	return &Store{name: name, path: path, coll: coll, compress: compress, db: db, c: c}, nil
}

// Reload loads this process's copy of the DB from its files again, as an
// application does when it restarts: Get, Search and the capture calls
// then see what other processes wrote. Evidence and probes never need it:
// they read the files themselves (load.go).
func (s *Store) Reload(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	db, err := chromem.NewPersistentDB(s.path, s.compress)
	if err != nil {
		return fmt.Errorf("reload %s: %w: %v", s.path, store.ErrUnavailable, err)
	}
	c := db.GetCollection(s.coll, noEmbed)
	if c == nil {
		return fmt.Errorf("reload %s: no collection: %w", s.path, store.ErrUnavailable)
	}
	s.db, s.c = db, c
	return nil
}

// Dir returns the collection's directory.
func (s *Store) Dir() string { return filepath.Join(s.path, hash2hex(s.coll)) }

// DocPath returns the file chromem-go keeps document id in.
func (s *Store) DocPath(id string) string {
	return filepath.Join(s.Dir(), hash2hex(id)+s.ext())
}

// hash2hex is chromem-go's file name for a collection or document: the
// first 4 bytes of the SHA-256 of its name, in hex.
func hash2hex(name string) string {
	h := sha256.Sum256([]byte(name))
	return hex.EncodeToString(h[:4])
}

// Info implements store.Store.
func (s *Store) Info() store.Info {
	return store.Info{Name: s.name, Type: Type, Capabilities: []store.Capability{
		store.CapDelete, store.CapProbeByID, store.CapProbeByFilter, store.CapProbeBySimilarity, store.CapReclaim, store.CapProbePhysical,
	}}
}

// Close implements store.Store. chromem-go holds no open file.
func (s *Store) Close() error { return nil }

// Put adds or replaces a document.
func (s *Store) Put(ctx context.Context, r Record) error {
	if r.ID == "" {
		return errors.New("put document: empty id")
	}
	if len(r.Embedding) == 0 {
		return errors.New("put document: no embedding (amnesia does not embed text)")
	}
	md := map[string]string{}
	for k, v := range r.Metadata {
		md[k] = v
	}
	if r.Subject != "" {
		md[SubjectKey] = r.Subject
	}
	if d, err := s.dim(); err == nil && d != len(r.Embedding) {
		return fmt.Errorf("put document: %d dimensions, the collection has %d", len(r.Embedding), d)
	}
	if err := s.c.AddDocument(ctx, chromem.Document{ID: r.ID, Metadata: md, Embedding: r.Embedding, Content: r.Content}); err != nil {
		return fmt.Errorf("put document: %w", err)
	}
	s.dims = len(r.Embedding)
	return nil
}

// Get returns the document with id as this process holds it (what it
// loaded when it opened the store, and what it wrote and deleted since),
// or nil. Evidence and probes read the files instead (load).
func (s *Store) Get(ctx context.Context, id string) (*Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d, err := s.c.GetByID(ctx, id)
	if err != nil {
		return nil, nil // chromem-go's only error here is "not found" (id is never empty)
	}
	return record(d.ID, d.Metadata, d.Embedding, d.Content), nil
}

func record(id string, md map[string]string, emb []float32, content string) *Record {
	r := &Record{ID: id, Content: content, Embedding: emb, Metadata: map[string]string{}}
	for k, v := range md {
		if k == SubjectKey {
			r.Subject = v
		} else {
			r.Metadata[k] = v
		}
	}
	return r
}

// Neighbor is one search result.
type Neighbor struct {
	ID         string
	Subject    string
	Similarity float32
}

// Search returns the k documents most similar to q (cosine), most similar
// first; where filters on metadata.
func (s *Store) Search(ctx context.Context, q []float32, k int, where map[string]string) ([]Neighbor, error) {
	k = min(k, s.c.Count())
	if k == 0 {
		return nil, ctx.Err()
	}
	rs, err := s.c.QueryEmbedding(ctx, q, k, where, nil)
	if err != nil {
		return nil, fmt.Errorf("search documents: %w", err)
	}
	out := make([]Neighbor, 0, len(rs))
	for _, r := range rs {
		out = append(out, Neighbor{ID: r.ID, Subject: r.Metadata[SubjectKey], Similarity: r.Similarity})
	}
	return out, nil
}

// BySubject returns the ids of the documents tagged with tag.
func (s *Store) BySubject(ctx context.Context, tag string) ([]string, error) {
	all, err := s.all(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range all {
		if r.Subject == tag {
			out = append(out, r.ID)
		}
	}
	sort.Strings(out)
	return out, nil
}

// all returns every document this process holds. chromem-go has no list
// call: a query with the collection's size as k ranks them all, each with
// its metadata, embedding and content.
func (s *Store) all(ctx context.Context) ([]*Record, error) {
	n := s.c.Count()
	if n == 0 {
		return nil, nil
	}
	d, err := s.dim()
	if err != nil {
		return nil, err
	}
	q := make([]float32, d)
	q[0] = 1
	rs, err := s.c.QueryEmbedding(ctx, q, n, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("list documents: %w", err)
	}
	out := make([]*Record, 0, len(rs))
	for _, r := range rs {
		out = append(out, record(r.ID, r.Metadata, r.Embedding, r.Content))
	}
	return out, nil
}

// dim returns the dimension of the collection's embeddings, read from the
// first document file that decodes.
func (s *Store) dim() (int, error) {
	if s.dims > 0 {
		return s.dims, nil
	}
	files, err := s.files()
	if err != nil {
		return 0, err
	}
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(f), metadataFile) {
			continue
		}
		b, err := readPlain(f)
		if err != nil {
			continue
		}
		var d chromem.Document
		if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&d); err == nil && len(d.Embedding) > 0 {
			s.dims = len(d.Embedding)
			return s.dims, nil
		}
	}
	return 0, errors.New("list documents: no document file with an embedding in " + s.Dir())
}

// metadataFile is the name (before its extension) of chromem-go's
// collection metadata file.
const metadataFile = "00000000"

// Delete implements store.Store: zero the document's file, then delete it
// through chromem-go (memory and file), then fsync the directory.
func (s *Store) Delete(ctx context.Context, keys []string) error {
	s.forget(keys) // the cache keeps no copy of a document this process deletes
	for _, k := range keys {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("delete documents: %w", err)
		}
		if k == "" {
			continue
		}
		// chromem-go names a document's file by 32 bits of its id's hash:
		// two ids can share a file, which then holds the one written last.
		// Its Delete unlinks the file whichever it holds; another
		// document's is written again afterwards.
		other, err := s.otherInFile(k)
		if err != nil {
			return fmt.Errorf("delete documents: %w", err)
		}
		if err := atomicfile.Shred(s.DocPath(k)); err != nil {
			return fmt.Errorf("delete documents: zero the document file: %w", err)
		}
		if err := s.c.Delete(ctx, nil, nil, k); err != nil {
			return fmt.Errorf("delete documents: %w", err)
		}
		// chromem-go's Delete unlinks the file only when this process's
		// copy holds the document (another process may have written it
		// after this one loaded the DB): a zeroed file left behind would
		// break every later load of the DB.
		if err := os.Remove(s.DocPath(k)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("delete documents: unlink the zeroed document file: %w", err)
		}
		if other != nil {
			if err := s.c.AddDocument(ctx, *other); err != nil {
				return fmt.Errorf("delete documents: write back the document that shared the file: %w", err)
			}
		}
	}
	if err := atomicfile.SyncDir(s.Dir()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete documents: fsync %s: %w", s.Dir(), err)
	}
	return nil
}

// otherInFile returns the document that k's file holds when it is not k's
// (see Delete), or nil.
func (s *Store) otherInFile(k string) (*chromem.Document, error) {
	d, err := s.docAt(s.DocPath(k))
	if err != nil || d == nil || d.ID == k {
		return nil, err
	}
	c := *d // a copy: the cache's document is shared
	c.Metadata = maps.Clone(d.Metadata)
	c.Embedding = slices.Clone(d.Embedding)
	return &c, nil
}

// GobFloats returns the bytes encoding/gob writes for the elements of a
// []float32 (chromem-go's Document.Embedding): each element as a float64
// whose bits are byte-reversed and written as an unsigned integer, one
// byte when under 128, else a negated byte count and the big-endian bytes
// without leading zeros. The slice's elements are contiguous in the file.
func GobFloats(v []float32) []byte {
	var out []byte
	var buf [9]byte
	for _, f := range v {
		x := bits.ReverseBytes64(math.Float64bits(float64(f)))
		if x <= 0x7f {
			out = append(out, byte(x))
			continue
		}
		binary.BigEndian.PutUint64(buf[1:], x)
		n := bits.LeadingZeros64(x) >> 3
		buf[n] = byte(n - 8)
		out = append(out, buf[n:9]...)
	}
	return out
}

// ReadEvidence implements store.EvidenceReader: windows of the content
// (gob writes a string's bytes as they are) and of the embedding in gob's
// encoding, the subject tag, and the embedding itself. Windows another live
// document (outside keys) also holds are counted as Shared: content by the
// holder's key, embeddings anonymously (see store.DropShared). It reads
// the documents from the collection's files as they are now (load), not
// from this process's copy: a document another process added is read.
func (s *Store) ReadEvidence(ctx context.Context, keys []string) (map[string]*store.Evidence, error) {
	v, err := s.load(ctx)
	if err != nil {
		return nil, fmt.Errorf("read evidence: %w", err)
	}
	batch := map[string]bool{}
	out := map[string]*store.Evidence{}
	for _, k := range keys {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("read evidence: %w", err)
		}
		batch[k] = true
		d := v.get(k)
		if d == nil {
			continue
		}
		r := record(d.ID, d.Metadata, slices.Clone(d.Embedding), d.Content)
		e := &store.Evidence{Key: k, Vector: r.Embedding}
		if r.Subject != "" {
			e.Filter = map[string]string{SubjectKey: r.Subject}
		}
		e.AddWindows([]byte(r.Content))
		e.AddWindows(GobFloats(r.Embedding))
		out[k] = e
	}
	if len(out) == 0 {
		return out, nil
	}
	others := func(fn func(string, []byte) error) error {
		for _, id := range v.ids() {
			if batch[id] {
				continue
			}
			d := v.docs[id]
			if err := fn(id, []byte(d.Content)); err != nil {
				return err
			}
			if err := fn("", GobFloats(d.Embedding)); err != nil {
				return err
			}
		}
		return nil
	}
	if err := store.DropShared(ctx, out, others); err != nil {
		return nil, fmt.Errorf("read evidence: %w", err)
	}
	return out, nil
}

// ProbeLogical implements store.Store. It loads the collection from its
// files again, after the delete (what an application sees when it reloads
// the DB: load reads every file now, and decodes again every file whose
// bytes changed), then looks by id (and at the document's file), by the
// subject tag, and asks whether a k=10 similarity search with the record's
// own vector can return it.
func (s *Store) ProbeLogical(ctx context.Context, keys []string, ev map[string]*store.Evidence) ([]store.LogicalResult, error) {
	v, err := s.load(ctx)
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	out := make([]store.LogicalResult, 0, len(keys))
	bySubject := map[string]map[string]bool{}
	for _, k := range keys {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("probe: %w", err)
		}
		res := store.LogicalResult{Key: k, Methods: []string{"by-id", "by-id:file"}}
		res.ByID = v.get(k) != nil
		// A reload would bring back the document its file holds (unless
		// the file holds another id: see Delete).
		if _, err := os.Stat(s.DocPath(k)); err == nil {
			other, err := s.otherInFile(k)
			res.ByID = res.ByID || err != nil || other == nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("probe: %w", err)
		}
		e := ev[k]
		if tag := filterOf(e); tag != "" {
			res.Methods = append(res.Methods, "by-filter:"+SubjectKey)
			if _, ok := bySubject[tag]; !ok {
				bySubject[tag] = v.tagged(tag)
			}
			res.ByFilter = bySubject[tag][k]
		}
		if e != nil && len(e.Vector) > 0 {
			res.Methods = append(res.Methods, fmt.Sprintf("by-similarity:k=%d", SimilarityK))
			found, err := v.returned(ctx, e.Vector, k, SimilarityK)
			if err != nil {
				return nil, fmt.Errorf("probe: %w", err)
			}
			res.BySimilarity = found
		}
		out = append(out, res)
	}
	return out, nil
}

func filterOf(e *store.Evidence) string {
	if e == nil {
		return ""
	}
	return e.Filter[SubjectKey]
}

// Reclaim implements store.Reclaimer. Delete already zeroed and unlinked
// the documents' files; Reclaim fsyncs the collection directory again and
// reports, as its residue state, what a byte scan of the files cannot see:
// the memory of application processes that loaded the DB.
func (s *Store) Reclaim(ctx context.Context) (store.ReclaimReport, error) {
	if err := ctx.Err(); err != nil {
		return store.ReclaimReport{}, err
	}
	if err := atomicfile.SyncDir(s.Dir()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return store.ReclaimReport{}, fmt.Errorf("reclaim: fsync %s: %w", s.Dir(), err)
	}
	return store.ReclaimReport{
		Method: "document file zeroed, then chromem-go Delete (memory and unlink), directory fsynced; an application process that loaded this DB keeps deleted documents in memory until it reloads it",
		Steps:  []string{"fsync " + s.Dir()},
		State:  StateAppMemory,
		Evidence: "the collection's files were scanned (gzip files decompressed), and loaded again from them and probed by id, tag and similarity; " +
			"any application process that opened the chromem-go DB before the erasure still holds the deleted documents in memory, " +
			"and returns them, until it reloads the DB (restart or NewPersistentDB): amnesia cannot measure another process's memory",
	}, nil
}

// ProbePhysical implements store.PhysicalProber: every file in the
// collection's directory, raw, and a gzip file also decompressed.
func (s *Store) ProbePhysical(ctx context.Context, set *store.NeedleSet) (store.ScanReport, error) {
	files, err := s.files()
	if err != nil {
		return store.ScanReport{}, fmt.Errorf("physical probe: %w", err)
	}
	sc := store.NewScanner(set, "every file of the chromem-go collection directory, raw; gzip files also decompressed")
	for _, f := range files {
		if err := sc.ScanFile(ctx, f); err != nil {
			return store.ScanReport{}, fmt.Errorf("physical probe: %w", err)
		}
		plain, gz, err := gunzip(f)
		if err != nil {
			return store.ScanReport{}, fmt.Errorf("physical probe: %s: %w", f, err)
		}
		if gz {
			if err := sc.Scan(ctx, bytes.NewReader(plain)); err != nil {
				return store.ScanReport{}, fmt.Errorf("physical probe: %w", err)
			}
		}
	}
	return sc.Report(), nil
}

// files lists the regular files of the collection directory.
func (s *Store) files() ([]string, error) {
	ents, err := os.ReadDir(s.Dir())
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.Type().IsRegular() {
			out = append(out, filepath.Join(s.Dir(), e.Name()))
		}
	}
	return out, nil
}

// gunzip returns the decompressed content of a gzip file, and false for
// any other file. A gzip stream cut short is an error: the scan could not
// see all of it.
func gunzip(path string) ([]byte, bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	var magic [2]byte
	if _, err := io.ReadFull(f, magic[:]); err != nil || magic != [2]byte{0x1f, 0x8b} {
		return nil, false, nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, false, err
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, false, fmt.Errorf("decompress: %w", err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		return nil, false, fmt.Errorf("decompress: %w", err)
	}
	return b, true, nil
}

// readPlain returns a file's bytes, decompressed when it is gzip.
func readPlain(path string) ([]byte, error) {
	b, gz, err := gunzip(path)
	if err != nil || gz {
		return b, err
	}
	return os.ReadFile(path)
}
