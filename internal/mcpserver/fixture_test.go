package mcpserver_test

// The installation the end-to-end tests run against: a state directory with
// two SQLite stores (documents and chunks in sqlitedoc, one embedding per
// chunk in sqlite-vec), ingested through capture as an application does,
// and the amnesia binary built once for the stdio tests.

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/internal/demo"
	"github.com/amnesia-dev/amnesia/internal/service"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	_ "github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
	"github.com/amnesia-dev/amnesia/store/sqlitevec"
)

// amnesiaBin is the amnesia binary TestMain builds (for `amnesia mcp`).
var amnesiaBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "amnesia-mcp-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpserver tests:", err)
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		bin := filepath.Join(dir, "amnesia")
		cmd := exec.Command("go", "build", "-o", bin, "../../cmd/amnesia")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "mcpserver tests: go build:", err)
			return 1
		}
		amnesiaBin = bin
		return m.Run()
	}()
	os.Exit(code)
}

const (
	fixtureDim       = 16
	fixtureChunkSize = 120
	// contentMarker is in every document's text: no tool result may hold it.
	contentMarker = "QUARTZ-HERON-CONTENT"
)

// person is one subject of the fixture: a raw id (never to appear in a
// result or a log) and the documents it owns.
type person struct {
	raw  string
	docs []string // document ids
}

var (
	alice = person{raw: "user:alice.7f3q-raw", docs: []string{"a1", "a2"}}
	bob   = person{raw: "user:bob.9k2m-raw", docs: []string{"b1"}}
	carol = person{raw: "user:carol.4t8w-raw", docs: []string{"c1"}}
	dave  = person{raw: "user:dave.6p1z-raw", docs: []string{"d1"}}
)

// nobody was never recorded.
var nobody = person{raw: "user:nobody.0x5n-raw"}

// people are every raw id a leak check looks for.
var people = []person{alice, bob, carol, dave, nobody}

func docText(id string) string {
	return fmt.Sprintf("Notes %s: the customer asked about the invoice of March and the %s delivery to the north depot; "+
		"support promised a call back within two days and logged the ticket for the billing team to review.", id, contentMarker)
}

// fixture is an installation on disk.
type fixture struct {
	root  string
	scope string
	// artifacts is the number of artifacts each raw subject owns.
	artifacts map[string]int
}

func (f *fixture) state() string  { return filepath.Join(f.root, "state") }
func (f *fixture) docsDB() string { return filepath.Join(f.root, "docs.db") }

func buildFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{root: t.TempDir(), artifacts: map[string]int{}}
	cfg := state.DefaultConfig()
	cfg.Stores = []state.StoreConfig{
		{Name: "docs", Type: sqlitedoc.Type, Path: "../docs.db"},
		{Name: "vectors", Type: sqlitevec.Type, Path: "../vectors.db", Dimensions: fixtureDim},
	}
	sd, err := state.Init(f.state(), cfg)
	if err != nil {
		t.Fatalf("init state: %v", err)
	}
	f.scope = sd.Config.Scope
	ledger, err := lineage.Open(ctx, sd.LedgerSpec())
	if err != nil {
		t.Fatalf("open ledger: %v", err)
	}
	ds, err := sqlitedoc.Open(ctx, "docs", f.docsDB(), true)
	if err != nil {
		t.Fatalf("open docs: %v", err)
	}
	vs, err := sqlitevec.Open(ctx, "vectors", filepath.Join(f.root, "vectors.db"), fixtureDim, true)
	if err != nil {
		t.Fatalf("open vectors: %v", err)
	}
	rec := capture.New(ledger, sd.Keyer, sd.Config.Scope)
	cd, cv := rec.Docs(ds), rec.Vectors(vs)
	for _, p := range people {
		for _, id := range p.docs {
			text := docText(id)
			if err := cd.Put(ctx, capture.Doc{ID: id, Kind: sqlitedoc.KindDocument, Subject: p.raw, Text: text}); err != nil {
				t.Fatalf("ingest %s: %v", id, err)
			}
			f.artifacts[p.raw]++
			for i, chunk := range demo.Chunk(text, fixtureChunkSize) {
				cid := fmt.Sprintf("%s#%d", id, i)
				if err := cd.Put(ctx, capture.Doc{ID: cid, Kind: sqlitedoc.KindChunk, Parent: id, Text: chunk}); err != nil {
					t.Fatalf("ingest %s: %v", cid, err)
				}
				if err := cv.Put(ctx, capture.Vector{ID: cid, Embedding: demo.Embed(chunk, fixtureDim)}); err != nil {
					t.Fatalf("ingest vector %s: %v", cid, err)
				}
				f.artifacts[p.raw] += 2
			}
		}
	}
	for _, c := range []io.Closer{vs, ds, ledger} {
		if err := c.Close(); err != nil {
			t.Fatalf("close fixture: %v", err)
		}
	}
	return f
}

// token creates a token of role in the fixture's scope and returns its secret.
func (f *fixture) token(t *testing.T, role service.Role) string {
	t.Helper()
	secret, _, err := service.CreateToken(f.state(), "mcp-test-"+string(role), role, []string{f.scope}, time.Now())
	if err != nil {
		t.Fatalf("create token: %v", err)
	}
	return secret
}

// docsLeft counts the records of docs.db that belong to p's documents.
func (f *fixture) docsLeft(t *testing.T, p person) int {
	t.Helper()
	ds, err := sqlitedoc.Open(context.Background(), "docs", f.docsDB(), false)
	if err != nil {
		t.Fatalf("open docs: %v", err)
	}
	defer ds.Close()
	all, err := ds.All(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range all {
		for _, id := range p.docs {
			if r.ID == id || strings.HasPrefix(r.ID, id+"#") {
				n++
			}
		}
	}
	return n
}

// assertNoLeak fails when text holds a raw subject id or document content.
func assertNoLeak(t *testing.T, where, text string) {
	t.Helper()
	for _, p := range people {
		if strings.Contains(text, p.raw) {
			t.Errorf("%s holds the raw subject id %q:\n%s", where, p.raw, text)
		}
	}
	if strings.Contains(text, contentMarker) {
		t.Errorf("%s holds document content:\n%s", where, text)
	}
}

// assertLogClean checks the installation's log file.
func (f *fixture) assertLogClean(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.state(), "amnesia.log"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	assertNoLeak(t, "amnesia.log", string(b))
}
