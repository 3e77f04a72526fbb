package main

import (
	"strings"
	"testing"
)

// storeState returns the certificate predicate's state of store st.
func storeState(t *testing.T, p map[string]any, st string) map[string]any {
	t.Helper()
	ss, _ := p["declared_scope"].([]any)
	for _, s := range ss {
		if m, _ := s.(map[string]any); m != nil && m["name"] == st {
			return m
		}
	}
	t.Fatalf("no store %q in the certificate", st)
	return nil
}

// The certificate says which way the SQLite reclaim went and why (issue
// #13, point 3): stores written only through capture (secure_delete on)
// pass the free-space audit, VACUUM is skipped, and the byte scan still
// verifies every artifact; after the application deleted a row with
// SQLite's defaults, the bytes it left in free space are zeroed in place,
// the finding and what was done are in the certificate, and the row's
// bytes are gone from the file.
func TestForgetReclaimMethodInCertificate(t *testing.T) {
	t.Run("skipped", func(t *testing.T) {
		f := buildE2EFixture(t, t.TempDir(), appDeletedDocs())
		out, errOut, code := runCLI(t, "", "--state", f.state(), "forget", "alice@example.org", "--reason", "DSR-13", "--yes")
		if code != exitOK {
			t.Fatalf("forget: exit %d\n%s\n%s", code, errOut, out)
		}
		_, payload := singleCertificate(t, f.state())
		p := predicateOf(t, payload)
		for _, st := range []string{"docs", "vectors"} {
			s := storeState(t, p, st)
			rc, _ := s["reclaim"].(string)
			if !strings.Contains(rc, "VACUUM skipped: free-space audit of") || s["residue"] != "VERIFIED" {
				t.Errorf("store %s: residue %v, reclaim %q: want VERIFIED with VACUUM skipped on the audit", st, s["residue"], rc)
			}
			for _, a := range artifactsOf(t, p, st) {
				m, _ := a["method"].(string)
				if a["outcome"] != "VERIFIED" || !strings.Contains(m, "VACUUM skipped") {
					t.Errorf("%s artifact %v: %v, method %q", st, a["id"], a["outcome"], m)
				}
			}
		}
	})
	t.Run("application deleted without secure_delete", func(t *testing.T) {
		f := buildE2EFixture(t, t.TempDir(), appDeletedDocs())
		// The application writes a note of its own and deletes it, with
		// SQLite's defaults: its bytes stay in free space, which the audit
		// cannot attribute to anyone, so alice's erasure zeroes them.
		first := []byte("scratch note 7731: call the courier before noon")
		appExec(t, f.docsDB(), `INSERT INTO documents (id, kind, text) VALUES ('app-note', 'document', '`+strings.Repeat(string(first)+"; ", 8)+`')`,
			`DELETE FROM documents WHERE id = 'app-note'`, `PRAGMA wal_checkpoint(TRUNCATE)`)
		if !inStoreFiles(t, f.docsDB(), first) {
			t.Fatal("the deleted note is not in the file: the premise failed")
		}
		out, errOut, code := runCLI(t, "", "--state", f.state(), "forget", "alice@example.org", "--reason", "DSR-13", "--yes")
		if code != exitOK {
			t.Fatalf("forget: exit %d\n%s\n%s", code, errOut, out)
		}
		_, payload := singleCertificate(t, f.state())
		p := predicateOf(t, payload)
		s := storeState(t, p, "docs")
		rc, _ := s["reclaim"].(string)
		if !strings.Contains(rc, "are not zero") || !strings.Contains(rc, "those bytes zeroed in place") || !strings.Contains(rc, "VACUUM skipped") || s["residue"] != "VERIFIED" {
			t.Errorf("docs: residue %v, reclaim %q: want VERIFIED, with the audit's finding zeroed in place", s["residue"], rc)
		}
		if inStoreFiles(t, f.docsDB(), first) {
			t.Error("after the reclaim the deleted note is still in the file")
		}
		if !inStoreFiles(t, f.docsDB(), []byte("arrived damaged")) {
			t.Fatal("bob's live text is gone from the file: the scan went blind")
		}
	})
}
