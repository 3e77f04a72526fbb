package main

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
)

// sqliteBackup copies the SQLite database at src to dst with VACUUM INTO,
// as docs/ledger.md says to back the ledger up.
func sqliteBackup(t *testing.T, src, dst string) {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+src+"?mode=rw")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`VACUUM INTO ?`, dst); err != nil {
		t.Fatal(err)
	}
}

func removeLedgerFiles(t *testing.T, st string) {
	t.Helper()
	for _, s := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(filepath.Join(st, "ledger.db"+s)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A ledger lost or replaced after an erasure is refused by every command,
// with a message that says what was found and how to restore, and nothing
// is created in its place; a restored backup is accepted.
func TestLostLedgerIsRefused(t *testing.T) {
	pristine := buildE2EFixture(t, t.TempDir(), crashCorpus())
	// A backup taken before the erasure: older than the last checkpoint.
	older := filepath.Join(t.TempDir(), "older.db")
	sqliteBackup(t, filepath.Join(pristine.state(), "ledger.db"), older)
	if res := runBinary(t, nil, "", forgetArgs(pristine)...); res.code != 0 {
		t.Fatalf("forget: %s", res)
	}
	ls, err := os.ReadFile(filepath.Join(pristine.state(), "ledger-state.json"))
	if err != nil {
		t.Fatalf("no ledger-state.json after an erasure: %v", err)
	}
	var rec state.LedgerState
	if err := json.Unmarshal(ls, &rec); err != nil || rec.Size < 2 || rec.Ledger != "sqlite" || rec.RootHash == "" || rec.Origin == "" {
		t.Fatalf("ledger-state.json = %s (%v)", ls, err)
	}
	if strings.Contains(string(ls), crashTarget) {
		t.Fatalf("ledger-state.json holds the raw subject id")
	}
	// A backup taken after the erasure, as docs/ledger.md says.
	current := filepath.Join(t.TempDir(), "current.db")
	sqliteBackup(t, filepath.Join(pristine.state(), "ledger.db"), current)
	saved := runBinary(t, nil, "", "--state", pristine.state(), "audit", "checkpoint")
	if saved.code != 0 {
		t.Fatalf("audit checkpoint: %s", saved)
	}
	savedCP := filepath.Join(t.TempDir(), "saved.cp")
	if err := os.WriteFile(savedCP, []byte(saved.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	cert := certFiles(t, pristine.state())[0]

	commands := func(f e2eFixture) [][]string {
		return [][]string{
			{"--state", f.state(), "trace", crashSubjects[1].id},
			{"--state", f.state(), "forget", crashSubjects[1].id, "--reason", "T-2", "--yes"},
			{"--state", f.state(), "audit", "checkpoint"},
			{"--state", f.state(), "audit", "verify"},
			{"--state", f.state(), "reverify", cert},
			{"--state", f.state(), "worker", "--once"},
		}
	}
	refused := func(t *testing.T, f e2eFixture, want string) {
		t.Helper()
		for _, args := range commands(f) {
			res := runBinary(t, nil, "", args...)
			if res.code != exitLedgerLost || !strings.Contains(res.stderr, want) ||
				!strings.Contains(res.stderr, "Backing up and restoring the ledger") || !strings.Contains(res.stderr, "audit verify --since") {
				t.Errorf("want exit %d and %q:\n%s", exitLedgerLost, want, res)
			}
		}
		if es, _ := filepath.Glob(filepath.Join(f.state(), "erasures", "*")); len(es) != 1 {
			t.Errorf("erasures after the refusals: %v, want only the first erasure's", es)
		}
	}

	t.Run("deleted", func(t *testing.T) {
		f := copyE2EFixture(t, pristine)
		removeLedgerFiles(t, f.state())
		refused(t, f, "ledger.db does not exist")
		if _, err := os.Stat(filepath.Join(f.state(), "ledger.db")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("a ledger was created in place of the lost one: %v", err)
		}
	})
	t.Run("empty-file", func(t *testing.T) {
		f := copyE2EFixture(t, pristine)
		removeLedgerFiles(t, f.state())
		if err := os.WriteFile(filepath.Join(f.state(), "ledger.db"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		refused(t, f, "ledger.db is empty")
		if fi, err := os.Stat(filepath.Join(f.state(), "ledger.db")); err != nil || fi.Size() != 0 {
			t.Errorf("the empty ledger was written to: %v", err)
		}
	})
	t.Run("new-empty-ledger", func(t *testing.T) {
		f := copyE2EFixture(t, pristine)
		removeLedgerFiles(t, f.state())
		l, err := sqliteledger.Open(context.Background(), filepath.Join(f.state(), "ledger.db"))
		if err != nil {
			t.Fatal(err)
		}
		l.Close()
		refused(t, f, "holds 0 leaves")
	})
	t.Run("older-backup", func(t *testing.T) {
		f := copyE2EFixture(t, pristine)
		removeLedgerFiles(t, f.state())
		copyFile(t, older, filepath.Join(f.state(), "ledger.db"))
		refused(t, f, "the last checkpoint signed (ledger-state.json) covers "+strconv.FormatInt(rec.Size, 10))
	})
	t.Run("no-record-but-certificates", func(t *testing.T) {
		// An installation from before ledger-state.json: the certificates
		// show a ledger existed.
		f := copyE2EFixture(t, pristine)
		removeLedgerFiles(t, f.state())
		os.Remove(filepath.Join(f.state(), "ledger-state.json"))
		refused(t, f, "certificates/ holds 1 certificate(s)")
		copyFile(t, older, filepath.Join(f.state(), "ledger.db"))
		refused(t, f, "a certificate in certificates/ was logged in a tree of")
	})
	t.Run("restored", func(t *testing.T) {
		f := copyE2EFixture(t, pristine)
		removeLedgerFiles(t, f.state())
		copyFile(t, current, filepath.Join(f.state(), "ledger.db"))
		if res := runBinary(t, nil, "", "--state", f.state(), "trace", crashTarget); res.code != exitErased {
			t.Errorf("trace after restoring: %s", res)
		}
		if res := runBinary(t, nil, "", "--state", f.state(), "audit", "verify", "--since", savedCP); res.code != 0 || !strings.Contains(res.stdout, "consistent with the saved checkpoint") {
			t.Errorf("audit verify --since after restoring: %s", res)
		}
		if res := runBinary(t, nil, "", "--state", f.state(), "forget", crashSubjects[1].id, "--reason", "T-2", "--yes"); res.code != 0 {
			t.Errorf("forget after restoring: %s", res)
		}
	})
}

// Without a ledger and without any sign of one, read-only commands say
// there is nothing recorded and create nothing; init creates the ledger.
func TestNoLedgerYetIsNotCreated(t *testing.T) {
	st := filepath.Join(t.TempDir(), "state")
	if _, err := state.Init(st, nil); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--state", st, "trace", "someone@example.org"},
		{"--state", st, "audit", "checkpoint"},
	} {
		res := runBinary(t, nil, "", args...)
		if res.code != exitNoLineage || !strings.Contains(res.stderr, "no ledger yet") {
			t.Errorf("want exit %d, no ledger yet:\n%s", exitNoLineage, res)
		}
	}
	if _, err := os.Stat(filepath.Join(st, "ledger.db")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a read-only command created the ledger: %v", err)
	}
	// A fresh init creates the ledger and records its (empty) state.
	st2 := filepath.Join(t.TempDir(), "state")
	if res := runBinary(t, nil, "", "--state", st2, "init"); res.code != 0 {
		t.Fatalf("init: %s", res)
	}
	for _, name := range []string{"ledger.db", "ledger-state.json"} {
		if _, err := os.Stat(filepath.Join(st2, name)); err != nil {
			t.Errorf("after init: %v", err)
		}
	}
	if res := runBinary(t, nil, "", "--state", st2, "trace", "someone@example.org"); res.code != exitNoLineage || strings.Contains(res.stderr, "no ledger yet") {
		t.Errorf("trace after init: %s", res)
	}
	// Then losing it right away is noticed too.
	removeLedgerFiles(t, st2)
	if res := runBinary(t, nil, "", "--state", st2, "trace", "someone@example.org"); res.code != exitLedgerLost {
		t.Errorf("trace after the new ledger was deleted: %s", res)
	}
}

// erasureLockPath is where forget's erasure lock on the subject lives
// (SQLite ledger).
func erasureLockPath(t *testing.T, st, id string) string {
	t.Helper()
	sd, err := state.Open(st)
	if err != nil {
		t.Fatal(err)
	}
	k, err := sd.Keyer.Key(sd.Config.Scope, id)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("amnesia.erasure-lock/v1\x00" + sd.Config.Scope + "\x00" + k.String()))
	return filepath.Join(st, "locks", "erasure-"+hex.EncodeToString(sum[:])+".lock")
}

// While another process holds the subject's erasure lock, forget refuses at
// once with exit 21 and does nothing; a holder that was killed leaves no
// lock behind.
func TestForgetRefusesWhileAnotherErasureRuns(t *testing.T) {
	f := buildE2EFixture(t, t.TempDir(), crashCorpus())
	// A forget killed mid-run: its lock dies with it.
	res := runBinary(t, []string{"AMNESIA_CRASH_AFTER_JOURNAL=4"}, "", forgetArgs(f)...)
	if !res.signaled || res.signal != syscall.SIGKILL {
		t.Fatalf("forget with the crash hook did not die by SIGKILL:\n%s", res)
	}
	lock := erasureLockPath(t, f.state(), crashTarget)
	b, err := os.ReadFile(lock)
	if err != nil || !strings.HasPrefix(string(b), "pid=") || strings.Contains(string(b), crashTarget) {
		t.Fatalf("lock file %q (%v)", b, err)
	}
	// Another process (this test) holds the lock, as a running forget would.
	lf, err := os.OpenFile(lock, os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatalf("the killed forget's lock is still held: %v", err)
	}
	lf.Truncate(0)
	lf.WriteAt(fmt.Appendf(nil, "pid=%d host=test\n", os.Getpid()), 0)
	jpath := filepath.Join(erasureDirs(t, f.state())[0], "journal.jsonl")
	before, _ := os.ReadFile(jpath)
	res = runBinary(t, nil, "", forgetArgs(f)...)
	if res.code != exitBusy || !strings.Contains(res.stderr, "another erasure of hmac:") ||
		!strings.Contains(res.stderr, fmt.Sprintf("pid=%d host=test", os.Getpid())) || !strings.Contains(res.stderr, "wait for it") {
		t.Errorf("forget while the lock is held: want exit %d:\n%s", exitBusy, res)
	}
	if after, _ := os.ReadFile(jpath); string(after) != string(before) {
		t.Errorf("the refused forget wrote to the journal")
	}
	lf.Close()
	// Released: the erasure resumes to its certificate, one journal chain.
	if res := runBinary(t, nil, "", forgetArgs(f)...); res.code != 0 {
		t.Fatalf("forget after the lock was released: %s", res)
	}
	readJournalFile(t, jpath)
	if certs := certFiles(t, f.state()); len(certs) != 1 {
		t.Errorf("certificates: %v", certs)
	}
}
