package chroma_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/chroma"
)

// python runs script with the chromadb client of the venv the chroma
// command lives in (AMNESIA_TEST_CHROMA_BIN), with args, and returns its
// standard output.
func python(t *testing.T, script string, args ...string) string {
	t.Helper()
	bin := os.Getenv("AMNESIA_TEST_CHROMA_BIN")
	if bin == "" {
		t.Skip("AMNESIA_TEST_CHROMA_BIN is not set: scripts/services start exports it (its venv has the chromadb client)")
	}
	py := filepath.Join(filepath.Dir(bin), "python")
	cmd := exec.Command(py, append([]string{"-c", script}, args...)...)
	cmd.Env = append(os.Environ(), "ANONYMIZED_TELEMETRY=False")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	return string(out)
}

const pyWrite = `
import sys, math, chromadb
from urllib.parse import urlparse
u = urlparse(sys.argv[1])
client = chromadb.HttpClient(host=u.hostname, port=u.port)
col = client.create_collection(sys.argv[2], metadata={"hnsw:space": "cosine"}, embedding_function=None)
ids = ["doc-%d" % i for i in range(8)]
col.add(ids=ids,
        embeddings=[[math.sin(i * 24 + j) + 0.1 * i for j in range(24)] for i in range(8)],
        documents=["Ticket %d from %s: my card number ends in %d and my address changed to street %d. Nonce %s." % (i, "alice" if i < 3 else "bob", 1000 + i, 17 * i, sys.argv[2]) for i in range(8)],
        metadatas=[{"subject": "alice" if i < 3 else "bob", "page": i, "score": 0.5 * i} for i in range(8)])
print(col.count())
`

const pyRead = `
import sys, math, chromadb
from urllib.parse import urlparse
u = urlparse(sys.argv[1])
client = chromadb.HttpClient(host=u.hostname, port=u.port)
col = client.get_collection(sys.argv[2], embedding_function=None)
got = col.get(include=["metadatas", "documents"])
print("ids", ",".join(sorted(got["ids"])))
print("alice", len(col.get(where={"subject": "alice"})["ids"]))
q = col.query(query_embeddings=[[math.sin(0 * 24 + j) for j in range(24)]], n_results=3)
print("nearest", ",".join(q["ids"][0]))
print("space", col.configuration_json["hnsw"]["space"] if hasattr(col, "configuration_json") else col.metadata.get("hnsw:space"))
`

// A collection written by the chromadb Python client (a cosine space set
// through metadata, as LangChain does): amnesia erases one subject's
// records, and the client, getting the collection again by name, reads
// the others and none of the erased ones; no byte of those is left in the
// persist directory.
func TestChromaPythonClient(t *testing.T) {
	ctx := context.Background()
	u, _ := server(t)
	name := collName(t)
	if out := strings.TrimSpace(python(t, pyWrite, u, name)); out != "8" {
		t.Fatalf("python wrote %q records", out)
	}
	s := open(t, nil, func(o *chroma.Options) { o.Collection = name })
	ids, err := s.BySubject(ctx, "alice")
	if err != nil || strings.Join(ids, ",") != "doc-0,doc-1,doc-2" {
		t.Fatalf("alice's records: %v, %v", ids, err)
	}
	ev, err := s.ReadEvidence(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range ids {
		if e := ev[k]; e == nil || e.CoveredBytes != e.RecordBytes {
			t.Fatalf("%s: evidence %+v: want every byte covered (the queue holds the vector as written)", k, e)
		}
	}
	before, err := s.ProbePhysical(ctx, store.NewNeedleSet(ev))
	if err != nil || before.FoundKeys() != 3 {
		t.Fatalf("before: %v, %v", before.Found, err)
	}
	base := u + "/api/v2/tenants/default_tenant/databases/default_database/collections/"
	oldID := collectionID(t, base+name)
	if err := s.Delete(ctx, ids); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reclaim(ctx); err != nil {
		t.Fatal(err)
	}
	// The rebuild gives the collection a new id: what an application that
	// kept the old collection object sends now fails.
	if newID := collectionID(t, base+name); newID == oldID {
		t.Fatalf("the collection kept its id through the rebuild")
	}
	if resp, err := http.Get(base + oldID + "/count"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a request by the old id: %v, %v (want 404)", resp, err)
	} else {
		resp.Body.Close()
	}
	after, err := s.ProbePhysical(ctx, store.NewNeedleSet(ev))
	if err != nil || after.NeedlesFound != 0 {
		t.Fatalf("after: %v, %v", after.Found, err)
	}
	out := python(t, pyRead, u, name)
	for _, want := range []string{"ids doc-3,doc-4,doc-5,doc-6,doc-7\n", "alice 0\n", "space cosine"} {
		if !strings.Contains(out, want) {
			t.Fatalf("the Python client reads after the erasure:\n%s\nwant %q", out, want)
		}
	}
	if strings.Contains(out, "doc-0") || strings.Contains(out, "doc-1,") || strings.Contains(out, "doc-2") {
		t.Fatalf("the Python client still finds an erased record:\n%s", out)
	}
}

func collectionID(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var c struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil || c.ID == "" {
		t.Fatalf("collection %s: %v", url, err)
	}
	return c.ID
}
