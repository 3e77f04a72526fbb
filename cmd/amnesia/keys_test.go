package main

import (
	"crypto/ed25519"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/transparency"
)

// listKeys runs `keys list --json`.
func listKeys(t *testing.T, st string) []keyJSON {
	t.Helper()
	out, errOut, code := runCLI(t, "", "--state", st, "keys", "list", "--json")
	if code != exitOK {
		t.Fatalf("keys list: exit %d: %s", code, errOut)
	}
	var ks []keyJSON
	if err := json.Unmarshal([]byte(out), &ks); err != nil {
		t.Fatalf("keys list --json: %v\n%s", err, out)
	}
	return ks
}

// Rotation end to end: certificates of the earlier key and of the new key
// verify with the exported trust file; retiring the earlier key from before
// its certificate's issued_at rejects that certificate (exit 17), from
// after accepts it; the transparency log, with checkpoints signed by both
// keys, still audits.
func TestKeyRotation(t *testing.T) {
	rep := demoReport(t)
	st := filepath.Join(rep["dir"].(string), "state")
	cert1 := rep["certificate"].(string)
	tmp := t.TempDir()
	// The demo's public key file is the state's signing-key.pub.pem, which
	// a rotation replaces: keep a copy of the earlier key.
	oldPEM, err := os.ReadFile(rep["public_key"].(string))
	if err != nil {
		t.Fatal(err)
	}
	oldPubFile := filepath.Join(tmp, "old.pub.pem")
	os.WriteFile(oldPubFile, oldPEM, 0o600)
	oldPub, err := certificate.ParsePublicKeyPEM(oldPEM)
	if err != nil {
		t.Fatal(err)
	}
	oldID := certificate.KeyID(oldPub)

	ks := listKeys(t, st)
	if len(ks) != 1 || ks[0].KeyID != oldID || !ks[0].Current || ks[0].Created == "" || ks[0].Retired != "" {
		t.Fatalf("keyring before rotation: %+v", ks)
	}
	if _, errOut, code := runCLI(t, "", "--state", st, "keys", "retire", oldID, "--from", "now"); code != exitError || !strings.Contains(errOut, "rotate first") {
		t.Errorf("retiring the current key: exit %d: %s", code, errOut)
	}

	out, errOut, code := runCLI(t, "", "--state", st, "keys", "rotate")
	if code != exitOK {
		t.Fatalf("keys rotate: exit %d: %s", code, errOut)
	}
	ks = listKeys(t, st)
	if len(ks) != 2 || ks[0].KeyID != oldID || ks[0].Current || !ks[1].Current || ks[1].KeyID == oldID {
		t.Fatalf("keyring after rotation: %+v", ks)
	}
	newID := ks[1].KeyID
	if !strings.Contains(out, newID) || !strings.Contains(out, oldID) {
		t.Errorf("rotate output names neither key:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(st, "signing-key.pem.old")); err == nil {
		t.Error("the earlier private key's file was left behind")
	}

	// A new erasure is signed by the new key.
	const subject = "chiara.tanaka.102@example.org" // person 2 of the demo corpus
	if out, errOut, code := runCLI(t, "", "--state", st, "forget", subject, "--reason", "T-rot", "--yes"); code != exitOK {
		t.Fatalf("forget after rotation: exit %d: %s\n%s", code, errOut, out)
	}
	var cert2 string
	for _, c := range certFiles(t, st) {
		if c != cert1 {
			cert2 = c
		}
	}
	if cert2 == "" {
		t.Fatal("no new certificate")
	}
	if got := predicateOf(t, certificatePayload(t, cert2))["key_id"]; got != newID {
		t.Fatalf("new certificate signed by %v, want the new key %s", got, newID)
	}
	issued1, err := time.Parse(time.RFC3339, predicateOf(t, certificatePayload(t, cert1))["issued_at"].(string))
	if err != nil {
		t.Fatal(err)
	}

	trust := filepath.Join(tmp, "trust.json")
	export := func() {
		t.Helper()
		if _, errOut, code := runCLI(t, "", "--state", st, "keys", "export", "--out", trust); code != exitOK {
			t.Fatalf("keys export: exit %d: %s", code, errOut)
		}
	}
	verify := func(cert string, want int, args ...string) {
		t.Helper()
		out, errOut, code := runCLI(t, "", append([]string{"verify", cert}, args...)...)
		if code != want {
			t.Errorf("verify %s %v: exit %d, want %d\n%s%s", filepath.Base(cert), args, code, want, out, errOut)
		}
	}
	export()
	verify(cert1, exitOK, "--trust", trust)
	verify(cert2, exitOK, "--trust", trust)
	verify(cert1, exitOK, "--public-key", oldPubFile)
	verify(cert2, exitWrongKey, "--public-key", oldPubFile)
	verify(cert2, exitOK, "--public-key", oldPubFile, "--public-key", filepath.Join(st, "signing-key.pub.pem"))

	// Each certificate's checkpoint is signed by the key current when it
	// was issued: the log now holds checkpoints of both keys.
	newPub, _ := certificate.ParsePublicKeyPEM(mustRead(t, filepath.Join(st, "signing-key.pub.pem")))
	if certificate.KeyID(newPub) != newID {
		t.Fatal("signing-key.pub.pem is not the new key")
	}
	for _, c := range []struct {
		cert string
		pub  ed25519.PublicKey
	}{{cert1, oldPub}, {cert2, newPub}} {
		b, _ := certificate.DecodeBundle(mustRead(t, c.cert))
		cp, err := transparency.ParseCheckpoint([]byte(strings.SplitN(b.LogEntry.Checkpoint, "\n\n", 2)[0] + "\n"))
		if err != nil {
			t.Fatal(err)
		}
		v, _ := transparency.NewVerifier(cp.Origin, c.pub)
		if _, err := transparency.OpenCheckpoint([]byte(b.LogEntry.Checkpoint), v); err != nil {
			t.Errorf("%s: checkpoint not signed by the key current at the time: %v", filepath.Base(c.cert), err)
		}
	}
	if out, errOut, code := runCLI(t, "", "--state", st, "audit", "verify"); code != exitOK {
		t.Errorf("audit verify after rotation: exit %d: %s\n%s", code, errOut, out)
	}

	// Retired from before the earlier certificate was issued: rejected.
	before := issued1.Add(-time.Hour).Format(time.RFC3339)
	if _, errOut, code := runCLI(t, "", "--state", st, "keys", "retire", oldID, "--from", before); code != exitOK {
		t.Fatalf("keys retire: exit %d: %s", code, errOut)
	}
	export()
	verify(cert1, exitKeyRetired, "--trust", trust)
	verify(cert2, exitOK, "--trust", trust)
	// Given twice, the earlier retirement wins.
	verify(cert1, exitKeyRetired, "--trust", trust, "--public-key", oldPubFile)
	if ks := listKeys(t, st); ks[0].Retired != before {
		t.Errorf("keys list after retire: %+v", ks)
	}

	// Retired from after it was issued (prefix of the id): accepted.
	after := issued1.Add(time.Hour).Format(time.RFC3339)
	out, errOut, code = runCLI(t, "", "--state", st, "keys", "retire", strings.TrimPrefix(oldID, "sha256:")[:12], "--from", after)
	if code != exitOK || !strings.Contains(out, "it was retired from "+before) {
		t.Fatalf("keys retire again: exit %d: %s\n%s", code, errOut, out)
	}
	export()
	verify(cert1, exitOK, "--trust", trust)
	verify(cert1, exitKeyRetired, "--public-key", oldPubFile+"@"+before, "--trust", trust)

	// The log still audits after the retirement: retirement is about
	// certificates, checkpoints the key signed stay valid.
	if out, errOut, code := runCLI(t, "", "--state", st, "audit", "verify"); code != exitOK {
		t.Errorf("audit verify after retirement: exit %d: %s\n%s", code, errOut, out)
	}
	// A second rotation, then the keyring has three keys, one current.
	if _, errOut, code := runCLI(t, "", "--state", st, "keys", "rotate"); code != exitOK {
		t.Fatalf("second rotate: exit %d: %s", code, errOut)
	}
	if ks := listKeys(t, st); len(ks) != 3 || !ks[2].Current || ks[1].Current || ks[0].Retired != after {
		t.Errorf("keyring after a second rotation: %+v", ks)
	}
	export()
	verify(cert2, exitOK, "--trust", trust)
}

func TestKeysErrors(t *testing.T) {
	st := filepath.Join(t.TempDir(), "st")
	if _, errOut, code := runCLI(t, "", "--state", st, "init"); code != exitOK {
		t.Fatalf("init: %s", errOut)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"keys", "retire", "sha256:0123456789"}, exitUsage, "--from is required"},
		{[]string{"keys", "retire", "sha256:0123456789", "--from", "yesterday"}, exitUsage, "RFC 3339"},
		{[]string{"keys", "retire", "sha256:0123456789", "--from", "now"}, exitError, "no such key"},
		{[]string{"keys", "retire", "abc", "--from", "now"}, exitError, "at least its first 8"},
		{[]string{"keys", "retire"}, exitUsage, "takes 1 argument"},
		{[]string{"keys", "list", "extra"}, exitUsage, "takes 0 argument"},
	} {
		_, errOut, code := runCLI(t, "", append([]string{"--state", st}, tc.args...)...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, want %d and %q: %s", tc.args, code, tc.code, tc.want, errOut)
		}
	}
	// An erasure that signed its certificate and has not published it
	// holds the rotation back.
	j := filepath.Join(st, "erasures", "er-x", "journal.jsonl")
	os.MkdirAll(filepath.Dir(j), 0o700)
	os.WriteFile(j, []byte("amnesia.journal/v1\n{\"seq\":1,\"step\":\"certificate\",\"phase\":\"done\"}\n"), 0o600)
	if _, errOut, code := runCLI(t, "", "--state", st, "keys", "rotate"); code != exitError || !strings.Contains(errOut, "er-x") {
		t.Errorf("rotate with a signed, unpublished erasure: exit %d: %s", code, errOut)
	}
	if ks := listKeys(t, st); len(ks) != 1 {
		t.Errorf("a refused rotation changed the keyring: %+v", ks)
	}
	os.RemoveAll(filepath.Dir(j))
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"format":"amnesia.trust/v1","keys":[],"extra":1}`), 0o600)
	if _, errOut, code := runCLI(t, "", "verify", bad, "--trust", bad); code != exitError || !strings.Contains(errOut, "invalid trust file") {
		t.Errorf("verify with a bad trust file: exit %d: %s", code, errOut)
	}
	if _, errOut, code := runCLI(t, "", "verify", bad); code != exitUsage || !strings.Contains(errOut, "--trust") {
		t.Errorf("verify without keys: exit %d: %s", code, errOut)
	}
	out, _, code := runCLI(t, "", "--state", st, "keys", "export")
	if code != exitOK {
		t.Fatal("export")
	}
	if tf, err := certificate.ParseTrustFile([]byte(out)); err != nil || len(tf.Keys) != 1 {
		t.Errorf("exported trust file: %v\n%s", err, out)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
