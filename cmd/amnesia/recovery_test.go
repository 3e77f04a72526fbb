package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue #9.5: a crash after the certificate file was written but before the
// sealed evidence was destroyed and publish journaled. The documented
// resume (running forget again) finishes publication and shreds the
// evidence, instead of answering "already erased" and leaving it.
func TestCrashAfterCertificateWrittenFinishesPublication(t *testing.T) {
	ref := crashReference(t)
	k := ref.index(t, "publish", "begin")
	f := copyE2EFixture(t, ref.pristine)
	crashIssued := crashAt(t, ref, f, k)
	jdir := filepath.Join(f.state(), "erasures", ref.erasureID)
	if m, _ := filepath.Glob(filepath.Join(jdir, "evidence-*.sealed")); len(m) == 0 {
		t.Fatal("the crashed run holds no sealed evidence: the scenario needs it")
	}
	// Publish writes the certificate (atomically) before it destroys the
	// evidence and journals done: the crash came in between.
	if err := os.WriteFile(filepath.Join(f.state(), "certificates", ref.certName), []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	res := runBinary(t, nil, "", forgetArgs(f)...)
	checkResumed(t, ref, f, res, crashIssued, false)
}

// With the state directory, publish destroys the sealed evidence while it
// logs and writes the certificate: a crash can come after the evidence is
// gone and before the certificate exists. Nothing left reads the evidence,
// so the rerun publishes the same certificate without it.
//
// Destroying a file zeroes it, fsyncs the zeros, then unlinks it: after a
// power loss the file may be back, full of zeros (zeroed). A rerun that
// tried to unseal it would fail on it, not find it missing.
func TestCrashAfterEvidenceDestroyedFinishesPublication(t *testing.T) {
	ref := crashReference(t)
	k := ref.index(t, "publish", "begin")
	for _, zeroed := range []bool{false, true} {
		t.Run(map[bool]string{false: "removed", true: "zeroed"}[zeroed], func(t *testing.T) {
			f := copyE2EFixture(t, ref.pristine)
			crashIssued := crashAt(t, ref, f, k)
			jdir := filepath.Join(f.state(), "erasures", ref.erasureID)
			sealed, _ := filepath.Glob(filepath.Join(jdir, "*.sealed"))
			if len(sealed) == 0 {
				t.Fatal("the crashed run holds no sealed evidence: the scenario needs it")
			}
			for _, p := range sealed {
				if !zeroed {
					if err := os.Remove(p); err != nil {
						t.Fatal(err)
					}
					continue
				}
				fi, err := os.Stat(p)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, make([]byte, fi.Size()), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if c := certFiles(t, f.state()); len(c) != 0 {
				t.Fatalf("the crash before publish left certificates %v", baseNames(c))
			}
			res := runBinary(t, nil, "", forgetArgs(f)...)
			checkResumed(t, ref, f, res, crashIssued, false)
		})
	}
}

// Issue #8.1, end to end: every store of the trace is down; with
// --allow-partial the erasure ends incomplete (exit 7). Once the stores are
// back, the same command erases and verifies everything, and its
// certificate links to the incomplete one instead of replaying it.
func TestSameCommandFinishesAfterEveryStoreFailed(t *testing.T) {
	f := buildE2EFixture(t, t.TempDir(), reverifyDocs())
	for _, p := range []string{f.docsDB(), f.vecsDB()} {
		if err := os.Rename(p, p+".away"); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"--state", f.state(), "forget", "bob@example.org", "--reason", "DSR-9", "--yes", "--allow-partial"}
	r := runBinary(t, nil, "", args...)
	if r.code != exitIncomplete {
		t.Fatalf("forget with every store down: want exit %d:\n%s", exitIncomplete, r)
	}
	first := certFiles(t, f.state())
	if len(first) != 1 {
		t.Fatalf("want one incomplete certificate, found %v", first)
	}
	// Without the stores, running it again is refused by the preflight
	// (without --allow-partial) and changes nothing.
	if r := runBinary(t, nil, "", "--state", f.state(), "forget", "bob@example.org", "--reason", "DSR-9", "--yes"); r.code != exitNotReady {
		t.Fatalf("forget with the stores still down: want exit %d:\n%s", exitNotReady, r)
	}
	for _, p := range []string{f.docsDB(), f.vecsDB()} {
		if err := os.Rename(p+".away", p); err != nil {
			t.Fatal(err)
		}
	}
	args[5] = "DSR-10" // a new reason is taken, not ignored
	r = runBinary(t, nil, "", args...)
	if r.code != 0 {
		t.Fatalf("the same command with the stores back: want exit 0:\n%s", r)
	}
	certs := certFiles(t, f.state())
	if len(certs) != 2 {
		t.Fatalf("want the incomplete certificate and a new one, found %v", baseNames(certs))
	}
	var second string
	for _, c := range certs {
		if c != first[0] {
			second = c
		}
	}
	p := predicateOf(t, certificatePayload(t, second))
	if p["complete"] != true || p["reason"] != "DSR-10" {
		t.Fatalf("new certificate: complete=%v reason=%v, want complete with the new reason", p["complete"], p["reason"])
	}
	c, _ := p["counts"].(map[string]any)
	if c["artifacts"] != c["verified"] || c["verified"].(float64) == 0 {
		t.Errorf("new certificate counts %v, want every artifact verified", c)
	}
	fl, _ := p["follows"].(map[string]any)
	if fl == nil || fl["certificate_id"] != strings.TrimSuffix(filepath.Base(first[0]), ".dsse.json") {
		t.Errorf("new certificate follows %v, want the incomplete %s", p["follows"], filepath.Base(first[0]))
	}
	if !strings.Contains(r.stdout, "continues") {
		t.Errorf("forget did not say it continues the earlier erasure:\n%s", r.stdout)
	}
	// And the certificate verifies offline with the link in it.
	if v := runBinary(t, nil, "", "verify", second, "--public-key", filepath.Join(f.state(), "signing-key.pub.pem")); v.code != 0 {
		t.Errorf("verify the continuing certificate:\n%s", v)
	}
}
