// Package storetest is the conformance suite every store adapter runs
// against its real backend.
//
// An adapter's test calls Run with a Harness that opens fresh stores and
// writes records. The suite checks the contract of package store: idempotent
// deletes, logical probes that see a live record by every declared path and
// miss a deleted one, and, for adapters that declare a physical probe, that
// the probe has power (it finds the record's bytes before deletion, and after
// a native delete where the backend is known to leave them) and that
// Delete+Reclaim leaves none of them while other records stay findable.
package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/amnesia-dev/amnesia/store"
)

// Harness adapts the suite to one adapter.
type Harness struct {
	// Open returns a new, empty store. The suite closes it.
	Open func(t *testing.T) store.Store
	// Put writes a record under key, tagged with subjectTag. Content must be
	// derived from seed, long enough to yield needles, and distinct per seed.
	Put func(t *testing.T, s store.Store, key, subjectTag string, seed int)
	// NativeDelete, if set, deletes key the way an application would
	// without amnesia (no overwrite, no reclaim).
	NativeDelete func(t *testing.T, s store.Store, key string)
	// NativeLeavesBytes says the backend is known to keep a natively
	// deleted record's bytes; the suite then requires the physical probe to
	// find them.
	NativeLeavesBytes bool
	// ReclaimReportsStateOnly says the adapter implements store.Reclaimer
	// only to report its residue state (a managed store that cannot be made
	// to reclaim, e.g. UNVERIFIED-managed), so it does not declare
	// store.CapReclaim.
	ReclaimReportsStateOnly bool
}

// Run runs the conformance suite.
func Run(t *testing.T, h Harness) {
	t.Run("Info", func(t *testing.T) { testInfo(t, h) })
	t.Run("DeleteIsIdempotent", func(t *testing.T) { testDelete(t, h) })
	t.Run("LogicalProbe", func(t *testing.T) { testLogical(t, h) })
	t.Run("PhysicalProbe", func(t *testing.T) { testPhysical(t, h) })
	t.Run("NativeDeleteResidue", func(t *testing.T) { testNative(t, h) })
	t.Run("CancelledContext", func(t *testing.T) { testCancel(t, h) })
}

func open(t *testing.T, h Harness) store.Store {
	t.Helper()
	s := h.Open(t)
	t.Cleanup(func() { s.Close() })
	return s
}

func testInfo(t *testing.T, h Harness) {
	s := open(t, h)
	info := s.Info()
	if info.Name == "" || info.Type == "" {
		t.Fatalf("Info() = %+v: name and type are required", info)
	}
	if !info.Has(store.CapDelete) || !info.Has(store.CapProbeByID) {
		t.Fatalf("Info().Capabilities = %v: every adapter must delete and probe by id", info.Capabilities)
	}
	check := func(c store.Capability, ok bool) {
		if info.Has(c) != ok {
			t.Errorf("capability %s declared=%v but interface implemented=%v", c, info.Has(c), ok)
		}
	}
	_, rec := s.(store.Reclaimer)
	check(store.CapReclaim, rec && !h.ReclaimReportsStateOnly)
	_, phys := s.(store.PhysicalProber)
	_, ev := s.(store.EvidenceReader)
	check(store.CapProbePhysical, phys && ev)
}

func evidence(t *testing.T, s store.Store, keys ...string) map[string]*store.Evidence {
	t.Helper()
	er, ok := s.(store.EvidenceReader)
	if !ok {
		return map[string]*store.Evidence{}
	}
	ev, err := er.ReadEvidence(context.Background(), keys)
	if err != nil {
		t.Fatalf("ReadEvidence: %v", err)
	}
	return ev
}

func probe(t *testing.T, s store.Store, ev map[string]*store.Evidence, keys ...string) []store.LogicalResult {
	t.Helper()
	res, err := s.ProbeLogical(context.Background(), keys, ev)
	if err != nil {
		t.Fatalf("ProbeLogical: %v", err)
	}
	if len(res) != len(keys) {
		t.Fatalf("ProbeLogical returned %d results for %d keys", len(res), len(keys))
	}
	return res
}

func testDelete(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h)
	h.Put(t, s, "rec-a", "subject-1", 1)
	h.Put(t, s, "rec-b", "subject-2", 2)
	for i := 0; i < 2; i++ {
		if err := s.Delete(ctx, []string{"rec-a", "rec-missing"}); err != nil {
			t.Fatalf("Delete (round %d): %v", i+1, err)
		}
	}
	res := probe(t, s, nil, "rec-a", "rec-b")
	if res[0].ByID {
		t.Errorf("rec-a still found by id after Delete")
	}
	if !res[1].ByID {
		t.Errorf("rec-b (not deleted) not found by id: Delete removed too much")
	}
	if ev := evidence(t, s, "rec-a", "rec-missing"); len(ev) != 0 {
		t.Errorf("ReadEvidence returned %d entries for deleted/missing keys, want 0", len(ev))
	}
}

func testLogical(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h)
	for i, k := range []string{"rec-a", "rec-b", "rec-c"} {
		h.Put(t, s, k, "subject-x", 10+i)
	}
	ev := evidence(t, s, "rec-a")
	info := s.Info()
	before := probe(t, s, ev, "rec-a")[0]
	want := map[store.Capability]bool{store.CapProbeByID: before.ByID, store.CapProbeByFilter: before.ByFilter, store.CapProbeBySimilarity: before.BySimilarity}
	for c, found := range want {
		if info.Has(c) && !found {
			t.Errorf("%s declared but the live record was not found that way (methods %v)", c, before.Methods)
		}
	}
	if err := s.Delete(ctx, []string{"rec-a"}); err != nil {
		t.Fatal(err)
	}
	after := probe(t, s, ev, "rec-a", "rec-b")
	if after[0].Found() {
		t.Errorf("deleted record still returned: %+v", after[0])
	}
	if !after[1].ByID {
		t.Errorf("rec-b not found after deleting rec-a")
	}
}

func scan(t *testing.T, s store.Store, ev map[string]*store.Evidence) store.ScanReport {
	t.Helper()
	rep, err := s.(store.PhysicalProber).ProbePhysical(context.Background(), store.NewNeedleSet(ev))
	if err != nil {
		t.Fatalf("ProbePhysical: %v", err)
	}
	if rep.Files == 0 || rep.Bytes == 0 {
		t.Fatalf("ProbePhysical scanned %d files, %d bytes: it looked at nothing", rep.Files, rep.Bytes)
	}
	return rep
}

func testPhysical(t *testing.T, h Harness) {
	ctx := context.Background()
	s := open(t, h)
	if !s.Info().Has(store.CapProbePhysical) {
		t.Skip("adapter declares no physical probe")
	}
	h.Put(t, s, "rec-a", "subject-1", 21)
	h.Put(t, s, "rec-b", "subject-2", 22)
	// Evidence is read per record: a batch is the set being deleted, and
	// rec-b stays.
	ev := evidence(t, s, "rec-a")
	ev["rec-b"] = evidence(t, s, "rec-b")["rec-b"]
	for _, k := range []string{"rec-a", "rec-b"} {
		if ev[k] == nil || len(ev[k].Needles) == 0 {
			t.Fatalf("no needles for %s: the physical probe would have no power", k)
		}
	}
	before := scan(t, s, ev)
	if before.Found["rec-a"] == 0 || before.Found["rec-b"] == 0 {
		t.Fatalf("before deletion the probe found %v: it has no power", before.Found)
	}
	if err := s.Delete(ctx, []string{"rec-a"}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ { // Reclaim must be idempotent
		if _, err := s.(store.Reclaimer).Reclaim(ctx); err != nil {
			t.Fatalf("Reclaim (round %d): %v", i+1, err)
		}
	}
	after := scan(t, s, ev)
	if n := after.Found["rec-a"]; n != 0 {
		t.Errorf("after Delete+Reclaim %d needles of rec-a are still in the store's files", n)
	}
	if after.Found["rec-b"] == 0 {
		t.Errorf("rec-b (live) no longer found: the scan went blind, so its zero for rec-a proves nothing")
	}
}

func testNative(t *testing.T, h Harness) {
	if h.NativeDelete == nil {
		t.Skip("no native delete for this adapter")
	}
	s := open(t, h)
	if !s.Info().Has(store.CapProbePhysical) {
		t.Skip("adapter declares no physical probe")
	}
	h.Put(t, s, "rec-a", "subject-1", 31)
	ev := evidence(t, s, "rec-a")
	h.NativeDelete(t, s, "rec-a")
	if res := probe(t, s, ev, "rec-a")[0]; res.ByID {
		t.Fatalf("native delete did not delete")
	}
	rep := scan(t, s, ev)
	if h.NativeLeavesBytes && rep.Found["rec-a"] == 0 {
		t.Errorf("native delete is known to leave bytes, but the probe found none of %d needles", len(ev["rec-a"].Needles))
	}
}

func testCancel(t *testing.T, h Harness) {
	s := open(t, h)
	h.Put(t, s, "rec-a", "subject-1", 41)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.Delete(ctx, []string{"rec-a"})
	if err == nil || !errors.Is(err, context.Canceled) {
		t.Errorf("Delete with a cancelled context = %v, want context.Canceled", err)
	}
	if res := probe(t, s, nil, "rec-a")[0]; !res.ByID {
		t.Errorf("a cancelled Delete still deleted")
	}
}
