package saga_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/internal/demo"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/lineage/ledgertest"
	"github.com/amnesia-dev/amnesia/lineage/pgledger"
	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
	"github.com/amnesia-dev/amnesia/store/sqlitevec"
	"github.com/amnesia-dev/amnesia/transparency"
)

// gate is a Progress writer that blocks the erasure writing to it at its
// first progress line (its first step) until open is closed.
type gate struct {
	once    sync.Once
	reached chan struct{}
	open    chan struct{}
}

func newGate() *gate { return &gate{reached: make(chan struct{}), open: make(chan struct{})} }

func (g *gate) Write(p []byte) (int, error) {
	g.once.Do(func() {
		close(g.reached)
		<-g.open
	})
	return len(p), nil
}

// lockInstall is an installation whose ledger is given by spec ("" for the
// state directory's ledger.db), with a small corpus captured.
type lockInstall struct {
	dir    *state.Dir
	ledger lineage.Ledger
	stores map[string]store.Store
	corpus *demo.Corpus
}

func newLockInstall(t *testing.T, ledgerSpec string) *lockInstall {
	t.Helper()
	ctx := context.Background()
	root := t.TempDir()
	cfg := state.DefaultConfig()
	cfg.Ledger = ledgerSpec
	cfg.Stores = []state.StoreConfig{
		{Name: "docs", Type: sqlitedoc.Type, Path: filepath.Join(root, "docs.db")},
		{Name: "vectors", Type: sqlitevec.Type, Path: filepath.Join(root, "vectors.db"), Dimensions: demo.Dim},
	}
	sd, err := state.Init(filepath.Join(root, "state"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := lineage.Open(ctx, sd.LedgerSpec())
	if err != nil {
		t.Fatal(err)
	}
	rawD, err := sqlitedoc.Open(ctx, "docs", cfg.Stores[0].Path, true)
	if err != nil {
		t.Fatal(err)
	}
	rawV, err := sqlitevec.Open(ctx, "vectors", cfg.Stores[1].Path, demo.Dim, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rawD.Close(); rawV.Close(); l.Close() })
	in := &lockInstall{dir: sd, ledger: l, stores: map[string]store.Store{"docs": rawD, "vectors": rawV}, corpus: demo.Generate(5, 3, 3)}
	rec := capture.New(l, sd.Keyer, "")
	docs, vecs := rec.Docs(rawD), rec.Vectors(rawV)
	for _, d := range in.corpus.Docs {
		if err := docs.Put(ctx, capture.Doc{ID: d.ID, Kind: sqlitedoc.KindDocument, Subject: in.corpus.People[d.Owner].ID, Text: d.Text}); err != nil {
			t.Fatal(err)
		}
		for i, c := range demo.Chunk(d.Text, demo.ChunkSize) {
			cid := fmt.Sprintf("%s#%d", d.ID, i)
			if err := docs.Put(ctx, capture.Doc{ID: cid, Kind: sqlitedoc.KindChunk, Parent: d.ID, Text: c}); err != nil {
				t.Fatal(err)
			}
			if err := vecs.Put(ctx, capture.Vector{ID: cid, Embedding: demo.Embed(c, demo.Dim)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return in
}

func (in *lockInstall) trace(t *testing.T, person int) *lineage.Trace {
	t.Helper()
	k, err := in.dir.Keyer.Key(in.dir.Config.Scope, in.corpus.People[person].ID)
	if err != nil {
		t.Fatal(err)
	}
	v, err := in.ledger.View(context.Background(), in.dir.Config.Scope, k)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := lineage.BuildTrace(v)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// concurrentErasures runs two erasures of the same subject at once (the
// second starts while the first is held inside its first step), each with
// its own handle on the ledger from open, and checks that exactly one ran.
func concurrentErasures(t *testing.T, in *lockInstall, open func() lineage.Ledger) {
	ctx := context.Background()
	tr := in.trace(t, 1)
	g := newGate()
	first := make(chan error, 1)
	go func() {
		_, err := saga.Run(ctx, &saga.Erasure{Dir: in.dir, Ledger: open(), Stores: in.stores, Trace: tr, Reason: "T-1", Progress: g})
		first <- err
	}()
	<-g.reached
	// The same subject again, through a trace of its own (as a second
	// `amnesia forget` would take), while the first is running.
	tr2 := in.trace(t, 1)
	_, err := saga.Run(ctx, &saga.Erasure{Dir: in.dir, Ledger: open(), Stores: in.stores, Trace: tr2, Reason: "T-2"})
	var busy *saga.BusyError
	if !errors.Is(err, saga.ErrBusy) || !errors.As(err, &busy) {
		close(g.open)
		<-first
		t.Fatalf("second erasure while the first runs: %v, want ErrBusy", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, tr.SubjectRef) || !strings.Contains(msg, fmt.Sprintf("pid=%d", os.Getpid())) || strings.Contains(msg, in.corpus.People[1].ID) {
		t.Errorf("busy message %q: want the subject's ref and the holder's pid, never the raw id", msg)
	}
	// Another subject is not held up.
	if _, err := saga.Run(ctx, &saga.Erasure{Dir: in.dir, Ledger: open(), Stores: in.stores, Trace: in.trace(t, 2), Reason: "T-3"}); err != nil {
		t.Errorf("erasure of another subject while the first runs: %v", err)
	}
	close(g.open)
	if err := <-first; err != nil {
		t.Fatalf("first erasure: %v", err)
	}
	// One journal, intact: every entry once, in one unbroken chain.
	id := saga.ID(tr.ID)
	// (where the installation keeps it: the ledger, or the state directory)
	es, err := saga.ReadJournal(ctx, saga.DurableFor(in.dir, in.ledger), id)
	if err != nil {
		t.Fatal(err)
	}
	checkJournalChain(t, es)
	// One certificate leaf for this erasure in the log (and one for the
	// other subject's).
	st := in.ledger.(transparency.Store)
	n, err := st.LogSize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	leaves, err := st.LogLeaves(ctx, 0, n)
	if err != nil {
		t.Fatal(err)
	}
	certs := 0
	for _, l := range leaves {
		if transparency.LeafKind(l) == "amnesia/certificate/v1" {
			certs++
		}
	}
	if certs != 2 {
		t.Errorf("log holds %d certificate leaves, want 2 (one per erasure)", certs)
	}
	// Once the first is done the lock is free: running it again resumes
	// (and finds the erasure finished) instead of being refused as busy.
	if _, err := saga.Run(ctx, &saga.Erasure{Dir: in.dir, Ledger: open(), Stores: in.stores, Trace: tr, Reason: "T-1"}); errors.Is(err, saga.ErrBusy) {
		t.Errorf("after the first erasure ended: %v", err)
	}
}

func checkJournalChain(t *testing.T, es []saga.JournalEntry) {
	t.Helper()
	begins := map[string]int{}
	for i, e := range es { // saga.ReadJournal checked the hash chain
		if e.Seq != i+1 {
			t.Fatalf("journal line %d: seq %d, want %d", i+2, e.Seq, i+1)
		}
		if e.Phase == "begin" {
			begins[e.Step]++
			if begins[e.Step] > 1 {
				t.Errorf("journal: step %s began twice", e.Step)
			}
		}
	}
	if begins["publish"] != 1 {
		t.Errorf("journal: publish began %d times, want 1", begins["publish"])
	}
}

func TestOneErasureAtATimePerSubject(t *testing.T) {
	in := newLockInstall(t, "")
	concurrentErasures(t, in, func() lineage.Ledger {
		l, err := sqliteledger.Open(context.Background(), in.dir.LedgerPath())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	})
}

// With the shared PostgreSQL ledger the lock is the ledger's: processes
// with different state directories (here: handles on the ledger) exclude
// each other.
func TestOneErasureAtATimePerSubjectPostgres(t *testing.T) {
	dsn := ledgertest.PostgresDSN(t)
	in := newLockInstall(t, dsn)
	concurrentErasures(t, in, func() lineage.Ledger {
		l, err := pgledger.Open(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	})
}

// A holder whose session ends (a crash: the server drops its connection)
// leaves no lock behind.
func TestPostgresSubjectLockDiesWithSession(t *testing.T) {
	ctx := context.Background()
	dsn := ledgertest.PostgresDSN(t)
	a, err := pgledger.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := pgledger.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	release, _, ok, err := a.TryLockSubject(ctx, "k1")
	if err != nil || !ok {
		t.Fatalf("first lock: ok=%v %v", ok, err)
	}
	defer release()
	_, holder, ok, err := b.TryLockSubject(ctx, "k1")
	if err != nil || ok || !strings.Contains(holder, fmt.Sprintf("pid=%d", os.Getpid())) {
		t.Fatalf("second lock while held: ok=%v holder=%q %v", ok, holder, err)
	}
	if r, _, ok, err := b.TryLockSubject(ctx, "k2"); err != nil || !ok {
		t.Fatalf("another key: ok=%v %v", ok, err)
	} else {
		r()
	}
	// End the holder's session from outside, as a crash would.
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE 'amnesia erasure pid=%' AND datname = current_database()`); err != nil {
		t.Fatal(err)
	}
	// The server ends the backend (and drops its locks) just after.
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, _, ok, err := b.TryLockSubject(ctx, "k1")
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			r()
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the lock outlived its holder's session")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
