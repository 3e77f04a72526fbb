package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/internal/demo"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store/weaviate"
)

// An application keeps its memory in a Weaviate class: `amnesia check` sees
// it ready, forget erases the subject's objects, and the store is VERIFIED
// by the byte scan of the class's files after the server's own flush and
// compaction (the shared test server runs with the settings
// docs/weaviate.md gives); the other subject's object stays.
func TestWeaviateForget(t *testing.T) {
	url, data := os.Getenv("AMNESIA_TEST_WEAVIATE_URL"), os.Getenv("AMNESIA_TEST_WEAVIATE_DATADIR")
	if url == "" || data == "" {
		t.Skip("AMNESIA_TEST_WEAVIATE_URL and AMNESIA_TEST_WEAVIATE_DATADIR are not set: run eval \"$(scripts/services start)\"")
	}
	ctx := context.Background()
	var b [6]byte
	rand.Read(b[:])
	class := "Forget" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		req, _ := http.NewRequest(http.MethodDelete, url+"/v1/schema/"+class, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	})
	root := t.TempDir()
	cfg := state.DefaultConfig()
	cfg.Stores = []state.StoreConfig{{Name: "memory", Type: weaviate.Type, DSN: url, Collection: class, Dimensions: 16, DataDir: data}}
	sd, err := state.Init(filepath.Join(root, "state"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ledger, err := lineage.Open(ctx, sd.LedgerSpec())
	if err != nil {
		t.Fatal(err)
	}
	ws, err := weaviate.Open(ctx, weaviate.Options{Name: "memory", URL: url, Class: class, Dimensions: 16, DataDir: data}, true)
	if err != nil {
		t.Fatal(err)
	}
	vecs := capture.New(ledger, sd.Keyer, sd.Config.Scope).Vectors(ws)
	turns := []struct{ id, owner, text string }{
		{"t1", "alice@example.org", "Alice: please move my dentist appointment to Thursday afternoon, not the morning."},
		{"t2", "bob@example.org", "Bob: the parcel arrived damaged, I would like a replacement sent to the office."},
		{"t3", "alice@example.org", "Alice: and remind me to bring the insurance card that expires next spring."},
	}
	for _, tu := range turns {
		if err := vecs.Put(ctx, capture.Vector{ID: tu.id, Subject: tu.owner, Content: tu.text, Embedding: demo.Embed(tu.text, 16)}); err != nil {
			t.Fatal(err)
		}
	}
	ledger.Close()

	r := runBinary(t, nil, "", "--state", sd.Path, "check")
	if r.code != exitOK || !strings.Contains(r.stdout, "memory") {
		t.Fatalf("check:\n%s", r)
	}
	r = runBinary(t, nil, "yes\n", "--state", sd.Path, "forget", "alice@example.org", "--reason", "DSR-8")
	if r.code != exitOK {
		t.Fatalf("forget:\n%s", r)
	}
	if !regexp.MustCompile(`(?m)^store memory +2 artifacts +residue VERIFIED `).MatchString(r.stdout) {
		t.Errorf("the Weaviate store is not VERIFIED by its byte scan:\n%s", r)
	}
	for _, id := range []string{"t1", "t3"} {
		if got, _ := ws.Get(ctx, id); got != nil {
			t.Errorf("object %s still there after forget", id)
		}
	}
	if got, _ := ws.Get(ctx, "t2"); got == nil {
		t.Errorf("Bob's object lost")
	}
}
