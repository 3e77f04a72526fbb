package saga_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/subject"
)

// An erasure whose reason (or scope) would put personal data into its
// journal, certificate or log is refused before anything is written.
func TestEraseRefusesPersonalDataInTheReason(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 3, 2)
	const id = "Customer 4711 Kowalski" // no pattern matches it: only the subject check can
	f.put(t, "extra-1", id, "a document of customer number four seven one one", nil)
	k, _ := f.dir.Keyer.Key(f.dir.Config.Scope, id)
	v, err := f.ledger.View(ctx, f.dir.Config.Scope, k)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := lineage.BuildTrace(v)
	if err != nil {
		t.Fatal(err)
	}
	stores := map[string]store.Store{"docs": f.rawD, "vectors": f.rawV}
	var logBuf strings.Builder
	for _, tc := range []struct{ reason, kind string }{
		{"DSR for customer 4711 kowalski", subject.KindSubject},
		{"CUSTOMER 4711 KOWALSKI.", subject.KindSubject},
		{"asked by " + f.corpus.People[0].ID, subject.KindEmail},
		{"callback +44 20 7946 0000", subject.KindPhone},
	} {
		_, err := saga.Run(ctx, &saga.Erasure{Dir: f.dir, Ledger: f.ledger, Stores: stores, Trace: tr, Reason: tc.reason,
			Log: slog.New(slog.NewTextHandler(&logBuf, nil))})
		var pe *subject.PersonalDataError
		if !errors.As(err, &pe) || pe.Kind != tc.kind || !errors.Is(err, subject.ErrPersonalData) {
			t.Errorf("reason %q: %v, want a personal-data error of kind %q", tc.reason, err, tc.kind)
			continue
		}
		if strings.Contains(strings.ToLower(err.Error()), strings.ToLower(tc.reason)) {
			t.Errorf("the error echoes the reason: %v", err)
		}
	}
	if _, err := os.Stat(f.dir.ErasureDir(saga.ID(tr.ID))); !os.IsNotExist(err) {
		t.Errorf("a refused erasure left its directory (%v)", err)
	}
	if logBuf.Len() != 0 {
		t.Errorf("a refused erasure logged: %s", logBuf.String())
	}
	// The batch path refuses the same way.
	if _, err := saga.RunBatch(ctx, []*saga.Erasure{{Dir: f.dir, Ledger: f.ledger, Stores: stores, Trace: tr, Reason: "re " + id}}); !errors.Is(err, subject.ErrPersonalData) {
		t.Errorf("batch: %v, want a personal-data error", err)
	}
	// A ticket reference goes through, and the certificate carries it.
	res, err := saga.Run(ctx, &saga.Erasure{Dir: f.dir, Ledger: f.ledger, Stores: stores, Trace: tr, Reason: "DSR-4711"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Statement.Predicate.Reason != "DSR-4711" {
		t.Errorf("certificate reason %q", res.Statement.Predicate.Reason)
	}
}
