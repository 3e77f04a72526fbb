package census_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/internal/census"
	"github.com/amnesia-dev/amnesia/internal/pgtest"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/store"
	_ "github.com/amnesia-dev/amnesia/store/file"
	_ "github.com/amnesia-dev/amnesia/store/pgvector"
	_ "github.com/amnesia-dev/amnesia/store/sqlitedoc"
	"github.com/amnesia-dev/amnesia/subject"
)

// Planted personal data: none of it may appear in a report.
var secrets = []string{"alice@example.org", "bob@example.org", "Alice's diagnosis is private", "carol-secret-note"}

func sum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

func noSecrets(t *testing.T, r *census.Report) {
	t.Helper()
	b, _ := json.Marshal(r)
	for _, s := range secrets {
		if strings.Contains(string(b), s) {
			t.Errorf("the report holds planted data %q: %s", s, b)
		}
	}
}

// An application's own SQLite table, written before amnesia was installed
// (in the default rollback-journal mode): the census counts its records, the
// ones a field attributes, the byte-identical ones and those with lineage,
// and leaves the file exactly as it was (no journal mode change, no file
// created beside it).
func TestSQLiteCensusWritesNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "app.db")
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TABLE notes (id TEXT PRIMARY KEY, owner TEXT, meta TEXT, body TEXT)`,
		`INSERT INTO notes VALUES ('n1', 'alice@example.org', '{"source":"crm","lang":"en"}', 'Alice''s diagnosis is private')`,
		`INSERT INTO notes VALUES ('n2', 'alice@example.org', '{"source":"crm"}', 'carol-secret-note')`,
		`INSERT INTO notes VALUES ('n3', 'bob@example.org', NULL, 'carol-secret-note')`,
		`INSERT INTO notes VALUES ('n4', NULL, '{"email":"bob@example.org"}', 'unrelated')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(q, err)
		}
	}
	db.Close()
	before := sum(t, path)

	l, err := sqliteledger.Open(ctx, filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Record(ctx, lineage.Artifact{ID: "art:00000000000000000001", Scope: "default", Subject: subject.Key{1}, Kind: lineage.KindSource, Store: "notes", Key: "n1", Digest: strings.Repeat("ab", 32)}); err != nil {
		t.Fatal(err)
	}

	c := store.Config{Name: "notes", Type: "sqlite-doc", Path: path, Mapping: &store.Mapping{Table: "notes", Key: "id", Subject: &store.Field{Column: "owner"}, Content: []string{"body"}}}
	r := census.Run(ctx, c, census.Options{Field: "owner", Ledger: l, Scope: "default"})
	if r.Error != "" {
		t.Fatal(r.Error)
	}
	if r.Records != 4 || r.Attributable != 3 || r.WithLineage != 1 || r.Duplicates != 2 || r.DuplicateGroups != 1 || r.Level != "physical" {
		t.Errorf("census %+v: want 4 records, 3 attributable by owner, 1 with lineage, 2 identical in 1 group, physical", r)
	}
	// A member of a JSON metadata column attributes too.
	if r := census.Run(ctx, c, census.Options{Field: "email"}); r.Attributable != 1 || r.WithLineage != -1 {
		t.Errorf("by a JSON member: %+v, want 1 attributable, lineage not counted", r)
	}
	if len(r.Changed) != 0 {
		t.Errorf("files changed: %+v", r.Changed)
	}
	if sum(t, path) != before {
		t.Error("the census changed the database file")
	}
	for _, s := range []string{"-wal", "-shm", "-journal"} {
		if _, err := os.Stat(path + s); err == nil {
			t.Errorf("the census left %s", filepath.Base(path+s))
		}
	}
	noSecrets(t, r)

	// A store that is not there is reported, not a crash.
	gone := c
	gone.Path = filepath.Join(dir, "missing.db")
	if r := census.Run(ctx, gone, census.Options{}); r.Error == "" || r.Records != 0 {
		t.Errorf("a missing store: %+v, want an error", r)
	}
}

// A file that changes while the census runs (an engine that rewrites on
// open, or an application writing meanwhile) is reported, by path only.
func TestCensusReportsFilesChanged(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "data")
	if err := os.WriteFile(path, []byte("Alice's diagnosis is private"), 0o600); err != nil {
		t.Fatal(err)
	}
	store.Register("census-test-rewrites", store.Adapter{
		Open: func(context.Context, store.Config, bool) (store.Store, error) { return nil, store.ErrUnavailable },
		List: func(_ context.Context, c store.Config, fn func(store.Listed) error) error {
			if err := os.WriteFile(c.Path, []byte("carol-secret-note"), 0o600); err != nil {
				return err
			}
			if err := os.WriteFile(c.Path+"-wal", []byte("x"), 0o600); err != nil {
				return err
			}
			return fn(store.Listed{Key: "k", Fields: map[string]string{"user": "alice@example.org"}})
		},
	})
	r := census.Run(ctx, store.Config{Name: "s", Type: "census-test-rewrites", Path: path}, census.Options{Field: "user"})
	if r.Error != "" || r.Records != 1 || r.Attributable != 1 || r.Level != "unknown" {
		t.Fatalf("census %+v", r)
	}
	got := map[string]string{}
	for _, c := range r.Changed {
		got[filepath.Base(c.Path)] = c.What
	}
	if !strings.HasPrefix(got["data"], "modified") || got["data-wal"] != "created" || len(got) != 2 {
		t.Errorf("changed files %+v, want data modified and data-wal created", r.Changed)
	}
	noSecrets(t, r)
}

// A LangChain-shaped pgvector table: two collections; the census counts
// only the configured one, attributes through a member of the JSON metadata,
// runs read-only, and says the level is logical without data_dir.
func TestPostgresCensus(t *testing.T) {
	dsn := pgtest.DB(t, "vector")
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	for _, q := range []string{
		`CREATE TABLE langchain_pg_collection (uuid uuid PRIMARY KEY, name varchar NOT NULL UNIQUE, cmetadata json)`,
		`CREATE TABLE langchain_pg_embedding (id varchar PRIMARY KEY, collection_id uuid REFERENCES langchain_pg_collection(uuid), embedding vector(3), document varchar, cmetadata jsonb)`,
		`INSERT INTO langchain_pg_collection VALUES ('11111111-1111-1111-1111-111111111111', 'mine', NULL), ('22222222-2222-2222-2222-222222222222', 'theirs', NULL)`,
		`INSERT INTO langchain_pg_embedding VALUES
		  ('a', '11111111-1111-1111-1111-111111111111', '[1,2,3]', 'Alice''s diagnosis is private', '{"user":"alice@example.org"}'),
		  ('b', '11111111-1111-1111-1111-111111111111', '[1,2,3]', 'Alice''s diagnosis is private', '{"user":"alice@example.org"}'),
		  ('c', '11111111-1111-1111-1111-111111111111', '[4,5,6]', 'carol-secret-note', '{}'),
		  ('d', '22222222-2222-2222-2222-222222222222', '[7,8,9]', 'theirs', '{"user":"bob@example.org"}')`,
	} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
	sc := store.Config{Name: "emb", Type: "pgvector", DSN: dsn, Preset: "langchain", Dimensions: 3, Mapping: &store.Mapping{Collections: []string{"mine"}}}
	r := census.Run(ctx, sc, census.Options{Field: "user"})
	if r.Error != "" {
		t.Fatal(r.Error)
	}
	if r.Records != 3 || r.Attributable != 2 || r.Duplicates != 2 || r.DuplicateGroups != 1 || r.Level != "logical" {
		t.Errorf("census %+v: want 3 records of collection mine, 2 attributable, 2 identical, logical", r)
	}
	noSecrets(t, r)
}
