package capture_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/shred"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
	"github.com/amnesia-dev/amnesia/subject"
)

func mustKeyOf(t *testing.T, sd *state.Dir, raw string) subject.Key {
	t.Helper()
	k, err := sd.Keyer.Key(sd.Config.Scope, raw)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Crypto-shredding end to end on embedded stores: content written with
// sealing on is ciphertext in the store's file and plaintext through
// capture; an erasure destroys the subject's data key, so that a backup of
// the store taken before the erasure holds ciphertext that no longer opens,
// while the other subject's sealed text still does. The certificate says
// the key was destroyed, measured physically on the SQLite ledger, and
// which artifacts were sealed.
func TestSealedContentIsShreddedWithItsKey(t *testing.T) {
	ctx := context.Background()
	stateDir := initConfig(t, store.Config{Name: "docs", Type: sqlitedoc.Type, Path: "docs.db"})
	app, err := capture.Open(ctx, stateDir, capture.WithSealing())
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	docs, err := app.Docs(ctx, "docs")
	if err != nil {
		t.Fatal(err)
	}
	secret := "Alice's prescription renewal is due on the fourth of June"
	for _, d := range []capture.Doc{
		{ID: "a1", Kind: capture.KindDocument, Subject: alice, Text: secret},
		{ID: "a1#0", Kind: capture.KindChunk, Parent: "a1", Text: secret[:30]},
		{ID: "b1", Kind: capture.KindDocument, Subject: bob, Text: "Bob asked for the invoice of March to be resent"},
	} {
		if err := docs.Put(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if r, err := docs.Get(ctx, "a1"); err != nil || r.Text != secret {
		t.Fatalf("read through capture: %+v, %v", r, err)
	}
	dbPath := filepath.Join(stateDir, "docs.db")
	raw := func(path string) []byte {
		var all []byte
		for _, f := range []string{path, path + "-wal"} {
			b, _ := os.ReadFile(f)
			all = append(all, b...)
		}
		return all
	}
	if b := raw(dbPath); bytes.Contains(b, []byte("prescription")) || bytes.Contains(b, []byte("invoice")) || !bytes.Contains(b, []byte(shred.Prefix)) {
		t.Logf("plain %v %v sealed %v, %d bytes", bytes.Contains(b, []byte("prescription")), bytes.Contains(b, []byte("invoice")), bytes.Contains(b, []byte(shred.Prefix)), len(b))
		t.Fatal("the store's files hold plaintext, or no sealed field")
	}
	// A backup taken before the erasure: the store as it is now.
	backup := filepath.Join(t.TempDir(), "backup.db")
	db, err := sql.Open("sqlite3", "file:"+dbPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`VACUUM INTO ?`, backup); err != nil {
		t.Fatal(err)
	}
	db.Close()

	er, err := app.Erase(ctx, alice, "DSR-21")
	if err != nil {
		t.Fatal(err)
	}
	st := er.Statement
	sh := st.Predicate.CryptoShredding
	if sh == nil || !sh.KeyDestroyed || sh.Level != certificate.LevelPhysical || sh.SealedArtifacts != 2 {
		j, _ := json.Marshal(sh)
		t.Fatalf("crypto_shredding = %s; want the key destroyed, physical, 2 sealed artifacts", j)
	}
	// Physical only with power: the scan found the key before its destruction.
	if !strings.Contains(sh.Evidence, "were in the ledger's files before the destruction, none after") {
		t.Errorf("crypto_shredding evidence does not show the scan's power: %q", sh.Evidence)
	}
	for _, a := range st.Predicate.Artifacts {
		if !a.Sealed || a.Outcome != certificate.Verified {
			t.Errorf("artifact %+v: want sealed and VERIFIED", a)
		}
	}

	// The backup's sealed fields: Alice's no longer open, Bob's do.
	sd, err := state.Open(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	l, err := lineage.Open(ctx, sd.LedgerSpec())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	w, err := shred.LoadOrCreateLocal(sd.MasterKeyPath())
	if err != nil {
		t.Fatal(err)
	}
	keys := shred.NewKeys(l.(lineage.KeyKeeper), w)
	bk, err := sql.Open("sqlite3", "file:"+backup+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer bk.Close()
	rows, err := bk.Query(`SELECT id, subject, text FROM documents`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id, tag, text string
		if err := rows.Scan(&id, &tag, &text); err != nil {
			t.Fatal(err)
		}
		s := mustKeyOf(t, sd, alice)
		tk, err := subject.ParseKey(tag)
		if err != nil {
			t.Fatal(err)
		}
		_, err = keys.Open(ctx, sd.Config.Scope, tk, shred.FieldAAD("docs", id, "text"), text)
		switch {
		case tag == s.String() && !errors.Is(err, shred.ErrDestroyed):
			t.Errorf("backup row %s of the erased subject: %v, want ErrDestroyed", id, err)
		case tag != s.String() && err != nil:
			t.Errorf("backup row %s of another subject does not open: %v", id, err)
		}
		n++
	}
	if n != 3 {
		t.Fatalf("backup rows: %d", n)
	}
	// And capture refuses to seal anew for the erased subject's key.
	if _, err := keys.Seal(ctx, sd.Config.Scope, mustKeyOf(t, sd, alice), shred.FieldAAD("docs", "a9", "text"), []byte("x")); !errors.Is(err, shred.ErrDestroyed) {
		t.Errorf("sealing for the erased subject: %v, want ErrDestroyed", err)
	}
	if strings.Contains(string(raw(sd.LedgerSpec())), "prescription") {
		t.Error("the ledger holds plaintext")
	}
}
