package main

import (
	"bytes"
	"database/sql"
	"os"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3"

	"github.com/amnesia-dev/amnesia/internal/demo"
	"github.com/amnesia-dev/amnesia/store"
)

// Records the application deleted itself, with plain SQL, before amnesia
// was asked to forget their subject (issue #9, point 1).

func appDeletedDocs() []e2eDoc {
	return []e2eDoc{
		{ID: "doc-a1", Owner: "alice@example.org", Text: "Alice asked to move her appointment to the afternoon and to be called on her mobile only, never at work."},
		{ID: "doc-b1", Owner: "bob@example.org", Text: "Bob reported that the parcel arrived damaged and asked for a replacement to be shipped to his office."},
	}
}

// appExec runs statements on a store file the way the application would:
// its own connection, SQLite's defaults (no secure_delete).
func appExec(t *testing.T, path string, qs ...string) {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range qs {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// inStoreFiles reports whether b is in the SQLite file at path or its
// -wal, -journal or -shm file: the test's own byte scan.
func inStoreFiles(t *testing.T, path string, b []byte) bool {
	t.Helper()
	for _, f := range []string{path, path + "-wal", path + "-journal", path + "-shm"} {
		data, err := os.ReadFile(f)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(data, b) {
			return true
		}
	}
	return false
}

func chunkVectors(d e2eDoc) [][]byte {
	var out [][]byte
	for _, c := range demo.Chunk(d.Text, fixtureChunkSize) {
		out = append(out, store.Float32LE(demo.Embed(c, fixtureDim)))
	}
	return out
}

func artifactsOf(t *testing.T, p map[string]any, st string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, x := range p["artifacts"].([]any) {
		if a := x.(map[string]any); a["store"] == st {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		t.Fatalf("the certificate has no artifact in store %s", st)
	}
	return out
}

// The application deleted alice's vectors with a plain vec0 DELETE (and
// VACUUMed): sqlite-vec keeps them in their chunk blobs. forget must remove
// them from the file and may certify them VERIFIED(physical) only because
// the orphan probe found them (by the ledger's keyed digest) before reclaim
// and not after.
func TestForgetAppDeletedVectors(t *testing.T) {
	docs := appDeletedDocs()
	f := buildE2EFixture(t, t.TempDir(), docs)
	appExec(t, f.vecsDB(), `DELETE FROM vectors WHERE id LIKE 'doc-a1#%'`, `VACUUM`, `PRAGMA wal_checkpoint(TRUNCATE)`)
	alice, bob := chunkVectors(docs[0]), chunkVectors(docs[1])
	for _, v := range alice {
		if !inStoreFiles(t, f.vecsDB(), v) {
			t.Fatal("after the application's DELETE alice's vector is not in the file: the premise failed")
		}
	}

	out, errOut, code := runCLI(t, "", "--state", f.state(), "forget", "alice@example.org", "--reason", "DSR-9", "--yes")
	if code != exitOK {
		t.Fatalf("forget: exit %d\n%s\n%s", code, errOut, out)
	}
	for i, v := range alice {
		if inStoreFiles(t, f.vecsDB(), v) {
			t.Errorf("after forget alice's application-deleted vector %d is still in the vector store's files", i)
		}
	}
	for _, v := range bob {
		if !inStoreFiles(t, f.vecsDB(), v) {
			t.Fatal("bob's live vector is gone from the file: the scan went blind or reclaim destroyed live data")
		}
	}
	_, payload := singleCertificate(t, f.state())
	p := predicateOf(t, payload)
	for _, a := range artifactsOf(t, p, "vectors") {
		reason, _ := a["reason"].(string)
		if a["outcome"] != "VERIFIED" || a["level"] != "physical" || !strings.HasPrefix(reason, "the record was already deleted when the erasure began") {
			t.Errorf("vector artifact %v: %v(%v) %q, want VERIFIED(physical) by the orphan probe", a["id"], a["outcome"], a["level"], reason)
		}
		if m, _ := a["method"].(string); !strings.Contains(m, "orphan probe before reclaim") || !strings.Contains(m, "invalidated vec0 slots zeroed") {
			t.Errorf("vector artifact method %q does not name the orphan probe and the slot zeroing", m)
		}
		if strings.Contains(reason, "no physical probe") {
			t.Errorf("false reason: %q", reason)
		}
	}
	if p["complete"] != true {
		t.Errorf("complete = %v", p["complete"])
	}
}

// The application deleted alice's document and chunks with a plain DELETE
// (no secure_delete): their text stays in SQLite's free space, and there is
// no way to find it by digest. The certificate must say that it could not
// be measured, and not be complete; reclaim still runs and the bytes are
// gone from the file afterwards.
func TestForgetAppDeletedDocs(t *testing.T) {
	docs := appDeletedDocs()
	f := buildE2EFixture(t, t.TempDir(), docs)
	appExec(t, f.docsDB(), `PRAGMA secure_delete = OFF`, `DELETE FROM documents WHERE id = 'doc-a1' OR parent = 'doc-a1'`)
	text := []byte("called on her mobile only")
	if !inStoreFiles(t, f.docsDB(), text) {
		t.Fatal("after the application's DELETE alice's text is not in the files: the premise failed")
	}

	out, errOut, code := runCLI(t, "", "--state", f.state(), "forget", "alice@example.org", "--reason", "DSR-9", "--yes")
	if code != exitIncomplete {
		t.Fatalf("forget: exit %d, want %d (incomplete)\n%s\n%s", code, exitIncomplete, errOut, out)
	}
	if inStoreFiles(t, f.docsDB(), text) {
		t.Error("after forget alice's application-deleted text is still in the document store's files")
	}
	if !inStoreFiles(t, f.docsDB(), []byte("arrived damaged")) {
		t.Fatal("bob's live text is gone from the file: the scan went blind")
	}
	_, payload := singleCertificate(t, f.state())
	p := predicateOf(t, payload)
	for _, a := range artifactsOf(t, p, "docs") {
		reason, _ := a["reason"].(string)
		if a["outcome"] != "UNVERIFIED" || !strings.HasPrefix(reason, "the record was already deleted when the erasure began; its bytes could remain in the store's free space and could not be measured without its content") {
			t.Errorf("document artifact %v: %v %q, want UNVERIFIED with the true reason", a["id"], a["outcome"], reason)
		}
		if m, _ := a["method"].(string); !strings.Contains(m, "reclaim ran: ") {
			t.Errorf("document artifact method %q does not say that reclaim ran", m)
		}
	}
	if p["complete"] != false {
		t.Errorf("complete = %v, want false", p["complete"])
	}
}
