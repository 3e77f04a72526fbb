package main

import (
	"encoding/base64"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/tsatest"
)

func setConfig(t *testing.T, st, line string) {
	t.Helper()
	p := filepath.Join(st, "amnesia.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	// Drop earlier values of the keys being set.
	var kept []string
	for _, l := range strings.Split(string(b), "\n") {
		if k, _, ok := strings.Cut(l, ":"); ok && strings.Contains(line, k+":") && !strings.HasPrefix(l, " ") {
			continue
		}
		kept = append(kept, l)
	}
	if err := os.WriteFile(p, []byte(strings.Join(kept, "\n")+"\n"+line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// closedURL is an http URL on a loopback port nothing listens on.
func closedURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + "/tsa"
}

// RFC 3161 with openssl as the authority: certificates timestamped at
// publish, `anchor` of the log, verify --tsa-root, and a TSA that is down
// never blocks an erasure.
func TestTimestamps(t *testing.T) {
	tsa := tsatest.Start(t)
	other := tsatest.Start(t) // another authority: its root must not vouch for tsa's tokens
	rep := demoReport(t)
	st := filepath.Join(rep["dir"].(string), "state")
	pub := rep["public_key"].(string)

	// 1. A TSA that is down: the erasure completes, without a timestamp.
	setConfig(t, st, "tsa_url: "+closedURL(t)+"\ntsa_timeout: 2s")
	out, errOut, code := runCLI(t, "", "--state", st, "forget", "dmitri.moreau.103@example.org", "--reason", "T-ts1", "--yes")
	if code != exitOK {
		t.Fatalf("forget with the TSA down: exit %d\n%s%s", code, out, errOut)
	}
	certs := func() []string {
		m, _ := filepath.Glob(filepath.Join(st, "certificates", "*.json"))
		return m
	}
	noTS := newest(t, certs())
	if b := readBundle(t, noTS); b.LogEntry.Timestamp != "" {
		t.Fatalf("a certificate issued with the TSA down carries a timestamp")
	}
	if _, _, code := runCLI(t, "", "verify", noTS, "--public-key", pub, "--require-timestamp"); code != exitTimestamp {
		t.Errorf("--require-timestamp on a certificate without one: exit %d, want %d", code, exitTimestamp)
	}
	if _, _, code := runCLI(t, "", "--state", st, "anchor", "--tsa", closedURL(t), "--timeout", "2s"); code == exitOK {
		t.Errorf("anchor at a TSA that is down: exit 0")
	}

	// 2. The TSA is up: the next certificate is timestamped at publish.
	setConfig(t, st, "tsa_url: "+tsa.URL)
	if out, errOut, code := runCLI(t, "", "--state", st, "forget", "elif.novak.104@example.org", "--reason", "T-ts2", "--yes"); code != exitOK {
		t.Fatalf("forget with the TSA up: exit %d\n%s%s", code, out, errOut)
	}
	withTS := newest(t, certs())
	b := readBundle(t, withTS)
	if b.LogEntry.Timestamp == "" {
		t.Fatalf("certificate issued with tsa_url set carries no timestamp")
	}
	out, errOut, code = runCLI(t, "", "verify", withTS, "--public-key", pub, "--tsa-root", tsa.Root, "--require-timestamp")
	if code != exitOK || !strings.Contains(out, "timestamp: 20") {
		t.Fatalf("verify --tsa-root: exit %d\n%s%s", code, out, errOut)
	}
	if out, _, code := runCLI(t, "", "verify", withTS, "--public-key", pub); code != exitOK || !strings.Contains(out, "NOT trusted") {
		t.Errorf("verify without --tsa-root: exit %d, %q", code, out)
	}
	if _, _, code := runCLI(t, "", "verify", withTS, "--public-key", pub, "--tsa-root", other.Root); code != exitTimestamp {
		t.Errorf("verify with another authority's root: exit %d, want %d", code, exitTimestamp)
	}
	// Every single-byte change of the token is rejected.
	tok, _ := base64.StdEncoding.DecodeString(b.LogEntry.Timestamp)
	dir := t.TempDir()
	step := max(1, len(tok)/40)
	for i := 0; i < len(tok); i += step {
		bad := append([]byte(nil), tok...)
		bad[i] ^= 0x01
		c := *b
		le := *b.LogEntry
		le.Timestamp = base64.StdEncoding.EncodeToString(bad)
		c.LogEntry = &le
		data, err := certificate.EncodeBundle(&c)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "flip.json")
		os.WriteFile(p, data, 0o600)
		if out, _, code := runCLI(t, "", "verify", p, "--public-key", pub, "--tsa-root", tsa.Root); code != exitTimestamp {
			t.Fatalf("token byte %d changed: exit %d, want %d: %s", i, code, exitTimestamp, out)
		}
	}

	// 3. anchor, then audit prove gives the older certificate the token.
	time.Sleep(2 * time.Second) // so the anchor's time is seconds after noTS's issued_at
	out, errOut, code = runCLI(t, "", "--state", st, "anchor", "--tsa", tsa.URL)
	if code != exitOK || !strings.Contains(out, "anchored the checkpoint") {
		t.Fatalf("anchor: exit %d\n%s%s", code, out, errOut)
	}
	proved := filepath.Join(dir, "proved.json")
	if _, errOut, code := runCLI(t, "", "--state", st, "audit", "prove", noTS, "--out", proved); code != exitOK {
		t.Fatalf("audit prove: exit %d: %s", code, errOut)
	}
	if out, errOut, code := runCLI(t, "", "verify", proved, "--public-key", pub, "--tsa-root", tsa.Root, "--require-timestamp"); code != exitOK {
		t.Errorf("verify of the re-proved, anchored certificate: exit %d\n%s%s", code, out, errOut)
	}
	// A key retired between the certificate's issued_at and its trusted
	// timestamp: issued_at alone (the key holder's word) passes, the
	// timestamp from a trusted TSA does not.
	var issued string
	if st, err := certificate.Parse(readBundle(t, proved).DSSEEnvelope); err == nil {
		issued = st.Predicate.IssuedAt
	}
	at, err := time.Parse(time.RFC3339, issued)
	if err != nil {
		t.Fatal(err)
	}
	retired := pub + "@" + at.Add(time.Second).UTC().Format(time.RFC3339)
	if _, errOut, code := runCLI(t, "", "verify", proved, "--public-key", retired); code != exitOK {
		t.Errorf("retired after issued_at, no TSA root: exit %d: %s", code, errOut)
	}
	if _, errOut, code := runCLI(t, "", "verify", proved, "--public-key", retired, "--tsa-root", tsa.Root); code != exitKeyRetired {
		t.Errorf("retired before the trusted timestamp: exit %d, want %d: %s", code, exitKeyRetired, errOut)
	}
	out, _, code = runCLI(t, "", "--state", st, "audit", "verify")
	if code != exitOK || !strings.Contains(out, "amnesia/anchor/v1") {
		t.Errorf("audit verify after anchoring: exit %d\n%s", code, out)
	}
}

func readBundle(t *testing.T, path string) *certificate.Bundle {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := certificate.DecodeBundle(data)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newest returns the most recently modified of paths.
func newest(t *testing.T, paths []string) string {
	t.Helper()
	var best string
	var bestT int64
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if n := fi.ModTime().UnixNano(); best == "" || n > bestT {
			best, bestT = p, n
		}
	}
	if best == "" {
		t.Fatal("no certificate")
	}
	return best
}
