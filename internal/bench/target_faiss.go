//go:build faiss

package bench

/*
#cgo LDFLAGS: -lfaiss_c -lfaiss -lopenblas -lgomp -lstdc++ -lm
#include <stdlib.h>
#include <c_api/Index_c.h>
#include <c_api/MetaIndexes_c.h>
#include <c_api/index_io_c.h>
#include <c_api/index_factory_c.h>
#include <c_api/error_c.h>
#include <c_api/impl/AuxIndexStructures_c.h>

static int bench_remove_ids(FaissIndex* idx, size_t n, const idx_t* ids, size_t* removed) {
	FaissIDSelectorBatch* sel = NULL;
	int rc = faiss_IDSelectorBatch_new(&sel, n, ids);
	if (rc) return rc;
	rc = faiss_Index_remove_ids(idx, (const FaissIDSelector*)sel, removed);
	faiss_IDSelector_free((FaissIDSelector*)sel);
	return rc;
}

// bench_idmap2 returns the ids and the sub-index of an IDMap2 wrapper.
static int bench_idmap2(FaissIndex* idx, idx_t** ids, size_t* n, FaissIndex** sub) {
	FaissIndexIDMap2* m = faiss_IndexIDMap2_cast(idx);
	if (!m) return -1;
	faiss_IndexIDMap2_id_map(m, ids, n);
	*sub = faiss_IndexIDMap2_sub_index(m);
	return 0;
}
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"unsafe"

	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/faiss"
)

// The FAISS targets: an index file as a Python RAG application saves it
// (faiss.write_index), IDMap2 over Flat and over HNSW32 (HNSW-Flat), the
// corpus's chunk vectors added with add_with_ids in one batch and written
// once. Keys are the FAISS ids in decimal. The native operations are what
// such an application can do with FAISS itself (through its C API here):
//   - B0, Flat: remove_ids, then write_index over the file in place (what
//     LangChain's FAISS.delete and save_local do). HNSW: FAISS cannot
//     remove from an HNSW index (remove_ids raises), so nothing is removed:
//     the records stay findable and their bytes stay.
//   - B1: FAISS has no compaction; B1 is B0 with nothing added.
//   - B2: a rebuild: the surviving vectors reconstructed, added to a new
//     index of the same factory, written over the file in place (the only
//     way an application removes vectors from HNSW).
func init() {
	for _, v := range []struct{ typ, fac, b0 string }{
		{"faiss-flat", "IDMap2,Flat", "remove_ids, then write_index over the file in place (LangChain's FAISS.delete and save_local); the old file is truncated and rewritten, not overwritten elsewhere"},
		{"faiss-hnsw", "IDMap2,HNSW32,Flat", "not possible: FAISS cannot remove vectors from an HNSW index (remove_ids raises), so a native delete removes nothing; an application can only stop mapping the ids to its texts"},
	} {
		var mu sync.Mutex
		pending := map[string]*faissBatch{} // index path -> vectors not yet written
		const name = "vectors"
		tg := &target{
			typ: v.typ,
			config: func(dir string) store.Config {
				return store.Config{Name: name, Type: faiss.Type, Path: "../index.faiss", Dimensions: Dim, Schema: v.fac}
			},
			ingest: func(ctx context.Context, e *env, c *Corpus, d Doc) error {
				owner, err := e.dir.Keyer.Key(e.dir.Config.Scope, c.Subjects[d.Owner].ID)
				if err != nil {
					return err
				}
				scope := e.dir.Config.Scope
				mu.Lock()
				defer mu.Unlock()
				p := e.st.(*faiss.Store).Path()
				b := pending[p]
				if b == nil {
					b = &faissBatch{}
					pending[p] = b
				}
				for i, ch := range d.Chunks {
					id := faissID(d, i)
					k := strconv.FormatInt(id, 10)
					vec := embed(ch)
					if err := e.ledger.Record(ctx, lineage.Artifact{ID: lineage.ArtifactID(e.dir.Keyer, scope, name, k), Scope: scope, Subject: owner, Kind: lineage.KindEmbedding, Store: name, Key: k, Digest: lineage.ContentDigest(e.dir.Keyer, store.Float32LE(vec))}); err != nil {
						return err
					}
					b.vecs = append(b.vecs, vec...)
					b.ids = append(b.ids, id)
				}
				return nil
			},
			flush: func(ctx context.Context, e *env) error {
				mu.Lock()
				defer mu.Unlock()
				p := e.st.(*faiss.Store).Path()
				b := pending[p]
				delete(pending, p)
				if b == nil {
					return nil
				}
				return faissBuild(p, v.fac, b.vecs, b.ids)
			},
			keys: faissKeys,
			content: func(d Doc, key string) []byte {
				return store.Float32LE(embed(d.Chunks[faissChunk(key)]))
			},
			native: func(ctx context.Context, s store.Store, keys []string) error {
				if v.typ == "faiss-hnsw" {
					return nil
				}
				return faissRemove(s.(*faiss.Store).Path(), keys)
			},
			compact: noop,
			rebuild: func(ctx context.Context, s store.Store, keys []string) error {
				return faissRebuild(s.(*faiss.Store).Path(), v.fac, keys)
			},
			visible: func(ctx context.Context, e *env, key string, vec []float32) (bool, error) {
				if sup, err := suppressed(ctx, e, name, key); err != nil || sup {
					return false, err
				}
				res, err := e.st.ProbeLogical(ctx, []string{key}, map[string]*store.Evidence{key: {Key: key, Vector: vec}})
				if err != nil {
					return false, err
				}
				return res[0].Found(), nil
			},
			query: func(d Doc, key string) []float32 { return embed(d.Chunks[faissChunk(key)]) },
			top5: func(ctx context.Context, e *env, key string, vec []float32) (bool, error) {
				labels, err := faissSearch(e.st.(*faiss.Store).Path(), vec, 5)
				for _, l := range labels {
					if strconv.FormatInt(l, 10) == key {
						return true, err
					}
				}
				return false, err
			},
			nativeDrops: v.typ == "faiss-flat",
			nativeKeeps: v.typ == "faiss-hnsw",
			notes: map[string]string{
				"B0": v.b0,
				"B1": "not applicable: FAISS has no compaction; B1 is B0 with nothing added",
				"B2": "a rebuild as an application does it: the surviving vectors reconstructed, added to a new " + v.fac + " index, written over the file in place",
			},
		}
		targets[v.typ] = tg
		residueExtra = append(residueExtra, v.typ)
	}
}

type faissBatch struct {
	vecs []float32
	ids  []int64
}

// faissID is the FAISS id of chunk i of d: documents are "s<subject>-d<doc>".
func faissID(d Doc, i int) int64 {
	var s, n int
	fmt.Sscanf(d.ID, "s%d-d%d", &s, &n)
	return (int64(s)*100+int64(n))*64 + int64(i)
}

func faissChunk(key string) int {
	id, _ := strconv.ParseInt(key, 10, 64)
	return int(id % 64)
}

func faissKeys(d Doc) []string {
	out := make([]string, len(d.Chunks))
	for i := range d.Chunks {
		out[i] = strconv.FormatInt(faissID(d, i), 10)
	}
	return out
}

func fcall(what string, f func() C.int) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if rc := f(); rc != 0 {
		msg := ""
		if p := C.faiss_get_last_error(); p != nil {
			msg = C.GoString(p)
		}
		return fmt.Errorf("faiss %s: %s", what, msg)
	}
	return nil
}

func fread(path string) (*C.FaissIndex, error) {
	cs := C.CString(path)
	defer C.free(unsafe.Pointer(cs))
	var p *C.FaissIndex
	err := fcall("read_index", func() C.int { return C.faiss_read_index_fname(cs, 0, &p) })
	return p, err
}

func fwrite(p *C.FaissIndex, path string) error {
	cs := C.CString(path)
	defer C.free(unsafe.Pointer(cs))
	return fcall("write_index", func() C.int { return C.faiss_write_index_fname(p, cs) })
}

// faissBuild writes a new index of factory fac holding vecs under ids.
func faissBuild(path, fac string, vecs []float32, ids []int64) error {
	cs := C.CString(fac)
	defer C.free(unsafe.Pointer(cs))
	var p *C.FaissIndex
	if err := fcall("index_factory", func() C.int { return C.faiss_index_factory(&p, C.int(Dim), cs, C.METRIC_L2) }); err != nil {
		return err
	}
	defer C.faiss_Index_free(p)
	if len(ids) > 0 {
		if err := fcall("add_with_ids", func() C.int {
			return C.faiss_Index_add_with_ids(p, C.idx_t(len(ids)), (*C.float)(&vecs[0]), (*C.idx_t)(unsafe.Pointer(&ids[0])))
		}); err != nil {
			return err
		}
	}
	return fwrite(p, path)
}

func parseIDs(keys []string) ([]int64, error) {
	ids := make([]int64, 0, len(keys))
	for _, k := range keys {
		id, err := strconv.ParseInt(k, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("faiss bench: key %q is not an id", k)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// faissRemove is remove_ids, then write_index over the file.
func faissRemove(path string, keys []string) error {
	ids, err := parseIDs(keys)
	if err != nil || len(ids) == 0 {
		return err
	}
	p, err := fread(path)
	if err != nil {
		return err
	}
	defer C.faiss_Index_free(p)
	var n C.size_t
	if err := fcall("remove_ids", func() C.int {
		return C.bench_remove_ids(p, C.size_t(len(ids)), (*C.idx_t)(unsafe.Pointer(&ids[0])), &n)
	}); err != nil {
		return err
	}
	return fwrite(p, path)
}

// faissRebuild reconstructs the vectors of every id not in keys and writes
// them as a new index of factory fac over the file.
func faissRebuild(path, fac string, keys []string) error {
	drop, err := parseIDs(keys)
	if err != nil {
		return err
	}
	gone := map[int64]bool{}
	for _, id := range drop {
		gone[id] = true
	}
	p, err := fread(path)
	if err != nil {
		return err
	}
	defer C.faiss_Index_free(p)
	var cids *C.idx_t
	var n C.size_t
	var sub *C.FaissIndex
	if C.bench_idmap2(p, &cids, &n, &sub) != 0 {
		return errors.New("faiss bench: the index is not IDMap2")
	}
	ids := append([]int64(nil), unsafe.Slice((*int64)(unsafe.Pointer(cids)), int(n))...)
	all := make([]float32, len(ids)*Dim)
	if len(ids) > 0 {
		if err := fcall("reconstruct_n", func() C.int {
			return C.faiss_Index_reconstruct_n(sub, 0, C.idx_t(len(ids)), (*C.float)(&all[0]))
		}); err != nil {
			return err
		}
	}
	var keepV []float32
	var keepI []int64
	for i, id := range ids {
		if !gone[id] {
			keepV = append(keepV, all[i*Dim:(i+1)*Dim]...)
			keepI = append(keepI, id)
		}
	}
	return faissBuild(path, fac, keepV, keepI)
}

// faissSearch returns the labels of the k nearest neighbours of q.
func faissSearch(path string, q []float32, k int) ([]int64, error) {
	p, err := fread(path)
	if err != nil {
		return nil, err
	}
	defer C.faiss_Index_free(p)
	if C.faiss_Index_ntotal(p) == 0 {
		return nil, nil
	}
	dist := make([]float32, k)
	labels := make([]int64, k)
	err = fcall("search", func() C.int {
		return C.faiss_Index_search(p, 1, (*C.float)(&q[0]), C.idx_t(k), (*C.float)(&dist[0]), (*C.idx_t)(unsafe.Pointer(&labels[0])))
	})
	return labels, err
}
