package state

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLedgerSpec(t *testing.T) {
	t.Setenv("AMNESIA_TEST_LEDGER_DSN", "postgres://amnesia:secret@db.internal/amnesia")
	for _, tc := range []struct{ ledger, want string }{
		{"", "<state>/ledger.db"},
		{"ledger: shared/ledger.db\n", "<state>/shared/ledger.db"},
		{"ledger: /srv/amnesia/ledger.db\n", "/srv/amnesia/ledger.db"},
		{"ledger: postgresql://db.internal/amnesia?sslmode=require\n", "postgresql://db.internal/amnesia?sslmode=require"},
		{"ledger: $AMNESIA_TEST_LEDGER_DSN\n", "postgres://amnesia:secret@db.internal/amnesia"},
	} {
		dir := t.TempDir()
		p := filepath.Join(dir, "amnesia.yaml")
		os.WriteFile(p, []byte("version: 1\n"+tc.ledger), 0o600)
		c, err := LoadConfig(p)
		if err != nil {
			t.Fatalf("%q: %v", tc.ledger, err)
		}
		d := &Dir{Path: dir, Config: c}
		if got, want := d.LedgerSpec(), strings.Replace(tc.want, "<state>", dir, 1); got != want {
			t.Errorf("%q: LedgerSpec = %s, want %s", tc.ledger, got, want)
		}
	}
	p := filepath.Join(t.TempDir(), "amnesia.yaml")
	os.WriteFile(p, []byte("version: 1\nledger: postgres:db.internal\n"), 0o600)
	if _, err := LoadConfig(p); err == nil || !strings.Contains(err.Error(), "URL") {
		t.Errorf("ledger postgres:db.internal = %v, want a URL error", err)
	}
	if b, _ := DefaultConfig().Marshal(); strings.Contains(string(b), "ledger") {
		t.Errorf("the default config names a ledger:\n%s", b)
	}
}
