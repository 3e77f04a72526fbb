package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The crash tests kill `amnesia forget` right after each of its journal
// appends (AMNESIA_CRASH_AFTER_JOURNAL=k, which SIGKILLs the process), run
// the erasure again, and check that it ends with the certificate an
// uninterrupted run gives.

const crashTarget = "ada.lovelace@example.org"

var crashSubjects = []struct{ id, name, phone, city string }{
	{crashTarget, "Ada Lovelace", "+44 7700 900101", "London"},
	{"charles.babbage@example.org", "Charles Babbage", "+44 7700 900202", "Walworth"},
	{"mary.somerville@example.org", "Mary Somerville", "+44 7700 900303", "Jedburgh"},
}

// crashCorpus: 3 subjects × 5 documents, each chunked into several chunks;
// one document of Charles Babbage mentions the target.
func crashCorpus() []e2eDoc {
	topics := []string{"a billing dispute", "a change of address", "a delayed refund", "the data we hold", "an insurance claim"}
	var docs []e2eDoc
	for i, s := range crashSubjects {
		for d := 0; d < 5; d++ {
			doc := e2eDoc{ID: fmt.Sprintf("case-%d-%d", i, d), Owner: s.id}
			text := fmt.Sprintf("Case note %d-%d. %s from %s (phone %s, email %s) contacted us about %s, reference %05d. "+
				"The customer asked to be called back in the afternoon of day %d. "+
				"%s prefers letters in large print and was promised an answer within %d days. ",
				i, d, s.name, s.city, s.phone, s.id, topics[d], 31000+97*i+13*d, 3+d, s.name, 5+i+d)
			if i == 1 && d == 2 {
				t := crashSubjects[0]
				doc.Mentions = []string{t.id}
				text += fmt.Sprintf("%s said that %s (%s) was also affected and should be told. ", s.name, t.name, t.phone)
			}
			doc.Text = text + fmt.Sprintf("Follow-up %d-%d scheduled for week %d at desk %d.", i, d, 10+5*i+d, 40-7*i-d)
			docs = append(docs, doc)
		}
	}
	return docs
}

// crashRef is the uninterrupted reference erasure.
type crashRef struct {
	pristine   e2eFixture
	certName   string // file name of the certificate
	erasureID  string
	payload    map[string]any
	journal    []journalEntry
	decideDone int // 1-based index of decide's done entry in the journal
}

func TestCrashResumeGivesIdenticalCertificate(t *testing.T) {
	ref := crashReference(t)
	n := len(ref.journal)

	t.Run("forget-resumes", func(t *testing.T) {
		for k := 1; k <= n; k++ {
			t.Run(crashName(ref, k), func(t *testing.T) {
				f := copyE2EFixture(t, ref.pristine)
				crashIssued := crashAt(t, ref, f, k)
				res := runBinary(t, nil, "", forgetArgs(f)...)
				// After publish's done the erasure is finished: the rerun
				// may answer with exit 4 (already erased) or resume to the
				// end; either way the certificate must be the same.
				checkResumed(t, ref, f, res, crashIssued, k == n)
			})
		}
	})

	// erase --trace resumes an erasure that forget started, from the trace
	// saved by the crashed forget: after the delete steps, and at each crash
	// point after decide.
	t.Run("erase-trace-resumes", func(t *testing.T) {
		for _, k := range []int{
			ref.index(t, "delete:vectors", "done"),
			ref.index(t, "certificate", "begin"),
			ref.index(t, "certificate", "done"),
			ref.index(t, "publish", "begin"),
		} {
			t.Run(crashName(ref, k), func(t *testing.T) {
				f := copyE2EFixture(t, ref.pristine)
				crashIssued := crashAt(t, ref, f, k)
				traces, err := filepath.Glob(filepath.Join(f.state(), "traces", "*.json"))
				if err != nil || len(traces) != 1 {
					t.Fatalf("want the one trace saved by the crashed forget, found %v (%v)", traces, err)
				}
				id := strings.TrimSuffix(filepath.Base(traces[0]), ".json")
				// No --reason: resuming keeps the reason the erasure started with.
				res := runBinary(t, nil, "", "--state", f.state(), "erase", "--trace", id)
				checkResumed(t, ref, f, res, crashIssued, false)
			})
		}
	})

	// A crash in the middle of a journal write leaves a torn last line: the
	// resumed run drops it and redoes that step.
	t.Run("torn-journal", func(t *testing.T) {
		for _, tc := range []struct {
			step, phase string
			keep        func(line int) int // bytes of the last line to keep
		}{
			{"delete:docs", "done", func(l int) int { return l / 2 }},
			{"probe:vectors", "begin", func(int) int { return 5 }},
			{"evidence:vectors", "done", func(l int) int { return l - 1 }}, // all but the closing brace and the newline
		} {
			k := ref.index(t, tc.step, tc.phase)
			t.Run(crashName(ref, k), func(t *testing.T) {
				f := copyE2EFixture(t, ref.pristine)
				crashAt(t, ref, f, k)
				jpath := filepath.Join(f.state(), "erasures", ref.erasureID, "journal.jsonl")
				b, err := os.ReadFile(jpath)
				if err != nil {
					t.Fatal(err)
				}
				body := strings.TrimSuffix(string(b), "\n")
				last := body[strings.LastIndexByte(body, '\n')+1:]
				cut := len(body) - len(last) + tc.keep(len(last))
				if err := os.Truncate(jpath, int64(cut)); err != nil {
					t.Fatal(err)
				}
				res := runBinary(t, nil, "", forgetArgs(f)...)
				checkResumed(t, ref, f, res, "", false)
				j := readJournalFile(t, jpath)
				begins := 0
				for _, e := range j {
					if e.Step == tc.step && e.Phase == "begin" {
						begins++
					}
				}
				want := 2 // the step was begun before the crash and again on resume
				if tc.phase == "begin" {
					want = 1 // the torn entry was the begin itself
				}
				if begins != want {
					t.Errorf("step %s was begun %d times in the resumed journal, want %d: the torn entry was not dropped and redone", tc.step, begins, want)
				}
			})
		}
	})
}

func forgetArgs(f e2eFixture) []string {
	return []string{"--state", f.state(), "forget", crashTarget, "--reason", "T-1", "--yes"}
}

func crashName(ref *crashRef, k int) string {
	e := ref.journal[k-1]
	return fmt.Sprintf("crash-after-%d-(%s %s)", k, e.Phase, e.Step)
}

// index returns the 1-based position of (step, phase) in the reference journal.
func (r *crashRef) index(t *testing.T, step, phase string) int {
	t.Helper()
	for i, e := range r.journal {
		if e.Step == step && e.Phase == phase {
			return i + 1
		}
	}
	t.Fatalf("the reference journal has no %s %s entry", phase, step)
	return 0
}

// crashReference builds the e2eFixture and runs the uninterrupted erasure on a copy.
func crashReference(t *testing.T) *crashRef {
	t.Helper()
	ref := &crashRef{pristine: buildE2EFixture(t, t.TempDir(), crashCorpus())}
	f := copyE2EFixture(t, ref.pristine)
	res := runBinary(t, nil, "", forgetArgs(f)...)
	if res.code != 0 {
		t.Fatalf("reference forget failed:\n%s", res)
	}
	var path string
	path, ref.payload = singleCertificate(t, f.state())
	ref.certName = filepath.Base(path)
	ers := erasureDirs(t, f.state())
	if len(ers) != 1 {
		t.Fatalf("want one erasure directory, found %v", ers)
	}
	ref.erasureID = filepath.Base(ers[0])
	if ref.certName != ref.erasureID+".dsse.json" {
		t.Fatalf("certificate %s is not named after erasure %s", ref.certName, ref.erasureID)
	}
	ref.journal = readJournalFile(t, filepath.Join(ers[0], "journal.jsonl"))
	n := len(ref.journal)
	if n < 20 {
		t.Fatalf("reference journal has only %d entries", n)
	}
	if last := ref.journal[n-1]; last.Step != "publish" || last.Phase != "done" {
		t.Fatalf("reference journal ends with %s %s, want done publish", last.Phase, last.Step)
	}
	ref.decideDone = ref.index(t, "decide", "done")
	p := predicateOf(t, ref.payload)
	if p["complete"] != true {
		t.Fatalf("reference erasure is not complete: counts %v", p["counts"])
	}
	if c, _ := p["counts"].(map[string]any); c["needs_human"] == nil || c["needs_human"].(float64) < 1 {
		t.Fatalf("reference certificate counts %v, want the third-party mention as needs_human", p["counts"])
	}
	head, steps := journalHead(t, ref.journal)
	if j, _ := p["journal"].(map[string]any); j["head"] != head || j["steps"] != float64(steps) {
		t.Fatalf("reference certificate journal %v, want head %s over %d steps", p["journal"], head, steps)
	}
	checkCertificateDigest(t, ref.journal, path)
	assertNoSealedEvidence(t, ers[0])
	t.Logf("reference: erasure %s, %d journal appends, decide done at %d", ref.erasureID, n, ref.decideDone)
	return ref
}

// crashAt runs forget on f with the crash hook at k and checks the crash. It
// returns the issued_at that the crashed run journaled in decide's result,
// when decide had finished.
func crashAt(t *testing.T, ref *crashRef, f e2eFixture, k int) string {
	t.Helper()
	res := runBinary(t, []string{"AMNESIA_CRASH_AFTER_JOURNAL=" + strconv.Itoa(k)}, "", forgetArgs(f)...)
	if !res.signaled || res.signal != syscall.SIGKILL {
		t.Fatalf("forget with the crash hook at %d did not die by SIGKILL:\n%s", k, res)
	}
	jdir := filepath.Join(f.state(), "erasures", ref.erasureID)
	j := readJournalFile(t, filepath.Join(jdir, "journal.jsonl"))
	if len(j) != k {
		t.Fatalf("crashed journal has %d entries, want %d", len(j), k)
	}
	for i, e := range j {
		if r := ref.journal[i]; e.Step != r.Step || e.Phase != r.Phase {
			t.Fatalf("crashed journal entry %d is %s %s, the reference has %s %s", i+1, e.Phase, e.Step, r.Phase, r.Step)
		}
	}
	certs := certFiles(t, f.state())
	switch {
	case k < len(ref.journal) && len(certs) != 0:
		t.Fatalf("a certificate was published before publish finished (crash after %d of %d appends): %v", k, len(ref.journal), certs)
	case k == len(ref.journal) && len(certs) != 1:
		t.Fatalf("crash after publish's done: want the published certificate, found %v", certs)
	}
	if k < ref.decideDone {
		return ""
	}
	var dec struct {
		IssuedAt string `json:"issued_at"`
	}
	if err := json.Unmarshal(j[ref.decideDone-1].Result, &dec); err != nil || dec.IssuedAt == "" {
		t.Fatalf("decide's journaled result has no issued_at (%v)", err)
	}
	// Let the clock pass the journaled second, so that a resumed run that
	// recomputed issued_at instead of reusing it would be caught.
	issued, err := time.Parse(time.RFC3339, dec.IssuedAt)
	if err != nil {
		t.Fatalf("journaled issued_at %q: %v", dec.IssuedAt, err)
	}
	if d := time.Until(issued.Add(time.Second)); d > 0 {
		time.Sleep(d + 20*time.Millisecond)
	}
	return dec.IssuedAt
}

// checkResumed checks a resumed run: exit 0, one certificate, the same as the
// reference's but for the issue time, issued_at reused from the crashed run's
// decide when it had finished, a consistent journal, no sealed evidence left.
func checkResumed(t *testing.T, ref *crashRef, f e2eFixture, res binResult, crashIssued string, finished bool) {
	t.Helper()
	ers := erasureDirs(t, f.state())
	if len(ers) != 1 || filepath.Base(ers[0]) != ref.erasureID {
		t.Errorf("after the resume the state holds erasures %v, want only the crashed %s: the rerun did not resume it", baseNames(ers), ref.erasureID)
	}
	jdir := filepath.Join(f.state(), "erasures", ref.erasureID)
	if res.code != 0 && !(finished && res.code == exitErased) {
		j := readJournalFile(t, filepath.Join(jdir, "journal.jsonl"))
		last := j[len(j)-1]
		sealed, _ := filepath.Glob(filepath.Join(jdir, "evidence-*.sealed"))
		t.Fatalf("resumed run: want exit 0:\n%s\nthe crashed erasure %s is left unfinished: its journal ends with %s %s, certificates/ holds %v, sealed evidence on disk: %v",
			res, ref.erasureID, last.Phase, last.Step, baseNames(certFiles(t, f.state())), baseNames(sealed))
	}
	certs := certFiles(t, f.state())
	if len(certs) != 1 || filepath.Base(certs[0]) != ref.certName {
		t.Fatalf("after the resume certificates/ holds %v, want only %s", baseNames(certs), ref.certName)
	}
	payload := certificatePayload(t, certs[0])
	p := predicateOf(t, payload)
	j := readJournalFile(t, filepath.Join(jdir, "journal.jsonl"))

	// The journal head chains decide's result, which holds issued_at: it is
	// checked against the resumed journal here, and the journal's finished
	// steps against the reference's below, instead of comparing it directly.
	head, steps := journalHead(t, j)
	if jr, _ := p["journal"].(map[string]any); jr["head"] != head || jr["steps"] != float64(steps) {
		t.Errorf("certificate journal %v does not match the resumed journal (head %s over %d steps)", p["journal"], head, steps)
	}
	if got, want := finishedSteps(t, j), finishedSteps(t, ref.journal); !reflect.DeepEqual(got, want) {
		t.Errorf("finished journal steps differ from the reference's:\n%s", firstDiff(want, got))
	}
	if got, want := comparablePayload(t, payload), comparablePayload(t, ref.payload); !reflect.DeepEqual(got, want) {
		t.Errorf("certificate payload differs from the reference's (issued_at, valid_until and journal.head left out):\n%s", firstDiff(want, got))
	}
	if crashIssued != "" && p["issued_at"] != crashIssued {
		t.Errorf("certificate issued_at %v, want %s as journaled by the crashed run's decide (it must be reused, not recomputed)", p["issued_at"], crashIssued)
	}
	if last := j[len(j)-1]; last.Step != "publish" || last.Phase != "done" {
		t.Errorf("resumed journal ends with %s %s, want done publish", last.Phase, last.Step)
	}
	checkCertificateDigest(t, j, certs[0])
	assertNoSealedEvidence(t, jdir)
}

// checkCertificateDigest checks that the published certificate is the one
// whose digest the certificate step journaled.
func checkCertificateDigest(t *testing.T, j []journalEntry, certPath string) {
	t.Helper()
	var cr struct {
		SHA256 string `json:"sha256"`
	}
	for _, e := range j {
		if e.Step == "certificate" && e.Phase == "done" {
			if err := json.Unmarshal(e.Result, &cr); err != nil {
				t.Fatalf("certificate step result: %v", err)
			}
		}
	}
	b, err := os.ReadFile(certPath)
	if err != nil {
		t.Fatal(err)
	}
	// The journal holds the digest of the signed envelope as Sign formats
	// it; the bundle holds that envelope re-indented.
	var bundle struct {
		DSSEEnvelope json.RawMessage `json:"dsseEnvelope"`
	}
	if err := json.Unmarshal(b, &bundle); err != nil {
		t.Fatalf("certificate %s is not a bundle: %v", certPath, err)
	}
	var env bytes.Buffer
	if err := json.Indent(&env, bundle.DSSEEnvelope, "", "  "); err != nil {
		t.Fatal(err)
	}
	env.WriteByte('\n')
	if sum := sha256.Sum256(env.Bytes()); cr.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("published certificate's envelope has sha256 %x, the journal's certificate step recorded %q", sum, cr.SHA256)
	}
}

// comparable returns the payload without predicate.issued_at,
// predicate.valid_until and predicate.journal.head, as JSON lines.
func comparablePayload(t *testing.T, payload map[string]any) []string {
	t.Helper()
	b, _ := json.Marshal(payload)
	var c map[string]any
	json.Unmarshal(b, &c) // a deep copy
	p := predicateOf(t, c)
	delete(p, "issued_at")
	delete(p, "valid_until")
	if j, ok := p["journal"].(map[string]any); ok {
		delete(j, "head")
	}
	out, _ := json.MarshalIndent(c, "", "  ")
	return strings.Split(string(out), "\n")
}

// finishedSteps lists the journal's done and failed entries (step, phase,
// error, result) in order: what the certificate's journal head covers.
// decide's result is the predicate: its issue times are left out; the
// certificate step's result is the digest of the signed certificate, which
// holds those times: it is checked by checkCertificateDigest instead.
var storeIdentity = regexp.MustCompile(`"identity":"[^"]*"`)

func finishedSteps(t *testing.T, j []journalEntry) []string {
	t.Helper()
	var out []string
	for _, e := range j {
		if e.Phase == "begin" {
			continue
		}
		// The reference ran on another copy of the stores: their files'
		// identities (device and inode) differ, as they should.
		result := storeIdentity.ReplaceAllString(string(e.Result), `"identity":"…"`)
		if e.Step == "certificate" {
			result = "<sha256 of the signed certificate, checked against the file>"
		}
		if e.Step == "decide" && len(e.Result) > 0 {
			var m map[string]any
			if err := json.Unmarshal(e.Result, &m); err != nil {
				t.Fatalf("decide result: %v", err)
			}
			delete(m, "issued_at")
			delete(m, "valid_until")
			b, _ := json.Marshal(m)
			result = string(b)
		}
		out = append(out, fmt.Sprintf("%s %s err=%q result=%s", e.Phase, e.Step, e.Error, result))
	}
	return out
}

// journalHead recomputes the journal head a certificate carries: a SHA-256
// chain over the step, phase, error and result of the finished entries up to
// and including decide's (the certificate is signed after decide).
func journalHead(t *testing.T, j []journalEntry) (string, int) {
	t.Helper()
	h := ""
	n := 0
	decided := false
	for _, e := range j {
		if decided {
			break
		}
		if e.Phase == "begin" {
			continue
		}
		decided = e.Step == "decide"
		sum := sha256.New()
		fmt.Fprintf(sum, "%s\n%s\n%s\n%s\n", h, e.Step, e.Phase, e.Error)
		sum.Write(e.Result)
		h = hex.EncodeToString(sum.Sum(nil))
		n++
	}
	if !decided {
		t.Fatalf("the journal has no finished decide step")
	}
	return h, n
}

func assertNoSealedEvidence(t *testing.T, erasureDir string) {
	t.Helper()
	sealed, err := filepath.Glob(filepath.Join(erasureDir, "evidence-*.sealed"))
	if err != nil {
		t.Fatal(err)
	}
	if len(sealed) > 0 {
		t.Errorf("sealed evidence left after the certificate was published: %v", baseNames(sealed))
	}
}

func baseNames(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Base(p)
	}
	return out
}

// firstDiff shows where two line lists first differ.
func firstDiff(want, got []string) string {
	for i := 0; i < len(want) || i < len(got); i++ {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			return fmt.Sprintf("line %d:\n  want: %s\n  got:  %s\n(%d vs %d lines)", i+1, w, g, len(want), len(got))
		}
	}
	return "(no difference)"
}
