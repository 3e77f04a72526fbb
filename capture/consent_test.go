package capture_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/internal/pgtest"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/subject"
	"os"
	"path/filepath"
)

// lineageOf opens the ledger of the state directory a second time.
func lineageOf(t *testing.T, dir string) lineage.Ledger {
	t.Helper()
	d, err := state.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	l, err := lineage.OpenExisting(context.Background(), d.LedgerSpec())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// docsApp initialises an installation on ledger with one sqlite-doc store,
// "docs", and opens it through capture; the App is closed with the test.
func docsApp(t *testing.T, ledger string) (string, *capture.App, *capture.Docs) {
	t.Helper()
	cfg := state.DefaultConfig()
	cfg.Stores = []store.Config{{Name: "docs", Type: "sqlite-doc", Path: "docs.db"}}
	cfg.Ledger = ledger
	dir := t.TempDir() + "/.amnesia"
	if _, err := state.Init(dir, cfg); err != nil {
		t.Fatal(err)
	}
	app, err := capture.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Close() })
	docs, err := app.Docs(context.Background(), "docs")
	if err != nil {
		t.Fatal(err)
	}
	return dir, app, docs
}

// comeback: after an erasure, capturing the subject's data again (under
// new keys, through every capture path) is refused unless marked as new
// consent, which the ledger records with the keyed subject, time and who.
func comeback(t *testing.T, ledger string) {
	ctx := context.Background()
	dir, app, docs := docsApp(t, ledger)
	put := func(ctx context.Context, id, who string) error {
		return docs.Put(ctx, capture.Doc{ID: id, Kind: capture.KindDocument, Subject: who, Text: "text of " + id})
	}
	if err := put(ctx, "d1", alice); err != nil {
		t.Fatal(err)
	}
	if err := put(ctx, "d2", bob); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Erase(ctx, alice, "DSR-1"); err != nil {
		t.Fatal(err)
	}
	// Refused on every path, with a message that says what to do and no raw id.
	err := put(ctx, "d3", alice)
	if !errors.Is(err, capture.ErrSubjectErased) {
		t.Fatalf("capture after erasure: %v, want ErrSubjectErased", err)
	}
	if strings.Contains(err.Error(), alice) || !strings.Contains(err.Error(), "WithNewConsent") {
		t.Errorf("refusal message: %q", err)
	}
	if _, _, err := app.Recorder().RecordArtifact(ctx, capture.Artifact{Store: "docs", Key: "d4", Kind: lineage.KindSource, Subject: alice}); !errors.Is(err, capture.ErrSubjectErased) {
		t.Errorf("RecordArtifact after erasure: %v, want ErrSubjectErased", err)
	}
	if err := docs.PutBatch(ctx, []capture.Doc{{ID: "d5", Kind: capture.KindDocument, Subject: bob, Text: "b"}, {ID: "d6", Kind: capture.KindDocument, Subject: alice, Text: "a"}}, nil, nil); !errors.Is(err, capture.ErrSubjectErased) {
		t.Errorf("PutBatch after erasure: %v, want ErrSubjectErased", err)
	}
	if got, _ := docs.Get(ctx, "d5"); got != nil {
		t.Error("a refused batch wrote a record")
	}
	if err := put(ctx, "d7", bob); err != nil {
		t.Errorf("another subject: %v", err)
	}
	// A write marked as new consent is admitted, and the consent recorded.
	if err := put(capture.WithNewConsent(ctx, alice), "d8", alice); !errors.Is(err, subject.ErrPersonalData) {
		t.Errorf("consent with a personal 'by': %v, want a personal-data refusal", err)
	}
	if err := put(capture.WithNewConsent(ctx, "signup-form"), "d8", alice); err != nil {
		t.Fatalf("capture marked as new consent: %v", err)
	}
	if err := put(ctx, "d9", alice); err != nil {
		t.Errorf("capture after the consent: %v", err)
	}
	if err := put(capture.WithNewConsent(ctx, "signup-form"), "d1", alice); !errors.Is(err, lineage.ErrErased) {
		t.Errorf("an erased key with consent: %v, want lineage.ErrErased", err)
	}
	k, _ := app.Recorder().SubjectKey(alice)
	g := lineageOf(t, dir).(lineage.SubjectGuard)
	cs, err := g.Consents(ctx, app.Scope(), k)
	if err != nil || len(cs) != 1 || cs[0].By != "signup-form" || cs[0].At.IsZero() {
		t.Fatalf("consents = %+v, %v", cs, err)
	}
	// A second erasure refuses again.
	if _, err := app.Erase(ctx, alice, "DSR-2"); err != nil {
		t.Fatal(err)
	}
	if err := put(ctx, "d10", alice); !errors.Is(err, capture.ErrSubjectErased) {
		t.Errorf("capture after the second erasure: %v, want ErrSubjectErased", err)
	}
	if _, err := app.RecordConsent(ctx, alice, "support-desk"); err != nil {
		t.Fatal(err)
	}
	if err := put(ctx, "d10", alice); err != nil {
		t.Errorf("capture after App.RecordConsent: %v", err)
	}
}

func TestNothingComesBackSQLite(t *testing.T) { comeback(t, "") }

func TestNothingComesBackPostgres(t *testing.T) { comeback(t, pgtest.DB(t)) }

// An application host whose amnesia.yaml is no longer the installation's
// (another host ran `amnesia config publish` on the PostgreSQL ledger) is
// refused by App.Erase as `amnesia forget` is (state.ErrConfigMismatch),
// before anything is erased: the record is still there and no certificate
// is written.
func TestEraseRefusedAfterConfigPublish(t *testing.T) {
	ctx := context.Background()
	dir, app, docs := docsApp(t, pgtest.DB(t))
	if err := docs.Put(ctx, capture.Doc{ID: "d1", Kind: capture.KindDocument, Subject: alice, Text: "text of d1"}); err != nil {
		t.Fatal(err)
	}

	// Another host publishes a changed configuration.
	other, err := state.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg2 := *other.Config
	cfg2.LogOrigin = "amnesia.example/other-log"
	other.Config = &cfg2
	l, err := other.OpenLedger(ctx, state.LedgerConfigPublish)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := other.PublishConfig(ctx, l); err != nil {
		t.Fatal(err)
	}
	l.Close()

	_, err = app.Erase(ctx, alice, "DSR-1")
	if !errors.Is(err, state.ErrConfigMismatch) {
		t.Fatalf("Erase after another host's config publish: %v, want ErrConfigMismatch", err)
	}
	if strings.Contains(err.Error(), alice) {
		t.Errorf("the refusal names the subject: %v", err)
	}
	if got, err := docs.Get(ctx, "d1"); err != nil || got == nil {
		t.Errorf("the record is gone after a refused Erase: %v, %v", got, err)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "certificates")); len(ents) != 0 {
		t.Errorf("a refused Erase wrote %d certificate(s)", len(ents))
	}
}
