//go:build faiss

// Package faiss erases vectors from FAISS index files, the on-disk format of
// FAISS (faiss.write_index) that LangChain, LlamaIndex and plain Python
// applications save their vector stores in.
//
// It is built only with the build tag faiss (go build -tags faiss): it links
// FAISS 1.7.3 and FAISS's C API through cgo, which
// ../shared/vendor/install-faiss-c installs from Debian.
//
// Supported indexes are IDMap and IDMap2 wrappers (FAISS's own way to give
// vectors stable int64 ids) over a Flat, IVF-Flat or HNSW-Flat index: the
// encodings that keep the float32 vector as it is, so that the byte scan
// has power. Deletion:
//
//   - Flat: remove_ids, then the index is written to a temp file, fsynced,
//     renamed over the index file, and the directory fsynced;
//   - IVF-Flat: FAISS 1.7.3's remove_ids on an IDMap over IVF leaves the
//     remaining ids pointing at the wrong vectors, so the index is rebuilt:
//     the trained index is read again, emptied and refilled with the surviving
//     vectors under their ids (the coarse centroids are kept as trained);
//   - HNSW-Flat: FAISS cannot remove from HNSW, so it is rebuilt the same
//     way, with the same parameters;
//
// and written atomically as for Flat.
//
// Keys are the FAISS ids in decimal, unless an id map sits beside the index
// (PATH.ids.json, a JSON object from application key to int64 id): then keys
// are looked up there, and deleted keys are removed from it after the index.
//
// FAISS keeps vectors only. Text an application keeps beside the index (a
// docstore: LangChain's index.pkl, LlamaIndex's docstore.json) is not
// covered by this adapter, and its reclaim method says so.
package faiss

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/amnesia-dev/amnesia/internal/atomicfile"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/amnesia-dev/amnesia/store"
)

// Type is the adapter type name used in configuration.
const Type = "faiss"

// SimilarityK is how many neighbours the similarity probe asks for.
const SimilarityK = 10

// DefaultFactory is the index created when a store is opened with create
// and the configuration names no factory string (schema:).
const DefaultFactory = "IDMap2,Flat"

// DefaultLockWait is how long a rewrite waits for another amnesia process
// that holds the index's lock (lock_timeout: overrides it).
const DefaultLockWait = 5 * time.Second

// tmpMark marks the temp files this adapter writes beside the index.
const tmpMark = ".amnesia-tmp-"

// IDMapSuffix names the optional id map beside the index file.
const IDMapSuffix = ".ids.json"

// Store is the adapter.
type Store struct {
	name     string
	path     string
	dim      int
	docstore string        // the configured store holding the texts, if any
	lockWait time.Duration // how long to wait for another amnesia process's lock
	mu       sync.Mutex
	lastDel  string // how the last Delete that changed the file rewrote it
}

var (
	_ store.Store          = (*Store)(nil)
	_ store.EvidenceReader = (*Store)(nil)
	_ store.Reclaimer      = (*Store)(nil)
	_ store.PhysicalProber = (*Store)(nil)
	_ store.ResidueMeter   = (*Store)(nil)
)

// layout is what the index file's header says it is.
type layout struct {
	wrapper int    // 1: IDMap ("IxMp"), 2: IDMap2 ("IxM2")
	sub     string // "Flat", "IVF", "HNSW"
	dim     int
}

func (l layout) String() string {
	w := "IDMap"
	if l.wrapper == 2 {
		w = "IDMap2"
	}
	if l.sub == "Flat" {
		return w + ",Flat"
	}
	return w + "," + l.sub + ",Flat"
}

// readLayout reads the index file's header: FAISS writes a four-byte type
// code, the index header (d, ntotal, two placeholders, is_trained,
// metric_type and, for metrics past inner product and L2, metric_arg), and
// for an IDMap the sub-index's type code next.
func readLayout(path string) (layout, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return layout{}, fmt.Errorf("faiss index %s does not exist: %w", path, store.ErrUnavailable)
	}
	if err != nil {
		return layout{}, fmt.Errorf("faiss index %s: %w", path, store.ErrUnavailable)
	}
	defer f.Close()
	b := make([]byte, 64)
	n, _ := io.ReadFull(f, b)
	b = b[:n]
	if n < 45 {
		return layout{}, fmt.Errorf("%s is not a FAISS index file (%d bytes): point path: at the file faiss.write_index wrote", path, n)
	}
	var l layout
	switch string(b[:4]) {
	case "IxMp":
		l.wrapper = 1
	case "IxM2":
		l.wrapper = 2
	default:
		return layout{}, fmt.Errorf("faiss index %s: type code %q is not supported: amnesia erases indexes wrapped in IDMap or IDMap2 (for example index_factory(d, \"IDMap2,Flat\")), whose ids stay stable; see docs/faiss.md", path, string(b[:4]))
	}
	l.dim = int(int32(binary.LittleEndian.Uint32(b[4:])))
	// Flat, IVF-Flat and HNSW-Flat keep every vector in the file. A file
	// smaller than its vectors is truncated, or keeps them elsewhere
	// (IVF's on-disk inverted lists, a .ivfdata file) where neither the
	// rewrite nor the byte scan would reach.
	ntotal := int64(binary.LittleEndian.Uint64(b[8:]))
	if fi, err := f.Stat(); err == nil && l.dim > 0 && ntotal > 0 && fi.Size() < ntotal*int64(l.dim)*4 {
		return layout{}, fmt.Errorf("faiss index %s holds %d bytes, less than its %d vectors need: it is truncated, or its vectors live in another file (on-disk inverted lists), which amnesia does not erase", path, fi.Size(), ntotal)
	}
	off := 37
	if metric := binary.LittleEndian.Uint32(b[33:]); metric > 1 {
		off += 4
	}
	switch code := string(b[off : off+4]); code {
	case "IxF2", "IxFI", "IxFl":
		l.sub = "Flat"
	case "IwFl":
		l.sub = "IVF"
	case "IHNf":
		l.sub = "HNSW"
	default:
		return layout{}, fmt.Errorf("faiss index %s: sub-index type code %q is not supported: amnesia erases Flat, IVF-Flat and HNSW-Flat indexes, which keep the float32 vectors its byte scan looks for; see docs/faiss.md", path, code)
	}
	return l, nil
}

// Open opens the store whose index file is path, with vectors of dim
// dimensions. With create, a missing file is created empty from the FAISS
// factory string fac (DefaultFactory when empty; it must need no training).
func Open(ctx context.Context, name, path string, dim int, fac string, create bool) (*Store, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if dim <= 0 || dim > 65536 {
		return nil, fmt.Errorf("open %s: dimensions must be 1..65536, got %d", path, dim)
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) && create {
		if fac == "" {
			fac = DefaultFactory
		}
		if err := Create(path, fac, dim, nil); err != nil {
			return nil, fmt.Errorf("open %s: %w", path, err)
		}
	}
	// The rewrite renames a new file over the index: through a symbolic
	// link that would replace the link and leave the old file whole, so
	// the store works on the file the link points to.
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	l, err := readLayout(path)
	if err != nil {
		return nil, fmt.Errorf("open: %w", err)
	}
	if l.dim != dim {
		return nil, fmt.Errorf("open %s: the index holds %d-dimensional vectors, the configuration says dimensions: %d", path, l.dim, dim)
	}
	return &Store{name: name, path: path, dim: dim, lockWait: DefaultLockWait}, nil
}

// Create writes a new, empty index file at path from a FAISS factory string
// (for example "IDMap2,Flat", "IDMap2,IVF16,Flat", "IDMap2,HNSW32,Flat"),
// trained on train (row-major vectors) when the index needs training. It is
// what an application does; amnesia itself only opens existing files.
func Create(path, fac string, dim int, train []float32) error {
	x, err := factory(dim, fac, 1) // METRIC_L2
	if err != nil {
		return err
	}
	defer x.free()
	if len(train) > 0 {
		if err := x.train(train); err != nil {
			return err
		}
	}
	if !x.trained() {
		return fmt.Errorf("faiss factory %q needs training: create the index in the application (train, add, write_index) and point amnesia at the file", fac)
	}
	if err := writeIndexAtomic(x, path); err != nil {
		return err
	}
	if _, err := readLayout(path); err != nil {
		os.Remove(path)
		return err
	}
	return nil
}

// Path returns the index file.
func (s *Store) Path() string { return s.path }

// Info implements store.Store.
func (s *Store) Info() store.Info {
	return store.Info{Name: s.name, Type: Type, Capabilities: []store.Capability{
		store.CapDelete, store.CapProbeByID, store.CapProbeBySimilarity, store.CapReclaim, store.CapProbePhysical,
	}}
}

// Close implements store.Store. The adapter holds no index between calls:
// each call reads the file as it is on disk.
func (s *Store) Close() error { return nil }

// loaded is the index file read into memory.
type loaded struct {
	x   *cindex
	l   layout
	ids []int64       // position -> id
	pos map[int64]int // id -> position
}

func (s *Store) load() (*loaded, error) {
	l, err := readLayout(s.path)
	if err != nil {
		return nil, err
	}
	x, err := readIndex(s.path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.path, err)
	}
	ids, _, err := x.idMap(l.wrapper)
	if err != nil {
		x.free()
		return nil, err
	}
	pos := make(map[int64]int, len(ids))
	for i, id := range ids {
		pos[id] = i
	}
	return &loaded{x: x, l: l, ids: ids, pos: pos}, nil
}

func (ld *loaded) free() { ld.x.free() }

// vectors returns every vector, in position order (row-major).
func (ld *loaded) vectors() ([]float32, error) {
	_, sub, err := ld.x.idMap(ld.l.wrapper)
	if err != nil {
		return nil, err
	}
	if ld.l.sub == "IVF" {
		// The direct map needs the IVF's internal ids to be 0..n-1, as
		// IDMap's add leaves them; an index an application ran remove_ids
		// on fails here instead of yielding the wrong vectors.
		if err := sub.ivfDirectMap(true); err != nil {
			return nil, fmt.Errorf("the IVF index's internal ids are not sequential (after remove_ids on an IDMap over IVF, FAISS 1.7.3 maps ids to the wrong vectors; rebuild the index): %w", err)
		}
		defer sub.ivfDirectMap(false)
	}
	return sub.reconstructN(len(ld.ids))
}

// resolve maps keys to FAISS ids; keys the id map does not hold are absent.
// m is the id map, nil when there is none.
func (s *Store) resolve(keys []string) (ids map[string]int64, m map[string]int64, err error) {
	m, err = s.readIDMap()
	if err != nil {
		return nil, nil, err
	}
	ids = map[string]int64{}
	for i, k := range keys {
		if m != nil {
			if id, ok := m[k]; ok {
				ids[k] = id
			}
			continue
		}
		id, err := strconv.ParseInt(k, 10, 64)
		if err != nil {
			return nil, nil, fmt.Errorf("faiss store %q: key #%d is not a decimal FAISS id and there is no id map %s: record the int64 ids the index was built with as keys, or write the id map (docs/faiss.md)", s.name, i+1, filepath.Base(s.path+IDMapSuffix))
		}
		ids[k] = id
	}
	return ids, m, nil
}

// readIDMap reads PATH.ids.json; nil when there is none.
func (s *Store) readIDMap() (map[string]int64, error) {
	b, err := os.ReadFile(s.path + IDMapSuffix)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("faiss id map: %w", err)
	}
	m := map[string]int64{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("faiss id map %s is not a JSON object of key to int64 id: fix or remove it", filepath.Base(s.path+IDMapSuffix))
	}
	return m, nil
}

func (s *Store) writeIDMap(m map[string]int64) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return writeFileAtomic(s.path+IDMapSuffix, func(tmp string) error { return os.WriteFile(tmp, b, 0o600) })
}

// Add stores vec under key, as an application would (it reads and rewrites
// the whole file). A key that is not the decimal form of id is recorded in
// the id map.
func (s *Store) Add(ctx context.Context, key string, id int64, vec []float32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(vec) != s.dim {
		return fmt.Errorf("add vector: %d dimensions, store has %d", len(vec), s.dim)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	unlock, err := s.lockFile(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	ld, err := s.load()
	if err != nil {
		return err
	}
	defer ld.free()
	if _, dup := ld.pos[id]; dup {
		return fmt.Errorf("add vector: id already in the index")
	}
	if err := ld.x.addWithIDs(vec, []int64{id}); err != nil {
		return err
	}
	if err := writeIndexAtomic(ld.x, s.path); err != nil {
		return err
	}
	if key == strconv.FormatInt(id, 10) {
		return nil
	}
	m, err := s.readIDMap()
	if err != nil {
		return err
	}
	if m == nil {
		m = map[string]int64{}
	}
	m[key] = id
	return s.writeIDMap(m)
}

// Delete implements store.Store: remove the ids from the index (remove_ids
// on Flat; a rebuild from the surviving vectors on IVF and HNSW), write the
// index atomically, then drop the keys from the id map.
func (s *Store) Delete(ctx context.Context, keys []string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete vectors: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	unlock, err := s.lockFile(ctx)
	if err != nil {
		return fmt.Errorf("delete vectors: %w", err)
	}
	defer unlock()
	ids, m, err := s.resolve(keys)
	if err != nil {
		return fmt.Errorf("delete vectors: %w", err)
	}
	ld, err := s.load()
	if err != nil {
		return fmt.Errorf("delete vectors: %w", err)
	}
	defer ld.free()
	gone := map[int64]bool{}
	for _, id := range ids {
		if _, ok := ld.pos[id]; ok {
			gone[id] = true
		}
	}
	if len(gone) > 0 {
		if err := singleLink(s.path); err != nil {
			return fmt.Errorf("delete vectors: %w", err)
		}
		out, how, err := s.without(ld, gone)
		if err != nil {
			return fmt.Errorf("delete vectors: %w", err)
		}
		if out != ld.x {
			defer out.free()
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("delete vectors: %w", err)
		}
		if err := writeIndexAtomic(out, s.path); err != nil {
			return fmt.Errorf("delete vectors: %w", err)
		}
		s.lastDel = how
	}
	if m != nil {
		n := len(m)
		for k := range ids {
			delete(m, k)
		}
		if len(m) != n {
			if err := s.writeIDMap(m); err != nil {
				return fmt.Errorf("delete vectors: id map: %w", err)
			}
		}
	}
	return nil
}

// without returns an index holding every vector of ld but those in gone,
// and how it was made.
func (s *Store) without(ld *loaded, gone map[int64]bool) (*cindex, string, error) {
	if ld.l.sub == "Flat" {
		del := make([]int64, 0, len(gone))
		for id := range gone {
			del = append(del, id)
		}
		sort.Slice(del, func(i, j int) bool { return del[i] < del[j] })
		n, err := ld.x.removeIDs(del)
		if err != nil {
			return nil, "", err
		}
		if n != len(del) {
			return nil, "", fmt.Errorf("faiss remove_ids removed %d of %d vectors", n, len(del))
		}
		return ld.x, "remove_ids on " + ld.l.String(), nil
	}
	all, err := ld.vectors()
	if err != nil {
		return nil, "", err
	}
	keepV := make([]float32, 0, len(all))
	keepI := make([]int64, 0, len(ld.ids))
	for i, id := range ld.ids {
		if !gone[id] {
			keepI = append(keepI, id)
			keepV = append(keepV, all[i*s.dim:(i+1)*s.dim]...)
		}
	}
	// A second copy read from the same file, emptied: FAISS 1.7.3's
	// clone_index does not copy IndexHNSWFlat faithfully.
	out, err := readIndex(s.path)
	if err != nil {
		return nil, "", err
	}
	if err := out.reset(); err != nil {
		out.free()
		return nil, "", err
	}
	if err := out.addWithIDs(keepV, keepI); err != nil {
		out.free()
		return nil, "", err
	}
	if out.ntotal() != int64(len(keepI)) {
		out.free()
		return nil, "", fmt.Errorf("faiss rebuild holds %d vectors, want %d", out.ntotal(), len(keepI))
	}
	how := "rebuilt " + ld.l.String() + " from the surviving vectors (FAISS cannot remove from HNSW)"
	if ld.l.sub == "IVF" {
		how = "rebuilt " + ld.l.String() + " from the surviving vectors with its trained centroids (FAISS 1.7.3's remove_ids on an IDMap over IVF misaligns ids)"
	}
	return out, how, nil
}

// ReadEvidence implements store.EvidenceReader: the vector's float32
// little-endian encoding (the encoding Flat, IVF-Flat and HNSW-Flat store),
// cut into needles, and the vector for the similarity probe. Windows that
// another vector outside keys also holds are counted as Shared.
func (s *Store) ReadEvidence(ctx context.Context, keys []string) (map[string]*store.Evidence, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ids, _, err := s.resolve(keys)
	if err != nil {
		return nil, fmt.Errorf("read evidence: %w", err)
	}
	ld, err := s.load()
	if err != nil {
		return nil, fmt.Errorf("read evidence: %w", err)
	}
	defer ld.free()
	out := map[string]*store.Evidence{}
	mine := map[int]bool{}
	for _, k := range keys {
		id, ok := ids[k]
		if !ok {
			continue
		}
		if _, ok := ld.pos[id]; ok {
			mine[ld.pos[id]] = true
		}
	}
	if len(mine) == 0 {
		return out, nil
	}
	all, err := ld.vectors()
	if err != nil {
		return nil, fmt.Errorf("read evidence: %w", err)
	}
	for _, k := range keys {
		id, ok := ids[k]
		if !ok {
			continue
		}
		p, ok := ld.pos[id]
		if !ok {
			continue
		}
		v := append([]float32(nil), all[p*s.dim:(p+1)*s.dim]...)
		e := &store.Evidence{
			Key:    k,
			Filter: map[string]string{"faiss_id": strconv.FormatInt(id, 10)},
			Vector: v,
		}
		e.AddWindows(store.Float32LE(v))
		out[k] = e
	}
	// Other vectors are passed without a key, as sqlite-vec does: an
	// identical vector is shared bytes, not a copy to report by name.
	err = store.DropShared(ctx, out, func(fn func(key string, b []byte) error) error {
		for p := range ld.ids {
			if mine[p] {
				continue
			}
			if err := fn("", store.Float32LE(all[p*s.dim:(p+1)*s.dim])); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read evidence: %w", err)
	}
	return out, nil
}

// ProbeLogical implements store.Store: by id (the key's id, and the id the
// evidence recorded, in the index's id map) and by a k=10 similarity search
// with the record's own vector (IVF: over every inverted list).
func (s *Store) ProbeLogical(ctx context.Context, keys []string, ev map[string]*store.Evidence) ([]store.LogicalResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ids, _, err := s.resolve(keys)
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	ld, err := s.load()
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	defer ld.free()
	if ld.l.sub == "IVF" {
		_, sub, err := ld.x.idMap(ld.l.wrapper)
		if err != nil {
			return nil, fmt.Errorf("probe: %w", err)
		}
		if err := sub.ivfProbeAll(); err != nil {
			return nil, fmt.Errorf("probe: %w", err)
		}
	}
	out := make([]store.LogicalResult, 0, len(keys))
	wants := make([]map[int64]bool, 0, len(keys))
	var qs [][]float32
	var qi []int // qs[j] is the vector of keys[qi[j]]
	for i, k := range keys {
		res := store.LogicalResult{Key: k, Methods: []string{"by-id"}}
		want := map[int64]bool{}
		if id, ok := ids[k]; ok {
			want[id] = true
		}
		e := ev[k]
		if e != nil {
			if id, err := strconv.ParseInt(e.Filter["faiss_id"], 10, 64); err == nil {
				want[id] = true
			}
		}
		for id := range want {
			if _, ok := ld.pos[id]; ok {
				res.ByID = true
			}
		}
		if e != nil && len(e.Vector) == s.dim && len(want) > 0 {
			res.Methods = append(res.Methods, fmt.Sprintf("by-similarity:k=%d", SimilarityK))
			if len(ld.ids) > 0 {
				qs, qi = append(qs, e.Vector), append(qi, i)
			}
		}
		out, wants = append(out, res), append(wants, want)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// Every key's vector in one batched search of the index.
	labels, err := ld.x.searchMany(qs, SimilarityK)
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	for j, i := range qi {
		for _, l := range labels[j] {
			out[i].BySimilarity = out[i].BySimilarity || wants[i][l]
		}
	}
	return out, nil
}

// Reclaim implements store.Reclaimer. Delete already rewrote the index
// file; Reclaim removes temp files an interrupted rewrite left beside it
// and reports the method, including what the adapter does not cover.
func (s *Store) Reclaim(ctx context.Context) (store.ReclaimReport, error) {
	if err := ctx.Err(); err != nil {
		return store.ReclaimReport{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l, err := readLayout(s.path)
	if err != nil {
		return store.ReclaimReport{}, fmt.Errorf("reclaim: %w", err)
	}
	unlock, err := s.lockFile(ctx)
	if err != nil {
		return store.ReclaimReport{}, fmt.Errorf("reclaim: %w", err)
	}
	defer unlock()
	how := s.lastDel
	by := "index rewritten by Delete (" + how + ")"
	if how == "" {
		// Deleted by another process (a resumed erasure), or nothing to
		// remove: this Reclaim did not see the rewrite.
		how = "rebuilt " + l.String() + " from the surviving vectors"
		if l.sub == "Flat" {
			how = "remove_ids on " + l.String()
		}
		how = "by an earlier Delete, not in this process (" + how + ", when it removed anything)"
		by = "index rewritten " + how
	}
	rep := store.ReclaimReport{
		Method: "rewrite index file: " + how + "; written to a temp file, fsync, rename over the index, fsync directory; leftover temp files shredded; " + s.coverage(),
	}
	temps, err := s.temps()
	if err != nil {
		return rep, fmt.Errorf("reclaim: %w", err)
	}
	// A temp file an interrupted rewrite left may hold vectors that a later
	// erasure removed from the index: overwritten with zeros before it is
	// unlinked (atomicfile.Shred), not only unlinked, which would leave its
	// bytes in blocks no probe reads.
	for _, t := range temps {
		if err := atomicfile.Shred(t); err != nil {
			return rep, fmt.Errorf("reclaim: shred leftover temp file: %w", err)
		}
	}
	rep.Steps = []string{
		by,
		fmt.Sprintf("shredded %d leftover temp file(s) of interrupted rewrites (zeroed, fsynced, unlinked, directory fsynced)", len(temps)),
	}
	return rep, nil
}

// docstoreFiles are the names applications give the text they keep beside
// a FAISS index.
func (s *Store) docstoreFiles() []string {
	dir, base := filepath.Split(s.path)
	stem := strings.TrimSuffix(base, filepath.Ext(base))
	var out []string
	for _, n := range []string{stem + ".pkl", "docstore.json", "index_store.json"} {
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// coverage says plainly what the adapter does not erase, and which
// configured store (docstore:) holds the texts.
func (s *Store) coverage() string {
	parts := []string{"vectors only"}
	if s.docstore != "" {
		parts = append(parts, fmt.Sprintf("their texts are in configured store %q, whose state this certificate reports", s.docstore))
	}
	if d := s.docstoreFiles(); len(d) > 0 {
		parts = append(parts, "the docstore file beside the index ("+strings.Join(d, ", ")+") is NOT covered by this store: not erased, not scanned")
	} else if s.docstore == "" {
		parts = append(parts, "text an application keeps outside the index (a docstore) is not covered by this store")
	}
	return strings.Join(parts, "; ")
}

// temps lists the temp files this adapter's rewrites left beside the index.
func (s *Store) temps() ([]string, error) {
	dir, base := filepath.Split(s.path)
	if dir == "" {
		dir = "."
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if strings.HasPrefix(n, "."+base+tmpMark) || strings.HasPrefix(n, "."+base+IDMapSuffix+tmpMark) {
			out = append(out, filepath.Join(dir, n))
		}
	}
	return out, nil
}

// ProbePhysical implements store.PhysicalProber: a byte scan of the index
// file and of temp files an interrupted rewrite left beside it.
func (s *Store) ProbePhysical(ctx context.Context, set *store.NeedleSet) (store.ScanReport, error) {
	if _, err := os.Stat(s.path); err != nil {
		return store.ScanReport{}, fmt.Errorf("probe physical: %s: %w", s.path, store.ErrUnavailable)
	}
	temps, err := s.temps()
	if err != nil {
		return store.ScanReport{}, fmt.Errorf("probe physical: %w", err)
	}
	files := append([]string{s.path}, temps...)
	return store.ScanFiles(ctx, set, "byte scan of the FAISS index file and leftover temp files", files...)
}

// MeasureResidue implements store.ResidueMeter: when the index file was
// last written, relative to since.
func (s *Store) MeasureResidue(ctx context.Context, since time.Time) (store.ResidueReport, error) {
	if err := ctx.Err(); err != nil {
		return store.ResidueReport{}, err
	}
	fi, err := os.Stat(s.path)
	if err != nil {
		return store.ResidueReport{}, fmt.Errorf("measure residue: %s: %w", s.path, store.ErrUnavailable)
	}
	last := fi.ModTime().UTC()
	at := last.Format(time.RFC3339)
	since = since.UTC()
	var ev string
	switch {
	case !last.Before(since.Add(time.Second)):
		ev = "the index file was written after the re-verified certificate was issued (last write " + at + ")"
	case last.Before(since):
		ev = "the index file was not written after the re-verified certificate was issued (last write " + at + ")"
	default:
		ev = "the index file was last written in the second the re-verified certificate was issued (" + at + "): before or after it, file times cannot tell"
	}
	return store.ResidueReport{Evidence: ev}, nil
}

// writeIndexAtomic writes x to path through a temp file in the same
// directory: write, fsync, rename, fsync the directory.
func writeIndexAtomic(x *cindex, path string) error {
	return writeFileAtomic(path, x.write)
}

// writeFileAtomic is internal/atomicfile.WriteFile's procedure for a file
// that FAISS's C writer writes itself (it takes a path, not bytes), whose
// temporary name the physical probe must recognise (tmpMark), and whose
// owner the application must keep.
func writeFileAtomic(path string, write func(tmp string) error) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return err
	}
	tmp := filepath.Join(dir, "."+base+tmpMark+hex.EncodeToString(rnd[:]))
	mode := fs.FileMode(0o644)
	uid, gid := -1, -1
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			uid, gid = int(st.Uid), int(st.Gid)
		}
	}
	if err := write(tmp); err != nil {
		os.Remove(tmp)
		return err
	}
	f, err := os.OpenFile(tmp, os.O_RDWR, 0)
	if err == nil {
		// The application must still own and read the file it saved.
		if fi, serr := f.Stat(); serr == nil && uid >= 0 {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && (int(st.Uid) != uid || int(st.Gid) != gid) {
				if cerr := f.Chown(uid, gid); cerr != nil {
					err = fmt.Errorf("keep the file's owner %d:%d (run amnesia as that user, or as root): %w", uid, gid, cerr)
				}
			}
		}
		if err == nil {
			err = f.Chmod(mode)
		}
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return atomicfile.SyncDir(dir)
}

// lockMark names the lock file beside the index that amnesia processes
// (workers erasing different subjects at once) take while they rewrite it.
const lockMark = ".amnesia-lock"

// lockFile takes an exclusive lock (flock) on the index's lock file,
// waiting at most lockWait (lock_timeout:) and while ctx lasts; then it
// returns an error wrapping store.ErrBusy. Applications do not take it: an application that writes
// the index while amnesia rewrites it can undo the erasure (docs/faiss.md).
func (s *Store) lockFile(ctx context.Context) (unlock func(), err error) {
	dir, base := filepath.Split(s.path)
	f, err := os.OpenFile(filepath.Join(dir, "."+base+lockMark), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", s.path, store.ErrUnavailable)
	}
	ctx, cancel := context.WithTimeout(ctx, s.lockWait)
	defer cancel()
	for wait := time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", s.path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("another amnesia process is rewriting %s (%w): %w", s.path, ctx.Err(), store.ErrBusy)
		case <-time.After(wait):
		}
	}
}

// singleLink refuses an index file with other hard links: the rewrite
// replaces this name only, and the old content would live on under the
// others.
func singleLink(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, store.ErrUnavailable)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
		return fmt.Errorf("index file %s has %d hard links: the rewrite would replace one name and leave the old vectors under the others; remove the other links (or copy the file to break them) and erase again", path, st.Nlink)
	}
	return nil
}

func init() {
	store.Register(Type, store.Adapter{
		Open: func(ctx context.Context, c store.Config, create bool) (store.Store, error) {
			s, err := Open(ctx, c.Name, c.Path, c.Dimensions, c.Schema, create)
			if err != nil {
				return nil, err
			}
			s.docstore = c.Docstore
			if c.LockTimeout != "" {
				d, err := time.ParseDuration(c.LockTimeout)
				if err != nil || d <= 0 {
					return nil, fmt.Errorf("lock_timeout %q: want a positive Go duration such as 5s", c.LockTimeout)
				}
				s.lockWait = d
			}
			return s, nil
		},
		Validate: func(c store.Config) error {
			if c.Path == "" {
				return fmt.Errorf("path is required: the index file faiss.write_index wrote")
			}
			if c.Dimensions <= 0 {
				return fmt.Errorf("faiss needs dimensions > 0 (the index's d)")
			}
			if c.LockTimeout != "" {
				if d, err := time.ParseDuration(c.LockTimeout); err != nil || d <= 0 {
					return fmt.Errorf("lock_timeout %q: want a positive Go duration such as 5s", c.LockTimeout)
				}
			}
			return nil
		},
	})
}
