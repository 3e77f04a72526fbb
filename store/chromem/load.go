package chromem

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	chromem "github.com/philippgille/chromem-go"

	"github.com/amnesia-dev/amnesia/store"
)

// Loading the collection from its files.
//
// Evidence and probes must see what is on disk now, as a process that
// opens the DB now would: a document another process wrote after amnesia
// opened the store is seen, and a document counts as gone only once its
// file is. chromem.NewPersistentDB gives that, but decodes every file of
// every collection with a new gob decoder each (gob compiles the type
// anew for each stream: about half of the time), and an erasure loaded
// the DB twice, for its evidence and for its probe.
//
// load reads the collection's directory as NewPersistentDB does (the same
// files, in the same order, decoded the same way) and reads every file in
// full each time, but decodes only files whose bytes it has not decoded
// before: the documents of the previous load are kept under the SHA-256
// of the bytes they were decoded from. A document is a function of its
// file's bytes alone (gob, after gunzip when the bytes begin with gzip's
// magic number), so bytes with the digest of bytes already decoded give
// the same document, whatever the file's name, size, inode or
// modification time: a file rewritten in place with the same size within
// the file system's time granularity is decoded again, because its bytes
// differ. The only assumption is SHA-256's collision resistance. Reading
// and hashing a file costs a small part of decoding it.
//
// The cache holds the documents of the files the last load read, and no
// document this process has deleted since (Delete drops them).

// view is the collection as the files held it when load read them.
// Its documents are shared with the cache: nothing may modify them.
type view struct {
	docs map[string]*chromem.Document // by id; the file read last wins, as in NewPersistentDB
}

// get returns the document with id, or nil.
func (v *view) get(id string) *chromem.Document {
	if id == "" {
		return nil // chromem-go's GetByID refuses an empty id
	}
	return v.docs[id]
}

// ids returns the ids of the documents, sorted.
func (v *view) ids() []string { return slices.Sorted(maps.Keys(v.docs)) }

// tagged returns the ids of the documents whose subject tag is tag (what a
// chromem-go query with where {subject: tag} ranks).
func (v *view) tagged(tag string) map[string]bool {
	out := map[string]bool{}
	for id, d := range v.docs {
		if d.Metadata[SubjectKey] == tag {
			out[id] = true
		}
	}
	return out
}

// returned reports whether chromem-go's QueryEmbedding(q, n) over the
// documents of v can return the document id. chromem-go normalises q when
// it is not (its own test and arithmetic, reproduced here), ranks the
// documents by the float32 dot product of q with their stored embedding,
// and keeps the n highest (n at most the number of documents); among equal
// similarities at the n-th place it keeps any. So the document can be
// returned when fewer than n documents are strictly more similar: ties
// count as returned. As in chromem-go, an embedding whose length differs
// from q's fails the search.
func (v *view) returned(ctx context.Context, q []float32, id string, n int) (bool, error) {
	d := v.get(id)
	n = min(n, len(v.docs))
	if d == nil || n <= 0 {
		return false, nil // a document the collection does not hold is never returned
	}
	if !isNormalized(q) {
		q = normalized(q)
	}
	own, err := dot(q, d.Embedding)
	if err != nil {
		return false, err
	}
	above, i := 0, 0
	for _, o := range v.docs {
		i++
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return false, err
			}
		}
		sim, err := dot(q, o.Embedding)
		if err != nil {
			return false, err
		}
		if sim > own {
			above++
		}
	}
	return above < n, nil
}

// dot is chromem-go's dotProduct: float32, in index order.
func dot(a, b []float32) (float32, error) {
	if len(a) != len(b) {
		return 0, fmt.Errorf("similarity search: an embedding has %d dimensions, the query %d", len(b), len(a))
	}
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s, nil
}

// isNormalized is chromem-go's isNormalized.
func isNormalized(v []float32) bool {
	var sq float64
	for _, x := range v {
		sq += float64(x) * float64(x)
	}
	return math.Abs(math.Sqrt(sq)-1) < 1e-6
}

// normalized is chromem-go's normalizeVector.
func normalized(v []float32) []float32 {
	var norm float32
	for _, x := range v {
		norm += x * x
	}
	norm = float32(math.Sqrt(float64(norm)))
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = x / norm
	}
	return out
}

// ext is the extension chromem-go gives the collection's files in the
// configured mode; NewPersistentDB skips files without it.
func (s *Store) ext() string {
	if s.compress {
		return ".gob.gz"
	}
	return ".gob"
}

// load reads the collection from its files (see above). A file that
// cannot be read or decoded, or a missing metadata file, fails the load as
// it fails NewPersistentDB: the error wraps store.ErrUnavailable. A file
// unlinked between the listing and its read is gone and left out.
func (s *Store) load(ctx context.Context) (*view, error) {
	dir := s.Dir()
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w: %v", dir, store.ErrUnavailable, err)
	}
	ext := s.ext()
	s.mu.Lock()
	defer s.mu.Unlock()
	next := make(map[[sha256.Size]byte]*chromem.Document, len(ents))
	v := &view{docs: make(map[string]*chromem.Document, len(ents))}
	meta := false
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("load: %w", err)
		}
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ext) {
			continue // NewPersistentDB skips them too
		}
		p := filepath.Join(dir, name)
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("load %s: %w: %v", p, store.ErrUnavailable, err)
		}
		if name == metadataFile+ext {
			if err := s.checkMeta(b); err != nil {
				return nil, fmt.Errorf("load %s: %w: %v", p, store.ErrUnavailable, err)
			}
			meta = true
			continue
		}
		sum := sha256.Sum256(b)
		d := next[sum]
		if d == nil {
			d = s.decoded[sum]
		}
		if d == nil {
			if d, err = decodeDoc(b); err != nil {
				return nil, fmt.Errorf("load %s: %w: not a chromem-go document: %v", p, store.ErrUnavailable, err)
			}
		}
		next[sum] = d
		v.docs[d.ID] = d
	}
	if !meta {
		return nil, fmt.Errorf("load %s: %w: no chromem-go metadata file %s", dir, store.ErrUnavailable, metadataFile+ext)
	}
	s.decoded = next
	return v, nil
}

// collMeta is chromem-go's collection metadata file (gob matches fields by
// name, not the struct's type name).
type collMeta struct {
	Name     string
	Metadata map[string]string
}

// checkMeta decodes the collection's metadata file: it must name the
// configured collection, as NewPersistentDB's GetCollection requires.
func (s *Store) checkMeta(b []byte) error {
	var m collMeta
	if err := decodeGob(b, &m); err != nil {
		return fmt.Errorf("not a chromem-go metadata file: %v", err)
	}
	if m.Name != s.coll {
		return errors.New("the metadata file names another collection")
	}
	return nil
}

// decodeDoc decodes a document file's bytes.
func decodeDoc(b []byte) (*chromem.Document, error) {
	d := &chromem.Document{}
	if err := decodeGob(b, d); err != nil {
		return nil, err
	}
	return d, nil
}

// decodeGob decodes b into obj as chromem-go's readFromReader does: gob,
// after gunzip when b begins with gzip's magic number (whatever the file's
// extension).
func decodeGob(b []byte, obj any) error {
	var r io.Reader = bytes.NewReader(b)
	if len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return fmt.Errorf("decompress: %w", err)
		}
		defer zr.Close()
		r = zr
	}
	return gob.NewDecoder(r).Decode(obj)
}

// docAt returns the document the file at path holds now (read in full,
// decoded unless the cache holds its bytes' document), or nil when there
// is no such file. The document is shared: nothing may modify it.
func (s *Store) docAt(path string) (*chromem.Document, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	s.mu.Lock()
	d := s.decoded[sum]
	s.mu.Unlock()
	if d != nil {
		return d, nil
	}
	if d, err = decodeDoc(b); err != nil {
		return nil, fmt.Errorf("%s does not decode as a chromem-go document: %v", path, err)
	}
	return d, nil
}

// forget drops from the cache the documents with the given ids.
func (s *Store) forget(ids []string) {
	if len(ids) == 0 {
		return
	}
	gone := make(map[string]bool, len(ids))
	for _, id := range ids {
		gone[id] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for sum, d := range s.decoded {
		if gone[d.ID] {
			delete(s.decoded, sum)
		}
	}
}
