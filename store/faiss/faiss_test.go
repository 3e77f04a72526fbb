//go:build faiss

package faiss

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/storetest"
)

const testDim = 32

// vec is a deterministic vector for seed, distinct per seed.
func vec(seed int) []float32 {
	v := make([]float32, testDim)
	x := uint64(seed)*0x9E3779B97F4A7C15 + 1
	for i := range v {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		v[i] = float32(int64(x%2000001)-1000000) / 1000.0
	}
	return v
}

func trainSet(n int) []float32 {
	out := make([]float32, 0, n*testDim)
	for i := 0; i < n; i++ {
		out = append(out, vec(100000+i)...)
	}
	return out
}

// layouts are the index kinds the adapter supports, as an application
// creates them.
var layouts = []struct {
	name, factory string
	train         bool
	native        bool // FAISS can remove_ids on it
}{
	{"IDMap2-Flat", "IDMap2,Flat", false, true},
	{"IDMap-Flat", "IDMap,Flat", false, true},
	{"IDMap2-IVF", "IDMap2,IVF4,Flat", true, true},
	{"IDMap2-HNSW", "IDMap2,HNSW8,Flat", false, false},
}

func create(t *testing.T, factory string, train bool) *Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "index.faiss")
	var ts []float32
	if train {
		ts = trainSet(256)
	}
	if err := Create(path, factory, testDim, ts); err != nil {
		t.Fatalf("Create(%s): %v", factory, err)
	}
	s, err := Open(context.Background(), "vectors", path, testDim, "", false)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

// nativeDelete is what an application does: remove_ids, then write_index
// over the file in place.
func nativeDelete(t *testing.T, s store.Store, key string) {
	t.Helper()
	fs := s.(*Store)
	ids, _, err := fs.resolve([]string{key})
	if err != nil {
		t.Fatal(err)
	}
	ld, err := fs.load()
	if err != nil {
		t.Fatal(err)
	}
	defer ld.free()
	if _, err := ld.x.removeIDs([]int64{ids[key]}); err != nil {
		t.Fatal(err)
	}
	if err := ld.x.write(fs.path); err != nil {
		t.Fatal(err)
	}
}

func TestConformance(t *testing.T) {
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			h := storetest.Harness{
				Open: func(t *testing.T) store.Store { return create(t, l.factory, l.train) },
				Put: func(t *testing.T, s store.Store, key, _ string, seed int) {
					if err := s.(*Store).Add(context.Background(), key, int64(seed), vec(seed)); err != nil {
						t.Fatalf("Add: %v", err)
					}
				},
			}
			if l.native {
				h.NativeDelete = nativeDelete
			}
			storetest.Run(t, h)
		})
	}
}

func scanFor(t *testing.T, s *Store, ev map[string]*store.Evidence) store.ScanReport {
	t.Helper()
	rep, err := s.ProbePhysical(context.Background(), store.NewNeedleSet(ev))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Files == 0 || rep.Bytes == 0 {
		t.Fatalf("scan looked at nothing: %+v", rep)
	}
	return rep
}

// TestNativeDeleteLeavesNoBytesInFile measures FAISS's own remove_ids +
// write_index: the file it writes no longer holds the vector (write_index
// truncates and rewrites the whole file), while the live record stays
// visible, so the scan had power.
func TestNativeDeleteLeavesNoBytesInFile(t *testing.T) {
	ctx := context.Background()
	s := create(t, "IDMap2,Flat", false)
	for i := 1; i <= 3; i++ {
		if err := s.Add(ctx, strconv.Itoa(i), int64(i), vec(i)); err != nil {
			t.Fatal(err)
		}
	}
	ev, err := s.ReadEvidence(ctx, []string{"1", "2"})
	if err != nil {
		t.Fatal(err)
	}
	if rep := scanFor(t, s, ev); rep.Found["1"] == 0 || rep.Found["2"] == 0 {
		t.Fatalf("before: %v", rep.Found)
	}
	nativeDelete(t, s, "1")
	rep := scanFor(t, s, ev)
	if rep.Found["1"] != 0 {
		t.Errorf("after FAISS's own remove_ids+write_index, %d needles of the removed vector are in the file", rep.Found["1"])
	}
	if rep.Found["2"] == 0 {
		t.Errorf("live vector not found: the scan went blind")
	}
}

// TestIVFRebuildKeepsIDsRight: FAISS 1.7.3's remove_ids on an IDMap over
// IVF leaves the remaining ids pointing at other vectors; Delete rebuilds
// instead, so every survivor is still found under its own id.
func TestIVFRebuildKeepsIDsRight(t *testing.T) {
	ctx := context.Background()
	s := create(t, "IDMap2,IVF4,Flat", true)
	const n = 40
	for i := 1; i <= n; i++ {
		if err := s.Add(ctx, keyOf(i), int64(1000+i), vec(i)); err != nil {
			t.Fatal(err)
		}
	}
	// What FAISS does on its own, on a copy.
	native := filepath.Join(t.TempDir(), "native.faiss")
	copyFile(t, s.path, native)
	copyFile(t, s.path+IDMapSuffix, native+IDMapSuffix)
	ns, err := Open(ctx, "native", native, testDim, "", false)
	if err != nil {
		t.Fatal(err)
	}
	// One call only: a second remove_ids on it trips a FAISS assertion
	// that aborts the process.
	nativeDelete(t, ns, keyOf(1))
	if wrong := mislabeled(t, ns, n); wrong == 0 {
		t.Errorf("FAISS's own remove_ids on IDMap2,IVF left every id right: the reason Delete rebuilds IVF is gone, see docs/faiss.md")
	} else {
		t.Logf("FAISS's own remove_ids on IDMap2,IVF: %d survivors found under a wrong id", wrong)
	}
	// amnesia refuses to read such an index rather than take one vector
	// for another.
	if _, err := ns.ReadEvidence(ctx, []string{keyOf(5)}); err == nil || !strings.Contains(err.Error(), "not sequential") {
		t.Errorf("evidence from an IVF index FAISS's remove_ids misaligned = %v, want a refusal", err)
	}

	if err := s.Delete(ctx, []string{keyOf(1), keyOf(2)}); err != nil {
		t.Fatal(err)
	}
	if wrong := mislabeled(t, s, n); wrong != 0 {
		t.Errorf("after Delete, %d surviving vectors are found under another id", wrong)
	}
	res, err := s.ProbeLogical(ctx, []string{keyOf(1), keyOf(3)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].ByID || !res[1].ByID {
		t.Errorf("by id: deleted found=%v, survivor found=%v", res[0].ByID, res[1].ByID)
	}
}

func keyOf(i int) string { return "doc-" + string(rune('a'+i/26)) + string(rune('a'+i%26)) }

// mislabeled counts survivors 3..n whose own vector's nearest neighbour is
// not their own id.
func mislabeled(t *testing.T, s *Store, n int) int {
	t.Helper()
	ld, err := s.load()
	if err != nil {
		t.Fatal(err)
	}
	defer ld.free()
	_, sub, _ := ld.x.idMap(ld.l.wrapper)
	if ld.l.sub == "IVF" {
		if err := sub.ivfProbeAll(); err != nil {
			t.Fatal(err)
		}
	}
	wrong := 0
	for i := 3; i <= n; i++ {
		l, err := ld.x.search(vec(i), 1)
		if err != nil {
			t.Fatal(err)
		}
		if l[0] != int64(1000+i) {
			wrong++
		}
	}
	return wrong
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestLeftoverTempFileIsScannedAndRemoved: a temp file an interrupted
// rewrite left beside the index holds vectors; the physical probe finds
// them there and Reclaim overwrites the file with zeros and removes it.
func TestLeftoverTempFileIsScannedAndRemoved(t *testing.T) {
	ctx := context.Background()
	s := create(t, "IDMap2,Flat", false)
	for i := 1; i <= 2; i++ {
		if err := s.Add(ctx, strconv.Itoa(i), int64(i), vec(i)); err != nil {
			t.Fatal(err)
		}
	}
	ev, err := s.ReadEvidence(ctx, []string{"1"})
	if err != nil {
		t.Fatal(err)
	}
	leftover := filepath.Join(filepath.Dir(s.path), ".index.faiss"+tmpMark+"deadbeef")
	copyFile(t, s.path, leftover)
	if err := s.Delete(ctx, []string{"1"}); err != nil {
		t.Fatal(err)
	}
	if rep := scanFor(t, s, ev); rep.Found["1"] == 0 || rep.Files != 2 {
		t.Fatalf("the leftover temp file was not scanned: %+v", rep)
	}
	// A second name for the temp file's inode shows what Reclaim left in
	// its blocks: an unlink alone would leave the vectors there.
	blocks := filepath.Join(t.TempDir(), "blocks")
	if err := os.Link(leftover, blocks); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	rr, err := s.Reclaim(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Errorf("Reclaim left the temp file: %v", err)
	}
	if !strings.Contains(rr.Steps[1], "shredded 1 leftover") {
		t.Errorf("steps = %q", rr.Steps)
	}
	b, err := os.ReadFile(blocks)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 || !bytes.Equal(b, make([]byte, len(b))) {
		t.Errorf("the temp file's %d bytes were not overwritten with zeros before it was unlinked", len(b))
	}
	if rep := scanFor(t, s, ev); rep.Found["1"] != 0 {
		t.Errorf("after Reclaim %d needles remain", rep.Found["1"])
	}
}

func TestDecimalKeys(t *testing.T) {
	ctx := context.Background()
	s := create(t, "IDMap2,Flat", false)
	if err := s.Add(ctx, "7", 7, vec(7)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.path + IDMapSuffix); !os.IsNotExist(err) {
		t.Fatalf("decimal keys wrote an id map: %v", err)
	}
	res, err := s.ProbeLogical(ctx, []string{"7", "8"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].ByID || res[1].ByID {
		t.Fatalf("by id: %+v", res)
	}
	err = s.Delete(ctx, []string{"person-secret-key"})
	if err == nil || !strings.Contains(err.Error(), "not a decimal FAISS id") || strings.Contains(err.Error(), "person-secret-key") {
		t.Fatalf("non-decimal key without an id map: %v", err)
	}
	if err := s.Delete(ctx, []string{"7"}); err != nil {
		t.Fatal(err)
	}
	if res, _ := s.ProbeLogical(ctx, []string{"7"}, nil); res[0].ByID {
		t.Fatalf("7 still found")
	}
}

func TestIDMapFileDropsDeletedKeys(t *testing.T) {
	ctx := context.Background()
	s := create(t, "IDMap2,Flat", false)
	for i := 1; i <= 2; i++ {
		if err := s.Add(ctx, keyOf(i), int64(i), vec(i)); err != nil {
			t.Fatal(err)
		}
	}
	ev, err := s.ReadEvidence(ctx, []string{keyOf(1)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, []string{keyOf(1)}); err != nil {
		t.Fatal(err)
	}
	m, err := s.readIDMap()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m[keyOf(1)]; ok || m[keyOf(2)] != 2 {
		t.Fatalf("id map after delete = %v", m)
	}
	// The id the evidence recorded is probed too: put the vector back
	// under its old id but no key, as an application replaying an old
	// batch would, and the probe sees it.
	ld, err := s.load()
	if err != nil {
		t.Fatal(err)
	}
	if err := ld.x.addWithIDs(vec(1), []int64{1}); err != nil {
		t.Fatal(err)
	}
	if err := ld.x.write(s.path); err != nil {
		t.Fatal(err)
	}
	ld.free()
	res, err := s.ProbeLogical(ctx, []string{keyOf(1)}, ev)
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].ByID || !res[0].BySimilarity {
		t.Fatalf("resurrected vector under the recorded id not found: %+v", res[0])
	}
}

func TestUnsupportedIndexes(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ factory, want string }{
		{"Flat", "IDMap or IDMap2"},
		{"IDMap2,PQ4x4", "Flat, IVF-Flat and HNSW-Flat"},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(c.factory, ",", "_")+".faiss")
		x, err := factory(testDim, c.factory, 1)
		if err != nil {
			t.Fatal(err)
		}
		if !x.trained() {
			if err := x.train(trainSet(300)); err != nil {
				t.Fatal(err)
			}
		}
		if err := x.write(path); err != nil {
			t.Fatal(err)
		}
		x.free()
		_, err = Open(context.Background(), "v", path, testDim, "", false)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%s) = %v, want an error naming %q", c.factory, err, c.want)
		}
	}
	s := create(t, "IDMap2,Flat", false)
	if _, err := Open(context.Background(), "v", s.path, testDim+1, "", false); err == nil || !strings.Contains(err.Error(), "dimensions") {
		t.Errorf("dimension mismatch: %v", err)
	}
	if _, err := Open(context.Background(), "v", filepath.Join(dir, "missing.faiss"), testDim, "", false); err == nil || !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("missing file: %v, want ErrUnavailable", err)
	}
}

func TestReclaimSaysDocstoreIsNotCovered(t *testing.T) {
	ctx := context.Background()
	s := create(t, "IDMap2,Flat", false)
	rr, err := s.Reclaim(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rr.Method, "vectors only") || !strings.Contains(rr.Method, "not covered") {
		t.Errorf("method = %q", rr.Method)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(s.path), "index.pkl"), []byte("pickle"), 0o600); err != nil {
		t.Fatal(err)
	}
	rr, err = s.Reclaim(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rr.Method, "index.pkl") || !strings.Contains(rr.Method, "NOT covered") {
		t.Errorf("method with a docstore beside the index = %q", rr.Method)
	}
}

func TestRegistry(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v.faiss")
	c := store.Config{Name: "vectors", Type: Type, Path: path, Dimensions: testDim}
	if err := store.Validate(store.Config{Name: "v", Type: Type, Path: path}); err == nil {
		t.Errorf("Validate without dimensions passed")
	}
	if _, err := store.Open(ctx, c, false); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("open missing: %v", err)
	}
	s, err := store.Open(ctx, c, true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Info().Type != Type {
		t.Fatalf("type %q", s.Info().Type)
	}
	if l, err := readLayout(path); err != nil || l.String() != "IDMap2,Flat" {
		t.Fatalf("created %v, %v", l, err)
	}
	c.Schema = "IDMap2,IVF4,Flat"
	c.Path = filepath.Join(t.TempDir(), "ivf.faiss")
	if _, err := store.Open(ctx, c, true); err == nil || !strings.Contains(err.Error(), "needs training") {
		t.Fatalf("creating an untrained IVF: %v", err)
	}
}

// TestLinks: the rewrite goes to the file a symbolic link names (renaming
// over the link would leave the old file whole), and an index file with
// another hard link is refused (the old content would live on under it).
func TestLinks(t *testing.T) {
	ctx := context.Background()
	s := create(t, "IDMap2,Flat", false)
	for i := 1; i <= 2; i++ {
		if err := s.Add(ctx, strconv.Itoa(i), int64(i), vec(i)); err != nil {
			t.Fatal(err)
		}
	}
	ev, err := s.ReadEvidence(ctx, []string{"1"})
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link.faiss")
	if err := os.Symlink(s.path, link); err != nil {
		t.Fatal(err)
	}
	ls, err := Open(ctx, "v", link, testDim, "", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := ls.Delete(ctx, []string{"1"}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symbolic link was replaced: %v", err)
	}
	if rep := scanFor(t, s, ev); rep.Found["1"] != 0 {
		t.Errorf("the file behind the link still holds %d needles", rep.Found["1"])
	}

	hard := filepath.Join(filepath.Dir(s.path), "hard.faiss")
	if err := os.Link(s.path, hard); err != nil {
		t.Fatal(err)
	}
	err = s.Delete(ctx, []string{"2"})
	if err == nil || !strings.Contains(err.Error(), "hard links") {
		t.Fatalf("Delete with a second hard link = %v", err)
	}
	if res, _ := s.ProbeLogical(ctx, []string{"2"}, nil); !res[0].ByID {
		t.Errorf("a refused Delete still deleted")
	}
}

// TestLockSerializesRewrites: two amnesia processes (two Stores on one
// file) erasing different ids at once both succeed; without the lock the
// later rename would bring back what the other removed. A lock held past
// lock_timeout makes Delete fail with store.ErrBusy and change nothing.
func TestLockSerializesRewrites(t *testing.T) {
	ctx := context.Background()
	a := create(t, "IDMap2,Flat", false)
	const n = 40
	for i := 1; i <= n; i++ {
		if err := a.Add(ctx, strconv.Itoa(i), int64(i), vec(i)); err != nil {
			t.Fatal(err)
		}
	}
	b, err := Open(ctx, "vectors", a.path, testDim, "", false)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	go func() {
		for i := 1; i <= n/2; i += 2 {
			if err := a.Delete(ctx, []string{strconv.Itoa(i)}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	go func() {
		for i := 2; i <= n/2; i += 2 {
			if err := b.Delete(ctx, []string{strconv.Itoa(i)}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for i := 0; i < 2; i++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	keys := make([]string, n)
	for i := range keys {
		keys[i] = strconv.Itoa(i + 1)
	}
	res, err := a.ProbeLogical(ctx, keys, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.ByID != (i+1 > n/2) {
			t.Errorf("id %d: found=%v after concurrent deletes", i+1, r.ByID)
		}
	}

	// Hold the lock as another process would.
	f, err := os.OpenFile(filepath.Join(filepath.Dir(a.path), ".index.faiss"+lockMark), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	a.lockWait = 200 * time.Millisecond
	if err := a.Delete(ctx, []string{"30"}); !errors.Is(err, store.ErrBusy) {
		t.Fatalf("Delete under another process's lock = %v, want store.ErrBusy", err)
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	if err := a.Delete(ctx, []string{"30"}); err != nil {
		t.Fatal(err)
	}
}

// TestVectorsOutsideTheFile: a file smaller than its vectors (truncated,
// or with on-disk inverted lists in another file) is refused: neither the
// rewrite nor the byte scan would reach the vectors.
func TestVectorsOutsideTheFile(t *testing.T) {
	ctx := context.Background()
	s := create(t, "IDMap2,Flat", false)
	for i := 1; i <= 20; i++ {
		if err := s.Add(ctx, strconv.Itoa(i), int64(i), vec(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Truncate(s.path, 1000); err != nil {
		t.Fatal(err)
	}
	_, err := Open(ctx, "v", s.path, testDim, "", false)
	if err == nil || !strings.Contains(err.Error(), "less than its 20 vectors need") {
		t.Fatalf("Open of a file smaller than its vectors = %v", err)
	}
}

// TestRewriteKeepsOwnerAndMode: the rewritten file keeps the owner and
// permissions of the one the application saved (amnesia may run as root).
func TestRewriteKeepsOwnerAndMode(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the file another owner")
	}
	ctx := context.Background()
	s := create(t, "IDMap2,Flat", false)
	for i := 1; i <= 2; i++ {
		if err := s.Add(ctx, strconv.Itoa(i), int64(i), vec(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(s.path, 12345, 23456); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(s.path, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, []string{"1"}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(s.path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if st.Uid != 12345 || st.Gid != 23456 || fi.Mode().Perm() != 0o640 {
		t.Errorf("after the rewrite: owner %d:%d mode %v, want 12345:23456 -rw-r-----", st.Uid, st.Gid, fi.Mode().Perm())
	}
}

// The readiness check refuses a missing file and a wrong dimension, and
// passes a real index, without opening it through FAISS.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "idx.faiss")
	if err := Create(path, "IDMap2,Flat", 8, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		c    store.Config
		want string
	}{
		{store.Config{Name: "v", Type: Type, Path: path, Dimensions: 8}, ""},
		{store.Config{Name: "v", Type: Type, Path: path, Dimensions: 16}, "8-dimension vectors"},
		{store.Config{Name: "v", Type: Type, Path: filepath.Join(dir, "missing.faiss"), Dimensions: 8}, "does not exist"},
	} {
		ps := Check(context.Background(), tc.c)
		switch {
		case tc.want == "" && len(ps) != 0:
			t.Errorf("%+v: problems %v, want none", tc.c, ps)
		case tc.want != "" && (len(ps) != 1 || !strings.Contains(ps[0].Message, tc.want)):
			t.Errorf("%+v: problems %v, want one naming %q", tc.c, ps, tc.want)
		}
	}
}

// The probe searches every key's vector in one batched FAISS search: on
// each supported index kind, each query's own id comes first in its own
// answer (the answers are not shifted between queries), a deleted record is
// not found by similarity, and every survivor is.
func TestProbeSearchesAllKeysInOneBatch(t *testing.T) {
	ctx := context.Background()
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			s := create(t, l.factory, l.train)
			const n = 45 // above FAISS's BLAS threshold for a batch (20)
			var keys []string
			for i := 1; i <= n; i++ {
				if err := s.Add(ctx, keyOf(i), int64(1000+i), vec(i)); err != nil {
					t.Fatal(err)
				}
				keys = append(keys, keyOf(i))
			}
			ld, err := s.load()
			if err != nil {
				t.Fatal(err)
			}
			if ld.l.sub == "IVF" {
				_, x, _ := ld.x.idMap(ld.l.wrapper)
				if err := x.ivfProbeAll(); err != nil {
					t.Fatal(err)
				}
			}
			var qs [][]float32
			for i := 1; i <= n; i++ {
				qs = append(qs, vec(i))
			}
			labels, err := ld.x.searchMany(qs, SimilarityK)
			ld.free()
			if err != nil {
				t.Fatal(err)
			}
			for j := range qs {
				if len(labels[j]) != SimilarityK || labels[j][0] != int64(1001+j) {
					t.Fatalf("query %d: labels %v, want %d first", j, labels[j], 1001+j)
				}
			}
			ev, err := s.ReadEvidence(ctx, keys)
			if err != nil {
				t.Fatal(err)
			}
			gone := []string{keyOf(2), keyOf(30)}
			if err := s.Delete(ctx, gone); err != nil {
				t.Fatal(err)
			}
			res, err := s.ProbeLogical(ctx, keys, ev)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range res {
				erased := slices.Contains(gone, keys[i])
				if r.Key != keys[i] || r.BySimilarity == erased || r.ByID == erased {
					t.Errorf("%s (erased %v): probe %+v", keys[i], erased, r)
				}
			}
		})
	}
}
