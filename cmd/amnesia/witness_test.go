package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/transparency"
)

// The witness end to end: demo → audit consistency → witness cosign →
// audit cosign → audit prove → verify --witnesses 1; the log grows and the
// witness cosigns again; a replayed older checkpoint and a log rewritten
// behind the witness's back (same key) are refused.
func TestWitnessEndToEnd(t *testing.T) {
	rep := demoReport(t)
	st := filepath.Join(rep["dir"].(string), "state")
	cert, pub := rep["certificate"].(string), rep["public_key"].(string)
	tmp := t.TempDir()
	wdir := filepath.Join(tmp, "witness")
	run := func(stdin string, want int, args ...string) (string, string) {
		t.Helper()
		out, errOut, code := runCLI(t, stdin, args...)
		if code != want {
			t.Fatalf("amnesia %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out, errOut)
		}
		return out, errOut
	}
	write := func(name, data string) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}

	// The witness and the keys each side publishes.
	run("", exitUsage, "witness", "init", "--name", "witness.test/w1")
	run("", exitUsage, "witness", "init", "--dir", wdir, "--name", "bad name")
	vkey, _ := run("", exitOK, "witness", "init", "--dir", wdir, "--name", "witness.test/w1")
	vkey = strings.TrimSpace(vkey)
	if k, _ := run("", exitOK, "witness", "key", "--dir", wdir); strings.TrimSpace(k) != vkey {
		t.Fatalf("witness key %q, init printed %q", k, vkey)
	}
	run("", exitError, "witness", "init", "--dir", wdir, "--name", "witness.test/w1")
	logKey, _ := run("", exitOK, "--state", st, "audit", "log-key")
	logKey = strings.TrimSpace(logKey)
	if _, err := note.NewVerifier(logKey); err != nil {
		t.Fatalf("audit log-key %q: %v", logKey, err)
	}
	logKeyFile := write("log.key", logKey+"\n")

	// First sight: accepted on trust.
	msg0, _ := run("", exitOK, "--state", st, "audit", "consistency", "--from", "0")
	cosigned0, errOut := run(msg0, exitOK, "witness", "cosign", "--dir", wdir, "--log-key", logKey)
	if !strings.Contains(errOut, "accepted on trust") {
		t.Errorf("first cosign does not say it trusted on first use: %q", errOut)
	}
	var m0 ConsistencyMessage
	json.Unmarshal([]byte(msg0), &m0)
	if !strings.HasPrefix(cosigned0, m0.Checkpoint) || strings.Count(cosigned0, "\n— ") != 2 {
		t.Fatalf("cosigned checkpoint:\n%s", cosigned0)
	}
	size0 := checkpointSize(t, cosigned0)

	// The certificate as issued has no cosignature: requiring one fails.
	run("", exitWitnesses, "verify", cert, "--public-key", pub, "--witness-key", vkey, "--witnesses", "1")
	// The operator checks the witness's line before storing it: under
	// another witness's key, or with one byte of it changed, it is refused
	// and nothing is stored.
	w3, _ := run("", exitOK, "witness", "init", "--dir", filepath.Join(tmp, "w3"), "--name", "witness.test/w3")
	cp0 := write("cosigned0.cp", cosigned0)
	_, errOut = run("", exitWitnesses, "--state", st, "audit", "cosign", "--witness-key", strings.TrimSpace(w3), cp0)
	if !strings.Contains(errOut, "witness.test/w1") || !strings.Contains(errOut, "nothing stored") {
		t.Errorf("audit cosign under another witness's key: %q", errOut)
	}
	i := strings.LastIndex(cosigned0, "— witness.test/w1 ") + len("— witness.test/w1 ") + 40
	flipped := []byte(cosigned0)
	flipped[i] ^= 0x01
	if flipped[i] == '\n' || flipped[i] == ' ' {
		flipped[i] = 'A'
	}
	run("", exitWitnesses, "--state", st, "audit", "cosign", "--witness-key", vkey, write("flipped.cp", string(flipped)))
	run("", exitUsage, "--state", st, "audit", "cosign", "--witness-key", "not+a+key", cp0)
	// A line under the log's own name but another key is a witness line
	// like any other: it must verify under a --witness-key too.
	origin, _, _ := strings.Cut(cosigned0, "\n")
	impSkey, _, err := note.GenerateKey(rand.Reader, origin)
	if err != nil {
		t.Fatal(err)
	}
	impSigner, err := note.NewSigner(impSkey)
	if err != nil {
		t.Fatal(err)
	}
	body, _, _ := strings.Cut(cosigned0, "\n\n")
	impSigned, err := note.Sign(&note.Note{Text: body + "\n"}, impSigner)
	if err != nil {
		t.Fatal(err)
	}
	impLine := strings.TrimSuffix(string(impSigned), "\n")
	impLine = impLine[strings.LastIndex(impLine, "\n")+1:]
	if !strings.HasPrefix(impLine, "— "+origin+" ") {
		t.Fatalf("impostor line %q", impLine)
	}
	_, errOut = run("", exitWitnesses, "--state", st, "audit", "cosign", "--witness-key", vkey, write("impostor.cp", cosigned0+impLine+"\n"))
	if !strings.Contains(errOut, "nothing stored") || !strings.Contains(errOut, "log's key") {
		t.Errorf("audit cosign with a line under the log's name and another key: %q", errOut)
	}
	if p, _ := run("", exitOK, "--state", st, "audit", "prove", cert); strings.Contains(p, "witness.test/w1") || strings.Contains(p, impLine[strings.LastIndex(impLine, " ")+1:]) {
		t.Fatal("a refused cosignature was stored")
	}
	// Stored in the log, then the certificate re-proved against it.
	out, errOut := run("", exitOK, "--state", st, "audit", "cosign", "--witness-key", vkey, cp0)
	if !strings.Contains(out, "1 other") || strings.Contains(errOut, "unchecked") {
		t.Errorf("audit cosign: %q %q", out, errOut)
	}
	if _, errOut := run("", exitOK, "--state", st, "audit", "cosign", cp0); !strings.Contains(errOut, "stored unchecked") {
		t.Errorf("audit cosign without --witness-key does not say the lines were not checked: %q", errOut)
	}
	proved := filepath.Join(tmp, "proved.dsse.json")
	run("", exitOK, "--state", st, "audit", "prove", cert, "--out", proved)
	out, _ = run("", exitOK, "verify", proved, "--public-key", pub, "--witness-key", vkey, "--witnesses", "1")
	if !strings.Contains(out, "VALID") || !strings.Contains(out, "witnesses: 1 cosigned (witness.test/w1)") {
		t.Errorf("verify of the re-proved certificate:\n%s", out)
	}
	vkeyFile := write("w1.vkey", vkey+"\n")
	run("", exitOK, "verify", proved, "--public-key", pub, "--witness-key", vkeyFile, "--witness-key", vkey, "--witnesses", "1")
	run("", exitOK, "verify", proved, "--public-key", pub) // the cosignature is not needed without --witness-key
	if stdout, _ := run("", exitOK, "--state", st, "audit", "prove", cert); !strings.Contains(stdout, "\\n— witness.test/w1 ") {
		t.Errorf("prove to stdout lacks the cosignature:\n%s", stdout)
	}
	// Another witness's key is not this one's cosignature.
	other, _ := run("", exitOK, "witness", "init", "--dir", filepath.Join(tmp, "w2"), "--name", "witness.test/w2")
	run("", exitWitnesses, "verify", proved, "--public-key", pub, "--witness-key", strings.TrimSpace(other), "--witnesses", "1")
	run("", exitWitnesses, "verify", proved, "--public-key", pub, "--witness-key", vkey, "--witness-key", strings.TrimSpace(other), "--witnesses", "2")

	// One byte of the cosignature line changed.
	data, _ := os.ReadFile(proved)
	b, err := certificate.DecodeBundle(data)
	if err != nil {
		t.Fatal(err)
	}
	edit := func(name string, pos int) string {
		t.Helper()
		lines := strings.Split(b.LogEntry.Checkpoint, "\n")
		i := len(lines) - 2 // the last line, before the final newline
		if !strings.HasPrefix(lines[i], "— witness.test/w1 ") {
			t.Fatalf("last line %q is not the cosignature", lines[i])
		}
		sig := []byte(lines[i])
		at := len("— witness.test/w1 ") + pos
		if sig[at] == 'A' {
			sig[at] = 'B'
		} else {
			sig[at] = 'A'
		}
		lines[i] = string(sig)
		c := *b
		le := *b.LogEntry
		le.Checkpoint = strings.Join(lines, "\n")
		c.LogEntry = &le
		enc, err := certificate.EncodeBundle(&c)
		if err != nil {
			t.Fatal(err)
		}
		return write(name, string(enc))
	}
	badSig := edit("badsig.json", 40)   // inside the Ed25519 signature
	badTime := edit("badtime.json", 12) // inside the timestamp
	badHash := edit("badhash.json", 1)  // inside the key hash: no longer the witness's line
	run("", exitCheckpoint, "verify", badSig, "--public-key", pub, "--witness-key", vkey, "--witnesses", "1")
	run("", exitCheckpoint, "verify", badTime, "--public-key", pub, "--witness-key", vkey, "--witnesses", "1")
	run("", exitWitnesses, "verify", badHash, "--public-key", pub, "--witness-key", vkey, "--witnesses", "1")
	run("", exitOK, "verify", badSig, "--public-key", pub) // an unknown key's line is not checked

	// More erasures: the log grows; the witness checks the proof and cosigns.
	const subject = "chiara.tanaka.102@example.org"
	run("yes\n", exitOK, "--state", st, "forget", subject, "--reason", "T-9")
	msg1, _ := run("", exitOK, "--state", st, "audit", "consistency", "--from", itoa(size0))
	cosigned1, errOut := run(msg1, exitOK, "witness", "cosign", "--dir", wdir, "--log-key", logKeyFile, "--in", write("msg1.json", msg1))
	size1 := checkpointSize(t, cosigned1)
	if size1 <= size0 || !strings.Contains(errOut, "extends the "+itoa(size0)+" cosigned before") {
		t.Fatalf("second cosign: %d leaves after %d; %q", size1, size0, errOut)
	}
	run("", exitError, "--state", st, "audit", "cosign", "-") // nothing on stdin
	run(cosigned1, exitOK, "--state", st, "audit", "cosign", "-")
	run("", exitOK, "--state", st, "audit", "verify") // the cosigned checkpoints still audit

	// Refusals, none of which moves the witness.
	_, errOut = run(msg0, exitLogTampered, "witness", "cosign", "--dir", wdir, "--log-key", logKey)
	if !strings.Contains(errOut, "smaller tree") {
		t.Errorf("replayed older checkpoint: %q", errOut)
	}
	_, errOut = run(msg1, exitError, "witness", "cosign", "--dir", wdir, "--log-key", logKey)
	if !strings.Contains(errOut, "--from "+itoa(size1)) {
		t.Errorf("a proof from the old size: %q", errOut)
	}
	run("{}", exitError, "witness", "cosign", "--dir", wdir, "--log-key", logKey)
	run(msg1, exitUsage, "witness", "cosign", "--dir", wdir, "--log-key", vkey[:10]+"+x")

	// The operator rewrites the log behind the witness: same key, same
	// origin, leaf 0 edited, as many leaves again and two more.
	rewriteLog(t, st, size1+2)
	// amnesia itself notices (ledger-state.json records the last checkpoint
	// it signed); the operator then removes that record and the
	// certificates too, and only the witness is left to notice.
	_, errOut = run("", exitLedgerLost, "--state", st, "audit", "consistency", "--from", itoa(size1))
	if !strings.Contains(errOut, "hash to another root") {
		t.Errorf("rewritten log, amnesia's own check: %q", errOut)
	}
	hideTracks(t, st)
	msg2, _ := run("", exitOK, "--state", st, "audit", "consistency", "--from", itoa(size1))
	_, errOut = run(msg2, exitLogTampered, "witness", "cosign", "--dir", wdir, "--log-key", logKey)
	if !strings.Contains(errOut, "not proven to extend") {
		t.Errorf("rewritten log: %q", errOut)
	}
	// And one of exactly the size the witness cosigned.
	rewriteLog(t, st, size1)
	run("", exitLedgerLost, "--state", st, "audit", "consistency", "--from", itoa(size1))
	hideTracks(t, st)
	msg3, _ := run("", exitOK, "--state", st, "audit", "consistency", "--from", itoa(size1))
	_, errOut = run(msg3, exitLogTampered, "witness", "cosign", "--dir", wdir, "--log-key", logKey)
	if !strings.Contains(errOut, "different tree") {
		t.Errorf("rewritten log of the same size: %q", errOut)
	}
	w, err := transparency.OpenWitness(wdir)
	if err != nil {
		t.Fatal(err)
	}
	var lk note.Verifier
	lk, _ = note.NewVerifier(logKey)
	if ws, err := w.State(lk.Name()); err != nil || ws.Size != size1 || ws.Checkpoint != cosigned1 {
		t.Errorf("the witness's state moved: %+v, %v", ws, err)
	}
}

// hideTracks removes what lets amnesia itself notice a rewritten log: the
// record of the last checkpoint it signed and the certificates.
func hideTracks(t *testing.T, st string) {
	t.Helper()
	if err := os.Remove(filepath.Join(st, "ledger-state.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(st, "certificates")); err != nil {
		t.Fatal(err)
	}
}

func checkpointSize(t *testing.T, signed string) int64 {
	t.Helper()
	body, _, _ := strings.Cut(signed, "\n\n")
	c, err := transparency.ParseCheckpoint([]byte(body + "\n"))
	if err != nil {
		t.Fatalf("%v\n%s", err, signed)
	}
	return c.Size
}

// rewriteLog replaces the log in the installation's ledger by one of size
// leaves whose first leaf is edited and the others kept (then made up),
// signed by the installation's key: an operator rewriting history after
// dropping the append-only triggers.
func rewriteLog(t *testing.T, st string, size int64) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(st, "ledger.db")
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	var leaves [][]byte
	rows, err := db.Query(`SELECT data FROM tlog_leaves ORDER BY idx`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var b []byte
		rows.Scan(&b)
		leaves = append(leaves, b)
	}
	rows.Close()
	for _, q := range []string{
		"DROP TRIGGER IF EXISTS tlog_leaves_append_only", "DROP TRIGGER IF EXISTS tlog_leaves_no_delete",
		"DROP TRIGGER IF EXISTS tlog_hashes_append_only", "DROP TRIGGER IF EXISTS tlog_hashes_no_delete",
		"DELETE FROM tlog_leaves", "DELETE FROM tlog_hashes", "DELETE FROM tlog_checkpoints",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(q, err)
		}
	}
	db.Close()
	dir, err := state.Open(st)
	if err != nil {
		t.Fatal(err)
	}
	l, err := sqliteledger.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	lg, err := transparency.Open(ctx, l, dir.Key, "")
	if err != nil {
		t.Fatal(err)
	}
	leaves[0] = []byte("amnesia/event/v1\nerasure-started\nrewritten\n" + strings.Repeat("0", 64) + "\n")
	for i := int64(0); i < size; i++ {
		leaf := []byte("amnesia/event/v1\nerasure-started\nmade-up-" + itoa(i) + "\n" + strings.Repeat("1", 64) + "\n")
		if i < int64(len(leaves)) {
			leaf = leaves[i]
		}
		if _, err := lg.Append(ctx, leaf); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := lg.Size(ctx); n != size {
		t.Fatalf("rewritten log has %d leaves, want %d", n, size)
	}
}
