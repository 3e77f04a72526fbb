package sqlitevec_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/sqlitevec"
)

// A vector store written only through amnesia, vectors replaced included:
// the free-space audit proves the unused space zero, Reclaim skips VACUUM
// and says so, the physical probe finds none of the erased vectors'
// needles, and no earlier version of them is left in the file.
func TestReclaimSkipsVacuum(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "vec.db")
	s, err := sqlitevec.Open(ctx, "vectors", path, dim, true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var keys []string
	var earlier [][]byte
	for i := 0; i < 300; i++ {
		id := fmt.Sprintf("v-%03d", i)
		if i%30 == 0 {
			keys = append(keys, id)
			old := vector(10000 + i)
			if err := s.Put(ctx, sqlitevec.Record{ID: id, Subject: "s", Embedding: old}); err != nil {
				t.Fatal(err)
			}
			earlier = append(earlier, store.Float32LE(old)[:40])
		}
		if err := s.Put(ctx, sqlitevec.Record{ID: id, Subject: "s", Embedding: vector(i)}); err != nil {
			t.Fatal(err)
		}
	}
	ev, err := s.ReadEvidence(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, keys); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Reclaim(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("method: %s", rep.Method)
	if !strings.Contains(rep.Method, "VACUUM skipped: free-space audit of") || !strings.Contains(rep.Method, "every unused byte is zero") {
		t.Fatalf("method %q: want VACUUM skipped on a zero free-space audit", rep.Method)
	}
	sc, err := s.ProbePhysical(ctx, store.NewNeedleSet(ev))
	if err != nil {
		t.Fatal(err)
	}
	if sc.Bytes == 0 || len(sc.Found) != 0 {
		t.Errorf("physical probe: %d bytes, %d records found", sc.Bytes, len(sc.Found))
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range earlier {
		if bytes.Contains(b, e) {
			t.Errorf("an earlier version of %s is in the file", keys[i])
		}
	}
}
