package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/subject"
)

// The leak test ingests documents full of personal data of many kinds, runs
// every CLI verb on it, and then searches everything amnesia wrote (every
// file of the state directory, every line it printed) and, after erasure,
// the stores' files for the personal data, raw and in the encodings a
// careless program would use.

// leakKinds are the kinds of personal data; person p's subject id is their
// value of kind p.
var leakKinds = []string{
	"email", "phone-e164", "phone-national", "uk-nino", "us-ssn", "iban", "card", "name",
	"address", "date-of-birth", "passport", "ipv4", "imei", "mrn", "licence-plate",
	"de-tax-id", "fr-insee", "handle",
}

var leakNames = []string{
	"Zoë Ångström", "José Núñez-García", "Björn Þórsson", "Agnieszka Wiśniewska", "Çağla Yılmaz",
	"François Lefèvre", "Søren Kierkegård", "Mária Horváthová", "Đorđe Petrović", "Łukasz Żółkiewski",
	"Renée Dupré", "Jürgen Müller-Lüdenscheidt", "Siobhán Ó Briain", "İlkay Gündoğan", "Anaïs Éluard",
	"Tomáš Dvořák", "Inés Peña", "Ægir Ødegård",
}

var leakASCII = []string{
	"zoe.angstrom", "jose.nunez", "bjorn.thorsson", "agnieszka.w", "cagla.yilmaz",
	"francois.lefevre", "soren.k", "maria.horvathova", "djordje.p", "lukasz.z",
	"renee.dupre", "juergen.mueller", "siobhan.obriain", "ilkay.g", "anais.eluard",
	"tomas.dvorak", "ines.pena", "aegir.odegard",
}

// leakValue returns person p's value of personal-data kind k. Every value
// is synthetic, at least 8 bytes long, and unique across people.
func leakValue(k, p int) string {
	switch leakKinds[k] {
	case "email":
		return fmt.Sprintf("%s.%d@example.org", leakASCII[p], 1970+p)
	case "phone-e164":
		return fmt.Sprintf("+447700900%03d", 100+p)
	case "phone-national":
		return fmt.Sprintf("020 7946 0%03d", 200+p)
	case "uk-nino":
		return fmt.Sprintf("QQ 12 34 %02d C", 10+p)
	case "us-ssn":
		return fmt.Sprintf("078-05-%04d", 1120+p)
	case "iban":
		return fmt.Sprintf("GB82 WEST 1234 5698 7654 %02d", 10+p)
	case "card":
		return fmt.Sprintf("4539 1488 0343 %04d", 6400+p)
	case "name":
		return leakNames[p]
	case "address":
		return fmt.Sprintf("%d Rue de la Paix, 75002 Paris", 10+p)
	case "date-of-birth":
		return fmt.Sprintf("1983-04-%02d", 10+p)
	case "passport":
		return fmt.Sprintf("CX7T%05d", 33800+p)
	case "ipv4":
		return fmt.Sprintf("203.0.113.%d", 100+p)
	case "imei":
		return fmt.Sprintf("3569380356438%02d", 10+p)
	case "mrn":
		return fmt.Sprintf("MRN-004821%04d", 3300+p)
	case "licence-plate":
		return fmt.Sprintf("LB%02d SEO", 10+p)
	case "de-tax-id":
		return fmt.Sprintf("860957427%02d", 10+p)
	case "fr-insee":
		return fmt.Sprintf("1 84 12 76 451 %03d 46", 100+p)
	case "handle":
		return fmt.Sprintf("@quietfox_%02d", 10+p)
	}
	panic("unknown kind")
}

// leakSecret is one value that must never appear in what amnesia wrote.
type leakSecret struct {
	label string // "person 3 us-ssn", never the value
	value string
}

// leakCorpus builds the documents (two per person) and lists every value in
// them. Person p's documents hold their subject id, their name and four more
// of their values; two documents also mention another person.
func leakCorpus() (ids []string, docs []e2eDoc, secrets []leakSecret) {
	n := len(leakKinds)
	seen := map[string]bool{}
	add := func(k, p int) string {
		v := leakValue(k, p)
		if !seen[v] {
			seen[v] = true
			secrets = append(secrets, leakSecret{label: fmt.Sprintf("person %d %s", p, leakKinds[k]), value: v})
		}
		return v
	}
	for p := 0; p < n; p++ {
		ids = append(ids, add(p, p))
	}
	nameKind := 7
	for p := 0; p < n; p++ {
		id, name := ids[p], add(nameKind, p)
		a, b, c, d := add((p+1)%n, p), add((p+3)%n, p), add((p+5)%n, p), add((p+8)%n, p)
		docs = append(docs,
			e2eDoc{ID: fmt.Sprintf("rec-%02d-0", p), Owner: id, Text: fmt.Sprintf(
				"Intake form %d. Customer %s, known to us as %s, registered with %s. "+
					"We also hold %s on file for this customer. "+
					"The customer asked that %s be used for every future contact. "+
					"Case closed after review by the data protection desk.", p, name, id, a, b, c)},
			e2eDoc{ID: fmt.Sprintf("rec-%02d-1", p), Owner: id, Text: fmt.Sprintf(
				"Support ticket %d. %s wrote in about an unexpected charge. "+
					"Identity was checked against %s and %s. "+
					"Notes: contact via %s only; do not use %s. "+
					"The ticket was escalated to the billing team on day %d.", p, name, d, id, a, c, 40+p)},
		)
	}
	// Third-party mentions: person 0 writes about person 1 (erased after 0),
	// person 9 writes about person 2 (erased before 9).
	for _, m := range []struct{ writer, about int }{{0, 1}, {9, 2}} {
		docs = append(docs, e2eDoc{
			ID: fmt.Sprintf("rec-%02d-m", m.writer), Owner: ids[m.writer], Mentions: []string{ids[m.about]},
			Text: fmt.Sprintf("Complaint %d. %s reports that %s (reachable at %s) was also overcharged. "+
				"Both accounts were reviewed together by the billing team.", m.writer, leakNames[m.writer], leakNames[m.about], ids[m.about]),
		})
	}
	return ids, docs, secrets
}

// leakNeedle is one encoded form of a secret.
type leakNeedle struct {
	secret string // the secret's label
	form   string
	b      []byte
}

// leakNeedles returns the forms of each secret to search for: raw, lower
// case, the normalised form subject ids are keyed on, ASCII-escaped JSON,
// hex (lower and upper case), and standard and URL base64 at each of the
// three byte alignments a value can have inside a larger encoded buffer.
func leakNeedles(t *testing.T, secrets []leakSecret) []leakNeedle {
	t.Helper()
	var out []leakNeedle
	for _, s := range secrets {
		seen := map[string]bool{}
		addForm := func(form string, b []byte) {
			if seen[string(b)] {
				return
			}
			if len(b) < 8 {
				t.Fatalf("secret %s: its %s form is only %d bytes: too short to search for without false hits", s.label, form, len(b))
			}
			seen[string(b)] = true
			out = append(out, leakNeedle{secret: s.label, form: form, b: b})
		}
		raw := []byte(s.value)
		addForm("raw", raw)
		addForm("lower-case", []byte(strings.ToLower(s.value)))
		addForm("normalised", []byte(subject.Normalize(s.value)))
		q := strconv.QuoteToASCII(s.value)
		addForm("json-escaped", []byte(q[1:len(q)-1]))
		addForm("hex", []byte(hex.EncodeToString(raw)))
		addForm("HEX", []byte(strings.ToUpper(hex.EncodeToString(raw))))
		for i := 0; i < 3; i++ {
			full := raw[i:]
			whole := full[:len(full)/3*3] // the groups whose encoding does not depend on what follows
			addForm(fmt.Sprintf("base64@%d", i), []byte(base64.StdEncoding.EncodeToString(whole)))
			addForm(fmt.Sprintf("base64url@%d", i), []byte(base64.URLEncoding.EncodeToString(whole)))
		}
	}
	return out
}

// leakHit is a secret found somewhere.
type leakHit struct {
	where, secret, form string
}

func (h leakHit) String() string { return fmt.Sprintf("%s: %s (%s)", h.where, h.secret, h.form) }

func scanForLeaks(where string, data []byte, needles []leakNeedle) []leakHit {
	var hits []leakHit
	for _, n := range needles {
		if bytes.Contains(data, n.b) {
			hits = append(hits, leakHit{where, n.secret, n.form})
		}
	}
	return hits
}

// scanTree scans every file under root; it returns the hits and the files
// scanned, relative to root.
func scanTree(t *testing.T, root string, needles []leakNeedle) ([]leakHit, []string) {
	t.Helper()
	var hits []leakHit
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		files = append(files, rel)
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		hits = append(hits, scanForLeaks(rel, b, needles)...)
		if strings.HasSuffix(path, ".dsse.json") {
			// Also the decoded payload, in case it was encoded in some other way.
			var env struct{ Payload string }
			if json.Unmarshal(b, &env) == nil {
				if p, err := base64.StdEncoding.DecodeString(env.Payload); err == nil {
					hits = append(hits, scanForLeaks(rel+" (decoded payload)", p, needles)...)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("scan %s: %v", root, err)
	}
	return hits, files
}

// storeFiles are the files in which SQLite can keep a database's bytes.
func storeFiles(db string) []string {
	return []string{db, db + "-wal", db + "-journal", db + "-shm"}
}

func scanFiles(t *testing.T, paths []string, needles []leakNeedle) []leakHit {
	t.Helper()
	var hits []leakHit
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		hits = append(hits, scanForLeaks(filepath.Base(p), b, needles)...)
	}
	return hits
}

func reportLeaks(t *testing.T, what string, hits []leakHit) {
	t.Helper()
	if len(hits) == 0 {
		return
	}
	lines := make([]string, len(hits))
	for i, h := range hits {
		lines[i] = "  " + h.String()
	}
	sort.Strings(lines)
	if len(lines) > 40 {
		lines = append(lines[:40], fmt.Sprintf("  … and %d more", len(hits)-40))
	}
	t.Errorf("%s: personal data found (%d hits):\n%s", what, len(hits), strings.Join(lines, "\n"))
}

// TestLeakScannerFindsPlantedSecrets shows that the scanner can fail: it
// finds a secret planted in each of the encodings it claims to search.
func TestLeakScannerFindsPlantedSecrets(t *testing.T) {
	secret := leakSecret{label: "planted name", value: "Zoë Ångström-Þórsdóttir"}
	needles := leakNeedles(t, []leakSecret{secret})
	raw := []byte(secret.value)
	noise := func(b []byte) []byte {
		return append(append([]byte("\x00\x01header {\"k\":\""), b...), []byte("\"}\nfooter\xff")...)
	}
	q := strconv.QuoteToASCII(secret.value)
	planted := map[string][]byte{
		"raw":          noise(raw),
		"lower-case":   noise([]byte(strings.ToLower(secret.value))),
		"json-escaped": noise([]byte(q[1 : len(q)-1])),
		"hex":          noise([]byte(hex.EncodeToString(raw))),
		"HEX":          noise([]byte(strings.ToUpper(hex.EncodeToString(raw)))),
	}
	// Base64 of the secret inside a larger buffer, at each alignment.
	for off := 0; off < 3; off++ {
		buf := append(append(bytes.Repeat([]byte("p"), 3+off), raw...), "suffix"...)
		planted[fmt.Sprintf("base64, %d prefix bytes", 3+off)] = noise([]byte(base64.StdEncoding.EncodeToString(buf)))
		planted[fmt.Sprintf("base64url, %d prefix bytes", 3+off)] = noise([]byte(base64.URLEncoding.EncodeToString(buf)))
	}
	dir := t.TempDir()
	for name, b := range planted {
		if err := os.WriteFile(filepath.Join(dir, strings.ReplaceAll(name, " ", "_")), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "clean"), noise([]byte("nothing personal here, only hmac:0123abcd…")), 0o600); err != nil {
		t.Fatal(err)
	}
	hits, files := scanTree(t, dir, needles)
	found := map[string][]string{}
	for _, h := range hits {
		found[h.where] = append(found[h.where], h.form)
	}
	if len(files) != len(planted)+1 {
		t.Fatalf("scanned %d files, want %d", len(files), len(planted)+1)
	}
	for name := range planted {
		if len(found[strings.ReplaceAll(name, " ", "_")]) == 0 {
			t.Errorf("the scanner did not find the secret planted as %s", name)
		}
	}
	if f := found["clean"]; len(f) > 0 {
		t.Errorf("the scanner found %v in a file without the secret", f)
	}
	// And the output scan works the same way.
	if len(scanForLeaks("stdout", []byte("hello "+secret.value), needles)) == 0 {
		t.Errorf("the scanner did not find the secret in output")
	}
}

func TestLeakNoPersonalDataInAnythingAmnesiaWrote(t *testing.T) {
	ids, docs, secrets := leakCorpus()
	if len(ids) < 15 {
		t.Fatalf("only %d kinds of personal data", len(ids))
	}
	unknown := leakSecret{label: "unknown subject", value: "QQ 98 76 54 D"}
	needles := leakNeedles(t, append(append([]leakSecret(nil), secrets...), unknown))
	f := buildE2EFixture(t, t.TempDir(), docs)
	st := f.state()

	// Probe power: before erasure the document store holds every secret.
	storeNeedles := leakNeedles(t, secrets)
	before := map[string]bool{}
	for _, h := range scanFiles(t, storeFiles(f.docsDB()), storeNeedles) {
		if h.form == "raw" {
			before[h.secret] = true
		}
	}
	for _, s := range secrets {
		if !before[s.label] {
			t.Errorf("before erasure, %s is not in the document store's files: the scan would prove nothing", s.label)
		}
	}

	var outputs []binResult
	run := func(wantCode int, stdin string, args ...string) binResult {
		t.Helper()
		res := runBinary(t, nil, stdin, append([]string{"--state", st}, args...)...)
		outputs = append(outputs, res)
		if res.code != wantCode {
			t.Errorf("want exit %d:\n%s", wantCode, res)
		}
		return res
	}

	// The census and reconcile read every store's records (content and
	// fields in memory only): their output is scanned below too.
	run(0, "", "scan", "--field", "subject")
	run(0, "", "scan", "--json")
	for p, id := range ids {
		if p%5 == 0 {
			run(0, id+"\n", "reconcile", "-", "--field", "subject", "--yes")
		}
	}

	viaStdin, viaErase := 3, 5
	for p, id := range ids {
		tr := run(0, "", "trace", id, "--json")
		var trace struct {
			ID         string `json:"id"`
			SubjectRef string `json:"subject_ref"`
			Artifacts  []any  `json:"artifacts"`
		}
		if err := json.Unmarshal([]byte(tr.stdout), &trace); err != nil || trace.ID == "" || len(trace.Artifacts) == 0 {
			t.Fatalf("trace of person %d: not a trace with artifacts (%v):\n%s", p, err, tr)
		}
		// A reason holding the subject's id is refused (exit 2) before
		// anything is written, whichever way the erasure is started; the
		// scan below shows that neither the refusals nor their messages
		// wrote it anywhere.
		run(exitUsage, "", "forget", id, "--reason", "erasure request from "+id, "--yes")
		run(exitUsage, id+"\n", "forget", "-", "--reason", strings.ToUpper(id), "--yes")
		run(exitUsage, "", "erase", "--trace", trace.ID, "--reason", "DSR-1 ("+id+")")
		run(exitUsage, "", "erase", "--trace", trace.ID, "--queue", "--reason", id)
		switch p {
		case viaStdin:
			run(0, id+"\n", "forget", "-", "--reason", "DSR-1", "--yes")
		case viaErase:
			run(0, "", "erase", "--trace", trace.ID, "--reason", "DSR-1")
		default:
			run(0, "", "forget", id, "--reason", "DSR-1", "--yes")
		}
	}
	certs := certFiles(t, st)
	if len(certs) != len(ids) {
		t.Errorf("want %d certificates, found %d", len(ids), len(certs))
	}
	for _, c := range certs {
		run(0, "", "verify", c, "--public-key", filepath.Join(st, "signing-key.pub.pem"))
		if p := predicateOf(t, certificatePayload(t, c)); p["complete"] != true || p["reason"] != "DSR-1" {
			t.Errorf("certificate %s: complete %v, reason %v", filepath.Base(c), p["complete"], p["reason"])
		}
	}
	// Re-verification reads the ledger's store keys and probes the stores
	// again; its certificates, journals and output are scanned below too.
	for _, c := range certs {
		run(0, "", "reverify", c)
	}
	if n := len(certFiles(t, st)); n != 2*len(certs) {
		t.Errorf("after reverify: %d certificates, want %d", n, 2*len(certs))
	}
	// Nothing comes back: new consent (ledger tables consents and
	// erased_subjects, the consent event), a refused consent whose --by
	// holds the subject's id, the trace that shows them, scheduled
	// re-verification and a replay (their certificates and journals).
	for p, id := range ids {
		if p%4 == 0 {
			run(0, id+"\n", "consent", "-", "--by", "signup-desk")
			run(exitUsage, "", "consent", id, "--by", "consent of "+id)
			run(exitErased, "", "trace", id)
		}
	}
	time.Sleep(1100 * time.Millisecond)
	run(0, "", "reverify", "--due", "--every", "1s")
	run(0, "", "replay", "--since", "2000-01-01")
	if js, _ := filepath.Glob(filepath.Join(st, "erasures", "*", "replay-*.jsonl")); len(js) != len(certs) {
		t.Errorf("replay wrote %d journals, want %d", len(js), len(certs))
	}
	run(exitNoLineage, "", "forget", unknown.value, "--reason", "DSR-1", "--yes")
	run(exitErased, "", "forget", ids[0], "--reason", "DSR-1", "--yes")
	run(exitError, "", "erase", "--trace", "tr-does-not-exist")

	// Crypto-shredding: a document written sealed for a new subject, then
	// erased: the master key, the data-key tables and the shred step's
	// journal entry are in the scan below.
	app, err := capture.Open(context.Background(), st, capture.WithSealing())
	if err != nil {
		t.Fatal(err)
	}
	sealedDocs, err := app.Docs(context.Background(), "docs")
	if err != nil {
		t.Fatal(err)
	}
	if err := sealedDocs.Put(context.Background(), capture.Doc{ID: "sealed-1", Kind: capture.KindDocument, Subject: unknown.value, Text: "Sealed note: " + secrets[1].value + " and " + secrets[2].value}); err != nil {
		t.Fatal(err)
	}
	app.Close()
	run(0, "", "forget", unknown.value, "--reason", "DSR-2", "--yes")

	// The refused reasons were never queued.
	if jobs := queuedJobs(t, st); len(jobs) != 0 {
		t.Errorf("%d erasures were queued with a refused reason", len(jobs))
	}

	// Everything amnesia wrote in its state directory.
	hits, files := scanTree(t, st, needles)
	reportLeaks(t, "state directory", hits)
	kinds := map[string]int{}
	for _, f := range files {
		switch {
		case strings.HasPrefix(f, "erasures/") && strings.HasSuffix(f, "/journal.jsonl"):
			kinds["journal"]++
		case strings.HasPrefix(f, "traces/"):
			kinds["trace"]++
		case strings.HasPrefix(f, "certificates/"):
			kinds["certificate"]++
		default:
			kinds[f]++
		}
	}
	for _, want := range []string{"ledger.db", "amnesia.log", "amnesia.yaml", "pepper", "signing-key.pem", "signing-key.pub.pem", "master.key", "journal", "trace", "certificate"} {
		if kinds[want] == 0 {
			t.Errorf("the scan of the state directory saw no %s (files: %v)", want, files)
		}
	}
	t.Logf("scanned %d files of the state directory for %d secrets in %d forms", len(files), len(secrets)+1, len(needles))

	// Everything it printed, the trace JSON included.
	for _, o := range outputs {
		where := "output of amnesia " + strings.Join(o.args[2:], " ")
		reportLeaks(t, where+" (stdout)", scanForLeaks("stdout", []byte(o.stdout), needles))
		reportLeaks(t, where+" (stderr)", scanForLeaks("stderr", []byte(o.stderr), needles))
	}

	// Every subject was erased: no secret may be left in the stores' files.
	var storeHits []leakHit
	for _, db := range []string{f.docsDB(), f.vecsDB()} {
		storeHits = append(storeHits, scanFiles(t, storeFiles(db), storeNeedles)...)
	}
	reportLeaks(t, "store files after every subject was erased", storeHits)
}
