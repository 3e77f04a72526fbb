package demo

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestDemoExplainsWhatIsNotVerified: the story tells, in plain words and
// with what to do, what each state short of VERIFIED in its certificate
// means (the table forget prints from).
func TestDemoExplainsWhatIsNotVerified(t *testing.T) {
	var out bytes.Buffer
	rep, err := Run(context.Background(), filepath.Join(t.TempDir(), "demo"), &out)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Verified || rep.NeedsHuman == 0 {
		t.Fatalf("report = %+v", rep)
	}
	s := out.String()
	flat := strings.Join(strings.Fields(s), " ")
	for _, want := range []string{
		"What the states short of VERIFIED mean:",
		"- NEEDS_HUMAN (",
		"a person must decide",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("demo output lacks %q:\n%s", want, s)
		}
	}
	// Every residue state the story shows, other than VERIFIED, is explained.
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) >= 4 && f[0] == "store" && f[2] == "residue" && f[3] != "VERIFIED" && f[3] != "NOT-TOUCHED" {
			if !strings.Contains(flat, "- "+f[3]+" (") || !strings.Contains(flat, "What to do:") {
				t.Errorf("residue %s of store %s is not explained:\n%s", f[3], f[1], s)
			}
		}
	}
}
