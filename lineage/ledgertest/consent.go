package ledgertest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/subject"
)

// testSubjectGuard: an erasure marks its subjects (keyed), a consent
// recorded after it lifts the refusal, a later erasure refuses again; the
// consent is a hash-chained event holding no raw id.
func testSubjectGuard(t *testing.T, l lineage.Ledger) {
	ctx := context.Background()
	g, ok := l.(lineage.SubjectGuard)
	if !ok {
		t.Fatalf("%T is not a lineage.SubjectGuard", l)
	}
	k, _ := subject.NewKeyer(make([]byte, subject.PepperSize))
	const raw = "someone@example.org"
	owner, _ := k.Key("default", raw)
	other, _ := k.Key("default", "other@example.org")
	rec := func(key string, owner subject.Key) string {
		id := lineage.ArtifactID(k, "default", "docs", key)
		if err := l.Record(ctx, lineage.Artifact{ID: id, Scope: "default", Subject: owner, Kind: lineage.KindSource, Store: "docs", Key: key, Digest: "d"}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	state := func(s subject.Key, scope string) lineage.SubjectState {
		t.Helper()
		st, err := g.SubjectState(ctx, scope, s)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	a := rec("k1", owner)
	rec("k2", other)
	if st := state(owner, "default"); st.Refused() || st.ErasedSeq != 0 {
		t.Fatalf("before any erasure: %+v, want not refused", st)
	}
	if err := l.MarkErased(ctx, []lineage.ErasureMark{{Artifact: a, Erasure: "er-1", Outcome: "VERIFIED"}}); err != nil {
		t.Fatal(err)
	}
	st := state(owner, "default")
	if !st.Refused() || st.Erasure != "er-1" {
		t.Fatalf("after erasure: %+v, want refused by er-1", st)
	}
	if state(other, "default").Refused() || state(owner, "tenant-b").Refused() {
		t.Fatal("another subject, or the same subject in another scope, is refused")
	}
	if _, err := g.RecordConsent(ctx, lineage.Consent{Scope: "default", Subject: owner, At: time.Now(), By: raw}); err == nil {
		t.Fatal("a consent whose by holds an e-mail address was recorded")
	}
	if _, err := g.RecordConsent(ctx, lineage.Consent{Scope: "default", Subject: owner, At: time.Now()}); err == nil {
		t.Fatal("a consent without by was recorded")
	}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	c, err := g.RecordConsent(ctx, lineage.Consent{Scope: "default", Subject: owner, At: at, By: "signup-form"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Seq <= st.ErasedSeq {
		t.Fatalf("consent seq %d, erasure seq %d", c.Seq, st.ErasedSeq)
	}
	st = state(owner, "default")
	if st.Refused() || st.Consent == nil || st.Consent.By != "signup-form" || !st.Consent.At.Equal(at) || st.Consent.Subject != owner {
		t.Fatalf("after consent: %+v, want not refused, consent by signup-form at %s", st, at)
	}
	// A later erasure refuses again.
	b := rec("k3", owner)
	if err := l.MarkErased(ctx, []lineage.ErasureMark{{Artifact: b, Erasure: "er-2", Outcome: "VERIFIED"}}); err != nil {
		t.Fatal(err)
	}
	if st := state(owner, "default"); !st.Refused() || st.Erasure != "er-2" {
		t.Fatalf("after a second erasure: %+v, want refused by er-2", st)
	}
	cs, err := g.Consents(ctx, "default", owner)
	if err != nil || len(cs) != 1 || cs[0].Seq != c.Seq {
		t.Fatalf("Consents = %+v, %v; want the one consent", cs, err)
	}
	// The consent is an event of the chain, with the keyed subject only.
	if el, ok := l.(lineage.EventLog); ok {
		evs, err := el.Events(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lineage.VerifyChain(evs); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, e := range evs {
			if strings.Contains(e.Body, raw) {
				t.Errorf("event %d holds the raw subject id", e.Seq)
			}
			if e.Kind == "consent" && e.Seq == c.Seq {
				found = strings.Contains(e.Body, owner.String()) && strings.Contains(e.Body, "signup-form")
			}
		}
		if !found {
			t.Error("no consent event with the keyed subject and by")
		}
	} else {
		t.Log(errors.New("not an EventLog: chain not checked"))
	}
}
