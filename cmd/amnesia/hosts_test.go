package main

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Two hosts on one ledger: a host started with another pepper exits 23
// and says what to do; the host with the installation's pepper (given as
// base64 in a variable) runs. A worker in an installation whose stores in
// files have owners needs --host.
func TestHostWithAnotherPepperExits23(t *testing.T) {
	root := t.TempDir()
	ledger := filepath.Join(root, "shared-ledger.db")
	pepper := make([]byte, 32)
	for i := range pepper {
		pepper[i] = byte(i * 7)
	}
	other := make([]byte, 32)
	keyDir := filepath.Join(root, "signing")
	conf := func(name, pepperVar string) string {
		p := filepath.Join(root, name+".yaml")
		y := "version: 1\nledger: " + ledger + "\nsecrets:\n  pepper: env:" + pepperVar + "\n  signing_key: dir:" + keyDir + "\n" +
			"stores:\n  - {name: docs, type: sqlite-doc, path: " + filepath.Join(root, "docs.db") + ", owner: host-a}\n"
		if err := os.WriteFile(p, []byte(y), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	env := []string{"GOOD_PEPPER=" + base64.StdEncoding.EncodeToString(pepper), "OTHER_PEPPER=" + base64.StdEncoding.EncodeToString(other)}
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	if r := runBinary(t, env, "", "--state", a, "init", "--config", conf("a", "GOOD_PEPPER")); r.code != 0 {
		t.Fatalf("init a: %s", r)
	}
	if r := runBinary(t, env, "", "--state", b, "init", "--config", conf("b", "OTHER_PEPPER")); r.code != exitSecretsMismatch || !strings.Contains(r.stderr, "pepper") || strings.Contains(r.stderr, base64.StdEncoding.EncodeToString(other)) {
		t.Fatalf("init b with another pepper: %s; want exit 23 naming the pepper, never its value", r)
	}
	if r := runBinary(t, env, "", "--state", a, "worker", "--drain"); r.code != exitError || !strings.Contains(r.stderr, "--host") {
		t.Fatalf("worker without --host: %s", r)
	}
	if r := runBinary(t, env, "", "--state", a, "worker", "--drain", "--host", "bad host"); r.code != exitUsage {
		t.Fatalf("worker --host 'bad host': %s", r)
	}
	if r := runBinary(t, env, "", "--state", a, "worker", "--drain", "--host", "host-a"); r.code != 0 || !strings.Contains(r.stdout, "no erasure waiting") {
		t.Fatalf("worker --host host-a: %s", r)
	}
}
