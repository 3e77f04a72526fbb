package sqlitedoc_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
	"github.com/amnesia-dev/amnesia/store/storetest"
)

// appDB creates an application's own SQLite table (not amnesia's
// documents): a text key, the owner inside a JSON text column, two content
// columns and a parent; it returns the configuration that maps it.
func appDB(t *testing.T) store.Config {
	t.Helper()
	path := filepath.Join(t.TempDir(), "app.db")
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE notes (note_ref TEXT PRIMARY KEY, attrs TEXT NOT NULL, body TEXT, title VARCHAR(200), thread TEXT, score REAL)`); err != nil {
		t.Fatal(err)
	}
	return store.Config{Name: "notes", Type: sqlitedoc.Type, Path: path, Mapping: &store.Mapping{Table: "notes", Key: "note_ref",
		Subject: &store.Field{JSON: "attrs", Path: []string{"owner"}}, Content: []string{"body", "title"}, Parent: &store.Field{Column: "thread"}}}
}

// appPut writes a row as the application does, on its own connection.
func appPut(t *testing.T, path, key, tag string, seed int) {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?_secure_delete=off")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`INSERT INTO notes (note_ref, attrs, body, title, thread) VALUES (?, json_object('owner', ?, 'lang', 'en'), ?, ?, 'thread-9')`,
		key, tag, text(seed), fmt.Sprintf("title %d: callback %x for caller %x", seed, seed*6151, seed*3571)); err != nil {
		t.Fatal(err)
	}
}

func openApp(t *testing.T, c store.Config) *sqlitedoc.Store {
	t.Helper()
	s, err := store.Open(context.Background(), c, false)
	if err != nil {
		t.Fatal(err)
	}
	return s.(*sqlitedoc.Store)
}

func TestConformanceMapped(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		Open: func(t *testing.T) store.Store { return openApp(t, appDB(t)) },
		Put: func(t *testing.T, s store.Store, key, tag string, seed int) {
			appPut(t, s.(*sqlitedoc.Store).Path(), key, tag, seed)
		},
		NativeDelete: func(t *testing.T, s store.Store, key string) {
			db, err := sql.Open("sqlite3", "file:"+s.(*sqlitedoc.Store).Path()+"?_secure_delete=off")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`DELETE FROM notes WHERE note_ref = ?`, key); err != nil {
				t.Fatal(err)
			}
		},
		NativeLeavesBytes: true,
	})
}

// Both content columns are needles; the owner is found inside the JSON; the
// other rows stay.
func TestMappedTable(t *testing.T) {
	ctx := context.Background()
	c := appDB(t)
	appPut(t, c.Path, "n1", "hmac:aa", 1)
	appPut(t, c.Path, "n2", "hmac:bb", 2)
	if errs := store.Errors(store.Check(ctx, c)); len(errs) != 0 {
		t.Fatalf("check: %v", errs)
	}
	s := openApp(t, c)
	defer s.Close()
	if err := s.Put(ctx, sqlitedoc.Record{ID: "x", Kind: sqlitedoc.KindDocument, Text: "x"}); err == nil {
		t.Fatal("Put on a mapped table was accepted")
	}
	r, err := s.Get(ctx, "n1")
	if err != nil || r == nil || r.Subject != "hmac:aa" || r.Parent != "thread-9" || !strings.HasPrefix(r.Text, text(1)) {
		t.Fatalf("Get = %+v, %v", r, err)
	}
	ev, err := s.ReadEvidence(ctx, []string{"n1"})
	if err != nil {
		t.Fatal(err)
	}
	title := store.Windows([]byte("title 1: callback 1807 for caller df3"))
	probe := func(set map[string]*store.Evidence) map[string]int {
		rep, err := s.ProbePhysical(ctx, store.NewNeedleSet(set))
		if err != nil {
			t.Fatal(err)
		}
		return rep.Found
	}
	if f := probe(map[string]*store.Evidence{"t": {Key: "t", Needles: title}}); f["t"] == 0 {
		t.Fatal("the title column's bytes are not found before deletion")
	}
	before, err := s.ProbeLogical(ctx, []string{"n1"}, ev)
	if err != nil || !before[0].ByID || !before[0].ByFilter || !strings.Contains(strings.Join(before[0].Methods, ","), "by-filter:attrs->owner") {
		t.Fatalf("before: %+v, %v", before, err)
	}
	if f := probe(ev); f["n1"] == 0 {
		t.Fatalf("before deletion found %v", f)
	}
	if err := s.Delete(ctx, []string{"n1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reclaim(ctx); err != nil {
		t.Fatal(err)
	}
	if f := probe(ev); f["n1"] != 0 {
		t.Fatalf("after found %v", f)
	}
	if f := probe(map[string]*store.Evidence{"t": {Key: "t", Needles: title}}); f["t"] != 0 {
		t.Fatal("the title column's bytes survive")
	}
	if r, _ := s.Get(ctx, "n2"); r == nil || r.Subject != "hmac:bb" {
		t.Fatalf("the other row: %+v", r)
	}
}

func TestCheckMappedTable(t *testing.T) {
	ctx := context.Background()
	c := appDB(t)
	for _, tc := range []struct {
		name string
		edit func(m *store.Mapping)
		want string
	}{
		{"missing key", func(m *store.Mapping) { m.Key = "id" }, `table notes has no column "id"`},
		{"missing content", func(m *store.Mapping) { m.Content = []string{"body", "text"} }, `table notes has no column "text"`},
		{"content not text", func(m *store.Mapping) { m.Content = []string{"score"} }, `table notes: column "score" is REAL`},
		{"missing table", func(m *store.Mapping) { m.Table = "documents" }, "no table documents"},
		{"vector", func(m *store.Mapping) { m.Vector = "v" }, "not read by a SQLite document store"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc := c
			m := *c.Mapping
			tc.edit(&m)
			cc.Mapping = &m
			errs := store.Errors(store.Check(ctx, cc))
			if len(errs) != 1 || !strings.Contains(errs[0].Message, tc.want) {
				t.Fatalf("check = %v, want %q", errs, tc.want)
			}
		})
	}
}
