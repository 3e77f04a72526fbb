package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store/file"
)

// A conversation log that held Alice's turns before amnesia was installed:
// scan counts them as without lineage, reconcile finds them through the
// "email" field (a column, or a member of a metadata object), asks, and
// adopts them; forget then erases them with the captured one, and the
// certificate marks the adopted ones "via": "reconcile". Bob's and the
// unattributed turns stay. The subject's id is never printed.
func TestReconcileAdoptsWhatLineageNeverSaw(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	log := filepath.Join(root, "log.jsonl")
	old := `{"id":"c1","email":"alice@example.org","text":"Alice asked to move the dentist appointment to Thursday afternoon."}
{"id":"c2","meta":{"email":"alice@example.org"},"text":"Alice wants a reminder about the insurance card expiring next spring."}
{"id":"c3","email":"bob@example.org","text":"Bob reported that the parcel arrived damaged at the office."}
{"id":"c4","text":"An anonymous visitor asked about the opening hours of the shop."}
`
	if err := os.WriteFile(log, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := state.DefaultConfig()
	cfg.Stores = []state.StoreConfig{{Name: "log", Type: file.Type, Path: "../log.jsonl", Key: "id", Subject: "subject", Content: []string{"text"}}}
	sd, err := state.Init(filepath.Join(root, "state"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ledger, err := lineage.Open(ctx, sd.LedgerSpec())
	if err != nil {
		t.Fatal(err)
	}
	fs, err := file.Open(ctx, file.Options{Name: "log", Path: log, Key: "id", Subject: "subject", Content: []string{"text"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	// One turn captured after installation.
	rec := capture.New(ledger, sd.Keyer, sd.Config.Scope)
	if err := rec.Docs(fs).Put(ctx, capture.Doc{ID: "c5", Kind: capture.KindChat, Subject: "alice@example.org", Text: "Alice confirmed the new appointment time by phone this morning."}); err != nil {
		t.Fatal(err)
	}
	ledger.Close()

	st := sd.Path
	out, errOut, code := runCLI(t, "", "--state", st, "scan", "--field", "email")
	if code != exitOK || !strings.Contains(out, "lineage:      1 with lineage, 4 without") || !strings.Contains(out, `attributable: 3 through "email"`) {
		t.Fatalf("scan: exit %d\n%s%s", code, out, errOut)
	}
	// No confirmation: nothing adopted.
	out, errOut, code = runCLI(t, "", "--state", st, "reconcile", "alice@example.org", "--field", "email")
	if code != exitAborted || !strings.Contains(out, "log: 2 (c1, c2)") {
		t.Fatalf("reconcile without yes: exit %d\n%s%s", code, out, errOut)
	}
	out, _, _ = runCLI(t, "", "--state", st, "trace", "alice@example.org")
	if !strings.Contains(out, "1 artifacts to erase") {
		t.Fatalf("an aborted reconcile adopted records:\n%s", out)
	}
	out, errOut, code = runCLI(t, "alice@example.org\nyes\n", "--state", st, "reconcile", "-", "--field", "email")
	if code != exitOK || !strings.Contains(out, "adopted 2 records") {
		t.Fatalf("reconcile: exit %d\n%s%s", code, out, errOut)
	}
	out, _, code = runCLI(t, "", "--state", st, "reconcile", "alice@example.org", "--field", "email")
	if code != exitOK || !strings.Contains(out, "no record outside the lineage") {
		t.Fatalf("a second reconcile: exit %d\n%s", code, out)
	}
	for _, o := range []string{out} {
		if strings.Contains(o, "alice@example.org") {
			t.Errorf("reconcile printed the subject's id:\n%s", o)
		}
	}

	out, errOut, code = runCLI(t, "yes\n", "--state", st, "forget", "alice@example.org", "--reason", "DSR-11")
	if code != exitOK {
		t.Fatalf("forget: exit %d\n%s%s", code, out, errOut)
	}
	b, _ := os.ReadFile(log)
	for _, gone := range []string{"dentist", "insurance", "phone this morning"} {
		if strings.Contains(string(b), gone) {
			t.Errorf("%q left in the log:\n%s", gone, b)
		}
	}
	if !strings.Contains(string(b), "parcel") || !strings.Contains(string(b), "opening hours") {
		t.Errorf("other rows lost:\n%s", b)
	}
	_, payload := singleCertificate(t, st)
	arts, _ := json.Marshal(predicateOf(t, payload)["artifacts"])
	var as []map[string]any
	json.Unmarshal(arts, &as)
	via := 0
	for _, a := range as {
		if a["outcome"] != "VERIFIED" {
			t.Errorf("artifact %v", a)
		}
		if a["via"] == "reconcile" {
			via++
		}
	}
	if len(as) != 3 || via != 2 {
		t.Errorf("certificate artifacts %s: want 3, 2 of them via reconcile", arts)
	}
}
