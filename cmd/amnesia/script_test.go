package main

// The command-line contract as testscript scripts
// (github.com/rogpeppe/go-internal/testscript), the way Go's own tools test
// theirs: testdata/script/<command>.txtar runs the real binary and asserts its
// exit codes, key lines of its output and the files it writes, one short
// file per command.
//
// testscript.Main cannot be used: this package's TestMain already builds the
// binary once (helpers_test.go) and the other tests need it. TestScripts
// therefore calls testscript.Run, whose Setup puts the directory of that
// binary first on each script's PATH, so `exec amnesia ...` runs exactly
// the binary the other end-to-end tests run. Each script starts in its own
// $WORK with an environment that holds no AMNESIA_* variable (testscript
// passes on only PATH, HOME=/no-home and TMPDIR), so the default state
// directory is $WORK/.amnesia.
//
// Besides testscript's own commands, the scripts have:
//
//	exitcode N prog [args...]            run prog (like exec) and require exit status N exactly
//	mode PERM path...                    require each path's permission bits to be PERM (octal, e.g. 0600)
//	empty dir...                         require each directory to exist and be empty (! empty: not empty)
//	capture FILE REGEXP VAR...           set $VAR to REGEXP's submatches in FILE (stdout, stderr or a file)
//	amnesia-fixture ROOT [DOCS]          an installation with ingested data (see scriptFixture)
//	tamper-certificate IN OUT OLD NEW    a certificate whose signed payload has OLD replaced by NEW
//
// Run: go test -run TestScripts ./cmd/amnesia/ (add -testwork to keep each
// script's $WORK for inspection).

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/demo"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
	"github.com/amnesia-dev/amnesia/store/sqlitevec"
)

func TestScripts(t *testing.T) {
	if amnesiaBin == "" {
		t.Fatal("the amnesia binary was not built (TestMain did not run)")
	}
	testscript.Run(t, testscript.Params{
		Dir:                "testdata/script",
		RequireUniqueNames: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", filepath.Dir(amnesiaBin)+string(os.PathListSeparator)+env.Getenv("PATH"))
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exitcode":           cmdExitcode,
			"mode":               cmdMode,
			"empty":              cmdEmpty,
			"capture":            cmdCapture,
			"amnesia-fixture":    cmdFixture,
			"tamper-certificate": cmdTamperCertificate,
		},
	})
}

// exitcode N prog [args...]: run prog and require exit status N. Its stdout
// and stderr are then what `stdout` and `stderr` match, as after exec.
// testscript's `! exec` only knows "not zero"; amnesia's exit codes are
// part of its contract.
func cmdExitcode(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! exitcode (give the code expected)")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exitcode N prog [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exitcode: %q is not a number", args[0])
	}
	got := 0
	err = ts.Exec(args[1], args[2:]...)
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.Exited():
		got = ee.ExitCode()
	default:
		ts.Fatalf("%s: %v", args[1], err)
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", strings.Join(args[1:], " "), got, want)
	}
}

// mode PERM path...: each path's permission bits are exactly PERM.
func cmdMode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: mode PERM path...")
	}
	want, err := strconv.ParseUint(args[0], 8, 32)
	if err != nil {
		ts.Fatalf("mode: %q is not an octal mode", args[0])
	}
	for _, p := range args[1:] {
		fi, err := os.Stat(ts.MkAbs(p))
		ts.Check(err)
		if got := fi.Mode().Perm(); uint64(got) != want {
			ts.Fatalf("%s has mode %04o, want %04o", p, got, want)
		}
	}
}

// empty dir...: each directory exists and holds nothing; with !, each
// directory exists and holds something.
func cmdEmpty(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) == 0 {
		ts.Fatalf("usage: empty dir...")
	}
	for _, d := range args {
		es, err := os.ReadDir(ts.MkAbs(d))
		ts.Check(err)
		switch {
		case neg && len(es) == 0:
			ts.Fatalf("%s is empty", d)
		case !neg && len(es) > 0:
			ts.Fatalf("%s is not empty: %s, ...", d, es[0].Name())
		}
	}
}

// capture FILE REGEXP VAR...: sets each VAR to the matching submatch of
// REGEXP's first match in FILE (stdout, stderr, or a file of $WORK), for
// the paths amnesia chooses and prints (a certificate's, say).
func cmdCapture(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 3 {
		ts.Fatalf("usage: capture FILE REGEXP VAR...")
	}
	re, err := regexp.Compile(`(?m)` + args[1])
	ts.Check(err)
	vars := args[2:]
	if re.NumSubexp() != len(vars) {
		ts.Fatalf("capture: %d variables for %d submatches", len(vars), re.NumSubexp())
	}
	m := re.FindStringSubmatch(ts.ReadFile(args[0]))
	if m == nil {
		ts.Fatalf("capture: no match for %#q in %s", args[1], args[0])
	}
	for i, v := range vars {
		ts.Setenv(v, m[i+1])
	}
}

// amnesia-fixture ROOT [DOCS]: an installation as an application leaves it.
// Without DOCS: only the state directory ROOT/state (pepper, keys,
// amnesia.yaml naming the stores below), as deployed before the
// application's first capture: no ledger exists yet. With DOCS: the
// application's SQLite document store ROOT/docs.db and sqlite-vec store
// ROOT/vectors.db (16 dimensions), and each document of DOCS ingested
// through the capture package, chunked and embedded like demo's, its
// lineage in ROOT/state/ledger.db. DOCS has one document a line:
//
//	id | owner's subject id | text [| ids of other people it mentions, comma separated]
//
// Blank lines and lines starting with # are skipped.
func cmdFixture(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: amnesia-fixture ROOT [DOCS]")
	}
	root := ts.MkAbs(args[0])
	if len(args) == 1 {
		_, err := state.Init(filepath.Join(root, "state"), fixtureConfig())
		ts.Check(err)
		return
	}
	docs, err := parseFixtureDocs(ts.ReadFile(args[1]))
	if err != nil {
		ts.Fatalf("%s: %v", args[1], err)
	}
	ts.Check(scriptFixture(root, docs))
}

func fixtureConfig() *state.Config {
	cfg := state.DefaultConfig()
	cfg.Stores = []state.StoreConfig{
		{Name: "docs", Type: sqlitedoc.Type, Path: "../docs.db"},
		{Name: "vectors", Type: sqlitevec.Type, Path: "../vectors.db", Dimensions: fixtureDim},
	}
	return cfg
}

func parseFixtureDocs(text string) ([]e2eDoc, error) {
	var docs []e2eDoc
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "|")
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		if len(f) < 3 || len(f) > 4 || f[0] == "" || f[1] == "" || f[2] == "" {
			return nil, fmt.Errorf("line %d: want id | owner | text [| mentions]", n)
		}
		d := e2eDoc{ID: f[0], Owner: f[1], Text: f[2]}
		if len(f) == 4 && f[3] != "" {
			for _, m := range strings.Split(f[3], ",") {
				d.Mentions = append(d.Mentions, strings.TrimSpace(m))
			}
		}
		docs = append(docs, d)
	}
	if len(docs) == 0 {
		return nil, errors.New("no documents")
	}
	return docs, sc.Err()
}

// scriptFixture is buildE2EFixture (helpers_test.go) for a script: it
// returns an error instead of failing a *testing.T.
func scriptFixture(root string, docs []e2eDoc) (err error) {
	ctx := context.Background()
	sd, err := state.Init(filepath.Join(root, "state"), fixtureConfig())
	if err != nil {
		return err
	}
	var closers []io.Closer
	defer func() {
		for i := len(closers) - 1; i >= 0; i-- {
			if cerr := closers[i].Close(); cerr != nil && err == nil {
				err = cerr
			}
		}
	}()
	ledger, err := lineage.Open(ctx, sd.LedgerSpec())
	if err != nil {
		return err
	}
	closers = append(closers, ledger)
	ds, err := sqlitedoc.Open(ctx, "docs", filepath.Join(root, "docs.db"), true)
	if err != nil {
		return err
	}
	closers = append(closers, ds)
	vs, err := sqlitevec.Open(ctx, "vectors", filepath.Join(root, "vectors.db"), fixtureDim, true)
	if err != nil {
		return err
	}
	closers = append(closers, vs)
	rec := capture.New(ledger, sd.Keyer, sd.Config.Scope)
	cd, cv := rec.Docs(ds), rec.Vectors(vs)
	for _, d := range docs {
		if err := cd.Put(ctx, capture.Doc{ID: d.ID, Kind: sqlitedoc.KindDocument, Subject: d.Owner, Text: d.Text, Mentions: d.Mentions}); err != nil {
			return fmt.Errorf("ingest %s: %w", d.ID, err)
		}
		for i, text := range demo.Chunk(d.Text, fixtureChunkSize) {
			id := fmt.Sprintf("%s#%d", d.ID, i)
			if err := cd.Put(ctx, capture.Doc{ID: id, Kind: sqlitedoc.KindChunk, Parent: d.ID, Text: text, Mentions: d.Mentions}); err != nil {
				return fmt.Errorf("ingest %s: %w", id, err)
			}
			if err := cv.Put(ctx, capture.Vector{ID: id, Embedding: demo.Embed(text, fixtureDim)}); err != nil {
				return fmt.Errorf("ingest vector %s: %w", id, err)
			}
		}
	}
	return nil
}

// tamper-certificate IN OUT OLD NEW: writes to OUT the certificate IN with
// the first OLD in its signed payload replaced by NEW, the signature, log
// proof and canonical form kept, so that only the content is wrong.
func cmdTamperCertificate(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 4 {
		ts.Fatalf("usage: tamper-certificate IN OUT OLD NEW")
	}
	b, err := certificate.DecodeBundle([]byte(ts.ReadFile(args[0])))
	ts.Check(err)
	var env struct {
		PayloadType json.RawMessage `json:"payloadType"`
		Payload     string          `json:"payload"`
		Signatures  json.RawMessage `json:"signatures"`
	}
	ts.Check(json.Unmarshal(b.DSSEEnvelope, &env))
	payload, err := base64.StdEncoding.DecodeString(env.Payload)
	ts.Check(err)
	if !strings.Contains(string(payload), args[2]) {
		ts.Fatalf("tamper-certificate: the payload of %s holds no %s", args[0], args[2])
	}
	env.Payload = base64.StdEncoding.EncodeToString([]byte(strings.Replace(string(payload), args[2], args[3], 1)))
	b.DSSEEnvelope, err = json.Marshal(env)
	ts.Check(err)
	out, err := certificate.EncodeBundle(b)
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), out, 0o600))
}
