package saga_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/store"
)

// Issue #13.7: the journal is fsynced once before each step whose effect
// must find the earlier results on disk (suppress, publish), not after each
// of its entries, nor before a delete: the evidence results a delete must
// not outrun are sealed, fsynced, with the evidence.
func TestJournalSyncsOnlyBeforeEffects(t *testing.T) {
	f := newFixture(t, 4, 3)
	tr := f.trace(t, 1)
	synced, stop := saga.JournalSyncs()
	defer stop()
	res, err := f.erase(t, tr, f.stores(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Complete() {
		t.Fatalf("erasure incomplete: %+v", res.Statement.Predicate.Counts)
	}
	want := []string{"begin suppress", "begin publish"}
	if got := synced(); !slices.Equal(got, want) {
		t.Fatalf("journal fsyncs after %q, want %q", got, want)
	}
	j := readJournal(t, filepath.Join(f.dir.ErasureDir(res.ID), "journal.jsonl"))
	if n := len(j); n != 28 {
		t.Fatalf("journal holds %d entries, want every step's begin and done (28)", n)
	}
}

// A new journal's name, and its erasure directory's name, are fsynced in
// their directories once, with the journal's first fsync (before suppress
// runs): a power loss after that cannot take the journal away while the
// ledger holds the subject suppressed.
func TestNewJournalSyncsItsDirectories(t *testing.T) {
	f := newFixture(t, 4, 3)
	tr := f.trace(t, 1)
	var events []string
	saga.OnJournalSyncDir(func(dir string) { events = append(events, "dir "+dir) })
	saga.OnJournalSyncFile(func(path string) { events = append(events, "file "+path) })
	_, stop := saga.JournalSyncs()
	defer stop()
	res, err := f.erase(t, tr, f.stores(), nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := f.dir.ErasureDir(res.ID)
	want := []string{"dir " + dir, "dir " + filepath.Dir(dir), "file " + filepath.Join(dir, "journal.jsonl"), "file " + filepath.Join(dir, "journal.jsonl")}
	if !slices.Equal(events, want) {
		t.Fatalf("fsyncs %q, want %q", events, want)
	}
}

// panicAt is a progress writer that panics when a step's done line is
// written: the process stops after the step's effect, before its done entry.
type panicAt string

func (p panicAt) Write(b []byte) (int, error) {
	if strings.Contains(string(b), string(p)) && strings.Contains(string(b), " done (") {
		panic("stop: " + string(p))
	}
	return len(b), nil
}

// A power loss keeps only what the journal had at its last fsync. Stopped
// after the last probe (records deleted, store reclaimed and probed, none of
// it fsynced) with the journal put back as it was at its last fsync (before
// suppress: no delete syncs it), the erasure resumes to the same
// certificate counts: suppress runs again, each evidence step returns the
// result sealed with its evidence before the deletes (the stores no longer
// hold the records), and the deletes run again.
func TestResumeAfterPowerLossKeepsEvidence(t *testing.T) {
	f := newFixture(t, 4, 3)
	tr := f.trace(t, 1)
	ref := newFixture(t, 4, 3)
	want, err := ref.erase(t, ref.trace(t, 1), ref.stores(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var path string
	var onDisk []byte
	synced, stop := saga.JournalSyncs()
	defer stop()
	saga.OnJournalSyncFile(func(p string) {
		path = p
		b, err := os.ReadFile(p)
		if err != nil {
			t.Error(err)
		}
		onDisk = b
	})
	func() {
		defer func() {
			if r := recover(); r == nil {
				t.Fatal("the erasure did not stop at probe:vectors")
			}
		}()
		saga.Run(context.Background(), &saga.Erasure{Dir: f.dir, Ledger: f.ledger, Stores: f.stores(), Trace: tr, Reason: "TICKET-1", Progress: panicAt("probe:vectors")})
	}()
	if got := synced(); len(got) == 0 || got[len(got)-1] != "begin suppress" {
		t.Fatalf("last fsync after %q, want after begin suppress", got)
	}
	if err := os.WriteFile(path, onDisk, 0o600); err != nil {
		t.Fatal(err)
	}
	stop()
	res, err := saga.Run(context.Background(), &saga.Erasure{Dir: f.dir, Ledger: f.ledger, Stores: map[string]store.Store{"docs": f.rawD, "vectors": f.rawV}, Trace: tr, Reason: "TICKET-1"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Resumed {
		t.Fatal("the second run did not resume the erasure")
	}
	if got, w := res.Statement.Predicate.Counts, want.Statement.Predicate.Counts; got != w || !res.Complete() {
		t.Fatalf("resumed after a power loss: counts %+v (complete %v), an erasure without one: %+v", got, res.Complete(), w)
	}
	// The evidence steps journaled, on resume, the results sealed before
	// the deletes: those of the same erasure run without a power loss.
	evidence := func(path string) map[string]string {
		out := map[string]string{}
		for _, e := range readJournal(t, path) {
			if strings.HasPrefix(e.Step, "evidence:") && e.Phase == "done" {
				// The two runs read two copies of the store: the files'
				// identities differ, as they should.
				out[e.Step] = regexp.MustCompile(`"identity":"[^"]*"`).ReplaceAllString(string(e.Result), `"identity":"…"`)
			}
		}
		return out
	}
	got, w := evidence(path), evidence(filepath.Join(ref.dir.ErasureDir(want.ID), "journal.jsonl"))
	if len(w) != 2 || len(got) != len(w) {
		t.Fatalf("evidence results: %d after the power loss, %d without; want 2", len(got), len(w))
	}
	for step, r := range w {
		if got[step] != r {
			t.Errorf("%s after a power loss journaled %s, without one %s", step, got[step], r)
		}
	}
}

// countingLedger is the fixture's SQLite ledger, counting the keys Lookup
// and LookupKeys are asked for.
type countingLedger struct {
	*sqliteledger.Ledger
	mu      sync.Mutex // the erasures of a batch look up at once
	lookups map[string]int
}

func (l *countingLedger) Lookup(ctx context.Context, scope, st, key string) (*lineage.Artifact, error) {
	l.mu.Lock()
	l.lookups[st+"\x00"+key]++
	l.mu.Unlock()
	return l.Ledger.Lookup(ctx, scope, st, key)
}

// LookupKeys counts each key it is asked for, as Lookup does: the evidence
// step looks owners up in one batch where the ledger can.
func (l *countingLedger) LookupKeys(ctx context.Context, scope, st string, keys []string) (map[string]*lineage.Artifact, error) {
	l.mu.Lock()
	for _, k := range keys {
		l.lookups[st+"\x00"+k]++
	}
	l.mu.Unlock()
	return l.Ledger.LookupKeys(ctx, scope, st, keys)
}

// Issue #13.2: the owners of the records that share a subject's windows
// are looked up in the ledger once per record, not once per record of the
// subject that shares with it; the certificate's evidence is unchanged.
func TestSharedOwnersLookedUpOnce(t *testing.T) {
	f := newFixture(t, 6, 6)
	tr := f.trace(t, 1)
	l := &countingLedger{Ledger: f.ledger, lookups: map[string]int{}}
	res, err := saga.Run(context.Background(), &saga.Erasure{Dir: f.dir, Ledger: l, Stores: f.stores(), Trace: tr, Reason: "TICKET-1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.lookups) == 0 {
		t.Fatal("no record shared a window: the fixture does not exercise the lookup")
	}
	for k, n := range l.lookups {
		if n > 1 {
			t.Errorf("record %q looked up %d times in one erasure", k, n)
		}
	}
	shared := 0
	for _, e := range readJournal(t, filepath.Join(f.dir.ErasureDir(res.ID), "journal.jsonl")) {
		if strings.HasPrefix(e.Step, "evidence:") && e.Phase == "done" && strings.Contains(string(e.Result), `"shared_owner"`) {
			shared++
		}
	}
	if shared == 0 {
		t.Fatal("no evidence result names the owners of shared records")
	}
}

// In a batch, a record that shares windows with the records of several
// erasures is looked up for all of them at once (the erasures whose
// evidence steps run at the same moment may each look it up): fewer
// lookups than when each erasure looks up its own, and each erasure's
// evidence names the same owners.
func TestSharedOwnersLookedUpOnceInABatch(t *testing.T) {
	people := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}
	run := func(cache bool) (*countingLedger, []string) {
		defer saga.SetBatchOwnerCache(cache)()
		f := newFixture(t, 24, 6)
		l := &countingLedger{Ledger: f.ledger, lookups: map[string]int{}}
		var es []*saga.Erasure
		for _, p := range people {
			es = append(es, &saga.Erasure{Dir: f.dir, Ledger: l, Stores: f.stores(), Trace: f.trace(t, p), Reason: "TICKET-B"})
		}
		res, err := saga.RunBatch(context.Background(), es)
		if err != nil {
			t.Fatal(err)
		}
		var owners []string
		for i, r := range res {
			for _, e := range readJournal(t, filepath.Join(f.dir.ErasureDir(r.ID), "journal.jsonl")) {
				if !strings.HasPrefix(e.Step, "evidence:") || e.Phase != "done" {
					continue
				}
				var ev struct {
					Records map[string]struct {
						SharedWith  map[string]int `json:"shared_with"`
						SharedOwner map[string]int `json:"shared_owner"`
					} `json:"records"`
				}
				if err := json.Unmarshal(e.Result, &ev); err != nil {
					t.Fatal(err)
				}
				for k, rec := range ev.Records {
					if len(rec.SharedOwner) > 0 {
						owners = append(owners, fmt.Sprint(people[i], e.Step, k, rec.SharedWith, rec.SharedOwner))
					}
				}
			}
		}
		sort.Strings(owners)
		return l, owners
	}
	each, want := run(false)
	once, got := run(true)
	if len(want) == 0 {
		t.Fatal("no evidence result names an owner: the fixture does not exercise the lookup")
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("with the batch's lookups the evidence names other owners:\n%v\nwant\n%v", got, want)
	}
	sum := func(l *countingLedger) (n int) {
		for _, c := range l.lookups {
			n += c
		}
		return n
	}
	if sum(once)*2 > sum(each) {
		t.Errorf("%d lookups of the records sharing windows with the batch's (%d distinct); %d when each erasure looks up its own", sum(once), len(once.lookups), sum(each))
	}
}
