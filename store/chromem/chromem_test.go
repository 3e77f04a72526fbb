package chromem_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/gob"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	chromemgo "github.com/philippgille/chromem-go"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/chromem"
	"github.com/amnesia-dev/amnesia/store/storetest"
)

const dim = 24

func vector(seed int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(math.Sin(float64(seed*dim+i)*1.37)) + float32(seed)*1e-3
	}
	return v
}

func content(seed int) string {
	return fmt.Sprintf("Conversation %d: the user said their appointment is on day %d at clinic number %d, please remember.", seed, seed*7, seed*13)
}

func open(t *testing.T, dir string, compress bool) *chromem.Store {
	t.Helper()
	s, err := chromem.Open(context.Background(), "memory", dir, "notes", compress, true)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func put(t *testing.T, s *chromem.Store, key, tag string, seed int) {
	t.Helper()
	if err := s.Put(context.Background(), chromem.Record{ID: key, Subject: tag, Content: content(seed), Embedding: vector(seed)}); err != nil {
		t.Fatal(err)
	}
}

func TestChromemConformance(t *testing.T) {
	for _, compress := range []bool{false, true} {
		t.Run(fmt.Sprintf("compress=%v", compress), func(t *testing.T) {
			storetest.Run(t, storetest.Harness{
				Open: func(t *testing.T) store.Store { return open(t, t.TempDir(), compress) },
				Put: func(t *testing.T, s store.Store, key, tag string, seed int) {
					put(t, s.(*chromem.Store), key, tag, seed)
				},
			})
		})
	}
}

// GobFloats must be the bytes encoding/gob writes for a []float32, as they
// appear inside chromem-go's Document encoding.
func TestChromemGobFloatsMatchesGob(t *testing.T) {
	v := []float32{0, 1, -1, 0.5, 2, float32(math.Pi), 1e-30, -3.25e12}
	v = append(v, vector(3)...)
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(chromemgo.Document{ID: "x", Embedding: v, Content: "c"}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(buf.Bytes(), chromem.GobFloats(v)) {
		t.Fatalf("GobFloats(v) is not in the gob encoding of a Document holding v")
	}
}

// The physical probe must find live data in both modes, and in gzip mode
// only because it decompresses: a raw scan of the same files finds nothing.
func TestChromemPhysicalProbeSeesCompressedData(t *testing.T) {
	ctx := context.Background()
	for _, compress := range []bool{false, true} {
		t.Run(fmt.Sprintf("compress=%v", compress), func(t *testing.T) {
			s := open(t, t.TempDir(), compress)
			put(t, s, "rec-a", "tag-1", 1)
			put(t, s, "rec-b", "tag-2", 2)
			ev, err := s.ReadEvidence(ctx, []string{"rec-a"})
			if err != nil {
				t.Fatal(err)
			}
			e := ev["rec-a"]
			if e == nil || e.CoveredBytes != e.RecordBytes || e.RecordBytes == 0 {
				t.Fatalf("evidence %+v: want every byte of content and embedding covered", e)
			}
			set := store.NewNeedleSet(ev)
			rep, err := s.ProbePhysical(ctx, set)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Found["rec-a"] != len(e.Needles) {
				t.Fatalf("probe found %d of %d needles of the live record", rep.Found["rec-a"], len(e.Needles))
			}
			raw, err := store.ScanFiles(ctx, set, "raw", s.DocPath("rec-a"))
			if err != nil {
				t.Fatal(err)
			}
			if compress && raw.Found["rec-a"] != 0 {
				t.Fatalf("a raw scan of a gzip file found %d needles: the test does not show decompression matters", raw.Found["rec-a"])
			}
			if !compress && raw.Found["rec-a"] != len(e.Needles) {
				t.Fatalf("a raw scan of the .gob file found %d of %d needles: needles are not in chromem-go's encoding", raw.Found["rec-a"], len(e.Needles))
			}
		})
	}
}

// After Delete, a process that loads the DB anew does not see the document,
// and the reclaim report says what is not measured.
func TestChromemDeleteSurvivesReload(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dir, true)
	put(t, s, "rec-a", "tag-1", 1)
	put(t, s, "rec-b", "tag-1", 2)
	// An application that loaded the DB before the erasure.
	app, err := chromem.Open(ctx, "app", dir, "notes", true, false)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := s.ReadEvidence(ctx, []string{"rec-a"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, []string{"rec-a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.DocPath("rec-a")); !os.IsNotExist(err) {
		t.Fatalf("document file still there: %v", err)
	}
	res, err := s.ProbeLogical(ctx, []string{"rec-a", "rec-b"}, ev)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Found() || !res[1].ByID {
		t.Fatalf("probe after delete: %+v", res)
	}
	reloaded, err := chromem.Open(ctx, "reload", dir, "notes", true, false)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := reloaded.Get(ctx, "rec-a"); r != nil {
		t.Fatalf("a reload still has the deleted document")
	}
	// The application that did not reload still serves it: what Reclaim
	// must say.
	if r, _ := app.Get(ctx, "rec-a"); r == nil {
		t.Fatalf("expected the stale process to still hold the document (chromem-go keeps it in memory)")
	}
	rep, err := s.Reclaim(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.State != chromem.StateAppMemory || !strings.Contains(rep.Evidence, "until it reloads") || !strings.Contains(rep.Method, "until it reloads") {
		t.Fatalf("reclaim report does not say that application memory keeps documents: %+v", rep)
	}
}

func TestChromemCheck(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, true)
	put(t, s, "rec-a", "tag-1", 1)
	good := store.Config{Name: "m", Type: chromem.Type, Path: dir, Collection: "notes", Compress: true}
	if ps := chromem.Check(context.Background(), good); len(ps) != 0 {
		t.Fatalf("check of a good store: %v", ps)
	}
	for _, tc := range []struct {
		c   store.Config
		key string
	}{
		{store.Config{Path: dir, Collection: "notes", Compress: false}, "compress"},
		{store.Config{Path: dir, Collection: "other", Compress: true}, "collection"},
		{store.Config{Path: filepath.Join(dir, "nope"), Collection: "notes"}, "path"},
	} {
		ps := chromem.Check(context.Background(), tc.c)
		if len(store.Errors(ps)) != 1 || ps[0].Key != tc.key {
			t.Errorf("check %+v = %v, want one error on %s", tc.c, ps, tc.key)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "nope")); !os.IsNotExist(err) {
		t.Fatalf("check created the directory")
	}
}

// Two ids whose 32-bit file names collide share one file, which holds the
// document written last: deleting the other must not lose it.
func TestChromemDeleteKeepsDocumentSharingTheFile(t *testing.T) {
	ctx := context.Background()
	seen := map[[4]byte]string{}
	var x, y string
	for i := 0; x == ""; i++ {
		id := fmt.Sprintf("doc-%d", i)
		h := sha256.Sum256([]byte(id))
		var k [4]byte
		copy(k[:], h[:4])
		if prev, ok := seen[k]; ok {
			x, y = prev, id
		}
		seen[k] = id
	}
	dir := t.TempDir()
	s := open(t, dir, false)
	put(t, s, x, "tag-1", 1)
	put(t, s, y, "tag-2", 2)
	if s.DocPath(x) != s.DocPath(y) {
		t.Fatalf("%s and %s do not share a file", x, y)
	}
	if err := s.Delete(ctx, []string{x}); err != nil {
		t.Fatal(err)
	}
	re, err := chromem.Open(ctx, "reload", dir, "notes", false, false)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := re.Get(ctx, y); d == nil || d.Content != content(2) {
		t.Fatalf("the document sharing the deleted one's file was lost")
	}
	if d, _ := s.Get(ctx, x); d != nil {
		t.Fatalf("deleted document still held")
	}
	res, err := s.ProbeLogical(ctx, []string{x, y}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].ByID || !res[1].ByID {
		t.Fatalf("probe by id (the shared file holds %s): %+v", y, res)
	}
}

// A document the application added after amnesia opened the store is read
// (evidence from the files, not from what amnesia loaded) and deleted.
func TestChromemSeesDocumentsAddedAfterOpen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dir, true)
	put(t, s, "rec-b", "tag-2", 2)
	app, err := chromem.Open(ctx, "app", dir, "notes", true, false)
	if err != nil {
		t.Fatal(err)
	}
	put(t, app, "rec-a", "tag-1", 1)
	ev, err := s.ReadEvidence(ctx, []string{"rec-a"})
	if err != nil {
		t.Fatal(err)
	}
	if ev["rec-a"] == nil || len(ev["rec-a"].Needles) == 0 {
		t.Fatalf("no evidence for a document added after open")
	}
	if err := s.Delete(ctx, []string{"rec-a"}); err != nil {
		t.Fatal(err)
	}
	rep, err := s.ProbePhysical(ctx, store.NewNeedleSet(ev))
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.ProbeLogical(ctx, []string{"rec-a", "rec-b"}, ev)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Found["rec-a"] != 0 || res[0].Found() || !res[1].ByID {
		t.Fatalf("after delete: scan %v, probe %+v", rep.Found, res)
	}
}

// Evidence and probes read the files as they are at each call, not what an
// earlier load (or this process's copy) held: a document another process
// writes after amnesia's first load is seen by the next evidence read, and
// one it writes after the evidence read is seen by the probe.
func TestChromemSeesWritesOfAnotherProcessAfterALoad(t *testing.T) {
	ctx := context.Background()
	for _, compress := range []bool{false, true} {
		t.Run(fmt.Sprintf("compress=%v", compress), func(t *testing.T) {
			dir := t.TempDir()
			s := open(t, dir, compress)
			put(t, s, "rec-b", "tag-2", 2)
			if _, err := s.ReadEvidence(ctx, []string{"rec-b"}); err != nil { // a first load
				t.Fatal(err)
			}
			app, err := chromem.Open(ctx, "app", dir, "notes", compress, false)
			if err != nil {
				t.Fatal(err)
			}
			put(t, app, "rec-a", "tag-1", 1)
			ev, err := s.ReadEvidence(ctx, []string{"rec-a"})
			if err != nil {
				t.Fatal(err)
			}
			if e := ev["rec-a"]; e == nil || len(e.Needles) == 0 || e.Filter[chromem.SubjectKey] != "tag-1" || len(e.Vector) != dim {
				t.Fatalf("evidence of a document another process wrote after the first load: %+v", e)
			}
			put(t, app, "rec-c", "tag-1", 3)
			ev["rec-c"] = &store.Evidence{Key: "rec-c", Filter: map[string]string{chromem.SubjectKey: "tag-1"}, Vector: vector(3)}
			res, err := s.ProbeLogical(ctx, []string{"rec-a", "rec-c"}, ev)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res {
				if !r.ByID || !r.ByFilter || !r.BySimilarity {
					t.Errorf("probe of %s, which another process wrote: %+v", r.Key, r)
				}
			}
			if r, _ := s.Get(ctx, "rec-c"); r != nil {
				t.Fatalf("this process's copy holds rec-c: the test does not show that the probe read the files")
			}
		})
	}
}

// A document the erasure deleted counts as gone only while its file is:
// written again by another process after the delete, it is found by every
// path, though amnesia read it before and deleted it itself.
func TestChromemProbeSeesDocumentWrittenAgainAfterDelete(t *testing.T) {
	ctx := context.Background()
	for _, compress := range []bool{false, true} {
		t.Run(fmt.Sprintf("compress=%v", compress), func(t *testing.T) {
			dir := t.TempDir()
			s := open(t, dir, compress)
			put(t, s, "rec-a", "tag-1", 1)
			put(t, s, "rec-b", "tag-2", 2)
			app, err := chromem.Open(ctx, "app", dir, "notes", compress, false)
			if err != nil {
				t.Fatal(err)
			}
			ev, err := s.ReadEvidence(ctx, []string{"rec-a"})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Delete(ctx, []string{"rec-a"}); err != nil {
				t.Fatal(err)
			}
			res, err := s.ProbeLogical(ctx, []string{"rec-a", "rec-b"}, ev)
			if err != nil {
				t.Fatal(err)
			}
			if res[0].Found() || !res[1].ByID {
				t.Fatalf("probe after delete: %+v", res)
			}
			put(t, app, "rec-a", "tag-1", 1) // the application writes it again
			res, err = s.ProbeLogical(ctx, []string{"rec-a"}, ev)
			if err != nil {
				t.Fatal(err)
			}
			if r := res[0]; !r.ByID || !r.ByFilter || !r.BySimilarity {
				t.Fatalf("probe of a document written again after the delete: %+v", r)
			}
		})
	}
}

// A document file rewritten in place with the same size and modification
// time (what a cache keyed by file metadata would take for unchanged) is
// read again: evidence and probes see what the file holds now. A file
// zeroed in place (what a crash inside Shred leaves) fails them as it fails
// chromem-go's loader, and the error names no record.
func TestChromemRereadsFileRewrittenWithSameSize(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dir, false)
	put(t, s, "rec-a", "tag-1", 1)
	old := content(1)
	ev, err := s.ReadEvidence(ctx, []string{"rec-a"})
	if err != nil {
		t.Fatal(err)
	}
	if !hasNeedle(ev["rec-a"], old[:store.WindowSize]) || ev["rec-a"].Filter[chromem.SubjectKey] != "tag-1" {
		t.Fatalf("evidence before the rewrite: %+v", ev["rec-a"])
	}
	p := s.DocPath("rec-a")
	before, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	app, err := chromem.Open(ctx, "app", dir, "notes", false, false)
	if err != nil {
		t.Fatal(err)
	}
	now := strings.ToUpper(old)
	if err := app.Put(ctx, chromem.Record{ID: "rec-a", Subject: "tag-9", Content: now, Embedding: vector(1)}); err != nil {
		t.Fatal(err)
	}
	sameFile := func() {
		t.Helper()
		if err := os.Chtimes(p, before.ModTime(), before.ModTime()); err != nil {
			t.Fatal(err)
		}
		after, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if after.Size() != before.Size() || !after.ModTime().Equal(before.ModTime()) || !os.SameFile(before, after) {
			t.Fatalf("the rewrite changed the file's size, time or identity: the test shows nothing")
		}
	}
	sameFile()
	ev2, err := s.ReadEvidence(ctx, []string{"rec-a"})
	if err != nil {
		t.Fatal(err)
	}
	e := ev2["rec-a"]
	if e == nil || hasNeedle(e, old[:store.WindowSize]) || !hasNeedle(e, now[:store.WindowSize]) || e.Filter[chromem.SubjectKey] != "tag-9" {
		t.Fatalf("evidence after a same-size rewrite was not read from the file as it is now: %+v", e)
	}
	// The probe with the evidence read before: the tag is no longer tag-1.
	res, err := s.ProbeLogical(ctx, []string{"rec-a"}, ev)
	if err != nil {
		t.Fatal(err)
	}
	if r := res[0]; !r.ByID || r.ByFilter {
		t.Fatalf("probe after a same-size rewrite that changed the tag: %+v", r)
	}
	if err := os.WriteFile(p, make([]byte, before.Size()), 0o600); err != nil {
		t.Fatal(err)
	}
	sameFile()
	_, err = s.ReadEvidence(ctx, []string{"rec-a"})
	_, perr := s.ProbeLogical(ctx, []string{"rec-a"}, nil)
	for _, err := range []error{err, perr} {
		if !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("a zeroed document file: %v, want an error wrapping store.ErrUnavailable", err)
		}
		if strings.Contains(err.Error(), "rec-a") || strings.Contains(err.Error(), "tag-") {
			t.Fatalf("the error names the record: %v", err)
		}
	}
}

// The similarity probe answers what chromem-go's own search returns: with
// more documents than k, a document is found with a query vector exactly
// when chromem-go's QueryEmbedding ranks it among the k nearest.
func TestChromemSimilarityProbeMatchesChromemSearch(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir(), false)
	const n = 3 * chromem.SimilarityK
	var keys []string
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("rec-%d", i)
		keys = append(keys, k)
		put(t, s, k, "tag-1", i)
	}
	hits, misses := 0, 0
	for q := n; q < 2*n; q++ {
		ns, err := s.Search(ctx, vector(q), chromem.SimilarityK, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{}
		for _, nb := range ns {
			want[nb.ID] = true
		}
		ev := map[string]*store.Evidence{}
		for _, k := range keys {
			ev[k] = &store.Evidence{Key: k, Vector: vector(q)}
		}
		res, err := s.ProbeLogical(ctx, keys, ev)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.BySimilarity != want[r.Key] {
				t.Fatalf("query %d, %s: the probe says found=%v, chromem-go's search %v", q, r.Key, r.BySimilarity, want[r.Key])
			}
			if r.BySimilarity {
				hits++
			} else {
				misses++
			}
		}
	}
	if hits == 0 || misses == 0 {
		t.Fatalf("%d hits, %d misses: the test shows nothing", hits, misses)
	}
}

func hasNeedle(e *store.Evidence, s string) bool {
	if e == nil {
		return false
	}
	for _, n := range e.Needles {
		if bytes.Equal(n, []byte(s)) {
			return true
		}
	}
	return false
}
