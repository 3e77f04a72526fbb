package main

// Tests of the small things a first user meets (issue #8 point 9): the
// version, an unknown command's exit code, forget's per-store output and
// its explanations, the certificate path on "already erased", and the
// modes of the state files.

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
)

func TestVersion(t *testing.T) {
	a := runBinary(t, nil, "", "version")
	b := runBinary(t, nil, "", "--version")
	if a.code != exitOK || b.code != exitOK {
		t.Fatalf("version: want exit 0:\n%s\n%s", a, b)
	}
	if a.stdout != b.stdout {
		t.Errorf("`version` and `--version` differ:\n%s\n%s", a.stdout, b.stdout)
	}
	for _, want := range []string{"amnesia ", "module  github.com/amnesia-dev/amnesia\n", "commit  ", "go      " + runtime.Version() + " "} {
		if !strings.Contains(a.stdout, want) {
			t.Errorf("version output lacks %q:\n%s", want, a.stdout)
		}
	}
	if !strings.HasPrefix(a.stdout, "amnesia ") {
		t.Errorf("version output does not start with the version:\n%s", a.stdout)
	}
}

func TestFormatVersion(t *testing.T) {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/amnesia-dev/amnesia", Version: "v0.3.1"},
		Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "7b3e49d0c0ffee"},
			{Key: "vcs.time", Value: "2026-12-01T12:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	got := formatVersion(bi)
	for _, want := range []string{
		"amnesia v0.3.1\n",
		"module  github.com/amnesia-dev/amnesia\n",
		"commit  7b3e49d0c0ffee (2026-12-01T12:00:00Z), with uncommitted changes\n",
		"go      go1.26.8 ",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("formatVersion lacks %q:\n%s", want, got)
		}
	}
	bi.Settings[3].Value = "false"
	if got := formatVersion(bi); strings.Contains(got, "uncommitted") {
		t.Errorf("a clean tree is reported as modified:\n%s", got)
	}
	bi.Settings, bi.Main.Version = nil, ""
	if got := formatVersion(bi); !strings.Contains(got, "amnesia (devel)\n") || !strings.Contains(got, "commit  unknown") {
		t.Errorf("a build without version or VCS stamp:\n%s", got)
	}
}

func TestUnknownCommandIsUsage(t *testing.T) {
	r := runBinary(t, nil, "", "forgt", "alice@example.org")
	if r.code != exitUsage {
		t.Fatalf("unknown command: want exit %d (usage):\n%s", exitUsage, r)
	}
	for _, want := range []string{`unknown command "forgt"`, "Did you mean this?", "forget"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("unknown command: stderr lacks %q:\n%s", want, r)
		}
	}
	if r := runBinary(t, nil, ""); r.code != exitOK || !strings.Contains(r.stdout, "Available Commands:") {
		t.Errorf("no command: want the help and exit 0:\n%s", r)
	}
	if r := runBinary(t, nil, "", "--no-such-flag"); r.code != exitUsage {
		t.Errorf("unknown flag: want exit %d:\n%s", exitUsage, r)
	}
}

// storeLineRE matches one line of forget's per-store summary.
var storeLineRE = regexp.MustCompile(`(?m)^store (docs|vectors) +(\d+) artifacts +residue (\S+) +(.*)$`)

func TestForgetOutputPerStoreAndAlreadyErased(t *testing.T) {
	docs := append(reverifyDocs(), e2eDoc{ID: "doc-c1", Owner: "carol@example.org",
		Text: "Carol wrote that Alice will take over the account while she is away on leave.", Mentions: []string{"alice@example.org"}})
	f := buildE2EFixture(t, t.TempDir(), docs)
	verbose := copyE2EFixture(t, f)

	r := runBinary(t, nil, "", "--state", f.state(), "forget", "alice@example.org", "--reason", "DSR-1", "--yes")
	if r.code != exitOK {
		t.Fatalf("forget:\n%s", r)
	}
	cert, payload := singleCertificate(t, f.state())
	p := predicateOf(t, payload)
	lines := storeLineRE.FindAllStringSubmatch(r.stdout, -1)
	if len(lines) != 2 {
		t.Fatalf("forget: want one summary line per store (docs, vectors), got %d:\n%s", len(lines), r.stdout)
	}
	artifacts := p["artifacts"].([]any)
	for _, l := range lines {
		var erasable, nh int
		for _, a := range artifacts {
			a := a.(map[string]any)
			if a["store"] != l[1] {
				continue
			}
			if a["outcome"] == "NEEDS_HUMAN" {
				nh++
			} else {
				erasable++
			}
		}
		if l[2] != fmt.Sprint(erasable) {
			t.Errorf("store %s: line says %s artifacts; the certificate has %d", l[1], l[2], erasable)
		}
		if want := fmt.Sprintf("%d NEEDS_HUMAN", nh); (nh > 0) != strings.Contains(l[4], want) {
			t.Errorf("store %s: line %q, want %q iff the certificate has mentions (%d)", l[1], l[0], want, nh)
		}
		if !strings.Contains(l[4], "VERIFIED(") {
			t.Errorf("store %s: line %q names no verified count", l[1], l[0])
		}
	}
	// The default output has no per-artifact lines.
	for _, a := range artifacts {
		if id := a.(map[string]any)["id"].(string); strings.Contains(r.stdout, id) {
			t.Errorf("forget without --verbose prints artifact %s", id)
		}
	}
	if !strings.Contains(r.stdout, "- NEEDS_HUMAN (") {
		t.Errorf("forget: no explanation of NEEDS_HUMAN (carol's document mentions alice):\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "a person must decide") || !strings.Contains(r.stdout, "certificate: "+cert+"\n") {
		t.Errorf("forget: explanation or certificate path missing:\n%s", r.stdout)
	}

	// --verbose adds one line per artifact.
	rv := runBinary(t, nil, "", "--state", verbose.state(), "forget", "alice@example.org", "--reason", "DSR-1", "--yes", "--verbose")
	if rv.code != exitOK {
		t.Fatalf("forget --verbose:\n%s", rv)
	}
	_, vpayload := singleCertificate(t, verbose.state())
	for _, a := range predicateOf(t, vpayload)["artifacts"].([]any) {
		a := a.(map[string]any)
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(a["id"].(string)) + ` .* ` + regexp.QuoteMeta(a["outcome"].(string))).MatchString(rv.stdout) {
			t.Errorf("forget --verbose: no line for artifact %s (%s):\n%s", a["id"], a["outcome"], rv.stdout)
		}
	}
	if len(storeLineRE.FindAllString(rv.stdout, -1)) != 2 {
		t.Errorf("forget --verbose: the per-store lines are missing:\n%s", rv.stdout)
	}

	// Already erased (exit 4): trace and forget name the erasure and its certificate.
	id := strings.TrimSuffix(filepath.Base(cert), ".dsse.json")
	for _, args := range [][]string{
		{"trace", "alice@example.org"},
		{"forget", "alice@example.org", "--reason", "DSR-2", "--yes"},
	} {
		r := runBinary(t, nil, "", append([]string{"--state", f.state()}, args...)...)
		if r.code != exitErased {
			t.Fatalf("%s after the erasure: want exit %d:\n%s", args[0], exitErased, r)
		}
		if want := "already erased by " + id + "; certificate: " + cert; !strings.Contains(r.stderr, want) {
			t.Errorf("%s after the erasure: stderr lacks %q:\n%s", args[0], want, r)
		}
	}
	// Carol's own erasure is carol's: alice's message must not name it.
	if r := runBinary(t, nil, "", "--state", f.state(), "forget", "carol@example.org", "--reason", "DSR-3", "--yes"); r.code != exitOK {
		t.Fatalf("forget carol:\n%s", r)
	}
	r = runBinary(t, nil, "", "--state", f.state(), "trace", "alice@example.org")
	named := map[string]bool{}
	for _, m := range regexp.MustCompile(`er-[0-9a-f]+`).FindAllString(r.stderr, -1) {
		named[m] = true
	}
	if r.code != exitErased || len(named) != 1 || !named[id] {
		t.Errorf("trace of alice after carol's erasure: want exit 4 naming alice's erasure %s only (named %v):\n%s", id, named, r)
	}
}

func TestForgetExplainsAFailedStore(t *testing.T) {
	f := buildE2EFixture(t, t.TempDir(), reverifyDocs())
	if err := os.Rename(f.vecsDB(), f.vecsDB()+".away"); err != nil {
		t.Fatal(err)
	}
	r := runBinary(t, nil, "", "--state", f.state(), "forget", "bob@example.org", "--reason", "DSR-8", "--yes", "--allow-partial")
	if r.code != exitIncomplete {
		t.Fatalf("forget with a store down: want exit %d:\n%s", exitIncomplete, r)
	}
	for _, want := range []string{"- UNVERIFIED-store-failed (store vectors)", "fix the store", "run the same command again"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("forget with a store down: output lacks %q:\n%s", want, r.stdout)
		}
	}
}

// TestStateFilesArePrivate walks a state directory after init, and after an
// ingest, forget and trace, under the usual 022 umask: every file is 0600
// and every directory 0700, the ledger and its -wal/-shm files included.
func TestStateFilesArePrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	check := func(dir string) {
		t.Helper()
		n := 0
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			want := fs.FileMode(0o600)
			if d.IsDir() {
				want = 0o700
			}
			if fi.Mode().Perm() != want {
				rel, _ := filepath.Rel(dir, path)
				t.Errorf("%s has mode %v, want %v", rel, fi.Mode().Perm(), want)
			}
			n++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if n < 8 {
			t.Fatalf("walked only %d entries of %s", n, dir)
		}
	}
	st := filepath.Join(t.TempDir(), "st")
	if r := runBinary(t, nil, "", "--state", st, "init"); r.code != exitOK {
		t.Fatalf("init:\n%s", r)
	}
	check(st)

	f := buildE2EFixture(t, t.TempDir(), reverifyDocs())
	if r := runBinary(t, nil, "", "--state", f.state(), "trace", "bob@example.org"); r.code != exitOK {
		t.Fatalf("trace:\n%s", r)
	}
	if r := runBinary(t, nil, "", "--state", f.state(), "forget", "alice@example.org", "--reason", "DSR-1", "--yes"); r.code != exitOK {
		t.Fatalf("forget:\n%s", r)
	}
	var seen []string
	filepath.WalkDir(f.state(), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			seen = append(seen, filepath.Base(path))
		}
		return nil
	})
	for _, want := range []string{"ledger.db", "amnesia.log", "journal.jsonl", "keyring.json", "pepper", "signing-key.pem"} {
		found := false
		for _, s := range seen {
			found = found || s == want
		}
		if !found {
			t.Errorf("state has no %s to check (files: %v)", want, seen)
		}
	}
	check(f.state())
}
