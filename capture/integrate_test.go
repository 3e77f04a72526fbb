package capture_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/pgtest"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/pgdoc"
	"github.com/amnesia-dev/amnesia/store/pgvector"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
	"github.com/amnesia-dev/amnesia/store/sqlitevec"
)

const (
	guidePage = "../docs/integrate.md"
	guideCode = "example_integrate_test.go"
	alice     = "alice@example.org"
	bob       = "bob@example.org"
	aliceText = "Alice moved to Lyon in May. "
	bobText   = "Bob prefers email. "
)

// fenced returns the fenced blocks of lang in the guide, without the fences.
func fenced(t *testing.T, lang string) []string {
	t.Helper()
	b, err := os.ReadFile(guidePage)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?ms)^```" + lang + "\n(.*?)\n```$")
	var out []string
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		out = append(out, m[1])
	}
	return out
}

// TestIntegrateDocMatchesCode: every ```go block of docs/integrate.md is
// the matching marked region of example_integrate_test.go, byte for byte,
// so the page shows the code the tests below run.
func TestIntegrateDocMatchesCode(t *testing.T) {
	b, err := os.ReadFile(guideCode)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?s)// integrate:begin\n(.*?)// integrate:end\n`)
	var regions []string
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		regions = append(regions, strings.TrimRight(m[1], "\n"))
	}
	blocks := fenced(t, "go")
	if len(regions) == 0 || len(blocks) != len(regions) {
		t.Fatalf("%s has %d go blocks, %s has %d integrate regions: they must match one to one", guidePage, len(blocks), guideCode, len(regions))
	}
	for i := range regions {
		if blocks[i] != regions[i] {
			t.Errorf("go block %d of %s differs from region %d of %s: copy the region into the page", i+1, guidePage, i+1, guideCode)
		}
	}
	if n := len(fenced(t, "yaml")); n != 2 {
		t.Errorf("%s has %d yaml blocks, the tests expect 2 (SQLite, then PostgreSQL + pgvector)", guidePage, n)
	}
}

// initFromGuide does what `amnesia init --state <dir> --config amnesia.yaml`
// does with the guide's yaml block i.
func initFromGuide(t *testing.T, i int) string {
	t.Helper()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "amnesia.yaml")
	if err := os.WriteFile(cfgPath, []byte(fenced(t, "yaml")[i]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := state.LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	stateDir := filepath.Join(dir, ".amnesia")
	if _, err := state.Init(stateDir, cfg); err != nil {
		t.Fatal(err)
	}
	return stateDir
}

// rawHas reports whether the store itself (not through capture) holds key.
func rawHas(t *testing.T, stateDir, name, key string) bool {
	t.Helper()
	ctx := context.Background()
	sd, err := state.Open(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := sd.Config.Store(name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := sd.Config.OpenStore(ctx, sc, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var found bool
	switch s := s.(type) {
	case *sqlitedoc.Store:
		r, e := s.Get(ctx, key)
		found, err = r != nil, e
	case *sqlitevec.Store:
		r, e := s.Get(ctx, key)
		found, err = r != nil, e
	case *pgdoc.Store:
		r, e := s.Get(ctx, key)
		found, err = r != nil, e
	case *pgvector.Store:
		r, e := s.Get(ctx, key)
		found, err = r != nil, e
	default:
		t.Fatalf("store %s: %T", name, s)
	}
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// guide runs the guide's code step by step on the stores docStore and
// vecStore of an initialised state directory, checking each outcome.
func guide(t *testing.T, stateDir, docStore, vecStore string) {
	ctx := context.Background()
	app, err := capture.Open(ctx, stateDir)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	if err := ingest(ctx, app, docStore, vecStore, "doc-1", alice, "Alice moved to Lyon in May. She asked to be called on Tuesdays."); err != nil {
		t.Fatal(err)
	}
	if err := ingest(ctx, app, docStore, vecStore, "doc-2", bob, "Bob prefers email. He renewed his plan in March."); err != nil {
		t.Fatal(err)
	}
	before, err := search(ctx, app, docStore, vecStore, "Where does Alice live?")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(before, aliceText) || !slices.Contains(before, bobText) {
		t.Fatalf("before the erasure, search found %q; want Alice's and Bob's chunks", before)
	}

	cert, err := forget(ctx, app, alice, "DSR-2026-0042")
	if err != nil {
		t.Fatal(err)
	}
	// The certificate covers Alice's document, both chunks (derived from
	// it) and both embeddings (derived from the chunks, in the other
	// store), and nothing of Bob's.
	pemKey, _ := os.ReadFile(app.PublicKeyPath())
	pub, _ := certificate.ParsePublicKeyPEM(pemKey)
	bundle, _ := os.ReadFile(cert)
	checked, err := certificate.VerifyBundle(ctx, bundle, certificate.VerifyOptions{Keys: []certificate.TrustedKey{{Public: pub}}})
	if err != nil {
		t.Fatal(err)
	}
	p := checked.Statement.Predicate
	got := map[string]int{}
	for _, a := range p.Artifacts {
		got[a.Store+"/"+a.Kind+"/"+a.Outcome]++
		t.Logf("%s %s %s %s(%s) %s", a.ID, a.Store, a.Kind, a.Outcome, a.Level, a.Reason)
	}
	want := map[string]int{docStore + "/source/VERIFIED": 1, docStore + "/chunk/VERIFIED": 2, vecStore + "/embedding/VERIFIED": 2}
	if !p.Complete || len(got) != len(want) {
		t.Errorf("certificate: complete=%v artifacts %v, want %v", p.Complete, got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("certificate: %d × %s, want %d (all: %v)", got[k], k, n, got)
		}
	}

	after, err := search(ctx, app, docStore, vecStore, "Where does Alice live?")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range after {
		if strings.Contains(c, "Alice") || strings.Contains(c, "She asked") {
			t.Errorf("after the erasure, search still returns %q", c)
		}
	}
	if !slices.Contains(after, bobText) {
		t.Errorf("after the erasure, search found %q; Bob's chunks must stay", after)
	}
	for _, k := range []string{"doc-1", "doc-1#0", "doc-1#1"} {
		if rawHas(t, stateDir, docStore, k) {
			t.Errorf("%s still holds %s", docStore, k)
		}
	}
	for _, k := range []string{"doc-1#0", "doc-1#1"} {
		if rawHas(t, stateDir, vecStore, k) {
			t.Errorf("%s still holds %s", vecStore, k)
		}
	}
	if !rawHas(t, stateDir, docStore, "doc-2#1") || !rawHas(t, stateDir, vecStore, "doc-2#1") {
		t.Errorf("Bob's chunk or embedding was erased with Alice's")
	}

	if err := ingest(ctx, app, docStore, vecStore, "doc-1", alice, "Alice again."); !errors.Is(err, capture.ErrSubjectErased) {
		t.Errorf("re-ingest of an erased subject's document: %v, want capture.ErrSubjectErased", err)
	}
	if err := ingest(capture.WithNewConsent(ctx, "test"), app, docStore, vecStore, "doc-1", alice, "Alice again."); !errors.Is(err, lineage.ErrErased) {
		t.Errorf("re-ingest of an erased document with new consent: %v, want lineage.ErrErased", err)
	}
	if _, err := app.Erase(ctx, alice, "DSR-2026-0043"); !errors.Is(err, capture.ErrAlreadyErased) {
		t.Errorf("second erasure: %v, want ErrAlreadyErased", err)
	}
	if _, err := app.Erase(ctx, "nobody@example.org", "DSR-2026-0044"); !errors.Is(err, capture.ErrNoLineage) {
		t.Errorf("erasure of an unknown subject: %v, want ErrNoLineage", err)
	}
	if _, err := app.Erase(ctx, bob, " "); err == nil || !strings.Contains(err.Error(), "reason is required") {
		t.Errorf("erasure without a reason: %v", err)
	}
}

func TestIntegrateGuideSQLite(t *testing.T) {
	guide(t, initFromGuide(t, 0), "docs", "vectors")
	if err := run(context.Background(), initFromGuide(t, 0), "docs", "vectors"); err != nil {
		t.Fatalf("run: %v", err)
	}
}

// pgWithVector returns the DSN of a database of the test's own on the test
// server, with the vector extension, or skips when there is no server.
func pgWithVector(t *testing.T) string {
	t.Helper()
	return pgtest.DB(t, "vector")
}

// dropTables drops tables on the test server now and when the test ends.
func dropTables(t *testing.T, dsn string, tables ...string) {
	t.Helper()
	drop := func() {
		ctx := context.Background()
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("drop tables: %v", err)
			return
		}
		defer c.Close(ctx)
		for _, tb := range tables {
			if _, err := c.Exec(ctx, "DROP TABLE IF EXISTS "+pgx.Identifier{tb}.Sanitize()); err != nil {
				t.Errorf("drop %s: %v", tb, err)
			}
		}
	}
	drop()
	t.Cleanup(drop)
}

func TestIntegrateGuidePostgresPgvector(t *testing.T) {
	dsn := pgWithVector(t)
	t.Setenv("APP_DSN", dsn)
	// The guide's configuration names these tables.
	dropTables(t, dsn, "support_tickets", "ticket_embeddings")
	guide(t, initFromGuide(t, 1), "tickets", "ticket_vectors")
	dropTables(t, dsn, "support_tickets", "ticket_embeddings")
	if err := run(context.Background(), initFromGuide(t, 1), "tickets", "ticket_vectors"); err != nil {
		t.Fatalf("run: %v", err)
	}
}

func uniq(prefix string) string {
	b := make([]byte, 5)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// initConfig initialises a state directory with the given stores.
func initConfig(t *testing.T, stores ...store.Config) string {
	t.Helper()
	cfg := state.DefaultConfig()
	cfg.Stores = stores
	dir := filepath.Join(t.TempDir(), ".amnesia")
	if _, err := state.Init(dir, cfg); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestIntegratePostgresDocsWithSQLiteVectors runs the guide's code with
// chunks in a PostgreSQL table and their embeddings in sqlite-vec (no
// pgvector needed), and checks what the postgres wrapper stores and hides.
func TestIntegratePostgresDocsWithSQLiteVectors(t *testing.T) {
	dsn := pgtest.DB(t) // a database of the test's own
	ctx := context.Background()
	table := uniq("capture_docs_")
	dropTables(t, dsn, table)
	stateDir := initConfig(t,
		store.Config{Name: "tickets", Type: pgdoc.Type, DSN: dsn, Table: table},
		store.Config{Name: "vectors", Type: sqlitevec.Type, Path: "vectors.db", Dimensions: 8},
	)
	guide(t, stateDir, "tickets", "vectors")

	app, err := capture.Open(ctx, stateDir)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := app.Docs(ctx, "tickets")
	if err != nil {
		t.Fatal(err)
	}
	// The row holds the keyed digest as its subject tag and the parent in
	// metadata; a read through capture gives the parent back.
	sd, _ := state.Open(stateDir)
	bobKey, _ := sd.Keyer.Key(sd.Config.Scope, bob)
	r, err := docs.Get(ctx, "doc-2#0")
	if err != nil || r == nil {
		t.Fatalf("get doc-2#0: %v %v", r, err)
	}
	if r.Subject != bobKey.String() || r.Parent != "doc-2" || r.Kind != capture.KindChunk || r.Text != bobText || r.Metadata != nil {
		t.Errorf("doc-2#0 through capture = %+v", r)
	}
	if err := docs.Put(ctx, capture.Doc{ID: "doc-2#9", Kind: capture.KindChunk, Parent: "doc-2", Text: "x", Metadata: map[string]any{"parent": "other"}}); err == nil {
		t.Errorf("metadata with the reserved key parent was accepted")
	}
	if err := docs.Put(ctx, capture.Doc{ID: "doc-5", Kind: capture.KindDocument, Subject: bob, Text: "Bob's invoice.", Metadata: map[string]any{"lang": "en"}}); err != nil {
		t.Fatal(err)
	}
	if r, _ := docs.Get(ctx, "doc-5"); r == nil || r.Metadata["lang"] != "en" || r.Parent != "" {
		t.Errorf("doc-5 through capture = %+v", r)
	}

	// Suppression hides without deleting: what a read sees while an
	// erasure runs, or when a store could not delete yet.
	l, err := lineage.Open(ctx, sd.LedgerSpec())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	vecs, _ := app.Vectors(ctx, "vectors")
	bobVec, err := vecs.Get(ctx, "doc-2#0")
	if err != nil || bobVec == nil {
		t.Fatalf("bob's embedding: %v %v", bobVec, err)
	}
	if err := l.Suppress(ctx, "er-test", []string{
		lineage.ArtifactID(sd.Keyer, sd.Config.Scope, "tickets", "doc-2#0"),
		lineage.ArtifactID(sd.Keyer, sd.Config.Scope, "vectors", "doc-2#0"),
	}); err != nil {
		t.Fatal(err)
	}
	if r, _ := docs.Get(ctx, "doc-2#0"); r != nil {
		t.Errorf("a suppressed chunk is returned by Get")
	}
	rs, err := docs.BySubject(ctx, bob)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range rs {
		ids = append(ids, r.ID)
	}
	if !slices.Equal(ids, []string{"doc-2", "doc-2#1", "doc-5"}) {
		t.Errorf("BySubject(bob) = %v, want doc-2, doc-2#1, doc-5 (doc-2#0 suppressed)", ids)
	}
	ns, err := vecs.Search(ctx, bobVec.Embedding, 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range ns {
		if n.ID == "doc-2#0" {
			t.Errorf("a suppressed embedding is returned by Search")
		}
	}
	if !rawHas(t, stateDir, "tickets", "doc-2#0") {
		t.Errorf("suppression deleted the row; it must only hide it")
	}
	if _, err := docs.All(ctx); err == nil {
		t.Errorf("All on a postgres store did not say it is unavailable")
	}
	if err := app.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestAppStores: stores are named as amnesia.yaml names them; an embedding
// finds its chunk in any configured document store, also one this App never
// opened.
func TestAppStores(t *testing.T) {
	ctx := context.Background()
	stateDir := initConfig(t,
		store.Config{Name: "docs", Type: sqlitedoc.Type, Path: "docs.db"},
		store.Config{Name: "vectors", Type: sqlitevec.Type, Path: "vectors.db", Dimensions: 4},
	)
	app, err := capture.Open(ctx, stateDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Docs(ctx, "nope"); err == nil || !strings.Contains(err.Error(), "docs (sqlite-doc), vectors (sqlite-vec)") {
		t.Errorf("unknown store: %v", err)
	}
	if _, err := app.Docs(ctx, "vectors"); err == nil || !strings.Contains(err.Error(), `use Vectors(ctx, "vectors")`) {
		t.Errorf("vector store as docs: %v", err)
	}
	if _, err := app.Vectors(ctx, "docs"); err == nil || !strings.Contains(err.Error(), `use Docs(ctx, "docs")`) {
		t.Errorf("doc store as vectors: %v", err)
	}
	docs, err := app.Docs(ctx, "docs")
	if err != nil {
		t.Fatal(err)
	}
	if err := docs.Put(ctx, capture.Doc{ID: "c0", Kind: capture.KindDocument, Subject: "carol@example.org", Text: "Carol's notes", Metadata: map[string]any{"a": 1}}); err == nil {
		t.Errorf("sqlite-doc accepted metadata it cannot store")
	}
	if err := docs.Put(ctx, capture.Doc{ID: "c1", Kind: capture.KindDocument, Subject: "carol@example.org", Text: "Carol's notes"}); err != nil {
		t.Fatal(err)
	}
	if err := app.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Docs(ctx, "docs"); err == nil {
		t.Errorf("a closed App opened a store")
	}

	// A new process that only writes vectors.
	app, err = capture.Open(ctx, stateDir)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	vecs, err := app.Vectors(ctx, "vectors")
	if err != nil {
		t.Fatal(err)
	}
	if err := vecs.Put(ctx, capture.Vector{ID: "c1v", Of: "c1", Embedding: []float32{1, 0, 0, 0}, Content: "x"}); err == nil {
		t.Errorf("sqlite-vec accepted content it cannot store")
	}
	if err := vecs.Put(ctx, capture.Vector{ID: "c1", Embedding: []float32{1, 0, 0, 0}}); err != nil {
		t.Fatalf("embedding of a chunk captured by another App: %v", err)
	}
	er, err := app.Erase(ctx, "carol@example.org", "T-1")
	if err != nil {
		t.Fatal(err)
	}
	// Two artifacts: the refused writes (c0, c1v) recorded nothing.
	if !er.Complete || len(er.Statement.Predicate.Artifacts) != 2 {
		t.Errorf("erasure: complete=%v artifacts=%d, want the document and its embedding", er.Complete, len(er.Statement.Predicate.Artifacts))
	}
	// Another scope (tenant) is another subject key space.
	other, err := capture.Open(ctx, stateDir, capture.WithScope("tenant-7"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	odocs, err := other.Docs(ctx, "docs")
	if err != nil {
		t.Fatal(err)
	}
	if err := odocs.Put(ctx, capture.Doc{ID: "t7-1", Kind: capture.KindDocument, Subject: "dave@example.org", Text: "Dave's ticket"}); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Erase(ctx, "dave@example.org", "T-2"); !errors.Is(err, capture.ErrNoLineage) {
		t.Errorf("erasure in the default scope of a tenant-7 subject: %v, want ErrNoLineage", err)
	}
	if er, err := other.Erase(ctx, "dave@example.org", "T-2"); err != nil || !er.Complete || er.Statement.Predicate.Scope != "tenant-7" {
		t.Errorf("erasure in tenant-7: %+v %v", er, err)
	}
	if _, err := os.Stat(er.Certificate); err != nil {
		t.Errorf("certificate: %v", err)
	}
}

func TestOpenNotInitialized(t *testing.T) {
	_, err := capture.Open(context.Background(), t.TempDir())
	if !errors.Is(err, capture.ErrNotInitialized) {
		t.Errorf("Open of an empty directory: %v, want ErrNotInitialized", err)
	}
}
