package saga_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"io/fs"
	"math"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/demo"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
	"github.com/amnesia-dev/amnesia/store/sqlitevec"
)

// unrelatedText is text in another vocabulary than longText's.
func unrelatedText(n int) string {
	words := []string{"meridian", "copper", "basilisk", "fjord", "tamarind", "oboe", "glacier", "pennant"}
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString(words[(i*5+i/3)%len(words)])
		b.WriteString(" ")
	}
	return b.String()
}

// nearFixture holds Alice's document, a document of Bob's that quotes 40%
// of it, a vector outside the lineage close to one of Alice's chunk
// vectors, and an unrelated document of Bob's.
type nearFixture struct {
	*fixture
	text      string
	alice     string
	bob       string
	paraOf    string // the chunk the paraphrase vector is near
	paraSimOK float64
}

func newNearFixture(t *testing.T) *nearFixture {
	t.Helper()
	ctx := context.Background()
	f := newFixture(t, 2, 1)
	nf := &nearFixture{fixture: f, text: longText(5, 900), alice: f.corpus.People[0].ID, bob: f.corpus.People[1].ID}
	f.put(t, "alice-note", nf.alice, nf.text, nil)
	quoted := unrelatedText(400) + " as Alice wrote: " + nf.text[200:560] + " end of quote. " + unrelatedText(300)
	if err := f.docs.Put(ctx, capture.Doc{ID: "bob-quote", Kind: sqlitedoc.KindDocument, Subject: nf.bob, Text: quoted}); err != nil {
		t.Fatal(err)
	}
	f.put(t, "bob-other", nf.bob, unrelatedText(900), nil)
	// A paraphrase: a vector the application stored under its own key,
	// close to (not equal to) the vector of Alice's first chunk.
	chunk := demo.Chunk(nf.text, demo.ChunkSize)[0]
	nf.paraOf = "alice-note#0"
	v := demo.Embed(chunk, demo.Dim)
	for i := range v {
		if i%7 == 0 {
			v[i] += 0.02
		}
	}
	nf.paraSimOK = store.Cosine(v, demo.Embed(chunk, demo.Dim))
	if err := f.rawV.Put(ctx, sqlitevec.Record{ID: "app-vec-17", Subject: "", Embedding: v}); err != nil {
		t.Fatal(err)
	}
	return nf
}

func TestNearDuplicatesAreCandidates(t *testing.T) {
	ctx := context.Background()
	nf := newNearFixture(t)
	f := nf.fixture
	for i := range f.dir.Config.Stores {
		f.dir.Config.Stores[i].Nearby = &store.Nearby{Quotes: true, Paraphrases: true, ControlQueries: 4}
	}
	tr := f.trace(t, 0)
	res, err := f.erase(t, tr, map[string]store.Store{"docs": f.rawD, "vectors": f.rawV}, nil)
	if err != nil && res == nil {
		t.Fatal(err)
	}
	p := res.Statement.Predicate
	id := func(st, key string) string { return lineage.ArtifactID(f.dir.Keyer, f.dir.Config.Scope, st, key) }
	aliceIDs := map[string]bool{}
	for _, a := range tr.Artifacts {
		aliceIDs[a.ID] = true
	}
	var quote, para *certificate.Artifact
	for i, a := range p.Artifacts {
		if a.Kind != certificate.KindNearDuplicate {
			continue
		}
		n := a.Measurement.Near
		t.Logf("candidate %s/%s %s %.4f of %s", a.Store, a.ID, n.Method, n.Similarity, n.Of)
		if a.Outcome != certificate.NeedsHuman || a.Measurement.Deleted || !aliceIDs[n.Of] {
			t.Errorf("candidate %+v %+v", a, n)
		}
		switch {
		case a.ID == id("docs", "bob-quote") && n.Method == certificate.NearQuote:
			quote = &p.Artifacts[i]
		case a.ID == id("vectors", "app-vec-17") && n.Method == certificate.NearParaphrase:
			para = &p.Artifacts[i]
		default:
			t.Errorf("unexpected candidate %s/%s (%s %.4f)", a.Store, a.ID, n.Method, n.Similarity)
		}
	}
	if quote == nil {
		t.Fatal("Bob's document quoting Alice is not a candidate")
	}
	q := quote.Measurement.Near
	if q.Similarity < 0.2 || q.Similarity >= 0.9 || q.OfWindows == 0 || math.Abs(float64(q.Windows)/float64(q.OfWindows)-q.Similarity) > 1e-4 {
		t.Errorf("quote measurement %+v: want the fraction of the erased record's windows it holds", q)
	}
	if para == nil {
		t.Fatal("the vector near Alice's chunk is not a candidate")
	}
	if pm := para.Measurement.Near; pm.Of != id("vectors", nf.paraOf) || math.Abs(pm.Similarity-nf.paraSimOK) > 1e-3 {
		t.Errorf("paraphrase measurement %+v, want cosine %.4f to %s", pm, nf.paraSimOK, nf.paraOf)
	}
	for _, a := range p.Artifacts {
		if a.ID == id("docs", "bob-other") || a.ID == id("vectors", "bob-other#0") {
			t.Errorf("Bob's unrelated record is in the certificate: %+v", a)
		}
	}
	// Nothing of Bob's was deleted.
	for _, k := range []string{"bob-quote", "bob-other", "bob-other#0"} {
		if r, err := f.rawD.Get(ctx, k); err != nil || r == nil {
			t.Errorf("Bob's record %s is gone (%v)", k, err)
		}
	}
	for _, k := range []string{"app-vec-17", "bob-other#0"} {
		if r, err := f.rawV.Get(ctx, k); err != nil || r == nil {
			t.Errorf("vector %s is gone (%v)", k, err)
		}
	}
	// The semantic level: what was searched and the drift, as measurements.
	s := p.Semantic
	if s == nil || s.Level != certificate.LevelSemantic || len(s.Searches) != 2 {
		t.Fatalf("semantic section %+v", s)
	}
	if len(s.Drift) != 1 || s.Drift[0].Store != "vectors" || s.Drift[0].Queries != 4 || s.Drift[0].K != store.DefaultNeighbours ||
		s.Drift[0].OverlapAtK <= 0 || s.Drift[0].OverlapAtK > 1 {
		t.Errorf("drift %+v (docs has no similarity search; vectors measured 4 control queries)", s.Drift)
	}
	for _, ns := range s.Searches {
		if ns.Store == "vectors" && (ns.Records == 0 || ns.Candidates != 1) {
			t.Errorf("vectors search %+v", ns)
		}
	}
	if p.Counts.NeedsHuman < 2 {
		t.Errorf("counts %+v", p.Counts)
	}

	// The certificate verifies, with amnesia's verifier and the Python one.
	b, err := os.ReadFile(res.CertificatePath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := certificate.VerifyBundle(ctx, b, f.trusted()); err != nil {
		t.Fatalf("certificate does not verify: %v", err)
	}
	pythonVerifies(t, b, f.dir.Key.Public().(ed25519.PublicKey))
	if bin := os.Getenv("AMNESIA_BIN"); bin != "" {
		// amnesia verify, the command (AMNESIA_BIN names a build of it).
		out, err := osexec.Command(bin, "verify", res.CertificatePath, "--public-key", f.dir.PublicKeyPath()).CombinedOutput()
		if err != nil {
			t.Errorf("amnesia verify: %v\n%s", err, out)
		}
	}

	// Leak: no content, raw key or subject id in anything amnesia wrote.
	secrets := []string{nf.text[210:250], nf.text[600:640], unrelatedText(60)[20:56], nf.alice, nf.bob, "bob-quote", "app-vec-17", "bob-other"}
	if n := leakFree(t, f.dir.Path, secrets, []string{"ledger.db"}, "bob-quote", "app-vec-17", "bob-other"); n < 3 {
		t.Errorf("the leak scan read %d files: want the journal, the trace and the certificate at least", n)
	}
	cert, _ := certificate.Encode(res.Statement)
	for _, sec := range secrets {
		if bytes.Contains(cert, []byte(sec)) {
			t.Errorf("the certificate holds %q", sec)
		}
	}
}

// leakFree fails when a file under dir holds one of secrets. Files named in
// skip are not read (the ledger holds store keys by design); keys (store
// keys, which the journal keeps as SharedWith does) are allowed in the
// journal only.
func leakFree(t *testing.T, dir string, secrets, skip []string, keys ...string) int {
	t.Helper()
	n := 0
	isKey := map[string]bool{}
	for _, k := range keys {
		isKey[k] = true
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		for _, s := range skip {
			if strings.HasPrefix(d.Name(), s) {
				return nil
			}
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		n++
		for _, s := range secrets {
			if isKey[s] && strings.Contains(p, string(filepath.Separator)+"erasures"+string(filepath.Separator)) {
				continue
			}
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s holds %q", p, s)
			}
		}
		return nil
	})
	return n
}

// pythonVerifies runs the Python offline verifier on bundle b.
func pythonVerifies(t *testing.T, b []byte, pub ed25519.PublicKey) {
	t.Helper()
	py, err := osexec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed: the Python verifier was not run")
	}
	path := filepath.Join(t.TempDir(), "cert.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	src, _ := filepath.Abs("../../clients/python")
	cmd := osexec.Command(py, "-c", `import sys
from amnesia_client.offline import verify_bundle
verify_bundle(open(sys.argv[1], "rb").read(), [bytes.fromhex(sys.argv[2])])
print("ok")`, path, hex.EncodeToString(pub))
	cmd.Env = append(os.Environ(), "PYTHONPATH="+src)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ok") {
		t.Errorf("the Python verifier rejects the certificate: %v\n%s", err, out)
	}
}

// Without nearby configured (the default), nothing is searched: no
// candidate, no semantic section.
func TestNearbyOffByDefault(t *testing.T) {
	nf := newNearFixture(t)
	f := nf.fixture
	res, err := f.erase(t, f.trace(t, 0), map[string]store.Store{"docs": f.rawD, "vectors": f.rawV}, nil)
	if err != nil && res == nil {
		t.Fatal(err)
	}
	p := res.Statement.Predicate
	if p.Semantic != nil {
		t.Errorf("semantic section without nearby configured: %+v", p.Semantic)
	}
	for _, a := range p.Artifacts {
		if a.Kind == certificate.KindNearDuplicate {
			t.Errorf("candidate without nearby configured: %+v", a)
		}
	}
}

// The paraphrase search is bounded by max_records: the records over the
// bound are counted as not searched.
func TestNearbyBounded(t *testing.T) {
	nf := newNearFixture(t)
	f := nf.fixture
	f.dir.Config.Stores[1].Nearby = &store.Nearby{Paraphrases: true, MaxRecords: 2}
	tr := f.trace(t, 0)
	vecs := 0
	for _, a := range tr.Artifacts {
		if a.Store == "vectors" {
			vecs++
		}
	}
	res, err := f.erase(t, tr, map[string]store.Store{"docs": f.rawD, "vectors": f.rawV}, nil)
	if err != nil && res == nil {
		t.Fatal(err)
	}
	s := res.Statement.Predicate.Semantic
	if s == nil || len(s.Searches) != 1 || s.Searches[0].Records != 2 || s.Searches[0].NotSearched != vecs-2 || vecs < 3 || len(s.Drift) != 0 {
		t.Fatalf("semantic %+v for %d vectors", s, vecs)
	}
}
