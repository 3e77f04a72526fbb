package saga_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/sqlitevec"
)

// failingDelete is a real vector store whose Delete fails.
type failingDelete struct{ *sqlitevec.Store }

var errBoom = errors.New("boom")

func (failingDelete) Delete(context.Context, []string) error { return errBoom }

// failingSuppress is the real ledger whose Suppress fails while fail is set.
type failingSuppress struct {
	*sqliteledger.Ledger
	fail bool
}

func (l *failingSuppress) Suppress(ctx context.Context, erasure string, ids []string) error {
	if l.fail {
		return errBoom
	}
	return l.Ledger.Suppress(ctx, erasure, ids)
}

// SuppressLogged is the path the saga takes with a ledger that keeps the
// log (lineage.LoggedSuppressor): it fails the same way.
func (l *failingSuppress) SuppressLogged(ctx context.Context, erasure string, ids []string, leaf []byte) (int64, error) {
	if l.fail {
		return 0, errBoom
	}
	return l.Ledger.SuppressLogged(ctx, erasure, ids, leaf)
}

// A per-store step that fails is the store's failure (the erasure goes on
// and its certificate is incomplete: Result.Err is an IncompleteError); a
// step of the whole erasure that fails stops it with a *StepError without a
// store, left open so that the same erasure runs it again.
func TestStepErrorsAreTyped(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 4, 3)

	tr := f.trace(t, 1)
	res, err := f.erase(t, tr, map[string]store.Store{"docs": f.rawD, "vectors": failingDelete{f.rawV}}, nil)
	if err != nil {
		t.Fatalf("a failed delete in one store stopped the erasure: %v", err)
	}
	var ie *saga.IncompleteError
	if res.Complete() || !errors.Is(res.Err(), saga.ErrIncomplete) || !errors.As(res.Err(), &ie) || ie.Erasure != res.ID || ie.Certificate != res.CertificatePath {
		t.Fatalf("complete %v, Err %v; want an IncompleteError of %s", res.Complete(), res.Err(), res.ID)
	}
	for _, s := range res.Statement.Predicate.DeclaredScope {
		if s.Name == "vectors" && (s.Residue != "UNVERIFIED-store-failed" || s.Evidence != "failed at delete: boom") {
			t.Errorf("vectors: residue %q, evidence %q", s.Residue, s.Evidence)
		}
	}

	tr = f.trace(t, 2)
	l := &failingSuppress{Ledger: f.ledger, fail: true}
	e := &saga.Erasure{Dir: f.dir, Ledger: l, Stores: map[string]store.Store{"docs": f.rawD, "vectors": f.rawV}, Trace: tr, Reason: "TICKET-2"}
	_, err = saga.Run(ctx, e)
	var se *saga.StepError
	if !errors.As(err, &se) || se.Step != "suppress" || se.Store != "" || !errors.Is(err, errBoom) || err.Error() != "suppress: boom" {
		t.Fatalf("failed suppress: %v (%#v), want StepError{suppress, no store}", err, se)
	}
	l.fail = false
	res, err = saga.Run(ctx, e)
	if err != nil || !res.Complete() || res.Err() != nil || !res.Resumed {
		t.Fatalf("the same erasure after suppress works again: %v, %+v", err, res)
	}
}

// scanDown is a real vector store whose byte scan finds the store
// unreachable on its failAt-th call.
type scanDown struct {
	*sqlitevec.Store
	calls, failAt int
}

func (s *scanDown) ProbePhysical(ctx context.Context, set *store.NeedleSet) (store.ScanReport, error) {
	s.calls++
	if s.calls == s.failAt {
		return store.ScanReport{}, fmt.Errorf("read the store's files: %w", store.ErrUnavailable)
	}
	return s.Store.ProbePhysical(ctx, set)
}

// A store that becomes unreachable during the probe's byte scan (its
// volume gone for a moment) pauses the erasure, as it does during the
// logical probe; the same erasure run again probes it and finishes.
func TestUnreachableDuringByteScanPauses(t *testing.T) {
	f := newFixture(t, 4, 3)
	tr := f.trace(t, 1)
	vs := &scanDown{Store: f.rawV, failAt: 2} // 1: the evidence step's scan; 2: the probe's
	stores := map[string]store.Store{"docs": f.rawD, "vectors": vs}
	_, err := f.erase(t, tr, stores, nil)
	var pe *saga.PendingError
	if !errors.As(err, &pe) || pe.Store != "vectors" || pe.Step != "probe" || pe.State != "PENDING-store-unreachable" {
		t.Fatalf("scan of an unreachable store: %v, want a pause of vectors at probe", err)
	}
	res, err := f.erase(t, tr, stores, nil)
	if err != nil || !res.Complete() {
		t.Fatalf("the same erasure once the store is back: %v, %+v", err, res)
	}
	for _, a := range res.Statement.Predicate.Artifacts {
		if a.Store == "vectors" && a.Outcome != "VERIFIED" {
			t.Errorf("vector artifact %s: %s (%s)", a.ID, a.Outcome, a.Reason)
		}
	}
}

// An erasure that stopped before its suppress step was done changed
// nothing: run again after the subject got a new record, its trace is
// stale and it is refused, as a new erasure would be, instead of erasing
// the old trace and leaving the new record.
func TestJournalBeforeSuppressChecksTheTrace(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 4, 3)
	tr := f.trace(t, 2)
	l := &failingSuppress{Ledger: f.ledger, fail: true}
	e := &saga.Erasure{Dir: f.dir, Ledger: l, Stores: map[string]store.Store{"docs": f.rawD, "vectors": f.rawV}, Trace: tr, Reason: "TICKET-3"}
	if _, err := saga.Run(ctx, e); !errors.Is(err, errBoom) {
		t.Fatalf("failed suppress: %v", err)
	}
	f.put(t, "late-doc", f.corpus.People[2].ID, "A late document of this person, captured after the erasure stopped.", nil)
	l.fail = false
	if _, err := saga.Run(ctx, e); !errors.Is(err, saga.ErrStaleTrace) {
		t.Fatalf("the same erasure after a new capture: %v, want ErrStaleTrace", err)
	}
	if r, _ := f.rawD.Get(ctx, tr.Plan[0].Delete[0]); r == nil {
		t.Error("a refused erasure deleted data")
	}
}

// unseenReclaim is a real vector store whose reclaim reports bytes the
// byte scan cannot see (as Chroma's unmerged full-text index does).
type unseenReclaim struct{ *sqlitevec.Store }

func (u unseenReclaim) Reclaim(ctx context.Context) (store.ReclaimReport, error) {
	rep, err := u.Store.Reclaim(ctx)
	rep.State, rep.Evidence, rep.Unseen = "UNVERIFIED-test-index", "a test index keeps the records' tokens", true
	return rep, err
}

// A store whose reclaim reports unseen bytes gets no VERIFIED(physical)
// record, though its byte scan finds nothing: the reason names the state.
// The other store is not affected.
func TestUnseenResidueLimitsTheLevel(t *testing.T) {
	f := newFixture(t, 4, 3)
	tr := f.trace(t, 1)
	res, err := f.erase(t, tr, map[string]store.Store{"docs": f.rawD, "vectors": unseenReclaim{f.rawV}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	docsPhysical, vectors := 0, 0
	for _, a := range res.Statement.Predicate.Artifacts {
		switch a.Store {
		case "vectors":
			vectors++
			if a.Level == "physical" || !strings.Contains(a.Reason, "UNVERIFIED-test-index") {
				t.Errorf("vector artifact %s: %s %s (%s), want no physical level, for the unseen state", a.ID, a.Outcome, a.Level, a.Reason)
			}
		case "docs":
			if a.Level == "physical" {
				docsPhysical++
			}
		}
	}
	if vectors == 0 || docsPhysical == 0 {
		t.Fatalf("%d vector artifacts, %d docs artifacts physical: the test proves nothing", vectors, docsPhysical)
	}
}

// partialScan is a real vector store whose byte scan reports that it could
// not read part of the store's files (as PostgreSQL's does without the
// right to list pg_wal).
type partialScan struct{ *sqlitevec.Store }

func (p partialScan) ProbePhysical(ctx context.Context, set *store.NeedleSet) (store.ScanReport, error) {
	rep, err := p.Store.ProbePhysical(ctx, set)
	rep.Partial = "the test's log files not scanned"
	return rep, err
}

// A scan that did not read all of the store's files gives no record the
// physical level, though it found each record's bytes before deletion and
// none after: the reason names what was not scanned.
func TestPartialScanIsNotPhysical(t *testing.T) {
	f := newFixture(t, 4, 3)
	tr := f.trace(t, 1)
	res, err := f.erase(t, tr, map[string]store.Store{"docs": f.rawD, "vectors": partialScan{f.rawV}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	vectors := 0
	for _, a := range res.Statement.Predicate.Artifacts {
		if a.Store != "vectors" {
			continue
		}
		vectors++
		if a.Level == "physical" || !strings.Contains(a.Reason, "the test's log files not scanned") {
			t.Errorf("vector artifact %s: %s %s (%s), want no physical level, naming what was not scanned", a.ID, a.Outcome, a.Level, a.Reason)
		}
	}
	if vectors == 0 {
		t.Fatal("the trace has no vector artifacts: the test proves nothing")
	}
}
