package main

import (
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// audit checkpoint / verify / verify --since on the demo's log, then the
// same after an operator rewrote the ledger behind amnesia's back.
func TestAuditCommands(t *testing.T) {
	rep := demoReport(t)
	st := filepath.Join(rep["dir"].(string), "state")
	cp, errOut, code := runCLI(t, "", "--state", st, "audit", "checkpoint")
	if code != exitOK || !strings.Contains(cp, "\n\n— ") {
		t.Fatalf("audit checkpoint: exit %d, %q %s", code, cp, errOut)
	}
	saved := filepath.Join(t.TempDir(), "saved.cp")
	os.WriteFile(saved, []byte(cp), 0o600)
	out, errOut, code := runCLI(t, "", "--state", st, "audit", "verify", "--since", saved)
	if code != exitOK || !strings.Contains(out, "OK log") || !strings.Contains(out, "amnesia/certificate/v1") || !strings.Contains(out, "consistent with the saved checkpoint") {
		t.Fatalf("audit verify --since: exit %d\n%s%s", code, out, errOut)
	}
	var msg ConsistencyMessage
	out, _, code = runCLI(t, "", "--state", st, "audit", "consistency", "--from", "1")
	if code != exitOK || json.Unmarshal([]byte(out), &msg) != nil || msg.From != 1 || msg.Checkpoint != cp {
		t.Fatalf("audit consistency: exit %d %q", code, out)
	}
	if _, _, code := runCLI(t, "", "--state", st, "audit", "consistency", "--from", "99"); code != exitUsage {
		t.Errorf("consistency from beyond the log: exit %d", code)
	}
	// Garbage as the saved checkpoint.
	junk := filepath.Join(t.TempDir(), "junk.cp")
	os.WriteFile(junk, []byte("not a checkpoint"), 0o600)
	if _, _, code := runCLI(t, "", "--state", st, "audit", "verify", "--since", junk); code == exitOK {
		t.Errorf("audit verify --since garbage: exit 0")
	}

	// The operator drops the append-only triggers and the last leaf.
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(st, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int64
	db.QueryRow(`SELECT count(*) FROM tlog_leaves`).Scan(&n)
	for _, q := range []string{
		"DROP TRIGGER tlog_leaves_no_delete", "DROP TRIGGER tlog_hashes_no_delete",
		"DELETE FROM tlog_leaves WHERE idx = " + itoa(n-1),
		"DELETE FROM tlog_checkpoints",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(q, err)
		}
	}
	out, errOut, code = runCLI(t, "", "--state", st, "audit", "verify", "--since", saved)
	if code != exitLogTampered || strings.Contains(out, "OK") || !strings.Contains(errOut, "truncated") {
		t.Errorf("after dropping the last leaf: exit %d, %q %q", code, out, errOut)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
