package main

// Shared helpers of the end-to-end tests that run the built amnesia binary:
// building it once, running it, building an installation with ingested
// data, copying installations, and reading journals and certificates.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/internal/demo"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
	"github.com/amnesia-dev/amnesia/store/sqlitevec"
)

// amnesiaBin is the amnesia binary built by TestMain.
var amnesiaBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "amnesia-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "amnesia tests:", err)
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		bin := filepath.Join(dir, "amnesia")
		goTool, err := exec.LookPath("go")
		if err != nil {
			fmt.Fprintln(os.Stderr, "amnesia tests: go tool not found:", err)
			return 1
		}
		// The test hooks (AMNESIA_CRASH_AFTER_JOURNAL, the worker barrier)
		// are only in a binary built with this tag; a release build has none.
		cmd := exec.Command(goTool, "build", "-tags", "amnesia_testhooks", "-o", bin, ".")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "amnesia tests: go build:", err)
			return 1
		}
		amnesiaBin = bin
		return m.Run()
	}()
	os.Exit(code)
}

// binResult is one finished run of the binary.
type binResult struct {
	args     []string
	stdout   string
	stderr   string
	code     int            // exit code; -1 when killed by a signal
	signal   syscall.Signal // the signal that killed it, when code is -1
	signaled bool
}

func (r binResult) String() string {
	how := fmt.Sprintf("exit %d", r.code)
	if r.signaled {
		how = "killed by " + r.signal.String()
	}
	return fmt.Sprintf("amnesia %s: %s\n--- stdout\n%s--- stderr\n%s", strings.Join(r.args, " "), how, r.stdout, r.stderr)
}

// runBinary runs the binary with args, extra environment entries (KEY=VALUE) and
// stdin. It fails the test only when the binary cannot be started or takes
// longer than a minute; exit codes and signals are the caller's to check.
func runBinary(t *testing.T, env []string, stdin string, args ...string) binResult {
	t.Helper()
	if amnesiaBin == "" {
		t.Fatal("the amnesia binary was not built (TestMain did not run)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, amnesiaBin, args...)
	cmd.Env = append(cleanEnv(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	res := binResult{args: args, stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.signaled, res.signal = true, ws.Signal()
		}
	default:
		t.Fatalf("run amnesia %s: %v", strings.Join(args, " "), err)
	}
	if ctx.Err() != nil {
		t.Fatalf("amnesia %s did not finish within a minute\n%s", strings.Join(args, " "), res)
	}
	return res
}

// cleanEnv is the test's environment without amnesia's own variables, so
// that a developer's AMNESIA_STATE or a stray crash hook cannot leak in.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "AMNESIA_") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// e2eDoc is one document of a e2eFixture, ingested through capture with its
// chunks (demo.Chunk) and one embedding per chunk (demo.Embed).
type e2eDoc struct {
	ID       string // opaque store key
	Owner    string // raw subject id
	Text     string
	Mentions []string // raw ids of other people the text is about
}

const (
	fixtureDim       = 16
	fixtureChunkSize = 120
)

// e2eFixture is an installation on disk: root/state, root/docs.db, root/vectors.db.
// The store paths in amnesia.yaml are relative to the state directory, so
// the whole root can be copied elsewhere and still work.
type e2eFixture struct {
	root string
}

func (f e2eFixture) state() string  { return filepath.Join(f.root, "state") }
func (f e2eFixture) docsDB() string { return filepath.Join(f.root, "docs.db") }
func (f e2eFixture) vecsDB() string { return filepath.Join(f.root, "vectors.db") }

// buildE2EFixture creates an installation in root (which must not hold one) and
// ingests docs through capture into both stores, then closes everything.
func buildE2EFixture(t *testing.T, root string, docs []e2eDoc) e2eFixture {
	t.Helper()
	return buildE2EFixtureLedger(t, root, "", docs)
}

// buildE2EFixtureLedger is buildE2EFixture with the config's ledger field set
// to ledger ("" for the default ledger.db in the state directory).
func buildE2EFixtureLedger(t *testing.T, root, ledgerSpec string, docs []e2eDoc) e2eFixture {
	t.Helper()
	ctx := context.Background()
	f := e2eFixture{root: root}
	cfg := state.DefaultConfig()
	cfg.Ledger = ledgerSpec
	cfg.Stores = []state.StoreConfig{
		{Name: "docs", Type: sqlitedoc.Type, Path: "../docs.db"},
		{Name: "vectors", Type: sqlitevec.Type, Path: "../vectors.db", Dimensions: fixtureDim},
	}
	sd, err := state.Init(f.state(), cfg)
	if err != nil {
		t.Fatalf("init state: %v", err)
	}
	if got := sd.Config.StorePath(sd.Config.Stores[0]); got != f.docsDB() {
		t.Fatalf("relative store path resolves to %s, want %s", got, f.docsDB())
	}
	ledger, err := lineage.Open(ctx, sd.LedgerSpec())
	if err != nil {
		t.Fatalf("open ledger: %v", err)
	}
	ds, err := sqlitedoc.Open(ctx, "docs", f.docsDB(), true)
	if err != nil {
		t.Fatalf("open docs: %v", err)
	}
	vs, err := sqlitevec.Open(ctx, "vectors", f.vecsDB(), fixtureDim, true)
	if err != nil {
		t.Fatalf("open vectors: %v", err)
	}
	rec := capture.New(ledger, sd.Keyer, sd.Config.Scope)
	cd, cv := rec.Docs(ds), rec.Vectors(vs)
	for _, d := range docs {
		if err := cd.Put(ctx, capture.Doc{ID: d.ID, Kind: sqlitedoc.KindDocument, Subject: d.Owner, Text: d.Text, Mentions: d.Mentions}); err != nil {
			t.Fatalf("ingest %s: %v", d.ID, err)
		}
		for i, text := range demo.Chunk(d.Text, fixtureChunkSize) {
			id := fmt.Sprintf("%s#%d", d.ID, i)
			if err := cd.Put(ctx, capture.Doc{ID: id, Kind: sqlitedoc.KindChunk, Parent: d.ID, Text: text, Mentions: d.Mentions}); err != nil {
				t.Fatalf("ingest %s: %v", id, err)
			}
			if err := cv.Put(ctx, capture.Vector{ID: id, Embedding: demo.Embed(text, fixtureDim)}); err != nil {
				t.Fatalf("ingest vector %s: %v", id, err)
			}
		}
	}
	for _, c := range []io.Closer{vs, ds, ledger} {
		if err := c.Close(); err != nil {
			t.Fatalf("close e2eFixture: %v", err)
		}
	}
	return f
}

// copyE2EFixture copies every file of f into a new temporary directory.
func copyE2EFixture(t *testing.T, f e2eFixture) e2eFixture {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(f.root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(f.root, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o700)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", path)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o600)
	})
	if err != nil {
		t.Fatalf("copy e2eFixture: %v", err)
	}
	return e2eFixture{root: dst}
}

// certFiles lists the files in state/certificates.
func certFiles(t *testing.T, stateDir string) []string {
	t.Helper()
	es, err := os.ReadDir(filepath.Join(stateDir, "certificates"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, filepath.Join(stateDir, "certificates", e.Name()))
	}
	return out
}

// singleCertificate returns the path and decoded payload of the only
// certificate in stateDir.
func singleCertificate(t *testing.T, stateDir string) (string, map[string]any) {
	t.Helper()
	cs := certFiles(t, stateDir)
	if len(cs) != 1 {
		t.Fatalf("want exactly one certificate in %s/certificates, found %d: %v", stateDir, len(cs), cs)
	}
	return cs[0], certificatePayload(t, cs[0])
}

// certificatePayload decodes the DSSE envelope of the bundle at path and
// parses its payload.
func certificatePayload(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var bundle struct {
		MediaType    string          `json:"mediaType"`
		DSSEEnvelope json.RawMessage `json:"dsseEnvelope"`
	}
	if err := json.Unmarshal(b, &bundle); err != nil || bundle.MediaType == "" {
		t.Fatalf("certificate %s is not a bundle: %v", path, err)
	}
	b = bundle.DSSEEnvelope
	var env struct {
		PayloadType string `json:"payloadType"`
		Payload     string `json:"payload"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatalf("certificate %s is not a JSON envelope: %v", path, err)
	}
	raw, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		if raw, err = base64.URLEncoding.DecodeString(env.Payload); err != nil {
			t.Fatalf("certificate %s: payload is not base64: %v", path, err)
		}
	}
	var p map[string]any
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatalf("certificate %s: payload is not JSON: %v", path, err)
	}
	return p
}

// predicate returns payload["predicate"].
func predicateOf(t *testing.T, payload map[string]any) map[string]any {
	t.Helper()
	p, ok := payload["predicate"].(map[string]any)
	if !ok {
		t.Fatalf("certificate payload has no predicate object")
	}
	return p
}

// journalEntry is one journal line.
type journalEntry = saga.JournalEntry

// erasureDirs lists state/erasures/*.
func erasureDirs(t *testing.T, stateDir string) []string {
	t.Helper()
	ds, err := filepath.Glob(filepath.Join(stateDir, "erasures", "*"))
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// readJournalFile parses a journal with the one journal parser
// (saga.ParseJournal): the version header, then one entry per line. Every
// line must be complete, the hash chain unbroken and the seq numbers 1, 2, …
func readJournalFile(t *testing.T, path string) []journalEntry {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 {
		t.Fatalf("journal %s is empty", path)
	}
	es, torn, err := saga.ParseJournal(b)
	if err != nil {
		t.Fatalf("journal %s: %v", path, err)
	}
	if torn != nil {
		t.Fatalf("journal %s does not end with a complete line (%d bytes torn)", path, torn.Len)
	}
	if b[len(b)-1] != '\n' {
		t.Fatalf("journal %s does not end with a newline", path)
	}
	for i, e := range es {
		if e.Seq != i+1 {
			t.Fatalf("journal %s: entry %d has seq %d", path, i+1, e.Seq)
		}
	}
	return es
}
