package service_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/internal/service"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
)

// TestRecordRefusesErasedSubject: through the API, a record of a subject
// whose data was erased is a 409 conflict unless it says new_consent; the
// consent is recorded under the calling token's id.
func TestRecordRefusesErasedSubject(t *testing.T) {
	f := newFixture(t, "")
	ctx := context.Background()
	f.ingest(t, "d1", alice)
	sd, err := state.Open(f.state)
	if err != nil {
		t.Fatal(err)
	}
	l, err := lineage.OpenExisting(ctx, sd.LedgerSpec())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	a, err := l.Lookup(ctx, "default", "docs", "d1")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.MarkErased(ctx, []lineage.ErasureMark{{Artifact: a.ID, Erasure: "er-test", Outcome: "VERIFIED"}}); err != nil {
		t.Fatal(err)
	}
	text := "new text"
	rec := service.LineageRecord{Store: "docs", Key: "d9", Kind: "source", Subject: alice, Content: &text}
	_, err = f.svc.Record(ctx, f.capture, "", []service.LineageRecord{rec})
	if !errors.Is(err, service.ErrConflict) || !strings.Contains(err.Error(), "new_consent") || strings.Contains(err.Error(), alice) {
		t.Fatalf("record of an erased subject: %v, want a conflict naming new_consent", err)
	}
	rec.NewConsent = true
	if res, err := f.svc.Record(ctx, f.capture, "", []service.LineageRecord{rec}); err != nil || res.Recorded != 1 {
		t.Fatalf("record with new_consent: %+v, %v", res, err)
	}
	k, _ := sd.Keyer.Key("default", alice)
	cs, err := l.(lineage.SubjectGuard).Consents(ctx, "default", k)
	if err != nil || len(cs) != 1 || cs[0].By != "api token "+f.capture.TokenID {
		t.Fatalf("consents = %+v, %v", cs, err)
	}
}
