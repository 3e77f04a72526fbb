package sqlitevec_test

import (
	"context"
	"database/sql"
	"math"
	"path/filepath"
	"testing"

	_ "github.com/mattn/go-sqlite3"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/sqlitevec"
	"github.com/amnesia-dev/amnesia/store/storetest"
)

const dim = 32

func vector(seed int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(math.Sin(float64(seed*dim+i)*1.37)) + float32(seed)*1e-3
	}
	return v
}

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		Open: func(t *testing.T) store.Store {
			s, err := sqlitevec.Open(context.Background(), "vectors", filepath.Join(t.TempDir(), "vec.db"), dim, true)
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		Put: func(t *testing.T, s store.Store, key, tag string, seed int) {
			if err := s.(*sqlitevec.Store).Put(context.Background(), sqlitevec.Record{ID: key, Subject: tag, Embedding: vector(seed)}); err != nil {
				t.Fatal(err)
			}
		},
		NativeDelete: func(t *testing.T, s store.Store, key string) {
			// A plain vec0 DELETE, as an application would issue it, even
			// with secure_delete on and a full VACUUM afterwards: the vector
			// stays in its chunk blob (REFERENCE.md, sqlite-vec v0.1.6).
			db, err := sql.Open("sqlite3", "file:"+s.(*sqlitevec.Store).Path()+"?_secure_delete=on")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for _, q := range []string{`DELETE FROM vectors WHERE id = '` + key + `'`, `VACUUM`, `PRAGMA wal_checkpoint(TRUNCATE)`} {
				if _, err := db.Exec(q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
		},
		NativeLeavesBytes: true,
	})
}

func TestPutRejectsWrongDimensions(t *testing.T) {
	s, err := sqlitevec.Open(context.Background(), "vectors", filepath.Join(t.TempDir(), "vec.db"), dim, true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Put(context.Background(), sqlitevec.Record{ID: "x", Embedding: make([]float32, dim+1)}); err == nil {
		t.Fatal("Put accepted a vector of the wrong size")
	}
}
