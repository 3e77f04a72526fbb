package explain

import (
	"bytes"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/certificate"
)

func TestTableIsComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range Table {
		if seen[e.State] {
			t.Errorf("%s is explained twice", e.State)
		}
		seen[e.State] = true
		if !strings.HasSuffix(e.Meaning, ".") || !strings.HasSuffix(e.Action, ".") || len(e.Meaning) < 40 || len(e.Action) < 20 {
			t.Errorf("%s: meaning and action must be whole sentences: %+v", e.State, e)
		}
	}
	for state, entry := range map[string]string{
		"UNVERIFIED-physical-not-measured":   "UNVERIFIED-physical-not-measured",
		"UNVERIFIED-store-failed":            "UNVERIFIED-store-failed",
		"UNVERIFIED-managed":                 "UNVERIFIED-managed",
		"UNVERIFIED-app-memory-until-reload": "UNVERIFIED-app-memory-until-reload",
		"UNVERIFIED-something-new":           "UNVERIFIED-",
		"PENDING-long-transaction":           "PENDING-",
		"PENDING-reclaim-deferred":           "PENDING-reclaim-deferred",
		"PENDING-lock-timeout":               "PENDING-",
		"RESIDUAL":                           "RESIDUAL",
		"NEEDS_HUMAN":                        "NEEDS_HUMAN",
		"OUT_OF_SCOPE":                       "OUT_OF_SCOPE",
	} {
		e, ok := For(state)
		if !ok || e.State != entry {
			t.Errorf("For(%s) = %q, %v; want the %s entry", state, e.State, ok, entry)
		}
	}
	if _, ok := For("VERIFIED"); ok {
		t.Errorf("VERIFIED has an explanation of what is short of it")
	}
}

func TestNotesAndWrite(t *testing.T) {
	logical := func(store, why string) certificate.Artifact {
		return certificate.Artifact{Store: store, Outcome: certificate.Verified, Level: certificate.LevelLogical,
			Reason: "no query path returns it; physical level not reached: " + why}
	}
	p := certificate.Predicate{
		DeclaredScope: []certificate.StoreState{
			{Name: "docs", Residue: "UNVERIFIED-physical-not-measured"},
			{Name: "vectors", Residue: "UNVERIFIED-store-failed"},
			{Name: "chats", Residue: "PENDING-long-transaction"},
			{Name: "notes", Residue: "VERIFIED"},
			{Name: "idle", Residue: "NOT-TOUCHED"},
			{Name: "odd", Residue: "WEIRD-new-state"},
		},
		Artifacts: []certificate.Artifact{
			logical("docs", "none of its 3 needles was visible in the store's files before deletion, so the scan had no power"),
			logical("docs", "none of its 5 needles was visible in the store's files before deletion, so the scan had no power"),
			logical("docs", "all 4 of its windows are also held by other live records, so finding them would prove nothing"),
			logical("notes", "store notes has no physical probe"), // not under physical-not-measured: not a cause here
			{Store: "docs", Outcome: certificate.Verified, Level: certificate.LevelPhysical},
			{Store: "vectors", Outcome: certificate.Unverified, Reason: "store failed at open"},
			{Store: "chats", Outcome: certificate.Residual},
			{Store: "docs", Outcome: certificate.NeedsHuman},
			{Store: "vectors", Outcome: certificate.NeedsHuman},
			{Store: "cache", Outcome: certificate.OutOfScope},
		},
	}
	notes := Notes(p)
	var states []string
	for _, n := range notes {
		states = append(states, n.State)
	}
	want := "UNVERIFIED-physical-not-measured UNVERIFIED-store-failed PENDING-long-transaction WEIRD-new-state RESIDUAL NEEDS_HUMAN OUT_OF_SCOPE"
	if got := strings.Join(states, " "); got != want {
		t.Fatalf("notes = %s\nwant    %s", got, want)
	}
	pn := notes[0]
	if len(pn.Causes) != 2 || pn.Causes[0].Count != 2 || pn.Causes[0].Reason != "none of its needles was visible in the store's files before deletion, so the scan had no power" ||
		pn.Causes[1].Reason != "all of its windows are also held by other live records, so finding them would prove nothing" {
		t.Errorf("causes = %+v", pn.Causes)
	}
	if notes[2].Text.State != "PENDING-" || notes[3].Text.State != "" {
		t.Errorf("PENDING-long-transaction matched %q, WEIRD-new-state matched %q", notes[2].Text.State, notes[3].Text.State)
	}
	if notes[5].Where != "2 artifacts in stores docs, vectors" || notes[6].Where != "1 artifact in store cache" {
		t.Errorf("where = %q, %q", notes[5].Where, notes[6].Where)
	}

	var b bytes.Buffer
	Write(&b, p, "   ", 100)
	out := b.String()
	for _, w := range []string{
		"- UNVERIFIED-physical-not-measured (store docs): no query path returns",
		"Here: 2 artifacts: none of its needles",
		"- UNVERIFIED-store-failed (store vectors):",
		"- WEIRD-new-state (store odd): amnesia has no explanation",
		"- NEEDS_HUMAN (2 artifacts in stores docs, vectors):",
	} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), w) {
			t.Errorf("Write lacks %q:\n%s", w, out)
		}
	}
	if strings.Count(strings.Join(strings.Fields(out), " "), "What to do:") != len(notes)-1 {
		t.Errorf("want a 'What to do' for each explained state:\n%s", out)
	}
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if len(l) > 100 {
			t.Errorf("line longer than 100 columns: %q", l)
		}
		if l != "" && !strings.HasPrefix(l, "   ") {
			t.Errorf("line not indented: %q", l)
		}
	}

	b.Reset()
	Write(&b, certificate.Predicate{DeclaredScope: []certificate.StoreState{{Name: "docs", Residue: "VERIFIED"}},
		Artifacts: []certificate.Artifact{{Store: "docs", Outcome: certificate.Verified, Level: certificate.LevelPhysical}}}, "", 100)
	if b.Len() != 0 {
		t.Errorf("an all-VERIFIED certificate got explanations:\n%s", b.String())
	}
}
