package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/internal/demo"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store/chromem"
	"github.com/amnesia-dev/amnesia/store/file"
)

// An installation whose application keeps its conversation log in a JSONL
// file and its memory in a compressed chromem-go DB: `amnesia check` sees
// both ready, forget erases the subject's rows and documents, the file is
// VERIFIED by its byte scan, and the chromem store's certificate entry says
// that application processes keep documents in memory until they reload.
func TestFileAndChromemForget(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	cfg := state.DefaultConfig()
	cfg.Stores = []state.StoreConfig{
		{Name: "log", Type: file.Type, Path: "../log.jsonl", Key: "id", Subject: "subject", Content: []string{"text"}},
		{Name: "memory", Type: chromem.Type, Path: "../chromem", Collection: "notes", Compress: true},
	}
	sd, err := state.Init(filepath.Join(root, "state"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ledger, err := lineage.Open(ctx, sd.LedgerSpec())
	if err != nil {
		t.Fatal(err)
	}
	fs, err := file.Open(ctx, file.Options{Name: "log", Path: filepath.Join(root, "log.jsonl"), Key: "id", Subject: "subject", Content: []string{"text"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := chromem.Open(ctx, "memory", filepath.Join(root, "chromem"), "notes", true, true)
	if err != nil {
		t.Fatal(err)
	}
	rec := capture.New(ledger, sd.Keyer, sd.Config.Scope)
	docs, vecs := rec.Docs(fs), rec.Vectors(cs)
	turns := []struct{ id, owner, text string }{
		{"t1", "alice@example.org", "Alice: please move my dentist appointment to Thursday afternoon, not the morning."},
		{"t2", "bob@example.org", "Bob: the parcel arrived damaged, I would like a replacement sent to the office."},
		{"t3", "alice@example.org", "Alice: and remind me to bring the insurance card that expires next spring."},
	}
	for _, tu := range turns {
		if err := docs.Put(ctx, capture.Doc{ID: tu.id, Kind: capture.KindChat, Subject: tu.owner, Text: tu.text}); err != nil {
			t.Fatal(err)
		}
		if err := vecs.Put(ctx, capture.Vector{ID: tu.id, Content: tu.text, Embedding: demo.Embed(tu.text, 16)}); err != nil {
			t.Fatal(err)
		}
	}
	ledger.Close()

	r := runBinary(t, nil, "", "--state", sd.Path, "check")
	if r.code != exitOK || !strings.Contains(r.stdout, "log") || !strings.Contains(r.stdout, "memory") {
		t.Fatalf("check:\n%s", r)
	}
	r = runBinary(t, nil, "yes\n", "--state", sd.Path, "forget", "alice@example.org", "--reason", "DSR-7")
	// Every artifact is gone from the files (exit 0); the chromem store's
	// residue state carries what is not measured, and what to do.
	if r.code != exitOK {
		t.Fatalf("forget:\n%s", r)
	}
	if !strings.Contains(r.stdout, "restart the application processes") {
		t.Errorf("forget does not tell to restart the application:\n%s", r)
	}
	if !regexp.MustCompile(`(?m)^store log +\d+ artifacts +residue VERIFIED `).MatchString(r.stdout) {
		t.Errorf("the file store is not VERIFIED:\n%s", r)
	}
	if !regexp.MustCompile(`(?m)^store memory +\d+ artifacts +residue UNVERIFIED-app-memory-until-reload`).MatchString(r.stdout) {
		t.Errorf("the chromem store's residue does not name application memory:\n%s", r)
	}
	b, _ := os.ReadFile(filepath.Join(root, "log.jsonl"))
	if strings.Contains(string(b), "dentist") || strings.Contains(string(b), "insurance") || !strings.Contains(string(b), "parcel") {
		t.Errorf("log after forget:\n%s", b)
	}
	_, payload := singleCertificate(t, sd.Path)
	stores := predicateOf(t, payload)["declared_scope"]
	sj, _ := json.Marshal(stores)
	if !strings.Contains(string(sj), `"residue":"UNVERIFIED-app-memory-until-reload"`) || !strings.Contains(string(sj), "until it reloads") {
		t.Errorf("the certificate's stores do not say that application memory keeps documents:\n%s", sj)
	}
	// A process that loads the DB now has none of Alice's documents.
	re, err := chromem.Open(ctx, "x", filepath.Join(root, "chromem"), "notes", true, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"t1", "t3"} {
		if d, _ := re.Get(ctx, id); d != nil {
			t.Errorf("document %s back after a reload", id)
		}
	}
	if d, _ := re.Get(ctx, "t2"); d == nil {
		t.Errorf("Bob's document lost")
	}
}
