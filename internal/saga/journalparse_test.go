package saga

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The seed corpus of FuzzParseJournal (testdata/fuzz/FuzzParseJournal) is
// made by the journal writer itself, then torn and broken. Regenerate it with
//
//	go test ./internal/saga -run TestJournalSeedCorpus -update-journal-seeds
var updateSeeds = flag.Bool("update-journal-seeds", false, "regenerate the FuzzParseJournal seed corpus in testdata")

// writeJournal writes a journal with the real writer and a fixed clock:
// three steps, one failed, results of several shapes.
func writeJournal(t testing.TB, path string) []byte {
	t.Helper()
	at := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	j, err := openJournal(path, func() time.Time { at = at.Add(time.Millisecond); return at })
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []struct {
		step, phase string
		result      any
		err         error
	}{
		{"plan", phaseBegin, nil, nil},
		{"plan", phaseDone, map[string]any{"trace": "tr-1", "artifacts": 2}, nil},
		{"delete:docs", phaseBegin, nil, nil},
		{"delete:docs", phaseFailed, nil, errors.New("store docs: connection refused")},
		{"probe:vectors", phaseBegin, nil, nil},
		{"probe:vectors", phaseDone, map[string]any{"logical": map[string]int{"k1": 0}, "note": "a \"quoted\" line\nand a newline"}, nil},
	} {
		if err := j.append(a.step, a.phase, a.result, a.err); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The format is pinned: the writer's bytes for a fixed clock. A change here
// is a change of the journal format (JournalVersion), which old journals
// would no longer match.
func TestJournalFormatIsStable(t *testing.T) {
	b := writeJournal(t, filepath.Join(t.TempDir(), "journal.jsonl"))
	const first = `amnesia.journal/v1
{"seq":1,"step":"plan","phase":"begin","at":"2026-01-02T03:04:05.001006Z","prev":"","hash":"`
	if !strings.HasPrefix(string(b), first) {
		t.Fatalf("journal starts\n%.200s\nwant\n%s", b, first)
	}
	want, err := os.ReadFile("testdata/journal-v1.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, want) {
		t.Errorf("the writer's journal differs from testdata/journal-v1.jsonl:\n%s\nwant\n%s", b, want)
	}
}

func TestParseJournal(t *testing.T) {
	dir := t.TempDir()
	good := writeJournal(t, filepath.Join(dir, "journal.jsonl"))
	lines := strings.SplitAfter(string(good), "\n") // version, 6 entries, ""
	all, torn, err := ParseJournal(good)
	if err != nil || torn != nil || len(all) != 6 {
		t.Fatalf("a whole journal: %d entries, torn %v, err %v", len(all), torn, err)
	}
	for i, e := range all {
		if e.Seq != i+1 || e.Hash != e.hash() || (i > 0 && e.Prev != all[i-1].Hash) {
			t.Fatalf("entry %d: seq %d, chain broken", i+1, e.Seq)
		}
	}
	if all[3].Phase != phaseFailed || all[3].Error != "store docs: connection refused" {
		t.Errorf("entry 4 = %+v", all[3])
	}

	cut := len(good) - len(lines[6]) + 20 // the last entry half written
	for _, c := range []struct {
		name    string
		b       string
		entries int    // strict or lenient, what decodes
		torn    int    // offset of the torn line, -1 for none
		err     string // "" for none
	}{
		{"empty", "", 0, -1, ""},
		{"version only", JournalVersion + "\n", 0, -1, ""},
		{"version without newline", JournalVersion, 0, -1, ""},
		{"torn last line", string(good[:cut]), 5, len(good) - len(lines[6]), ""},
		{"torn after a blank line", strings.Join(lines[:3], "") + "\n" + `{"seq":3,"st`, 2, len(strings.Join(lines[:3], "")) + 1, ""},
		{"damaged middle line", strings.Join(lines[:2], "") + "{oops\n" + strings.Join(lines[2:], ""), 6, -1, "line 3 is damaged"},
		{"damaged complete last line", string(good) + "{oops\n", 6, -1, "line 8 is damaged"},
		{"broken chain (line left out)", strings.Join(lines[:3], "") + strings.Join(lines[4:], ""), 5, -1, "line 4 breaks the hash chain"},
		{"broken chain (entry edited)", strings.Replace(string(good), `"artifacts":2`, `"artifacts":3`, 1), 6, -1, "line 3 breaks the hash chain"},
		{"entry without hash", JournalVersion + "\n" + `{"seq":1,"step":"certificate","phase":"done"}` + "\n", 1, -1, "line 2 breaks the hash chain"},
		{"wrong version", "amnesia.journal/v0\n" + strings.Join(lines[1:], ""), 6, -1, `first line is not "amnesia.journal/v1"`},
		{"torn version line", "amnesia.jour", 0, 0, `first line is not "amnesia.journal/v1"`},
		{"damage before a torn line", strings.Join(lines[:2], "") + "{oops\n" + string(good[len(lines[0])+len(lines[1]):cut]), 5, len(good) - len(lines[6]) + 6, "line 3 is damaged"},
	} {
		t.Run(c.name, func(t *testing.T) {
			es, torn, err := ParseJournal([]byte(c.b))
			if len(es) != c.entries {
				t.Errorf("%d entries, want %d", len(es), c.entries)
			}
			switch {
			case c.torn < 0 && torn != nil:
				t.Errorf("torn %+v, want none", torn)
			case c.torn >= 0 && (torn == nil || torn.Offset != int64(c.torn) || int(torn.Offset)+torn.Len != len(c.b)):
				t.Errorf("torn %+v, want offset %d to the end (%d)", torn, c.torn, len(c.b))
			}
			if (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
				t.Errorf("err %v, want %q", err, c.err)
			}
		})
	}
}

// openJournal repairs a torn last line (truncates it, byte for byte back to
// the whole journal before it) and refuses, without touching the file, a
// journal with any other damage; readEntries reads both and repairs
// neither.
func TestOpenJournalRepairsOnlyATornLine(t *testing.T) {
	dir := t.TempDir()
	good := writeJournal(t, filepath.Join(dir, "good.jsonl"))
	lines := strings.SplitAfter(string(good), "\n")
	whole := strings.Join(lines[:6], "")
	now := func() time.Time { return time.Date(2026, 1, 2, 4, 0, 0, 0, time.UTC) }

	torn := filepath.Join(dir, "torn.jsonl")
	os.WriteFile(torn, []byte(whole+lines[6][:30]), 0o600)
	if es, err := readEntries(torn); err != nil || len(es) != 5 {
		t.Fatalf("readEntries of a torn journal: %d entries, %v", len(es), err)
	}
	if b, _ := os.ReadFile(torn); string(b) != whole+lines[6][:30] {
		t.Fatal("readEntries changed the journal")
	}
	j, err := openJournal(torn, now)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(torn); string(b) != whole {
		t.Fatalf("after openJournal the torn journal is\n%s\nwant\n%s", b, whole)
	}
	if len(j.entries) != 5 {
		t.Fatalf("replayed %d entries, want 5", len(j.entries))
	}
	if err := j.append("probe:vectors", phaseDone, nil, nil); err != nil {
		t.Fatal(err)
	}
	j.close()
	b, _ := os.ReadFile(torn)
	if es, tl, err := ParseJournal(b); err != nil || tl != nil || len(es) != 6 || es[5].Seq != 6 {
		t.Fatalf("after a resumed append: %d entries, torn %v, err %v", len(es), tl, err)
	}

	broken := filepath.Join(dir, "broken.jsonl")
	bad := strings.Join(lines[:3], "") + strings.Join(lines[4:], "") + lines[6][:30]
	os.WriteFile(broken, []byte(bad), 0o600)
	if _, err := openJournal(broken, now); err == nil || !strings.Contains(err.Error(), "open journal "+broken+": line 4 breaks the hash chain") {
		t.Fatalf("openJournal of a broken chain: %v", err)
	}
	if b, _ := os.ReadFile(broken); string(b) != bad {
		t.Fatal("openJournal changed a journal it refused")
	}
	if es, err := readEntries(broken); err != nil || len(es) != 5 {
		t.Fatalf("readEntries of a broken chain: %d entries, %v (it reads leniently)", len(es), err)
	}
}

// A release build (no amnesia_testhooks tag) has no crash point: with
// AMNESIA_CRASH_AFTER_JOURNAL set, appends go on. Were the variable read,
// this test's own process would be killed at the first append.
func TestReleaseBuildHasNoCrashHook(t *testing.T) {
	if TestHooks {
		t.Skip("built with -tags amnesia_testhooks: the crash hook is in")
	}
	t.Setenv("AMNESIA_CRASH_AFTER_JOURNAL", "1")
	b := writeJournal(t, filepath.Join(t.TempDir(), "journal.jsonl"))
	if es, _, err := ParseJournal(b); err != nil || len(es) != 6 {
		t.Fatalf("%d entries, %v", len(es), err)
	}
}

// TestJournalSeedCorpus writes (with -update-journal-seeds) or checks the
// committed seed corpus: whole journals, torn ones and broken chains.
func TestJournalSeedCorpus(t *testing.T) {
	good := writeJournal(t, filepath.Join(t.TempDir(), "journal.jsonl"))
	lines := strings.SplitAfter(string(good), "\n")
	seeds := map[string]string{
		"valid":             string(good),
		"version-only":      JournalVersion + "\n",
		"torn-last-line":    string(good[:len(good)-len(lines[6])+25]),
		"torn-version":      "amnesia.jou",
		"broken-chain-gap":  strings.Join(lines[:3], "") + strings.Join(lines[4:], ""),
		"broken-chain-edit": strings.Replace(string(good), `"artifacts":2`, `"artifacts":3`, 1),
		"damaged-middle":    strings.Join(lines[:2], "") + "{oops\n" + strings.Join(lines[2:], ""),
		"no-final-newline":  strings.TrimSuffix(string(good), "\n"),
		"crlf":              strings.ReplaceAll(string(good), "\n", "\r\n"),
		"wrong-version":     "amnesia.journal/v0\n" + strings.Join(lines[1:], ""),
	}
	for name, s := range seeds {
		path := filepath.Join("testdata", "fuzz", "FuzzParseJournal", name)
		want := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s)
		if *updateSeeds {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			if name == "valid" {
				if err := os.WriteFile("testdata/journal-v1.jsonl", good, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (regenerate with -update-journal-seeds)", err)
		}
		if string(got) != want {
			t.Errorf("%s is not what the writer makes now (regenerate with -update-journal-seeds)", path)
		}
	}
}

// FuzzParseJournal: the parser never panics, and what it reports holds:
// entries of a journal without error form an unbroken chain and survive a
// rewrite; a torn line runs to the end of the input, follows a newline, and
// cutting it off (what openJournal does) leaves the same entries and the
// same verdict, with nothing torn.
func FuzzParseJournal(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		es, torn, err := ParseJournal(b)
		if torn != nil {
			if torn.Offset < 0 || int(torn.Offset)+torn.Len != len(b) || torn.Len == 0 {
				t.Fatalf("torn %+v does not run to the end of %d bytes", torn, len(b))
			}
			if torn.Offset > 0 && b[torn.Offset-1] != '\n' {
				t.Fatalf("torn line at %d does not follow a newline", torn.Offset)
			}
			if b[len(b)-1] == '\n' {
				t.Fatal("a journal ending in a newline has a torn line")
			}
			if torn.Offset > 0 {
				es2, torn2, err2 := ParseJournal(b[:torn.Offset])
				if torn2 != nil || !reflect.DeepEqual(es, es2) || fmt.Sprint(err) != fmt.Sprint(err2) {
					t.Fatalf("cut at the torn line: %d entries (was %d), torn %v, err %v (was %v)", len(es2), len(es), torn2, err2, err)
				}
			}
		}
		if err != nil {
			return
		}
		if len(b) > 0 && !bytes.HasPrefix(b, []byte(JournalVersion)) {
			t.Fatal("accepted without the version line")
		}
		var out bytes.Buffer
		out.WriteString(JournalVersion + "\n")
		prev := ""
		for i, e := range es {
			if e.Prev != prev || e.Hash != e.hash() {
				t.Fatalf("accepted entry %d breaks the chain", i+1)
			}
			prev = e.Hash
			line, merr := json.Marshal(e)
			if merr != nil {
				t.Fatal(merr)
			}
			out.Write(line)
			out.WriteByte('\n')
		}
		es2, torn2, err2 := ParseJournal(out.Bytes())
		if err2 != nil || torn2 != nil || len(es2) != len(es) {
			t.Fatalf("the rewritten journal: %d entries (want %d), torn %v, err %v", len(es2), len(es), torn2, err2)
		}
	})
}

// A journal whose last entry is whole but lost its newline (a power loss
// between the write of the line and of its newline) is ended on open, so
// the next entry goes on a line of its own and the journal stays readable.
func TestOpenJournalEndsAnUnterminatedLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	j, err := openJournal(path, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.append("plan", phaseDone, map[string]int{"n": 1}, nil); err != nil {
		t.Fatal(err)
	}
	j.close()
	b, _ := os.ReadFile(path)
	if err := os.WriteFile(path, b[:len(b)-1], 0o600); err != nil {
		t.Fatal(err)
	}
	j, err = openJournal(path, time.Now)
	if err != nil {
		t.Fatalf("reopen without the final newline: %v", err)
	}
	if err := j.append("suppress", phaseDone, nil, nil); err != nil {
		t.Fatal(err)
	}
	j.close()
	b, _ = os.ReadFile(path)
	es, torn, err := ParseJournal(b)
	if err != nil || torn != nil || len(es) != 2 {
		t.Fatalf("after an append to a repaired journal: %d entries, torn %v, err %v", len(es), torn, err)
	}
}

// An entry's line is encoded once (JournalEntry.line): it must be exactly
// json.Marshal's encoding of the entry with its hash, and the hash the one
// ParseJournal checks (JournalEntry.hash), whatever the entry holds.
func TestJournalLineIsOneEncoding(t *testing.T) {
	for _, e := range []JournalEntry{
		{Seq: 1, Step: "plan", Phase: phaseBegin, At: "2026-01-02T03:04:05.001006Z"},
		{Seq: 2, Step: "plan", Phase: phaseDone, At: "2026-01-02T03:04:05.002006Z", Result: json.RawMessage(`{"a":1,"html":"\u003cb\u003e \u0026"}`), Prev: "ab"},
		{Seq: 3, Step: "delete:docs", Phase: phaseFailed, At: "x", Error: "a \"quoted\" <error> & a newline\n, é, \u2028", Prev: "cd"},
		{Seq: 4, Step: "probe:vectors", Phase: phaseDone, Result: json.RawMessage(`null`)},
	} {
		line, err := e.line()
		if err != nil {
			t.Fatal(err)
		}
		if e.Hash == "" || e.Hash != e.hash() {
			t.Errorf("entry %d: hash %q, want %q", e.Seq, e.Hash, e.hash())
		}
		want, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(line, want) {
			t.Errorf("entry %d: line\n%s\nwant json.Marshal's\n%s", e.Seq, line, want)
		}
		entries, torn, err := ParseJournal([]byte(JournalVersion + "\n" + string(line) + "\n"))
		if (err != nil && e.Prev == "") || torn != nil || len(entries) != 1 || entries[0].Hash != e.Hash {
			t.Errorf("entry %d: parsed back as %+v (torn %v, %v)", e.Seq, entries, torn, err)
		}
	}
}
