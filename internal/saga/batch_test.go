package saga_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
)

// readCountingStore counts the evidence reads and byte scans of a real
// adapter, with the keys each was for; onDelete, when set, runs before each
// Delete.
type readCountingStore struct {
	*sqlitedoc.Store
	reads    [][]string
	scans    [][]string
	sets     []*store.NeedleSet // the set of each byte scan
	deletes  [][]string
	onDelete func(ctx context.Context) error
}

func (c *readCountingStore) ReadEvidence(ctx context.Context, keys []string) (map[string]*store.Evidence, error) {
	c.reads = append(c.reads, append([]string(nil), keys...))
	return c.Store.ReadEvidence(ctx, keys)
}

func (c *readCountingStore) ProbePhysical(ctx context.Context, set *store.NeedleSet) (store.ScanReport, error) {
	c.scans = append(c.scans, set.Keys())
	c.sets = append(c.sets, set)
	return c.Store.ProbePhysical(ctx, set)
}

func (c *readCountingStore) Delete(ctx context.Context, keys []string) error {
	c.deletes = append(c.deletes, append([]string(nil), keys...))
	if c.onDelete != nil {
		if err := c.onDelete(ctx); err != nil {
			return err
		}
	}
	return c.Store.Delete(ctx, keys)
}

func planKeys(tr *lineage.Trace, st string) []string {
	for _, p := range tr.Plan {
		if p.Store == st {
			return p.Delete
		}
	}
	return nil
}

// journalKeys returns the keys of the finished step's journaled result
// field (a map keyed by record key).
func journalKeys(t *testing.T, path, step, field string) []string {
	t.Helper()
	for _, e := range readJournal(t, path) {
		var res map[string]json.RawMessage
		if e.Step != step || e.Phase != "done" || json.Unmarshal(e.Result, &res) != nil {
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(res[field], &m); err != nil {
			t.Fatal(err)
		}
		var out []string
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	t.Fatalf("%s: no finished %s", path, step)
	return nil
}

func subset(a, of []string) bool {
	in := map[string]bool{}
	for _, k := range of {
		in[k] = true
	}
	for _, k := range a {
		if !in[k] {
			return false
		}
	}
	return true
}

// A batch reads each store's evidence once, deletes once, and byte-scans it
// once before deleting and once after reclaim, for every erasure; each erasure's
// journal and certificate keep only its own records, with the outcomes a
// single erasure of the same person gets.
func TestBatchSharesEvidenceAndScans(t *testing.T) {
	people := []int{0, 2, 4}
	f := newFixture(t, 6, 3)
	docs := &readCountingStore{Store: f.rawD}
	stores := map[string]store.Store{"docs": docs, "vectors": f.rawV}
	var es []*saga.Erasure
	var all []string
	for _, p := range people {
		e := &saga.Erasure{Dir: f.dir, Ledger: f.ledger, Stores: stores, Trace: f.trace(t, p), Reason: "BATCH-1"}
		es = append(es, e)
		all = append(all, planKeys(e.Trace, "docs")...)
	}
	sort.Strings(all)
	res, err := saga.RunBatch(context.Background(), es)
	if err != nil {
		t.Fatal(err)
	}
	if len(docs.reads) != 1 || len(docs.scans) != 2 || len(docs.deletes) != 1 {
		t.Fatalf("docs: %d evidence reads, %d byte scans, %d deletes for a batch of %d; want 1, 2 and 1", len(docs.reads), len(docs.scans), len(docs.deletes), len(es))
	}
	if got := sorted(append([]string(nil), docs.deletes[0]...)); !reflect.DeepEqual(got, all) {
		t.Errorf("the batch's delete was for %d keys, want the %d of every erasure", len(got), len(all))
	}
	got := append([]string(nil), docs.reads[0]...)
	sort.Strings(got)
	if !reflect.DeepEqual(got, all) {
		t.Errorf("the batch's evidence read was for %d keys, want the %d of every erasure", len(got), len(all))
	}
	for i, s := range docs.scans {
		if !reflect.DeepEqual(s, all) {
			t.Errorf("byte scan %d was for %d keys, want the %d of every erasure", i, len(s), len(all))
		}
	}
	if docs.sets[0] != docs.sets[1] {
		t.Errorf("the scan after reclaim built its needle set again, for the same needles as the scan before deletion")
	}

	// The same people erased one at a time, on a fixture built the same way.
	g := newFixture(t, 6, 3)
	for i, p := range people {
		one, err := saga.Run(context.Background(), &saga.Erasure{Dir: g.dir, Ledger: g.ledger, Stores: map[string]store.Store{"docs": g.rawD, "vectors": g.rawV}, Trace: g.trace(t, p), Reason: "ONE"})
		if err != nil {
			t.Fatal(err)
		}
		bp, op := res[i].Statement.Predicate, one.Statement.Predicate
		if !bp.Complete || bp.Counts.VerifiedPhysical == 0 || bp.Counts != op.Counts {
			t.Errorf("person %d: batch complete=%v counts %+v; alone %+v", p, bp.Complete, bp.Counts, op.Counts)
		}
		own := planKeys(es[i].Trace, "docs")
		j := filepath.Join(f.dir.ErasureDir(res[i].ID), "journal.jsonl")
		for _, step := range []struct{ name, field string }{{"evidence:docs", "records"}, {"probe:docs", "logical"}} {
			if ks := journalKeys(t, j, step.name, step.field); !reflect.DeepEqual(ks, own) {
				t.Errorf("person %d: journal %s holds %d keys, want its own %d", p, step.name, len(ks), len(own))
			}
		}
		if ks := journalKeys(t, j, "probe:docs", "found"); !subset(ks, own) {
			t.Errorf("person %d: journal probe:docs found keys %v not all its own", p, ks)
		}
		for _, a := range bp.Artifacts {
			if a.Store == "docs" && a.Measurement != nil && a.Measurement.Physical != nil && a.Measurement.Physical.FoundBefore == 0 {
				t.Errorf("person %d: artifact %s not found before deletion", p, a.ID)
			}
		}
	}
}

func sorted(s []string) []string {
	sort.Strings(s)
	return s
}

// A batch stopped at its delete resumes in a new batch that also takes a new
// erasure: the erasures that journaled their evidence are left out of the new
// batch's evidence read, one delete takes the records of all three, and every
// erasure ends complete.
func TestBatchResumesSharedReads(t *testing.T) {
	f := newFixture(t, 6, 3)
	docs := &readCountingStore{Store: f.rawD}
	stores := map[string]store.Store{"docs": docs, "vectors": f.rawV}
	erasures := func(people ...int) []*saga.Erasure {
		var es []*saga.Erasure
		for _, p := range people {
			es = append(es, &saga.Erasure{Dir: f.dir, Ledger: f.ledger, Stores: stores, Trace: f.trace(t, p), Reason: "BATCH-2"})
		}
		return es
	}
	ctx, cancel := context.WithCancel(context.Background())
	docs.onDelete = func(ctx context.Context) error { // the batch's delete: stop it there
		cancel()
		return ctx.Err()
	}
	if _, err := saga.RunBatch(ctx, erasures(1, 3)); err == nil {
		t.Fatal("a cancelled batch returned no error")
	}
	if len(docs.reads) != 1 || len(docs.deletes) != 1 {
		t.Fatalf("first batch: %d evidence reads and %d deletes of docs, want 1 and 1", len(docs.reads), len(docs.deletes))
	}
	docs.onDelete, docs.reads, docs.scans, docs.sets, docs.deletes = nil, nil, nil, nil, nil
	es := erasures(1, 3, 5)
	res, err := saga.RunBatch(context.Background(), es)
	if err != nil {
		t.Fatal(err)
	}
	third := sorted(append([]string(nil), planKeys(es[2].Trace, "docs")...))
	if len(docs.reads) != 1 {
		t.Fatalf("resumed batch: %d evidence reads of docs, want 1", len(docs.reads))
	}
	if got := sorted(append([]string(nil), docs.reads[0]...)); !reflect.DeepEqual(got, third) {
		t.Errorf("resumed batch read evidence for %d keys, want only the new erasure's %d", len(got), len(third))
	}
	// Its scan before deletion was for the new erasure's needles, the one
	// after reclaim for all three erasures': a needle set each.
	if len(docs.sets) != 2 || docs.sets[0] == docs.sets[1] || docs.sets[1].Len() <= docs.sets[0].Len() {
		t.Errorf("resumed batch: %d byte scans; want 2, the second with a set of its own, larger than the first's", len(docs.sets))
	}
	var all []string
	for _, e := range es {
		all = append(all, planKeys(e.Trace, "docs")...)
	}
	if len(docs.deletes) != 1 || !reflect.DeepEqual(sorted(docs.deletes[0]), sorted(all)) {
		t.Errorf("resumed batch: deletes %v, want one of the %d keys of all three erasures", docs.deletes, len(all))
	}
	for i, r := range res {
		p := r.Statement.Predicate
		if !p.Complete || p.Counts.VerifiedPhysical == 0 || p.Counts.Residual != 0 {
			t.Errorf("erasure %d: complete=%v counts=%+v", i, p.Complete, p.Counts)
		}
	}
}

// When the batch's shared delete fails, each erasure deletes its own records
// and gets its own outcome: here the store recovers, and all end complete.
func TestBatchSharedDeleteFailsThenEachDeletes(t *testing.T) {
	f := newFixture(t, 6, 3)
	docs := &readCountingStore{Store: f.rawD}
	stores := map[string]store.Store{"docs": docs, "vectors": f.rawV}
	var es []*saga.Erasure
	for _, p := range []int{0, 1, 2} {
		es = append(es, &saga.Erasure{Dir: f.dir, Ledger: f.ledger, Stores: stores, Trace: f.trace(t, p), Reason: "BATCH-3"})
	}
	n := 0
	docs.onDelete = func(context.Context) error {
		if n++; n == 1 {
			return errors.New("store briefly down")
		}
		return nil
	}
	res, err := saga.RunBatch(context.Background(), es)
	if err != nil {
		t.Fatal(err)
	}
	if len(docs.deletes) != 1+len(es) {
		t.Errorf("%d deletes, want the failed shared one and one per erasure (%d)", len(docs.deletes), 1+len(es))
	}
	for i, r := range res {
		p := r.Statement.Predicate
		if !p.Complete || p.Counts.VerifiedPhysical == 0 || p.Counts.Residual != 0 {
			t.Errorf("erasure %d: complete=%v counts=%+v", i, p.Complete, p.Counts)
		}
		if own := sorted(append([]string(nil), planKeys(es[i].Trace, "docs")...)); !reflect.DeepEqual(sorted(docs.deletes[1+i]), own) {
			t.Errorf("erasure %d deleted %d keys alone, want its own %d", i, len(docs.deletes[1+i]), len(own))
		}
	}
}

// overlapStore records how many logical probes (one per erasure, in the
// probe-to-publish phase) run at once: each waits, up to a second, for
// another to start. The probe of a key in failFor calls cancel and returns
// the context's error.
type overlapStore struct {
	*sqlitedoc.Store
	mu       sync.Mutex
	inside   int
	most     int
	started  chan struct{}
	failFor  map[string]bool
	cancel   func()
	failures int
}

func (o *overlapStore) ProbeLogical(ctx context.Context, keys []string, ev map[string]*store.Evidence) ([]store.LogicalResult, error) {
	o.mu.Lock()
	o.inside++
	o.most = max(o.most, o.inside)
	fail := len(keys) > 0 && o.failFor[keys[0]]
	if fail {
		o.failures++
	}
	o.mu.Unlock()
	select {
	case o.started <- struct{}{}: // another probe is waiting for this one
	case <-o.started: // this one was waited for
	case <-time.After(time.Second):
	}
	defer func() { o.mu.Lock(); o.inside--; o.mu.Unlock() }()
	if fail {
		o.cancel()
		return nil, ctx.Err()
	}
	return o.Store.ProbeLogical(ctx, keys, ev)
}

// A batch's erasures run their phases concurrently: the logical probes of
// different erasures overlap; every erasure still ends with the outcome it
// gets alone, its own certificate at its own log index, and the progress
// lines they share one writer for are whole lines. Run it with -race.
func TestBatchRunsErasuresConcurrently(t *testing.T) {
	const n = 12 // more than one round of saga's concurrent erasures
	f := newFixture(t, n, 2)
	docs := &overlapStore{Store: f.rawD, started: make(chan struct{})}
	stores := map[string]store.Store{"docs": docs, "vectors": f.rawV}
	var progress bytes.Buffer
	var es []*saga.Erasure
	for p := range n {
		es = append(es, &saga.Erasure{Dir: f.dir, Ledger: f.ledger, Stores: stores, Trace: f.trace(t, p), Reason: "BATCH-C", Progress: &progress})
	}
	res, err := saga.RunBatch(context.Background(), es)
	if err != nil {
		t.Fatal(err)
	}
	if docs.most < 2 {
		t.Errorf("at most %d logical probe ran at once in a batch of %d: the erasures did not overlap", docs.most, n)
	}
	idx := map[int64]bool{}
	for i, r := range res {
		p := r.Statement.Predicate
		if !p.Complete || p.Counts.VerifiedPhysical == 0 || p.Counts.Residual != 0 {
			t.Errorf("erasure %d: complete=%v counts=%+v", i, p.Complete, p.Counts)
		}
		b, err := os.ReadFile(r.CertificatePath)
		if err != nil {
			t.Fatalf("erasure %d: %v", i, err)
		}
		chk, err := certificate.VerifyBundle(context.Background(), b, f.trusted())
		if err != nil {
			t.Fatalf("erasure %d: certificate does not verify: %v", i, err)
		}
		if idx[chk.LogIndex] {
			t.Errorf("erasure %d: log index %d given twice", i, chk.LogIndex)
		}
		idx[chk.LogIndex] = true
	}
	ids := map[string]bool{}
	for _, r := range res {
		ids[r.ID] = true
	}
	lines := strings.Split(strings.TrimSuffix(progress.String(), "\n"), "\n")
	starts := 0
	for _, l := range lines {
		// "erasure <id> of …" or "  <id> <step> done (…)": whole lines,
		// each naming its erasure.
		f := strings.Fields(l)
		switch {
		case len(f) > 3 && f[0] == "erasure" && ids[f[1]] && strings.Contains(l, " artifacts in "):
			starts++
		case len(f) > 2 && strings.HasPrefix(l, "  ") && ids[f[0]] && (f[2] == "done" || f[2] == "FAILED:"):
		default:
			t.Errorf("progress line %q is not a whole line naming its erasure", l)
		}
	}
	if starts != n {
		t.Errorf("%d progress lines start an erasure, want %d:\n%s", starts, n, progress.String())
	}
}

// A batch cut short in a concurrent phase (its context cancelled in one
// erasure's probe, while others run theirs) returns a BatchError of the
// cancellation; run again, every erasure resumes from its journal and ends
// complete.
func TestBatchConcurrentFailureResumes(t *testing.T) {
	const n = 10
	f := newFixture(t, n, 2)
	ctx, cancel := context.WithCancel(context.Background())
	docs := &overlapStore{Store: f.rawD, started: make(chan struct{}), failFor: map[string]bool{}, cancel: cancel}
	stores := map[string]store.Store{"docs": docs, "vectors": f.rawV}
	var es []*saga.Erasure
	for p := range n {
		es = append(es, &saga.Erasure{Dir: f.dir, Ledger: f.ledger, Stores: stores, Trace: f.trace(t, p), Reason: "BATCH-F"})
	}
	bad := es[5]
	for _, k := range planKeys(bad.Trace, "docs") {
		docs.failFor[k] = true
	}
	_, err := saga.RunBatch(ctx, es)
	var be *saga.BatchError
	if !errors.As(err, &be) || !errors.Is(err, context.Canceled) {
		t.Fatalf("batch error %v, want a BatchError of the cancellation", err)
	}
	if docs.failures != 1 {
		t.Fatalf("%d probes cancelled, want 1", docs.failures)
	}
	docs.failFor = nil
	res, err := saga.RunBatch(context.Background(), es)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		p := r.Statement.Predicate
		if !p.Complete || p.Counts.Residual != 0 {
			t.Errorf("erasure %d after the rerun: complete=%v counts=%+v", i, p.Complete, p.Counts)
		}
	}
}
