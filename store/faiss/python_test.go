//go:build faiss

package faiss

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// appScript is what a Python application does with Debian's python3-faiss:
// build an index with ids, save it with faiss.write_index and keep its texts
// in a pickle beside it (as LangChain's save_local does). "check" reads the
// file back after amnesia erased some ids.
const appScript = `
import sys, pickle
import numpy as np
import faiss

mode, path, factory = sys.argv[1], sys.argv[2], sys.argv[3]
d, n, base = 32, 50, 5000
x = np.random.default_rng(7).standard_normal((n, d)).astype('float32')
ids = np.arange(base, base + n).astype('int64')

def sub_of(idx):
    sub = faiss.downcast_index(idx.index)
    if isinstance(sub, faiss.IndexIVF):
        sub.nprobe = sub.nlist
        sub.make_direct_map()
    if isinstance(sub, faiss.IndexHNSW):
        sub.hnsw.efSearch = 64
    return sub

if mode == 'write':
    idx = faiss.index_factory(d, factory)
    if not idx.is_trained:
        idx.train(np.random.default_rng(8).standard_normal((1000, d)).astype('float32'))
    idx.add_with_ids(x, ids)
    faiss.write_index(idx, path)
    with open(path[:-len('.faiss')] + '.pkl', 'wb') as f:
        pickle.dump({int(i): 'synthetic text %d' % i for i in ids}, f)
    print('wrote', idx.ntotal)
    sys.exit(0)

gone = set(int(a) for a in sys.argv[4].split(','))
idx = faiss.read_index(path)
live = [int(i) for i in faiss.vector_to_array(idx.id_map)]
want = [int(i) for i in ids if int(i) not in gone]
if sorted(live) != want:
    sys.exit('ids after erasure: %d live, want %d; erased still present: %s' % (len(live), len(want), sorted(gone & set(live))))
sub = sub_of(idx)
for pos, i in enumerate(live):
    if not np.array_equal(sub.reconstruct(pos), x[i - base]):
        sys.exit('vector of surviving id %d changed' % i)
D, I = idx.search(x[[g - base for g in sorted(gone)]], 10)
if set(int(l) for l in I.ravel()) & gone:
    sys.exit('a search with an erased vector still returns its id')
D, I = idx.search(x[[i - base for i in want]], 1)
wrong = [w for w, l in zip(want, I[:, 0]) if int(l) != w]
if wrong:
    sys.exit('%d surviving vectors are found under another id' % len(wrong))
print('ok', idx.ntotal)
`

// python returns a Python interpreter that imports Debian's faiss, or skips.
func python(t *testing.T) string {
	t.Helper()
	cands := []string{"/usr/bin/python3"}
	if p, err := exec.LookPath("python3"); err == nil {
		cands = append(cands, p)
	}
	for _, p := range cands {
		if exec.Command(p, "-c", "import faiss, numpy").Run() == nil {
			return p
		}
	}
	t.Skip("python3-faiss is not importable (tried /usr/bin/python3 and python3 on PATH): apt-get install -y python3-faiss python3-numpy")
	return ""
}

// TestPythonWrittenIndexes: Debian's python3-faiss writes each supported
// kind of index file, as an application does; amnesia erases two ids; Python
// reads the file back and finds them gone and every other vector intact
// under its own id; the byte scan finds the erased vectors' bytes before
// and none after, while it still finds the survivors'.
func TestPythonWrittenIndexes(t *testing.T) {
	py := python(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "app.py")
	if err := os.WriteFile(script, []byte(appScript), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(py, append([]string{script}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("python %s: %v\n%s", args[0], err, out)
		}
		return string(out)
	}
	for _, fac := range []string{"IDMap2,Flat", "IDMap,Flat", "IDMap2,IVF8,Flat", "IDMap,IVF8,Flat", "IDMap2,HNSW16,Flat"} {
		t.Run(strings.ReplaceAll(fac, ",", "-"), func(t *testing.T) {
			ctx := context.Background()
			sub := filepath.Join(dir, strings.ReplaceAll(fac, ",", "_"))
			if err := os.Mkdir(sub, 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(sub, "index.faiss")
			run("write", path, fac)
			s, err := Open(ctx, "app", path, 32, "", false)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			erase := []string{"5003", "5017"}
			keep := []string{"5000", "5025", "5049"}
			ev, err := s.ReadEvidence(ctx, erase)
			if err != nil {
				t.Fatal(err)
			}
			evKeep, err := s.ReadEvidence(ctx, keep)
			if err != nil {
				t.Fatal(err)
			}
			if len(ev) != 2 || len(evKeep) != 3 {
				t.Fatalf("evidence for %d and %d keys, want 2 and 3", len(ev), len(evKeep))
			}
			for k, e := range evKeep {
				ev[k] = e
			}
			before := scanFor(t, s, ev)
			for _, k := range append(erase, keep...) {
				if before.Found[k] == 0 {
					t.Fatalf("before erasure the scan does not find %s: no power (%v)", k, before.Found)
				}
			}
			if res, err := s.ProbeLogical(ctx, erase, ev); err != nil || !res[0].ByID || !res[0].BySimilarity {
				t.Fatalf("live record not found by id and similarity: %+v %v", res, err)
			}
			if err := s.Delete(ctx, erase); err != nil {
				t.Fatal(err)
			}
			rr, err := s.Reclaim(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(rr.Method, "index.pkl") || !strings.Contains(rr.Method, "NOT covered") {
				t.Errorf("reclaim method does not say the pickle docstore is not covered: %q", rr.Method)
			}
			after := scanFor(t, s, ev)
			for _, k := range erase {
				if after.Found[k] != 0 {
					t.Errorf("after erasure %d needles of %s remain in the index file", after.Found[k], k)
				}
			}
			for _, k := range keep {
				if after.Found[k] == 0 {
					t.Errorf("survivor %s no longer found: the scan went blind", k)
				}
			}
			res, err := s.ProbeLogical(ctx, erase, ev)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res {
				if r.Found() {
					t.Errorf("erased %s still returned: %+v", r.Key, r)
				}
			}
			out := run("check", path, fac, strings.Join(erase, ","))
			if !strings.HasPrefix(out, "ok 48") {
				t.Errorf("python check: %s", out)
			}
		})
	}
}
