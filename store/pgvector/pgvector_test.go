package pgvector_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/internal/pgtest"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/internal/pg"
	"github.com/amnesia-dev/amnesia/store/pgvector"
	"github.com/amnesia-dev/amnesia/store/storetest"
)

// The conformance suite, on the adapter's table with each kind of vector
// index: HNSW (the adapter's own) and IVFFlat (made by the application).
func TestConformance(t *testing.T) {
	for _, kind := range indexKinds {
		t.Run(kind, func(t *testing.T) {
			storetest.Run(t, storetest.Harness{
				Open: func(t *testing.T) store.Store {
					s, err := pgvector.Open(context.Background(), configIndex(t, kind), true)
					if err != nil {
						t.Fatal(err)
					}
					return s
				},
				Put: func(t *testing.T, s store.Store, key, tag string, seed int) {
					put(t, s.(*pgvector.Store), key, tag, seed)
				},
				NativeDelete: func(t *testing.T, s store.Store, key string) {
					// A plain DELETE, as an application would issue it.
					v := s.(*pgvector.Store)
					if err := v.Exec(context.Background(), `DELETE FROM `+v.Table()+` WHERE id = $1`, key); err != nil {
						t.Fatal(err)
					}
				},
				// Verified here: the dead heap tuple and the vector index's
				// element keep the vector and the content after a plain DELETE.
				NativeLeavesBytes: true,
			})
		})
	}
}

func TestOpenMissingIsUnavailable(t *testing.T) {
	_, err := pgvector.Open(context.Background(), config(t), false)
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Open(missing table, create=false) = %v, want ErrUnavailable", err)
	}
}

func TestValidate(t *testing.T) {
	good := store.Config{Name: "v", Type: pgvector.Type, DSN: "postgres://x@127.0.0.1/db", Dimensions: 8}
	if err := store.Validate(good); err != nil {
		t.Fatalf("Validate(%+v) = %v", good, err)
	}
	lc := store.Config{Name: "v", Type: pgvector.Type, DSN: "postgres://x@127.0.0.1/db", Schema: pgvector.SchemaLangChain}
	if err := store.Validate(lc); err != nil {
		t.Fatalf("Validate(langchain without dimensions) = %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(*store.Config)
		want string
	}{
		{"no dimensions", func(c *store.Config) { c.Dimensions = 0 }, "dimensions"},
		{"bad schema", func(c *store.Config) { c.Schema = "haystack" }, "preset must be"},
		{"llamaindex without table", func(c *store.Config) { c.Preset = "llamaindex" }, "needs table"},
		{"schema and preset disagree", func(c *store.Config) { c.Schema, c.Preset = "langchain", "llamaindex" }, "disagree"},
		{"bad mode", func(c *store.Config) { c.Reclaim = "later" }, "reclaim"},
		{"no dsn", func(c *store.Config) { c.DSN = "" }, "dsn"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.edit(&c)
			if err := store.Validate(c); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want an error about %s", err, tc.want)
			}
		})
	}
}

func TestRoundTripAndSearch(t *testing.T) {
	for _, kind := range indexKinds {
		t.Run(kind, func(t *testing.T) { testRoundTripAndSearch(t, kind) })
	}
}

func testRoundTripAndSearch(t *testing.T, kind string) {
	ctx := context.Background()
	s := open(t, configIndex(t, kind))
	for i := 0; i < 12; i++ {
		put(t, s, "rec-"+string(rune('a'+i)), "subject-x", i+1)
	}
	r, err := s.Get(ctx, "rec-c")
	if err != nil || r == nil {
		t.Fatalf("Get = %v, %v", r, err)
	}
	if r.Subject != "subject-x" || r.Content != text(3) || len(r.Embedding) != dim || r.Embedding[5] != vector(3)[5] {
		t.Fatalf("Get returned a different record")
	}
	for _, exact := range []bool{true, false} {
		ns, err := s.Search(ctx, vector(3), 3, exact)
		if err != nil {
			t.Fatal(err)
		}
		if len(ns) != 3 || ns[0].ID != "rec-c" || ns[0].Distance != 0 {
			t.Fatalf("Search(exact=%v) = %+v, want rec-c first at distance 0", exact, ns)
		}
	}
	if err := s.Put(ctx, pgvector.Record{ID: "x", Embedding: make([]float32, dim+1)}); err == nil {
		t.Fatal("Put accepted a vector of the wrong size")
	}
	ev := evidence(t, s, "rec-c")
	res, err := s.ProbeLogical(ctx, []string{"rec-c"}, ev)
	if err != nil {
		t.Fatal(err)
	}
	methods := strings.Join(res[0].Methods, ",")
	if !res[0].BySimilarity || !strings.Contains(methods, "by-similarity:k=10:exact") || !strings.Contains(methods, kind+"-index-vector_l2(approximate)") {
		t.Fatalf("ProbeLogical = %+v: want both the exact and the approximate %s index search, and a hit", res[0], kind)
	}
	// Deleted: one query finds no row answering to the key, so no search
	// runs for it (none could return it), and the method says so; a record
	// still present in the same call is searched.
	if err := s.Delete(ctx, []string{"rec-c"}); err != nil {
		t.Fatal(err)
	}
	ev["rec-a"] = evidence(t, s, "rec-a")["rec-a"]
	res, err = s.ProbeLogical(ctx, []string{"rec-c", "rec-a"}, ev)
	if err != nil {
		t.Fatal(err)
	}
	gone, kept := res[0], res[1]
	if gone.ByID || gone.ByFilter || gone.BySimilarity || !strings.HasSuffix(strings.Join(gone.Methods, ","), ",by-similarity:k=10:exact:by-rank") {
		t.Fatalf("after delete ProbeLogical = %+v", gone)
	}
	if !kept.ByID || !kept.BySimilarity || !strings.Contains(strings.Join(kept.Methods, ","), "by-similarity:k=10:exact,") {
		t.Fatalf("a record still present: ProbeLogical = %+v", kept)
	}
}

// The needles are the vector as pgvector lays it out on disk: a scan of the
// raw heap page must find them before any deletion.
func TestOnDiskEncoding(t *testing.T) {
	v := []float32{1, -2}
	want := []byte{2, 0, 0, 0, 0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0}
	if got := pgvector.OnDisk(v); string(got) != string(want) {
		t.Fatalf("OnDisk(%v) = % x, want % x", v, got, want)
	}
	s := open(t, config(t))
	put(t, s, "rec-a", "s", 1)
	var n int
	ev := evidence(t, s, "rec-a")
	// Only the vector's windows: the content's are in the same page.
	ev["rec-a"].Needles = ev["rec-a"].Needles[:len(ev["rec-a"].Needles)-len(store.Windows([]byte(text(1))))]
	n = found(t, s, ev)["rec-a"]
	if n != len(ev["rec-a"].Needles) || n == 0 {
		t.Fatalf("found %d of %d vector needles on disk", n, len(ev["rec-a"].Needles))
	}
}

func TestDeleteOnlyReportsPending(t *testing.T) {
	ctx := context.Background()
	c := config(t)
	c.Reclaim = pg.ModeDeleteOnly
	s := open(t, c)
	if s.Info().Has(store.CapReclaim) {
		t.Fatalf("delete-only declares %v: it must not declare reclaim", s.Info().Capabilities)
	}
	put(t, s, "rec-a", "subject-1", 1)
	put(t, s, "rec-b", "subject-2", 2)
	ev := evidence(t, s, "rec-a")
	if err := s.Delete(ctx, []string{"rec-a"}); err != nil {
		t.Fatal(err)
	}
	rep := reclaim(t, s)
	if rep.State != pg.StateDeferred || !strings.Contains(rep.Evidence, "delete-only") {
		t.Fatalf("Reclaim in delete-only = %+v, want %s", rep, pg.StateDeferred)
	}
	if f := found(t, s, ev); f["rec-a"] == 0 {
		t.Errorf("delete-only left no bytes of rec-a: the PENDING state would be unfounded")
	}
}

// data_dir: the probe reads the relation and WAL files directly.
func TestProbeFromDataDir(t *testing.T) {
	for _, kind := range indexKinds {
		t.Run(kind, func(t *testing.T) { testProbeFromDataDir(t, kind) })
	}
}

func testProbeFromDataDir(t *testing.T, kind string) {
	ctx := context.Background()
	dir := pgtest.DataDir(t)
	c := configIndex(t, kind)
	c.DataDir = dir
	s := open(t, c)
	if !s.Privileges().DataDir {
		t.Fatalf("data_dir %s not usable: %s", dir, s.Privileges().DataDirReason)
	}
	put(t, s, "rec-a", "subject-1", 1)
	put(t, s, "rec-b", "subject-2", 2)
	ev := evidence(t, s, "rec-a") // per record: rec-b stays, so windows it shares are not needles
	ev["rec-b"] = evidence(t, s, "rec-b")["rec-b"]
	rep, err := s.ProbePhysical(ctx, store.NewNeedleSet(ev))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rep.Method, "data_dir") || rep.Found["rec-a"] == 0 || rep.Found["rec-b"] == 0 {
		t.Fatalf("probe from data_dir = %+v", rep)
	}
	if err := s.Delete(ctx, []string{"rec-a"}); err != nil {
		t.Fatal(err)
	}
	if rep := reclaim(t, s); rep.State != "" {
		t.Fatalf("Reclaim = %q %q", rep.State, rep.Evidence)
	}
	if f := found(t, s, ev); f["rec-a"] != 0 || f["rec-b"] == 0 {
		t.Fatalf("after reclaim found %v: want none of rec-a, some of rec-b", f)
	}
}
