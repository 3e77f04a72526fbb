//go:build faiss

package faiss

/*
#cgo LDFLAGS: -lfaiss_c -lfaiss -lopenblas -lgomp -lstdc++ -lm
#include <stdlib.h>
#include <c_api/Index_c.h>
#include <c_api/IndexIVF_c.h>
#include <c_api/MetaIndexes_c.h>
#include <c_api/index_io_c.h>
#include <c_api/index_factory_c.h>
#include <c_api/clone_index_c.h>
#include <c_api/error_c.h>
#include <c_api/impl/AuxIndexStructures_c.h>

// amn_idmap returns the id map and the sub-index of an IDMap (kind 1) or
// IDMap2 (kind 2) wrapper, or -1 when idx is not of that kind.
static int amn_idmap(FaissIndex* idx, int kind, idx_t** ids, size_t* n, FaissIndex** sub) {
	if (kind == 2) {
		FaissIndexIDMap2* m = faiss_IndexIDMap2_cast(idx);
		if (!m) return -1;
		faiss_IndexIDMap2_id_map(m, ids, n);
		*sub = faiss_IndexIDMap2_sub_index(m);
		return 0;
	}
	FaissIndexIDMap* m = faiss_IndexIDMap_cast(idx);
	if (!m) return -1;
	faiss_IndexIDMap_id_map(m, ids, n);
	*sub = faiss_IndexIDMap_sub_index(m);
	return 0;
}

static int amn_remove_ids(FaissIndex* idx, size_t n, const idx_t* ids, size_t* removed) {
	FaissIDSelectorBatch* sel = NULL;
	int rc = faiss_IDSelectorBatch_new(&sel, n, ids);
	if (rc) return rc;
	rc = faiss_Index_remove_ids(idx, (const FaissIDSelector*)sel, removed);
	faiss_IDSelector_free((FaissIDSelector*)sel);
	return rc;
}

static int amn_ivf_direct_map(FaissIndex* idx, int on) {
	FaissIndexIVF* ivf = faiss_IndexIVF_cast(idx);
	if (!ivf) return -1;
	return faiss_IndexIVF_make_direct_map(ivf, on);
}

static int amn_ivf_nprobe_all(FaissIndex* idx) {
	FaissIndexIVF* ivf = faiss_IndexIVF_cast(idx);
	if (!ivf) return -1;
	faiss_IndexIVF_set_nprobe(ivf, faiss_IndexIVF_nlist(ivf));
	return 0;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"
)

// call runs one FAISS C API call on a locked OS thread, so that the
// thread-local last error belongs to it.
func call(what string, f func() C.int) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if rc := f(); rc != 0 {
		msg := ""
		if p := C.faiss_get_last_error(); p != nil {
			msg = C.GoString(p)
		}
		if msg == "" {
			msg = fmt.Sprintf("error code %d", int(rc))
		}
		return fmt.Errorf("faiss %s: %s", what, firstLine(msg))
	}
	return nil
}

// firstLine keeps FAISS's error to its first non-empty line (its messages
// name the C++ function and source line, never vector content).
func firstLine(s string) string {
	for len(s) > 0 && (s[0] == '\n' || s[0] == ' ') {
		s = s[1:]
	}
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			return s[:i]
		}
	}
	return s
}

// cindex is an index in C memory.
type cindex struct{ p *C.FaissIndex }

func (x *cindex) free() {
	if x != nil && x.p != nil {
		C.faiss_Index_free(x.p)
		x.p = nil
	}
}

func readIndex(path string) (*cindex, error) {
	cs := C.CString(path)
	defer C.free(unsafe.Pointer(cs))
	var p *C.FaissIndex
	if err := call("read_index", func() C.int { return C.faiss_read_index_fname(cs, 0, &p) }); err != nil {
		return nil, err
	}
	return &cindex{p: p}, nil
}

func (x *cindex) write(path string) error {
	cs := C.CString(path)
	defer C.free(unsafe.Pointer(cs))
	return call("write_index", func() C.int { return C.faiss_write_index_fname(x.p, cs) })
}

func factory(dim int, desc string, metric int) (*cindex, error) {
	cs := C.CString(desc)
	defer C.free(unsafe.Pointer(cs))
	var p *C.FaissIndex
	if err := call("index_factory", func() C.int { return C.faiss_index_factory(&p, C.int(dim), cs, C.FaissMetricType(metric)) }); err != nil {
		return nil, err
	}
	return &cindex{p: p}, nil
}

func (x *cindex) clone() (*cindex, error) {
	var p *C.FaissIndex
	if err := call("clone_index", func() C.int { return C.faiss_clone_index(x.p, &p) }); err != nil {
		return nil, err
	}
	return &cindex{p: p}, nil
}

func (x *cindex) dim() int      { return int(C.faiss_Index_d(x.p)) }
func (x *cindex) ntotal() int64 { return int64(C.faiss_Index_ntotal(x.p)) }
func (x *cindex) trained() bool { return C.faiss_Index_is_trained(x.p) != 0 }
func (x *cindex) metric() int   { return int(C.faiss_Index_metric_type(x.p)) }
func (x *cindex) reset() error {
	return call("reset", func() C.int { return C.faiss_Index_reset(x.p) })
}
func (x *cindex) isNil() bool    { return x == nil || x.p == nil }
func (x *cindex) String() string { return fmt.Sprintf("faiss index d=%d n=%d", x.dim(), x.ntotal()) }

func (x *cindex) train(vecs []float32) error {
	n := len(vecs) / x.dim()
	if n == 0 {
		return errors.New("faiss train: no training vectors")
	}
	return call("train", func() C.int { return C.faiss_Index_train(x.p, C.idx_t(n), (*C.float)(&vecs[0])) })
}

func (x *cindex) addWithIDs(vecs []float32, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	return call("add_with_ids", func() C.int {
		return C.faiss_Index_add_with_ids(x.p, C.idx_t(len(ids)), (*C.float)(&vecs[0]), (*C.idx_t)(unsafe.Pointer(&ids[0])))
	})
}

func (x *cindex) removeIDs(ids []int64) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	var n C.size_t
	err := call("remove_ids", func() C.int {
		return C.amn_remove_ids(x.p, C.size_t(len(ids)), (*C.idx_t)(unsafe.Pointer(&ids[0])), &n)
	})
	return int(n), err
}

// search returns the labels of the k nearest neighbours of q (-1 for none).
func (x *cindex) search(q []float32, k int) ([]int64, error) {
	dist := make([]float32, k)
	labels := make([]int64, k)
	err := call("search", func() C.int {
		return C.faiss_Index_search(x.p, 1, (*C.float)(&q[0]), C.idx_t(k), (*C.float)(&dist[0]), (*C.idx_t)(unsafe.Pointer(&labels[0])))
	})
	return labels, err
}

// searchMany returns, for each query of qs (each of x's dimension), the
// labels of its k nearest neighbours (-1 for none): one call of FAISS's own
// batched search, which answers each query as a search of it alone would
// by the index's algorithm (an exhaustive index may compute the distances
// of a batch with BLAS).
func (x *cindex) searchMany(qs [][]float32, k int) ([][]int64, error) {
	if len(qs) == 0 || k <= 0 {
		return make([][]int64, len(qs)), nil
	}
	d := x.dim()
	flat := make([]float32, 0, len(qs)*d)
	for _, q := range qs {
		if len(q) != d {
			return nil, fmt.Errorf("faiss search: a query of %d dimensions, the index has %d", len(q), d)
		}
		flat = append(flat, q...)
	}
	dist := make([]float32, len(qs)*k)
	labels := make([]int64, len(qs)*k)
	err := call("search", func() C.int {
		return C.faiss_Index_search(x.p, C.idx_t(len(qs)), (*C.float)(&flat[0]), C.idx_t(k), (*C.float)(&dist[0]), (*C.idx_t)(unsafe.Pointer(&labels[0])))
	})
	if err != nil {
		return nil, err
	}
	out := make([][]int64, len(qs))
	for i := range out {
		out[i] = labels[i*k : (i+1)*k : (i+1)*k]
	}
	return out, nil
}

// reconstructN returns the vectors at positions [0, n) of x.
func (x *cindex) reconstructN(n int) ([]float32, error) {
	out := make([]float32, n*x.dim())
	if n == 0 {
		return out, nil
	}
	err := call("reconstruct_n", func() C.int {
		return C.faiss_Index_reconstruct_n(x.p, 0, C.idx_t(n), (*C.float)(&out[0]))
	})
	return out, err
}

// idMap returns a copy of the ids of an IDMap (kind 1) or IDMap2 (kind 2)
// wrapper and a borrowed handle on its sub-index (not to be freed).
func (x *cindex) idMap(kind int) ([]int64, *cindex, error) {
	var ids *C.idx_t
	var n C.size_t
	var sub *C.FaissIndex
	if C.amn_idmap(x.p, C.int(kind), &ids, &n, &sub) != 0 {
		return nil, nil, errors.New("faiss: the index is not the IDMap wrapper its header names")
	}
	out := make([]int64, int(n))
	if n > 0 {
		copy(out, unsafe.Slice((*int64)(unsafe.Pointer(ids)), int(n)))
	}
	return out, &cindex{p: sub}, nil
}

// ivfDirectMap turns an IVF index's direct map on or off.
func (x *cindex) ivfDirectMap(on bool) error {
	v := C.int(0)
	if on {
		v = 1
	}
	return call("make_direct_map", func() C.int { return C.amn_ivf_direct_map(x.p, v) })
}

// ivfProbeAll makes searches on an IVF index visit every inverted list.
func (x *cindex) ivfProbeAll() error {
	if C.amn_ivf_nprobe_all(x.p) != 0 {
		return errors.New("faiss: not an IVF index")
	}
	return nil
}
