package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// backupSQLite copies a closed SQLite store's files to dir.
func backupSQLite(t *testing.T, path, dir string) {
	t.Helper()
	for _, suf := range []string{"", "-wal"} {
		if _, err := os.Stat(path + suf); err == nil {
			copyFile(t, path+suf, filepath.Join(dir, filepath.Base(path)+suf))
		}
	}
}

// restoreSQLite puts the backup of path back, as a restore from backup does.
func restoreSQLite(t *testing.T, path, dir string) {
	t.Helper()
	for _, suf := range []string{"-wal", "-shm", "-journal"} {
		os.Remove(path + suf)
	}
	for _, suf := range []string{"", "-wal"} {
		if _, err := os.Stat(filepath.Join(dir, filepath.Base(path)+suf)); err == nil {
			copyFile(t, filepath.Join(dir, filepath.Base(path)+suf), path+suf)
		}
	}
}

// predicateCounts returns the counts of the certificate at path.
func predicateCounts(t *testing.T, path string) map[string]any {
	t.Helper()
	return predicateOf(t, certificatePayload(t, path))["counts"].(map[string]any)
}

// TestReverifyDueAndReplayAfterRestore: the store files are backed up,
// Alice is erased, and:
//   - reverify --due without an interval is a usage error; with reverify.every
//     7d in amnesia.yaml nothing is due yet;
//   - nothing came back: --due re-verifies, VERIFIED(logical), exit 0;
//   - the files are restored from the backup: --due catches it (ALERT, log
//     line, RESIDUAL certificate linked to the erasure's, exit 7);
//   - replay --since the backup's time deletes them again and certifies it
//     (measurement.deleted, linked to the erasure's certificate); --due is
//     clean again.
func TestReverifyDueAndReplayAfterRestore(t *testing.T) {
	f := buildE2EFixture(t, t.TempDir(), reverifyDocs())
	st := f.state()
	pub := filepath.Join(st, "signing-key.pub.pem")
	backup := t.TempDir()
	backupSQLite(t, f.docsDB(), backup)
	backupSQLite(t, f.vecsDB(), backup)
	backupAt := time.Now().UTC().Add(-time.Second).Format(time.RFC3339)
	if r := runBinary(t, nil, "", "--state", st, "forget", "alice@example.org", "--reason", "DSR-9", "--yes"); r.code != exitOK {
		t.Fatalf("forget:\n%s", r)
	}
	orig, payload := singleCertificate(t, st)
	origID := predicateOf(t, payload)["certificate_id"]

	if r := runBinary(t, nil, "", "--state", st, "reverify", "--due"); r.code != exitUsage || !strings.Contains(r.stderr, "reverify.every") {
		t.Fatalf("reverify --due without an interval: want exit %d naming reverify.every:\n%s", exitUsage, r)
	}
	cfgPath := filepath.Join(st, "amnesia.yaml")
	cfg, _ := os.ReadFile(cfgPath)
	if err := os.WriteFile(cfgPath, append(cfg, []byte("reverify:\n  every: 7d\n")...), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runBinary(t, nil, "", "--state", st, "reverify", "--due"); r.code != exitOK || !strings.Contains(r.stdout, "0 erasure certificates due (every 168h0m0s), 1 not yet due") {
		t.Fatalf("reverify --due with every 7d right after the erasure:\n%s", r)
	}
	if got := certFiles(t, st); len(got) != 1 {
		t.Fatalf("a --due run with nothing due wrote certificates: %v", got)
	}

	// Nothing came back.
	time.Sleep(1100 * time.Millisecond)
	r := runBinary(t, nil, "", "--state", st, "reverify", "--due", "--every", "1s")
	if r.code != exitOK || !strings.Contains(r.stdout, "1 erasure certificates due") || strings.Contains(r.stdout, "ALERT") {
		t.Fatalf("reverify --due, nothing came back:\n%s", r)
	}
	made := newCertificates(t, st, []string{orig})
	if len(made) != 1 {
		t.Fatalf("reverify --due wrote %v", made)
	}
	p := predicateOf(t, certificatePayload(t, made[0]))
	if c := p["counts"].(map[string]any); c["verified_logical"] != c["artifacts"] || c["verified_physical"] != 0.0 || p["complete"] != true {
		t.Fatalf("re-verification when nothing came back: %v", c)
	}
	// Just checked: not due again.
	if r := runBinary(t, nil, "", "--state", st, "reverify", "--due", "--every", "1h"); r.code != exitOK || !strings.Contains(r.stdout, "0 erasure certificates due") {
		t.Fatalf("reverify --due right after a check:\n%s", r)
	}

	// Restore the stores' files from the backup taken before the erasure.
	restoreSQLite(t, f.docsDB(), backup)
	restoreSQLite(t, f.vecsDB(), backup)
	time.Sleep(1100 * time.Millisecond)
	before := certFiles(t, st)
	r = runBinary(t, nil, "", "--state", st, "reverify", "--due", "--every", "1s")
	if r.code != exitIncomplete || !strings.Contains(r.stdout, "ALERT: erased data reappeared") {
		t.Fatalf("reverify --due after a restore: want exit %d and an ALERT:\n%s", exitIncomplete, r)
	}
	made = newCertificates(t, st, before)
	if len(made) != 1 {
		t.Fatalf("reverify --due after a restore wrote %v", made)
	}
	p = predicateOf(t, certificatePayload(t, made[0]))
	link, _ := p["reverifies"].(map[string]any)
	if c := p["counts"].(map[string]any); c["residual"] != c["artifacts"] || p["complete"] != false || link["certificate_id"] != origID {
		t.Fatalf("after a restore: counts %v complete %v reverifies %v", c, p["complete"], link)
	}
	if v := runBinary(t, nil, "", "verify", made[0], "--public-key", pub); v.code != exitIncomplete && v.code != exitOK {
		t.Fatalf("verify of the RESIDUAL certificate:\n%s", v)
	}
	logb, _ := os.ReadFile(filepath.Join(st, "amnesia.log"))
	if !strings.Contains(string(logb), `"msg":"erased data reappeared"`) {
		t.Errorf("no alert in amnesia.log")
	}

	// Replay the erasures since the backup.
	if r := runBinary(t, nil, "", "--state", st, "replay"); r.code != exitUsage {
		t.Fatalf("replay without --since:\n%s", r)
	}
	before = certFiles(t, st)
	r = runBinary(t, nil, "", "--state", st, "replay", "--since", backupAt)
	if r.code != exitOK || !strings.Contains(r.stdout, "1 erasure certificates issued since") {
		t.Fatalf("replay:\n%s", r)
	}
	made = newCertificates(t, st, before)
	if len(made) != 1 || !strings.HasPrefix(filepath.Base(made[0]), "rp-") {
		t.Fatalf("replay wrote %v", made)
	}
	if v := runBinary(t, nil, "", "verify", made[0], "--public-key", pub); v.code != exitOK {
		t.Fatalf("verify of the replay certificate:\n%s", v)
	}
	p = predicateOf(t, certificatePayload(t, made[0]))
	link, _ = p["reverifies"].(map[string]any)
	if c := p["counts"].(map[string]any); c["verified_logical"] != c["artifacts"] || p["complete"] != true || link["certificate_id"] != origID {
		t.Fatalf("replay certificate: counts %v complete %v reverifies %v", c, p["complete"], link)
	}
	for _, a := range p["artifacts"].([]any) {
		a := a.(map[string]any)
		m, _ := a["measurement"].(map[string]any)
		if a["method"] != "replay: delete by id, then lookup by id" || m["deleted"] != true || a["level"] != "logical" {
			t.Errorf("replayed artifact %v: method %v level %v measurement %v", a["id"], a["method"], a["level"], m)
		}
	}
	if r := runBinary(t, nil, "", "--state", st, "replay", "--since", time.Now().UTC().Add(time.Hour).Format(time.RFC3339)); r.code != exitOK || !strings.Contains(r.stdout, "0 erasure certificates issued since") {
		t.Fatalf("replay since a later time:\n%s", r)
	}
	time.Sleep(1100 * time.Millisecond)
	if r := runBinary(t, nil, "", "--state", st, "reverify", "--due", "--every", "1s"); r.code != exitOK || strings.Contains(r.stdout, "ALERT") {
		t.Fatalf("reverify --due after the replay:\n%s", r)
	}
}

// TestConsentCLI: trace shows the refusal after an erasure; consent records
// new consent (keyed subject, time, by) and trace shows it.
func TestConsentCLI(t *testing.T) {
	f := buildE2EFixture(t, t.TempDir(), reverifyDocs())
	st := f.state()
	if r := runBinary(t, nil, "", "--state", st, "forget", "alice@example.org", "--reason", "DSR-10", "--yes"); r.code != exitOK {
		t.Fatalf("forget:\n%s", r)
	}
	r := runBinary(t, nil, "", "--state", st, "trace", "alice@example.org")
	if r.code != exitErased || !strings.Contains(r.stderr, "capture of this subject is refused since erasure") {
		t.Fatalf("trace after the erasure:\n%s", r)
	}
	if r := runBinary(t, nil, "", "--state", st, "consent", "alice@example.org"); r.code != exitUsage {
		t.Fatalf("consent without --by:\n%s", r)
	}
	if r := runBinary(t, nil, "", "--state", st, "consent", "alice@example.org", "--by", "alice@example.org"); r.code != exitUsage {
		t.Fatalf("consent --by holding the subject:\n%s", r)
	}
	r = runBinary(t, nil, "alice@example.org\n", "--state", st, "consent", "-", "--by", "signup-form")
	if r.code != exitOK || !strings.Contains(r.stdout, `by "signup-form"`) || strings.Contains(r.stdout, "alice@") {
		t.Fatalf("consent:\n%s", r)
	}
	r = runBinary(t, nil, "", "--state", st, "trace", "alice@example.org")
	if !strings.Contains(r.stderr, `new consent recorded`) || !strings.Contains(r.stderr, "capture of this subject is accepted") {
		t.Fatalf("trace after the consent:\n%s", r)
	}
}
