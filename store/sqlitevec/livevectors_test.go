package sqlitevec

import (
	"context"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/internal/sqlitex"
)

// liveVectors hands DropShared the same bytes, as many times each, as a
// read through vec0 does (over several chunks, with deleted rows' slots
// and the batch's own vectors left out, identical vectors kept), so the
// evidence is the same; a layout it does not know (vectors_rowids out of
// step with the chunks) is told as such.
func TestLiveVectorsMatchVec0(t *testing.T) {
	ctx := context.Background()
	const dim = 8
	s, err := Open(ctx, "vectors", filepath.Join(t.TempDir(), "vec.db"), dim, true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	vec := func(i int) []float32 {
		v := make([]float32, dim)
		for j := range v {
			v[j] = float32(i%997)*0.37 + float32(j)*1.13 + 0.001
		}
		return v
	}
	var rs []Record
	for i := 0; i < 2600; i++ { // over two chunks; i and i+997 hold the same vector
		rs = append(rs, Record{ID: fmt.Sprintf("v%04d", i), Subject: "tag", Embedding: vec(i)})
	}
	if err := s.PutBatch(ctx, rs); err != nil {
		t.Fatal(err)
	}
	var gone []string
	for i := 100; i < 2600; i += 7 {
		gone = append(gone, fmt.Sprintf("v%04d", i))
	}
	if err := s.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	batch := map[string]bool{"v0003": true, "v1501": true, "v2598": true, "v0100": true} // v0100 is deleted
	collect := func(src func(func(string, []byte) error) error) []string {
		var out []string
		if err := src(func(key string, b []byte) error {
			if key != "" {
				t.Fatalf("a holder named: %q", key)
			}
			out = append(out, hex.EncodeToString(b))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		slices.Sort(out)
		return out
	}
	viaVec0 := sqlitex.Others(ctx, s.db, `SELECT id, embedding FROM vectors`, batch)
	want := collect(func(fn func(string, []byte) error) error {
		return viaVec0(func(_ string, b []byte) error { return fn("", b) })
	})
	conn, err := s.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.chunkLayout(ctx, conn, batch); !ok || err != nil {
		t.Fatalf("chunkLayout: ok %v, %v: the layout is not recognized", ok, err)
	}
	conn.Close()
	got := collect(s.liveVectors(ctx, batch))
	if len(want) != 2600-len(gone)-3 || !slices.Equal(got, want) {
		t.Fatalf("%d vectors from the chunks, %d through vec0 (want %d)", len(got), len(want), 2600-len(gone)-3)
	}
	evidence := func(src func(func(string, []byte) error) error) map[string]*store.Evidence {
		ev := map[string]*store.Evidence{}
		for k := range batch {
			r, err := s.Get(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			if r != nil {
				e := &store.Evidence{Key: k}
				e.AddWindows(store.Float32LE(r.Embedding))
				ev[k] = e
			}
		}
		if err := store.DropShared(ctx, ev, src); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	a := evidence(s.liveVectors(ctx, batch))
	b := evidence(func(fn func(string, []byte) error) error {
		return viaVec0(func(_ string, x []byte) error { return fn("", x) })
	})
	shared := 0
	for k := range a {
		if a[k].Shared != b[k].Shared || len(a[k].Needles) != len(b[k].Needles) {
			t.Errorf("%s: %d shared, %d needles from the chunks; %d, %d through vec0", k, a[k].Shared, len(a[k].Needles), b[k].Shared, len(b[k].Needles))
		}
		shared += a[k].Shared
	}
	if shared == 0 {
		t.Error("no window shared: the case does not test identical vectors")
	}

	// vectors_rowids out of step with the chunks: not the known layout.
	if _, err := s.db.Exec(`INSERT INTO vectors_rowids (id, chunk_id, chunk_offset) VALUES ('ghost', NULL, NULL)`); err != nil {
		t.Fatal(err)
	}
	conn, err = s.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, ok, err := s.chunkLayout(ctx, conn, nil); ok || err != nil {
		t.Errorf("chunkLayout with a row of vectors_rowids no slot holds: ok %v, %v", ok, err)
	}
}
