package sqlitedoc_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
	"github.com/amnesia-dev/amnesia/store/storetest"
)

// text returns distinct, needle-rich content for a seed.
func text(seed int) string {
	var b strings.Builder
	for i := 0; i < 12; i++ {
		fmt.Fprintf(&b, "record %d line %d: patient visited clinic %x on day %d with note %x. ", seed, i, seed*7919+i, i*31+seed, seed*104729+i*13)
	}
	return b.String()
}

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		Open: func(t *testing.T) store.Store {
			s, err := sqlitedoc.Open(context.Background(), "docs", filepath.Join(t.TempDir(), "docs.db"), true)
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		Put: func(t *testing.T, s store.Store, key, tag string, seed int) {
			if err := s.(*sqlitedoc.Store).Put(context.Background(), sqlitedoc.Record{ID: key, Kind: sqlitedoc.KindDocument, Subject: tag, Text: text(seed)}); err != nil {
				t.Fatal(err)
			}
		},
		NativeDelete: func(t *testing.T, s store.Store, key string) {
			// What an application does without amnesia: a plain DELETE on
			// its own connection (secure_delete off, no reclaim).
			db, err := sql.Open("sqlite3", "file:"+s.(*sqlitedoc.Store).Path()+"?_secure_delete=off")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`DELETE FROM documents WHERE id = ?`, key); err != nil {
				t.Fatal(err)
			}
		},
		NativeLeavesBytes: true,
	})
}

func TestOpenMissingIsUnavailable(t *testing.T) {
	_, err := sqlitedoc.Open(context.Background(), "docs", filepath.Join(t.TempDir(), "nope.db"), false)
	if err == nil || !strings.Contains(err.Error(), store.ErrUnavailable.Error()) {
		t.Fatalf("Open(missing, create=false) = %v, want ErrUnavailable", err)
	}
}

// Shared boilerplate held by another live record is never a needle: finding
// it later would say nothing about the erased record.
func TestSharedWindowsAreNotNeedles(t *testing.T) {
	ctx := context.Background()
	s, err := sqlitedoc.Open(ctx, "docs", filepath.Join(t.TempDir(), "docs.db"), true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	boiler := "Kind regards, the customer support team of Example Corp."
	for i, id := range []string{"a", "b"} {
		if err := s.Put(ctx, sqlitedoc.Record{ID: id, Kind: sqlitedoc.KindDocument, Text: text(i) + boiler}); err != nil {
			t.Fatal(err)
		}
	}
	ev, err := s.ReadEvidence(ctx, []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	if ev["a"].Shared == 0 {
		t.Fatalf("no window counted as shared, though %q is in both records", boiler)
	}
	if w := ev["a"].SharedWith; len(w) != 1 || w["b"] != ev["a"].Shared {
		t.Errorf("SharedWith = %v, want b holding all %d shared windows", w, ev["a"].Shared)
	}
	for _, n := range ev["a"].Needles {
		if strings.Contains(boiler, string(n)) {
			t.Errorf("needle %q is shared boilerplate", n)
		}
	}
}
