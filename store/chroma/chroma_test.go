package chroma_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/amnesia-dev/amnesia/capture/backend"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/chroma"
	"github.com/amnesia-dev/amnesia/store/storetest"
)

const dim = 24

// server returns the test server's URL and persist directory, or skips.
func server(t *testing.T) (string, string) {
	t.Helper()
	u, d := os.Getenv("AMNESIA_TEST_CHROMA_URL"), os.Getenv("AMNESIA_TEST_CHROMA_DIR")
	if u == "" || d == "" {
		t.Skip("AMNESIA_TEST_CHROMA_URL and AMNESIA_TEST_CHROMA_DIR are not set: start the Chroma server with eval \"$(scripts/services start)\" (chromadb's `chroma run`)")
	}
	return u, d
}

// nonce makes this process's content unique: the persist directory is
// shared by every run, and bytes an earlier run left must not be mistaken
// for this one's.
var nonce = func() string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}()

// The persist directory holds every collection of every test (and of
// earlier runs): a record's content and vector are unique to its
// collection and seed, with no 32-byte run of text another record shares,
// so that a window found after deletion is this record's.
func vector(coll string, seed int) []float32 {
	h := sha256.Sum256([]byte(fmt.Sprintf("%s|%s|%d", nonce, coll, seed)))
	off := float32(binary.LittleEndian.Uint32(h[:])%100000) / 1e5
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(math.Sin(float64(seed*dim+i)*1.37)) + float32(seed)*1e-3 + off
	}
	return v
}

func content(coll string, seed int) string {
	h := fmt.Sprintf("%x", sha256.Sum256([]byte(fmt.Sprintf("%s|%s|%d", nonce, coll, seed))))
	return fmt.Sprintf("note %s: patient %s visits clinic %s on day %d; phone %s; %s", h[0:12], h[12:24], h[24:36], seed, h[36:48], h[48:64])
}

var unsafeName = regexp.MustCompile(`[^a-zA-Z0-9.-]+`)

// collName is a collection name unique to the test and this run.
func collName(t *testing.T) string {
	n := strings.Trim(unsafeName.ReplaceAllString(t.Name(), "-"), "-.")
	if len(n) > 80 {
		n = n[len(n)-80:]
	}
	return "t" + nonce + "-" + strings.Trim(n, "-.")
}

// persisted makes hnswlib write its index to data_level0.bin every two
// operations (the default, 1000, keeps a small collection's vectors in the
// SQLite queue only).
var persisted = map[string]any{"hnsw": map[string]any{"sync_threshold": 2, "batch_size": 2}}

func open(t *testing.T, conf map[string]any, mut ...func(*chroma.Options)) *chroma.Store {
	t.Helper()
	u, d := server(t)
	o := chroma.Options{Name: "memory", DSN: u, Collection: collName(t), DataDir: d, Configuration: conf}
	for _, m := range mut {
		m(&o)
	}
	s, err := chroma.Open(context.Background(), o, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Dropped, not kept: a live collection's index files can hold
		// other tests' bytes (see TestChromaReclaimZeroesUnusedSlots);
		// the next Reclaim removes the orphaned directory.
		s.DeleteCollection(context.Background())
		s.Close()
	})
	return s
}

func put(t *testing.T, s *chroma.Store, key, tag string, seed int) {
	t.Helper()
	if err := s.Put(context.Background(), chroma.Record{ID: key, Subject: tag, Document: content(s.Collection(), seed), Embedding: vector(s.Collection(), seed), Metadata: map[string]any{"page": seed, "score": json.Number("1.0"), "ok": true}}); err != nil {
		t.Fatal(err)
	}
}

func TestChromaConformance(t *testing.T) {
	for _, tc := range []struct {
		name string
		conf map[string]any
	}{
		{"default", nil},
		{"hnsw-persisted", persisted},
		{"cosine-persisted", map[string]any{"hnsw": map[string]any{"space": "cosine", "sync_threshold": 2, "batch_size": 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Run(t, storetest.Harness{
				Open: func(t *testing.T) store.Store { return open(t, tc.conf) },
				Put: func(t *testing.T, s store.Store, key, tag string, seed int) {
					put(t, s.(*chroma.Store), key, tag, seed)
				},
				NativeDelete: func(t *testing.T, s store.Store, key string) {
					// What an application does: Chroma's delete, nothing else.
					if err := s.Delete(context.Background(), []string{key}); err != nil {
						t.Fatal(err)
					}
				},
				NativeLeavesBytes: true,
			})
		})
	}
}

// segmentFiles returns the files of the collection's HNSW segment
// directory, read from chroma.sqlite3's segments table.
func segmentFiles(t *testing.T, s *chroma.Store) []string {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(s.DataDir(), chroma.SQLiteFile)+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var seg string
	err = db.QueryRow(`SELECT s.id FROM segments s JOIN collections c ON c.id = s.collection WHERE c.name = ? AND s.scope = 'VECTOR'`, s.Collection()).Scan(&seg)
	if err != nil {
		t.Fatalf("find the collection's vector segment: %v", err)
	}
	dir := filepath.Join(s.DataDir(), seg)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("segment directory %s: %v (did hnswlib persist?)", dir, err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, filepath.Join(dir, e.Name()))
	}
	return out
}

// vectorOnly keeps of ev's needles those cut from the vector encodings.
// vectorOnly returns needles of the vector written for seed, as hnswlib
// stores it.
func vectorOnly(s *chroma.Store, key string, seed int, cosine bool) map[string]*store.Evidence {
	v := vector(s.Collection(), seed)
	e := &store.Evidence{Key: key}
	if cosine {
		e.AddWindows(store.Float32LE(chroma.Normalize(v)))
	} else {
		e.AddWindows(store.Float32LE(v))
	}
	return map[string]*store.Evidence{key: e}
}

// The needles are in Chroma's encodings: before deletion, the vector's
// float32 little-endian windows are in the collection's data_level0.bin
// (normalised in a cosine collection), the document's in chroma.sqlite3.
// After Chroma's own delete they are still there; after amnesia's Delete
// and Reclaim none is anywhere in the persist directory, while a surviving
// record is still found, by every query path and by the scan.
func TestChromaNativeDeleteLeavesBytesReclaimRemovesThem(t *testing.T) {
	ctx := context.Background()
	for _, space := range []string{"l2", "cosine"} {
		t.Run(space, func(t *testing.T) {
			s := open(t, map[string]any{"hnsw": map[string]any{"space": space, "sync_threshold": 2, "batch_size": 2}})
			for i := 0; i < 8; i++ {
				put(t, s, fmt.Sprintf("rec-%d", i), fmt.Sprintf("tag-%d", i%2), 100+i)
			}
			vec := vectorOnly(s, "rec-1", 101, space == "cosine")
			files := segmentFiles(t, s)
			var level0 string
			for _, f := range files {
				if filepath.Base(f) == "data_level0.bin" {
					level0 = f
				}
			}
			if level0 == "" {
				t.Fatalf("no data_level0.bin in %v", files)
			}
			rep, err := store.ScanFiles(ctx, store.NewNeedleSet(vec), "level0", level0)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Found["rec-1"] != len(vec["rec-1"].Needles) {
				t.Fatalf("data_level0.bin holds %d of %d vector windows of a live record: the vector encoding is not Chroma's", rep.Found["rec-1"], len(vec["rec-1"].Needles))
			}
			ev, err := s.ReadEvidence(ctx, []string{"rec-1", "rec-3"})
			if err != nil {
				t.Fatal(err)
			}
			keep, err := s.ReadEvidence(ctx, []string{"rec-2"})
			if err != nil {
				t.Fatal(err)
			}
			all := map[string]*store.Evidence{"rec-1": ev["rec-1"], "rec-3": ev["rec-3"], "rec-2": keep["rec-2"]}
			// Every byte of text and vector is covered, and every needle is
			// in the files while the record lives (in a cosine collection
			// too, where the API returns the vector a few ulps off).
			live, err := s.ProbePhysical(ctx, store.NewNeedleSet(all))
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"rec-1", "rec-2", "rec-3"} {
				e := all[k]
				// In a cosine collection whose index was persisted, the queue
				// no longer holds the vector as written, and the API returns
				// it a few ulps off: those bytes cannot be searched for and
				// are counted as not covered (the normalised vector in
				// data_level0.bin is).
				uncovered := 0
				if space == "cosine" {
					uncovered = 4 * dim
				}
				if e.RecordBytes == 0 || e.CoveredBytes != e.RecordBytes-uncovered {
					t.Fatalf("%s: %d of %d bytes covered, want all but %d", k, e.CoveredBytes, e.RecordBytes, uncovered)
				}
				if live.Found[k] != len(e.Needles) {
					whereFound(t, s, all)
					t.Fatalf("%s live: the files hold %d of its %d needles", k, live.Found[k], len(e.Needles))
				}
			}
			doc := &store.Evidence{Key: "rec-1"}
			doc.AddWindows([]byte(content(s.Collection(), 101)))
			docRep, err := store.ScanFiles(ctx, store.NewNeedleSet(map[string]*store.Evidence{"rec-1": doc}), "sqlite", filepath.Join(s.DataDir(), chroma.SQLiteFile))
			if err != nil {
				t.Fatal(err)
			}
			if docRep.Found["rec-1"] != len(doc.Needles) {
				t.Fatalf("chroma.sqlite3 holds %d of %d windows of a live document", docRep.Found["rec-1"], len(doc.Needles))
			}

			// Chroma's own delete.
			if err := s.Delete(ctx, []string{"rec-1"}); err != nil {
				t.Fatal(err)
			}
			if res, err := s.ProbeLogical(ctx, []string{"rec-1"}, ev); err != nil || res[0].Found() {
				t.Fatalf("after delete: %+v, %v", res, err)
			}
			rep, err = store.ScanFiles(ctx, store.NewNeedleSet(vec), "level0", level0)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Found["rec-1"] == 0 {
				t.Fatalf("after Chroma's delete data_level0.bin holds none of the vector's windows: hnswlib's markDelete was expected to leave them")
			}
			phys, err := s.ProbePhysical(ctx, store.NewNeedleSet(all))
			if err != nil {
				t.Fatal(err)
			}
			if phys.Found["rec-1"] == 0 {
				t.Fatalf("the physical probe found nothing after a native delete")
			}

			// amnesia: delete rec-3 too, then reclaim.
			if err := s.Delete(ctx, []string{"rec-3"}); err != nil {
				t.Fatal(err)
			}
			rr, err := s.Reclaim(ctx)
			if err != nil {
				t.Fatalf("Reclaim: %v (steps %v)", err, rr.Steps)
			}
			if want := wantState(t); rr.State != want {
				t.Errorf("Reclaim with data_dir reported state %q, want %q (steps %v)", rr.State, want, rr.Steps)
			}
			// The method (the certificate's reclaim) claims the merge only when it ran.
			if merged := strings.Contains(rr.Method, "full-text index merged"); merged != (rr.State == "") || strings.Contains(rr.Method, "NOT merged") == merged {
				t.Errorf("Reclaim's method %q does not fit its state %q", rr.Method, rr.State)
			}
			phys, err = s.ProbePhysical(ctx, store.NewNeedleSet(all))
			if err != nil {
				t.Fatal(err)
			}
			if phys.Found["rec-1"] != 0 || phys.Found["rec-3"] != 0 {
				whereFound(t, s, all)
				t.Fatalf("after Reclaim the persist directory still holds %d and %d windows of the deleted records", phys.Found["rec-1"], phys.Found["rec-3"])
			}
			if phys.Found["rec-2"] == 0 {
				t.Fatalf("after Reclaim the surviving record is not found: the scan went blind")
			}
			if _, err := os.Stat(level0); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the old segment's data_level0.bin is still there: %v", err)
			}
			res, err := s.ProbeLogical(ctx, []string{"rec-1", "rec-2"}, all)
			if err != nil {
				t.Fatal(err)
			}
			if res[0].Found() || !res[1].ByID || !res[1].ByFilter || !res[1].BySimilarity {
				t.Fatalf("after Reclaim: %+v", res)
			}
			r, err := s.Get(ctx, "rec-2")
			if err != nil || r == nil || r.Document != content(s.Collection(), 102) || r.Subject != "tag-0" || fmt.Sprint(r.Metadata["page"]) != "102" || fmt.Sprint(r.Metadata["score"]) != "1.0" || r.Metadata["ok"] != true {
				t.Fatalf("rec-2 after the rebuild: %+v, %v", r, err)
			}
		})
	}
}

// In a cosine collection whose index is not persisted yet, the queue holds
// the vector as written: both encodings are covered and found.
func TestChromaCosineQueuedEvidence(t *testing.T) {
	ctx := context.Background()
	s := open(t, map[string]any{"hnsw": map[string]any{"space": "cosine"}})
	put(t, s, "rec-a", "tag", 1)
	put(t, s, "rec-b", "tag", 2)
	ev, err := s.ReadEvidence(ctx, []string{"rec-a"})
	if err != nil {
		t.Fatal(err)
	}
	e := ev["rec-a"]
	if e == nil || e.CoveredBytes != e.RecordBytes || e.RecordBytes != len(content(s.Collection(), 1))+2*4*dim {
		t.Fatalf("evidence %+v: want the text and both vector encodings covered", e)
	}
	// The normalised encoding is what hnswlib will write to data_level0.bin
	// when it persists (a deleted record's too: markDelete keeps it), so it
	// is in the evidence though not in the files yet.
	norm := &store.Evidence{Key: "rec-a"}
	norm.AddWindows(store.Float32LE(chroma.Normalize(vector(s.Collection(), 1))))
	found := 0
	for _, n := range e.Needles {
		for _, m := range norm.Needles {
			if string(n) == string(m) {
				found++
			}
		}
	}
	if found != len(norm.Needles) {
		t.Fatalf("%d of %d normalised windows in the evidence", found, len(norm.Needles))
	}
	rep, err := s.ProbePhysical(ctx, store.NewNeedleSet(ev))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Found["rec-a"] != len(e.Needles)-len(norm.Needles) {
		t.Fatalf("found %d of the %d needles of the text and the vector as written", rep.Found["rec-a"], len(e.Needles)-len(norm.Needles))
	}
}

// Delete by the subject tag (Chroma's where on the subject key).
func TestChromaDeleteSubject(t *testing.T) {
	ctx := context.Background()
	s := open(t, nil, func(o *chroma.Options) { o.SubjectKey = "owner" })
	put(t, s, "a1", "alice", 1)
	put(t, s, "a2", "alice", 2)
	put(t, s, "b1", "bob", 3)
	ids, err := s.BySubject(ctx, "alice")
	if err != nil || strings.Join(ids, ",") != "a1,a2" {
		t.Fatalf("BySubject = %v, %v", ids, err)
	}
	got, err := s.DeleteSubject(ctx, "alice")
	if err != nil || strings.Join(got, ",") != "a1,a2" {
		t.Fatalf("DeleteSubject = %v, %v", got, err)
	}
	res, err := s.ProbeLogical(ctx, []string{"a1", "a2", "b1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].ByID || res[1].ByID || !res[2].ByID {
		t.Fatalf("after DeleteSubject: %+v", res)
	}
	if _, err := s.DeleteSubject(ctx, ""); err == nil {
		t.Fatalf("DeleteSubject with an empty tag deleted without complaint")
	}
}

// The rebuild keeps the collection's configuration and metadata, and
// finishes what an interrupted rebuild left.
func TestChromaRebuildKeepsConfigurationAndRecovers(t *testing.T) {
	ctx := context.Background()
	u, d := server(t)
	s := open(t, map[string]any{"hnsw": map[string]any{"space": "ip", "ef_search": 77, "sync_threshold": 2, "batch_size": 2}})
	put(t, s, "rec-a", "tag", 1)
	put(t, s, "rec-b", "tag", 2)
	// A partial copy an earlier, interrupted reclaim left.
	part, err := chroma.Open(ctx, chroma.Options{Name: "x", DSN: u, Collection: s.Collection() + "-amnesia-rebuild"}, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := part.Put(ctx, chroma.Record{ID: "rec-a", Document: content(s.Collection(), 1), Embedding: vector(s.Collection(), 1)}); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Reclaim(ctx)
	if err != nil {
		t.Fatalf("Reclaim: %v", err)
	}
	if !strings.Contains(strings.Join(rep.Steps, ";"), "partial copy") {
		t.Errorf("steps %v do not say the partial copy was dropped", rep.Steps)
	}
	if _, err := chroma.Open(ctx, chroma.Options{Name: "x", DSN: u, Collection: s.Collection() + "-amnesia-rebuild"}, false); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("the partial copy is still there: %v", err)
	}
	// Same configuration after the rebuild (read through a fresh store).
	again, err := chroma.Open(ctx, chroma.Options{Name: "x", DSN: u, Collection: s.Collection(), DataDir: d}, false)
	if err != nil {
		t.Fatal(err)
	}
	q := vector(s.Collection(), 2)
	ns, err := again.Search(ctx, q, 2)
	if err != nil || len(ns) != 2 {
		t.Fatalf("search after rebuild: %v, %v", ns, err)
	}
	// In ip space Chroma's distance is 1 - dot product.
	var dot float64
	for _, x := range q {
		dot += float64(x) * float64(x)
	}
	for _, n := range ns {
		if n.ID == "rec-b" && math.Abs(n.Distance-(1-dot)) > 1e-2*math.Abs(dot) {
			t.Fatalf("distance %v, want 1-dot = %v: the rebuilt collection lost its ip space", n.Distance, 1-dot)
		}
	}
}

// Delete-only reclaims nothing, says so, and does not declare reclaim.
func TestChromaDeleteOnly(t *testing.T) {
	s := open(t, nil, func(o *chroma.Options) { o.DeleteOnly = true })
	if s.Info().Has(store.CapReclaim) {
		t.Fatalf("delete-only declares reclaim")
	}
	rep, err := s.Reclaim(context.Background())
	if err != nil || rep.State != chroma.StateDeferred || !strings.Contains(rep.Evidence, "data_level0.bin") {
		t.Fatalf("Reclaim = %+v, %v", rep, err)
	}
}

// Without data_dir there is no physical probe, and Reclaim says that the
// files were neither cleaned nor measured.
func TestChromaWithoutDataDir(t *testing.T) {
	s := open(t, nil, func(o *chroma.Options) { o.DataDir = "" })
	put(t, s, "rec-a", "tag", 1)
	if s.Info().Has(store.CapProbePhysical) {
		t.Fatalf("physical probe declared without data_dir")
	}
	rep, err := s.Reclaim(context.Background())
	if err != nil || rep.State != chroma.StateFilesNotRead {
		t.Fatalf("Reclaim = %+v, %v", rep, err)
	}
	if strings.Contains(rep.Method, "VACUUM") || !strings.Contains(rep.Method, "no data_dir") {
		t.Fatalf("Reclaim's method claims file work it did not do: %q", rep.Method)
	}
	if r, err := s.Get(context.Background(), "rec-a"); err != nil || r == nil {
		t.Fatalf("rec-a lost in the rebuild: %v", err)
	}
}

func TestChromaCheck(t *testing.T) {
	ctx := context.Background()
	u, d := server(t)
	s := open(t, nil)
	put(t, s, "rec-a", "tag", 1)
	good := store.Config{Name: "m", Type: chroma.Type, DSN: u, Collection: s.Collection(), Dimensions: dim, DataDir: d}
	if ps := store.Check(ctx, good); len(ps) != 0 {
		t.Fatalf("check of a good store: %v", ps)
	}
	for _, tc := range []struct {
		mut func(*store.Config)
		key string
	}{
		{func(c *store.Config) { c.Dimensions = dim + 1 }, "dimensions"},
		{func(c *store.Config) { c.Collection = s.Collection() + "-missing" }, "collection"},
		{func(c *store.Config) { c.DataDir = filepath.Join(d, "nope") }, "data_dir"},
		{func(c *store.Config) { c.DSN = "http://127.0.0.1:1" }, "dsn"},
	} {
		c := good
		tc.mut(&c)
		ps := store.Check(ctx, c)
		if len(store.Errors(ps)) != 1 || ps[0].Key != tc.key {
			t.Errorf("check %+v = %v, want one error on %s", c, ps, tc.key)
		}
	}
	if _, err := chroma.Open(ctx, chroma.Options{Name: "x", DSN: u, Collection: s.Collection() + "-missing"}, false); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("opening a missing collection without create: %v", err)
	}
	for _, bad := range []string{"", "127.0.0.1:8000", "http://u:p@127.0.0.1:8000", "http://127.0.0.1:8000/api", "http://127.0.0.1:8000?tenat=x"} {
		if err := store.Validate(store.Config{Name: "m", Type: chroma.Type, DSN: bad, Collection: "c"}); err == nil {
			t.Errorf("dsn %q accepted", bad)
		} else if strings.Contains(err.Error(), ":p@") {
			t.Errorf("error repeats the password: %v", err)
		}
	}
}

// whereFound logs which files of the persist directory hold needles.
func whereFound(t *testing.T, s *chroma.Store, ev map[string]*store.Evidence) {
	t.Helper()
	files, err := s.Files()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		rep, err := store.ScanFiles(context.Background(), store.NewNeedleSet(ev), "one", f)
		if err == nil && len(rep.Found) > 0 {
			t.Logf("%s: %v", f, rep.Found)
		}
	}
}

// wantState is the state a full Reclaim reports: none when the linked
// SQLite has FTS5 (go test -tags sqlite_fts5) and can merge Chroma's
// full-text index, else that the index was not merged.
func wantState(t *testing.T) string {
	t.Helper()
	db, err := sql.Open("sqlite3", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("SELECT count(*) FROM pragma_compile_options WHERE compile_options = 'ENABLE_FTS5'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		return chroma.StateFTSNotMerged
	}
	return ""
}

// With Chroma's default configuration (the index persisted every 1000
// operations) and a collection of some size, no byte of the deleted
// records is left after Reclaim, however Chroma's server writes its
// segments around the rebuild.
func TestChromaReclaimDefaultConfiguration(t *testing.T) {
	ctx := context.Background()
	s := open(t, nil)
	var keys []string
	for i := 0; i < 60; i++ {
		k := fmt.Sprintf("rec-%d", i)
		keys = append(keys, k)
		put(t, s, k, fmt.Sprintf("tag-%d", i%6), 200+i)
	}
	gone := keys[:10]
	ev, err := s.ReadEvidence(ctx, gone)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reclaim(ctx); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 3; round++ {
		phys, err := s.ProbePhysical(ctx, store.NewNeedleSet(ev))
		if err != nil {
			t.Fatal(err)
		}
		if phys.NeedlesFound != 0 {
			whereFound(t, s, ev)
			t.Fatalf("round %d: %d needles of %d deleted records still found", round, phys.NeedlesFound, len(phys.Found))
		}
		// Touch the collection the way an application does, then look again.
		put(t, s, fmt.Sprintf("new-%d", round), "tag-x", 300+round)
		if _, err := s.Search(ctx, vector(s.Collection(), 250), 5); err != nil {
			t.Fatal(err)
		}
	}
}

// unusedNonZero counts the non-zero bytes hnswlib never reads in the
// collection's index files: data_level0.bin past its elements and
// length.bin past their entries.
func unusedNonZero(t *testing.T, s *chroma.Store) (int, bool) {
	t.Helper()
	files := segmentFiles(t, s)
	var hdr []byte
	for _, f := range files {
		if filepath.Base(f) == "header.bin" {
			var err error
			if hdr, err = os.ReadFile(f); err != nil {
				t.Fatal(err)
			}
		}
	}
	if hdr == nil {
		return 0, false
	}
	count, stride := int(binary.LittleEndian.Uint64(hdr[20:])), int(binary.LittleEndian.Uint64(hdr[28:]))
	n := 0
	for _, f := range files {
		from := -1
		switch filepath.Base(f) {
		case "data_level0.bin":
			from = count * stride
		case "length.bin":
			from = count * 4
		}
		if from < 0 {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range b[min(from, len(b)):] {
			if c != 0 {
				n++
			}
		}
	}
	return n, true
}

// Chroma writes a new index file from memory it did not clear: the slots
// past its elements hold whatever the server had freed (request bodies of
// any collection). The rebuilt collection's files hold none of it.
func TestChromaReclaimZeroesUnusedSlots(t *testing.T) {
	ctx := context.Background()
	s := open(t, persisted)
	for i := 0; i < 6; i++ {
		put(t, s, fmt.Sprintf("rec-%d", i), "tag", 400+i)
	}
	before, ok := unusedNonZero(t, s)
	if !ok {
		t.Fatalf("no index files: hnswlib did not persist")
	}
	t.Logf("non-zero bytes in unused slots before Reclaim: %d", before)
	if err := s.Delete(ctx, []string{"rec-0"}); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Reclaim(ctx)
	if err != nil {
		t.Fatal(err)
	}
	after, ok := unusedNonZero(t, s)
	if !ok {
		t.Fatalf("no index files after the rebuild")
	}
	if after != 0 {
		t.Fatalf("%d non-zero bytes in the rebuilt index's unused slots (steps %v)", after, rep.Steps)
	}
	// The server writes only the elements it adds: the zeroes stay.
	for i := 10; i < 14; i++ {
		put(t, s, fmt.Sprintf("rec-%d", i), "tag", 400+i)
	}
	if n, _ := unusedNonZero(t, s); n != 0 {
		t.Fatalf("after more writes %d non-zero bytes in unused slots", n)
	}
}

// Erasing a collection's only record: the probes run on an empty
// collection and the rebuild copies nothing.
func TestChromaEraseLastRecord(t *testing.T) {
	ctx := context.Background()
	s := open(t, persisted)
	put(t, s, "only", "tag", 700)
	put(t, s, "tmp", "tag", 701)
	if err := s.Delete(ctx, []string{"tmp"}); err != nil {
		t.Fatal(err)
	}
	ev, err := s.ReadEvidence(ctx, []string{"only"})
	if err != nil {
		t.Fatal(err)
	}
	before, err := s.ProbePhysical(ctx, store.NewNeedleSet(ev))
	if err != nil || before.Found["only"] == 0 {
		t.Fatalf("before: %v, %v", before.Found, err)
	}
	if err := s.Delete(ctx, []string{"only"}); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Reclaim(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(rep.Steps, ";"), "copied 0 live records") {
		t.Errorf("steps %v", rep.Steps)
	}
	res, err := s.ProbeLogical(ctx, []string{"only"}, ev)
	if err != nil || res[0].Found() {
		t.Fatalf("probe: %+v, %v", res, err)
	}
	after, err := s.ProbePhysical(ctx, store.NewNeedleSet(ev))
	if err != nil || after.NeedlesFound != 0 {
		t.Fatalf("after: %v, %v", after.Found, err)
	}
}

// Re-verification without needles: after Chroma's own delete (and the
// index persisted), the collection's data_level0.bin has an element marked
// deleted and MeasureResidue says so; after Reclaim nothing is left to
// report.
func TestChromaMeasureResidue(t *testing.T) {
	ctx := context.Background()
	s := open(t, persisted)
	for i := 0; i < 6; i++ {
		put(t, s, fmt.Sprintf("rec-%d", i), "tag", 800+i)
	}
	if err := s.Delete(ctx, []string{"rec-0"}); err != nil {
		t.Fatal(err)
	}
	put(t, s, "rec-6", "tag", 806) // the next persist writes the mark
	since := time.Now().Add(-time.Minute)
	rep, err := s.MeasureResidue(ctx, since)
	if err != nil {
		t.Fatal(err)
	}
	if rep.State != chroma.StateDeadBytes || !strings.Contains(rep.Evidence, "1 elements marked deleted") || !strings.Contains(rep.Evidence, "after the re-verified certificate") {
		t.Fatalf("after a native delete: %+v", rep)
	}
	if _, err := s.Reclaim(ctx); err != nil {
		t.Fatal(err)
	}
	rep, err = s.MeasureResidue(ctx, since)
	if err != nil {
		t.Fatal(err)
	}
	if rep.State != "" || !strings.Contains(rep.Evidence, "no element marked deleted") {
		t.Fatalf("after Reclaim: %+v", rep)
	}
	noDir := open(t, nil, func(o *chroma.Options) { o.DataDir = "" })
	if rep, err := noDir.MeasureResidue(ctx, since); err != nil || rep.State != chroma.StateFilesNotRead {
		t.Fatalf("without data_dir: %+v, %v", rep, err)
	}
}

// A collection made the way LangChain makes one (collection_metadata with
// the legacy hnsw:space key) keeps its metadata and space through the
// rebuild.
func TestChromaRebuildKeepsLegacyMetadata(t *testing.T) {
	ctx := context.Background()
	u, _ := server(t)
	name := collName(t)
	base := u + "/api/v2/tenants/default_tenant/databases/default_database/collections"
	body := fmt.Sprintf(`{"name":%q,"metadata":{"hnsw:space":"cosine","owner":"app","version":2}}`, name)
	resp, err := http.Post(base, "application/json", strings.NewReader(body))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("create: %v %v", resp, err)
	}
	resp.Body.Close()
	s := open(t, nil, func(o *chroma.Options) { o.Collection = name })
	put(t, s, "rec-a", "tag", 900)
	put(t, s, "rec-b", "tag", 901)
	if err := s.Delete(ctx, []string{"rec-a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reclaim(ctx); err != nil {
		t.Fatal(err)
	}
	resp, err = http.Get(base + "/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var c struct {
		Metadata      map[string]any `json:"metadata"`
		Configuration struct {
			HNSW struct {
				Space string `json:"space"`
			} `json:"hnsw"`
		} `json:"configuration_json"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		t.Fatal(err)
	}
	if c.Configuration.HNSW.Space != "cosine" || c.Metadata["hnsw:space"] != "cosine" || c.Metadata["owner"] != "app" || c.Metadata["version"] != float64(2) {
		t.Fatalf("after the rebuild: %+v", c)
	}
}

// Capture refuses what Chroma cannot keep, before anything is written, and
// reads back what it wrote.
func TestChromaCapture(t *testing.T) {
	ctx := context.Background()
	s := open(t, nil)
	ok := backend.VectorRecord{ID: "v1", Subject: "tag", Embedding: vector(s.Collection(), 1), Content: content(s.Collection(), 1), Metadata: map[string]any{"page": 3, "lang": "en"}}
	for _, bad := range []backend.VectorRecord{
		{ID: "x", Subject: "tag"},
		{ID: "x", Subject: "tag", Embedding: ok.Embedding, Metadata: map[string]any{"subject": "other"}},
		{ID: "x", Subject: "tag", Embedding: ok.Embedding, Metadata: map[string]any{"nested": map[string]any{"a": 1}}},
	} {
		if err := s.CaptureCheck(bad); err == nil {
			t.Errorf("CaptureCheck(%+v) accepted", bad.Metadata)
		}
	}
	if err := s.CapturePut(ctx, ok); err != nil {
		t.Fatal(err)
	}
	r, err := s.CaptureGet(ctx, "v1")
	if err != nil || r == nil || r.Subject != "tag" || r.Content != ok.Content || fmt.Sprint(r.Metadata["page"]) != "3" || r.Metadata["lang"] != "en" {
		t.Fatalf("CaptureGet = %+v, %v", r, err)
	}
	ns, err := s.CaptureSearch(ctx, ok.Embedding, 1)
	if err != nil || len(ns) != 1 || ns[0].ID != "v1" || ns[0].Subject != "tag" {
		t.Fatalf("CaptureSearch = %+v, %v", ns, err)
	}
	if r, err := s.CaptureGet(ctx, "missing"); err != nil || r != nil {
		t.Fatalf("CaptureGet(missing) = %+v, %v", r, err)
	}
}

// The probe sends the vectors of all its keys in batched query requests
// (100 query embeddings per request) and reads each answer for its own
// key: over two requests, an erased record is not found by similarity, and
// each survivor is, as Search with its vector finds it.
func TestChromaProbeBatchesQueries(t *testing.T) {
	ctx := context.Background()
	s := open(t, nil)
	var keys []string
	for i := range 130 {
		k := fmt.Sprintf("r%03d", i)
		put(t, s, k, "tag"+strconv.Itoa(i%3), i)
		keys = append(keys, k)
	}
	ev, err := s.ReadEvidence(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	gone := []string{"r000", "r099", "r100", "r129"}
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
		if i%20 == 1 {
			ns, err := s.Search(ctx, vector(s.Collection(), i), 10)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(ns, func(n chroma.Neighbor) bool { return n.ID == keys[i] }) {
				t.Errorf("%s: Search with its vector does not find it, the probe does", keys[i])
			}
		}
	}
}
