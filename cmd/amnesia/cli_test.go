package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/certificate"
)

// run executes the CLI in-process and returns stdout, stderr and the exit code.
func runCLI(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := newRootCommand()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetArgs(args)
	err := cmd.Execute()
	if err != nil {
		errOut.WriteString(err.Error())
	}
	return out.String(), errOut.String(), exitCode(err)
}

// demoDir runs the demo once per test and returns its report.
func demoReport(t *testing.T) map[string]any {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "demo")
	out, errOut, code := runCLI(t, "", "demo", "--dir", dir, "--json")
	if code != 0 {
		t.Fatalf("demo exit %d: %s", code, errOut)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("demo --json is not JSON: %v\n%s", err, out)
	}
	return rep
}

func TestDemoJSON(t *testing.T) {
	rep := demoReport(t)
	for _, k := range []string{"native_delete", "amnesia", "certificate", "public_key", "verified"} {
		if _, ok := rep[k]; !ok {
			t.Errorf("demo --json lacks %q", k)
		}
	}
	if rep["verified"] != true {
		t.Errorf("verified = %v", rep["verified"])
	}
	if n := rep["documents"].(float64); n < 200 {
		t.Errorf("demo ingested %v documents, want at least 200", n)
	}
	if n := rep["subjects"].(float64); n < 20 {
		t.Errorf("demo has %v subjects, want at least 20", n)
	}
	native := rep["native_delete"].(map[string]any)
	erased := rep["amnesia"].(map[string]any)
	for _, st := range []string{"docs", "vectors"} {
		n := native[st].(map[string]any)
		a := erased[st].(map[string]any)
		if n["bytes_found"].(float64) == 0 {
			t.Errorf("%s: a native delete left no bytes: the demo's probe has no power", st)
		}
		if a["records"].(float64) == 0 || a["bytes_found"].(float64) != 0 {
			t.Errorf("%s: amnesia erased %v records, bytes still found for %v", st, a["records"], a["bytes_found"])
		}
	}
}

func TestVerifyExitCodes(t *testing.T) {
	rep := demoReport(t)
	cert, pub := rep["certificate"].(string), rep["public_key"].(string)
	if _, errOut, code := runCLI(t, "", "verify", cert, "--public-key", pub); code != exitOK {
		t.Fatalf("verify of a good certificate: exit %d: %s", code, errOut)
	}
	data, _ := os.ReadFile(cert)
	b, err := certificate.DecodeBundle(data)
	if err != nil {
		t.Fatal(err)
	}
	var e map[string]any
	if err := json.Unmarshal(b.DSSEEnvelope, &e); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// rebundle writes b with changes, in the canonical form, so that only
	// the change is wrong.
	rebundle := func(name string, change func(*certificate.Bundle)) string {
		c := *b
		le := *b.LogEntry
		c.LogEntry = &le
		change(&c)
		out, err := certificate.EncodeBundle(&c)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		os.WriteFile(p, out, 0o600)
		return p
	}
	payload, _ := base64.StdEncoding.DecodeString(e["payload"].(string))
	tampered := map[string]any{}
	for k, v := range e {
		tampered[k] = v
	}
	tampered["payload"] = base64.StdEncoding.EncodeToString(bytes.Replace(payload, []byte(`"complete":true`), []byte(`"complete":false`), 1))
	// In the envelope's canonical member order, so only the payload is wrong.
	tamperedEnv, _ := json.Marshal(struct {
		PayloadType any `json:"payloadType"`
		Payload     any `json:"payload"`
		Signatures  any `json:"signatures"`
	}{tampered["payloadType"], tampered["payload"], tampered["signatures"]})
	bare := filepath.Join(dir, "bare.json")
	os.WriteFile(bare, b.DSSEEnvelope, 0o600)
	// A key that did not sign it: the demo of another run.
	other := demoReport(t)["public_key"].(string)
	garbage := filepath.Join(dir, "garbage.json")
	os.WriteFile(garbage, []byte("not a certificate"), 0o600)
	edited := filepath.Join(dir, "edited.json")
	os.WriteFile(edited, bytes.Replace(data, []byte(`"logIndex": `), []byte(`"logIndex":  `), 1), 0o600)
	proof := append([]string(nil), b.LogEntry.InclusionProof...)
	if len(proof) > 0 {
		proof[0] = base64.StdEncoding.EncodeToString(make([]byte, 32))
	}
	// The checkpoint with its root hash changed (still canonical base64).
	cpLines := strings.Split(b.LogEntry.Checkpoint, "\n")
	root, _ := base64.StdEncoding.DecodeString(cpLines[2])
	root[0] ^= 1
	cpLines[2] = base64.StdEncoding.EncodeToString(root)
	badCheckpoint := strings.Join(cpLines, "\n")
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"bare envelope", []string{"verify", bare, "--public-key", pub}, exitNotLogged},
		{"not canonical", []string{"verify", edited, "--public-key", pub}, exitCertInvalid},
		{"wrong log index", []string{"verify", rebundle("index.json", func(c *certificate.Bundle) { c.LogEntry.LogIndex += 1 }), "--public-key", pub}, exitNotLogged},
		{"checkpoint edited", []string{"verify", rebundle("cp.json", func(c *certificate.Bundle) { c.LogEntry.Checkpoint = badCheckpoint }), "--public-key", pub}, exitCheckpoint},
		{"inclusion proof edited", []string{"verify", rebundle("proof.json", func(c *certificate.Bundle) { c.LogEntry.InclusionProof = proof }), "--public-key", pub}, exitNotLogged},
		{"pinned log origin", []string{"verify", cert, "--public-key", pub, "--log-origin", strings.SplitN(b.LogEntry.Checkpoint, "\n", 2)[0]}, exitOK},
		{"another log origin", []string{"verify", cert, "--public-key", pub, "--log-origin", "example.org/other-log"}, exitCheckpoint},
		{"key retired before issue", []string{"verify", cert, "--public-key", pub + "@2000-01-01T00:00:00Z"}, exitKeyRetired},
		{"key retired after issue", []string{"verify", cert, "--public-key", pub + "@2999-01-01T00:00:00Z"}, exitOK},
		{"tampered payload", []string{"verify", rebundle("tampered.json", func(c *certificate.Bundle) { c.DSSEEnvelope = tamperedEnv }), "--public-key", pub}, exitCertTampered},
		{"wrong key", []string{"verify", cert, "--public-key", other}, exitWrongKey},
		{"malformed", []string{"verify", garbage, "--public-key", pub}, exitCertInvalid},
		{"no key", []string{"verify", cert}, exitUsage},
		{"missing file", []string{"verify", filepath.Join(dir, "nope"), "--public-key", pub}, exitError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runCLI(t, "", tc.args...)
			if code != tc.want {
				t.Errorf("exit %d, want %d (stderr %q)", code, tc.want, errOut)
			}
			if strings.Contains(out, "VALID") != (tc.want == exitOK) {
				t.Errorf("exit %d, printed %q", code, out)
			}
		})
	}
}

func TestTraceAndForget(t *testing.T) {
	rep := demoReport(t)
	st := filepath.Join(rep["dir"].(string), "state")
	const subject = "chiara.tanaka.102@example.org" // person 2 of the demo corpus
	a, _, code := runCLI(t, "", "--state", st, "trace", subject, "--json")
	if code != 0 {
		t.Fatalf("trace exit %d", code)
	}
	b, _, _ := runCLI(t, "", "--state", st, "trace", subject, "--json")
	if a != b || !strings.HasPrefix(a, "{") {
		t.Fatalf("trace --json is not byte-identical across runs")
	}
	if strings.Contains(a, subject) {
		t.Errorf("trace output contains the raw subject id")
	}
	if _, _, code := runCLI(t, "", "--state", st, "trace", "nobody@example.org"); code != exitNoLineage {
		t.Errorf("trace of an unknown subject: exit %d, want %d", code, exitNoLineage)
	}
	// No TTY, no --yes: the answer comes from stdin; anything but "yes" aborts.
	if _, _, code := runCLI(t, "no\n", "--state", st, "forget", subject, "--reason", "T-9"); code != exitAborted {
		t.Errorf("forget answered 'no': exit %d, want %d", code, exitAborted)
	}
	if _, _, code := runCLI(t, "", "--state", st, "forget", subject); code != exitUsage {
		t.Errorf("forget without --reason: exit %d, want %d", code, exitUsage)
	}
	// The subject id can come from stdin, then the confirmation.
	out, errOut, code := runCLI(t, subject+"\nyes\n", "--state", st, "forget", "-", "--reason", "T-9")
	if code != exitOK {
		t.Fatalf("forget: exit %d: %s\n%s", code, errOut, out)
	}
	if !strings.Contains(out, "VERIFIED(physical)") || !strings.Contains(out, "certificate: ") {
		t.Errorf("forget output lacks the outcome table:\n%s", out)
	}
	if _, _, code := runCLI(t, "", "--state", st, "trace", subject); code != exitErased {
		t.Errorf("trace after forget: exit %d, want %d", code, exitErased)
	}
	if _, _, code := runCLI(t, "", "--state", st, "init"); code == exitOK {
		t.Errorf("init over an existing installation succeeded")
	}
	if _, _, code := runCLI(t, "", "--state", filepath.Join(t.TempDir(), "none"), "trace", subject); code != exitError {
		t.Errorf("trace without state: exit %d, want %d", code, exitError)
	}
}

func TestInitWritesKeys(t *testing.T) {
	st := filepath.Join(t.TempDir(), "st")
	out, errOut, code := runCLI(t, "", "--state", st, "init")
	if code != 0 {
		t.Fatalf("init: exit %d: %s", code, errOut)
	}
	for _, f := range []string{"pepper", "signing-key.pem"} {
		fi, err := os.Stat(filepath.Join(st, f))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, err %v; want 0600", f, fi.Mode().Perm(), err)
		}
	}
	pub, _ := os.ReadFile(filepath.Join(st, "signing-key.pub.pem"))
	if !bytes.HasPrefix(pub, []byte("-----BEGIN PUBLIC KEY-----")) {
		t.Errorf("public key is not a PEM SubjectPublicKeyInfo")
	}
	if p, _ := os.ReadFile(filepath.Join(st, "pepper")); len(p) != 32 {
		t.Errorf("pepper is %d bytes", len(p))
	}
	if !strings.Contains(out, "key id:") {
		t.Errorf("init output: %s", out)
	}
}
