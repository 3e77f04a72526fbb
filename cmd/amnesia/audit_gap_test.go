package main

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
)

// A leaf deleted from the middle of the log (the operator dropped the
// append-only trigger) is tampering, exit 18, like a dropped tail: not a
// plain error.
func TestAuditMiddleLeafDeleted(t *testing.T) {
	rep := demoReport(t)
	st := filepath.Join(rep["dir"].(string), "state")
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(st, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{"DROP TRIGGER tlog_leaves_no_delete", "DELETE FROM tlog_leaves WHERE idx = 0"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(q, err)
		}
	}
	out, errOut, code := runCLI(t, "", "--state", st, "audit", "verify")
	if code != exitLogTampered || strings.Contains(out, "OK") {
		t.Errorf("after deleting leaf 0: exit %d, want %d: %q %q", code, exitLogTampered, out, errOut)
	}
}
