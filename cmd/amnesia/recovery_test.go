package main

import (
	"os"
	"path/filepath"
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
