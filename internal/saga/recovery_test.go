package saga_test

import (
	"context"
	"crypto/ed25519"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/demo"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/sqlitevec"
)

func (f *fixture) stores() map[string]store.Store {
	return map[string]store.Store{"docs": f.rawD, "vectors": f.rawV}
}

func (f *fixture) run(t *testing.T, e *saga.Erasure) (*saga.Result, error) {
	t.Helper()
	e.Dir, e.Ledger = f.dir, f.ledger
	if e.Reason == "" {
		e.Reason = "TICKET-1"
	}
	return saga.Run(context.Background(), e)
}

func journalSteps(t *testing.T, dir *state.Dir, id string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, e := range readJournal(t, filepath.Join(dir.ErasureDir(id), "journal.jsonl")) {
		out[e.Step] = e.Phase
	}
	return out
}

// runStoresDown runs the erasure of tr with both of the fixture's stores
// unreachable when opened.
func (f *fixture) runStoresDown(t *testing.T, tr *lineage.Trace) (*saga.Result, error) {
	down := map[string]error{
		"docs":    fmt.Errorf("open docs: %w: connection refused", store.ErrUnavailable),
		"vectors": fmt.Errorf("open vectors: %w: no such file", store.ErrUnavailable),
	}
	return f.run(t, &saga.Erasure{Stores: map[string]store.Store{}, OpenErr: down, Trace: tr})
}

// Issue #8.1: when every store fails, the erasure ends incomplete; once the
// stores are back, running it again is a new erasure that erases and
// verifies what was left, and whose certificate links to the first.
func TestEveryStoreFailsThenComesBack(t *testing.T) {
	f := newFixture(t, 4, 3)
	tr := f.trace(t, 1)
	first, err := f.runStoresDown(t, tr)
	if err != nil {
		t.Fatal(err)
	}
	p := first.Statement.Predicate
	if p.Complete || p.Counts.Unverified != len(tr.Artifacts) {
		t.Fatalf("every store down: complete=%v counts %+v, want every artifact UNVERIFIED", p.Complete, p.Counts)
	}
	// The same command again, stores still down: the trace is unchanged
	// (nothing was erased), so it is a new erasure, not a replay.
	again := f.trace(t, 1)
	if again.ID != tr.ID {
		t.Fatalf("trace changed after a failed erasure; this test expects the stuck case")
	}
	// Stores back, a new reason.
	second, err := f.run(t, &saga.Erasure{Stores: f.stores(), Trace: again, Reason: "TICKET-2"})
	if err != nil {
		t.Fatal(err)
	}
	if second.ID == first.ID {
		t.Fatalf("the second run replayed the first erasure %s instead of erasing what was left", first.ID)
	}
	if second.Follows != first.ID {
		t.Errorf("result follows %q, want %s", second.Follows, first.ID)
	}
	q := second.Statement.Predicate
	if !q.Complete || q.Counts.Verified != len(tr.Artifacts) || q.Counts.VerifiedPhysical == 0 {
		t.Fatalf("second erasure: complete=%v counts %+v, want every artifact VERIFIED", q.Complete, q.Counts)
	}
	if q.Reason != "TICKET-2" {
		t.Errorf("second erasure reason %q, want the new TICKET-2", q.Reason)
	}
	if q.Follows == nil || q.Follows.CertificateID != first.ID || q.Follows.LogIndex < 0 || len(q.Follows.PayloadSHA256) != 64 {
		t.Fatalf("second certificate follows %+v, want a link to %s", q.Follows, first.ID)
	}
	// The published bundle verifies with the link in it.
	b, err := os.ReadFile(second.CertificatePath)
	if err != nil {
		t.Fatal(err)
	}
	pub := f.dir.Key.Public().(ed25519.PublicKey)
	chk, err := certificate.VerifyBundle(context.Background(), b, certificate.VerifyOptions{Keys: []certificate.TrustedKey{{Public: pub}}})
	if err != nil {
		t.Fatalf("the continuing certificate does not verify: %v", err)
	}
	if chk.Statement.Predicate.Follows.CertificateID != first.ID {
		t.Errorf("verified certificate follows %+v", chk.Statement.Predicate.Follows)
	}
	// Nothing is left to erase now.
	k, _ := f.dir.Keyer.Key(f.dir.Config.Scope, f.corpus.People[1].ID)
	v, err := f.ledger.View(context.Background(), f.dir.Config.Scope, k)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lineage.BuildTrace(v); !errors.Is(err, lineage.ErrAlreadyErased) {
		t.Errorf("trace after the second erasure: %v, want ErrAlreadyErased", err)
	}
	for _, d := range []string{first.ID, second.ID} {
		if m, _ := filepath.Glob(filepath.Join(f.dir.ErasureDir(d), "*.sealed")); len(m) != 0 {
			t.Errorf("erasure %s left sealed evidence: %v", d, m)
		}
	}
}

// Issues #8.5 and #9.3: a reclaim that the application holds up pauses the
// erasure (PENDING, evidence kept); a resume while the store is
// unreachable neither panics nor journals a reclaim that did not run; once
// the store is free, the resumed erasure reclaims and verifies physically.
func TestBusyReclaimPausesThenFinishes(t *testing.T) {
	f := newFixture(t, 4, 3)
	tr := f.trace(t, 1)
	// The application holds a read transaction open on the vector store:
	// its snapshot keeps the WAL from being checkpointed.
	app, err := sql.Open("sqlite3", "file:"+f.dir.Config.StorePath(f.dir.Config.Stores[1])+"?_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	tx, err := app.Begin()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := tx.QueryRow("SELECT count(*) FROM sqlite_master").Scan(&n); err != nil {
		t.Fatal(err)
	}
	var progress strings.Builder
	_, err = f.run(t, &saga.Erasure{Stores: f.stores(), Trace: tr, ReclaimWait: 3 * time.Second, Progress: &progress})
	var pe *saga.PendingError
	if !errors.As(err, &pe) || !errors.Is(err, saga.ErrPending) {
		t.Fatalf("reclaim under an open read transaction: err %v, want a PendingError", err)
	}
	if pe.Store != "vectors" || pe.Step != "reclaim" || pe.State != "PENDING-store-busy" {
		t.Errorf("pending %+v, want vectors reclaim PENDING-store-busy", pe)
	}
	if !strings.Contains(progress.String(), "waiting") {
		t.Errorf("no progress shown while waiting:\n%s", progress.String())
	}
	id := saga.ID(tr.ID)
	steps := journalSteps(t, f.dir, id)
	if steps["reclaim:vectors"] == "done" || steps["decide"] != "" {
		t.Fatalf("journal after the pause: %v; reclaim:vectors must stay open and decide must not run", steps)
	}
	if m, _ := filepath.Glob(filepath.Join(f.dir.ErasureDir(id), "evidence-vectors.sealed")); len(m) != 1 {
		t.Fatalf("the paused erasure did not keep its sealed evidence")
	}
	if _, err := os.Stat(f.dir.CertificatePath(id)); err == nil {
		t.Fatal("a certificate was published by a paused erasure")
	}
	// Resume while the vector store cannot be opened: no panic, still
	// pending, and the reclaim is still not journaled as done.
	only := map[string]store.Store{"docs": f.rawD}
	_, err = f.run(t, &saga.Erasure{Stores: only, OpenErr: map[string]error{"vectors": fmt.Errorf("open: %w", store.ErrUnavailable)}, Trace: tr, ReclaimWait: time.Millisecond})
	if !errors.As(err, &pe) || pe.Store != "vectors" {
		t.Fatalf("resume with the store unreachable: err %v, want a PendingError for vectors", err)
	}
	if steps := journalSteps(t, f.dir, id); steps["reclaim:vectors"] == "done" || steps["probe:vectors"] != "" {
		t.Fatalf("journal after a resume without the store: %v; no reclaim or probe may be journaled", steps)
	}
	// The application ends its transaction; the resume finishes.
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	app.Close()
	res, err := f.run(t, &saga.Erasure{Stores: f.stores(), Trace: tr})
	if err != nil {
		t.Fatal(err)
	}
	p := res.Statement.Predicate
	if !p.Complete || p.Counts.Verified != len(tr.Artifacts) || p.Counts.VerifiedPhysical == 0 {
		t.Fatalf("after the application let go: complete=%v counts %+v", p.Complete, p.Counts)
	}
	for _, s := range p.DeclaredScope {
		if s.Name == "vectors" && s.Residue != "VERIFIED" {
			t.Errorf("vectors residue %s (%s), want VERIFIED by byte scan after reclaim", s.Residue, s.Evidence)
		}
	}
}

// Sealed evidence that went missing while an erasure was paused (a partial
// restore, a cleanup) fails the store's probe: its artifacts are not
// probed without their evidence and never VERIFIED, and the certificate is
// incomplete.
func TestMissingSealedEvidenceFailsTheProbe(t *testing.T) {
	f := newFixture(t, 4, 3)
	tr := f.trace(t, 1)
	app, err := sql.Open("sqlite3", "file:"+f.dir.Config.StorePath(f.dir.Config.Stores[1])+"?_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	tx, err := app.Begin()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := tx.QueryRow("SELECT count(*) FROM sqlite_master").Scan(&n); err != nil {
		t.Fatal(err)
	}
	_, err = f.run(t, &saga.Erasure{Stores: f.stores(), Trace: tr, ReclaimWait: time.Second})
	var pe *saga.PendingError
	if !errors.As(err, &pe) || pe.Store != "vectors" {
		t.Fatalf("reclaim under an open read transaction: %v, want a pause on vectors", err)
	}
	id := saga.ID(tr.ID)
	if err := os.Remove(filepath.Join(f.dir.ErasureDir(id), "evidence-vectors.sealed")); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	app.Close()
	res, err := f.run(t, &saga.Erasure{Stores: f.stores(), Trace: tr})
	if err != nil {
		t.Fatal(err)
	}
	p := res.Statement.Predicate
	if p.Complete {
		t.Fatal("complete without the vector store's evidence")
	}
	seen := 0
	for _, a := range p.Artifacts {
		if a.Store != "vectors" {
			continue
		}
		seen++
		if a.Outcome == certificate.Verified || !strings.Contains(a.Reason, "sealed evidence of store vectors is missing") {
			t.Errorf("vector artifact %s: %s %s (%s), want not VERIFIED, for the missing evidence", a.ID, a.Outcome, a.Level, a.Reason)
		}
	}
	if seen == 0 {
		t.Fatal("the trace has no vector artifacts: the test proves nothing")
	}
}

// An erasure paused after its delete and resumed against another copy of
// the store (another host's file at the same path, or a changed path):
// the evidence's power was measured in the first, so the second's clean
// scan proves nothing about it. The store is stopped at reclaim, its
// artifacts are not VERIFIED, and the certificate is incomplete.
func TestResumeOnAnotherStoreIsNotVerified(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 4, 3)
	tr := f.trace(t, 1)
	path := f.dir.Config.StorePath(f.dir.Config.Stores[1])
	app, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	tx, err := app.Begin()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := tx.QueryRow("SELECT count(*) FROM sqlite_master").Scan(&n); err != nil {
		t.Fatal(err)
	}
	_, err = f.run(t, &saga.Erasure{Stores: f.stores(), Trace: tr, ReclaimWait: time.Second})
	var pe *saga.PendingError
	if !errors.As(err, &pe) || pe.Store != "vectors" {
		t.Fatalf("reclaim under an open read transaction: %v, want a pause on vectors", err)
	}
	// Another copy of the vector store, with the records already deleted.
	other := filepath.Join(t.TempDir(), "other-vectors.db")
	if _, err := app.Exec(`VACUUM INTO ?`, other); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	app.Close()
	ov, err := sqlitevec.Open(ctx, "vectors", other, demo.Dim, false)
	if err != nil {
		t.Fatal(err)
	}
	defer ov.Close()
	res, err := f.run(t, &saga.Erasure{Stores: map[string]store.Store{"docs": f.rawD, "vectors": ov}, Trace: tr})
	if err != nil {
		t.Fatal(err)
	}
	p := res.Statement.Predicate
	if p.Complete {
		t.Fatal("complete, though the vector store probed is not the one its evidence was read from")
	}
	seen := 0
	for _, a := range p.Artifacts {
		if a.Store != "vectors" {
			continue
		}
		seen++
		if a.Outcome == certificate.Verified || !strings.Contains(a.Reason, "not the one its evidence was read from") {
			t.Errorf("vector artifact %s: %s %s (%s), want not VERIFIED, naming the other store", a.ID, a.Outcome, a.Level, a.Reason)
		}
	}
	if seen == 0 {
		t.Fatal("the trace has no vector artifacts: the test proves nothing")
	}
}

// Issue #8.8: a configured store that could not be reached is declared as
// unreachable even when the trace touches nothing in it, and the
// certificate is incomplete unless the store is declared out of scope.
// A store that was simply not open in the run (left out of Stores with no
// open error, or with a nil one, as a preflight's Skip can hold) was never
// checked either: it is unreachable too, never NOT-TOUCHED next to
// complete: true. Either way the certificate passes the verifier's check
// of the declared scope (certificate.Sign makes it before signing).
func TestUnreachableUntouchedStore(t *testing.T) {
	for _, outOfScope := range []bool{false, true} {
		for _, oe := range []struct {
			name    string
			openErr map[string]error
		}{
			{"open error", map[string]error{"archive": fmt.Errorf("open: %w", store.ErrUnavailable)}},
			{"no open error", nil},
			{"nil open error", map[string]error{"archive": nil}},
		} {
			t.Run(fmt.Sprintf("out_of_scope=%v/%s", outOfScope, oe.name), func(t *testing.T) {
				f := newFixture(t, 3, 2)
				f.dir.Config.Stores = append(f.dir.Config.Stores, state.StoreConfig{Name: "archive", Type: "sqlite-doc", Path: "/nonexistent/archive.db", OutOfScope: outOfScope})
				tr := f.trace(t, 0)
				res, err := f.run(t, &saga.Erasure{Stores: f.stores(), OpenErr: oe.openErr, Trace: tr})
				if err != nil {
					t.Fatal(err)
				}
				p := res.Statement.Predicate
				var found bool
				for _, s := range p.DeclaredScope {
					if s.Name == "archive" {
						found = true
						if s.Residue != "UNREACHABLE" || s.Touched {
							t.Errorf("archive declared %s touched=%v, want UNREACHABLE", s.Residue, s.Touched)
						}
					}
				}
				if !found {
					t.Fatal("the unreachable store is missing from the declared scope")
				}
				if p.Complete == !outOfScope {
					t.Errorf("complete=%v with an unreachable store (out_of_scope %v)", p.Complete, outOfScope)
				}
				var named bool
				for _, x := range p.OutOfScope {
					if x.What == "store archive (unreachable)" {
						named = true
					}
				}
				if !named {
					t.Errorf("out_of_scope does not name the unreachable store as \"store archive (unreachable)\": %+v", p.OutOfScope)
				}
			})
		}
	}
}

// Issue #9.4: sealed evidence opens however the state directory is spelled:
// a resume through a relative path, or after the directory moved, ends
// with the same certificate.
func TestSealedEvidenceSurvivesAnotherSpelling(t *testing.T) {
	f := newFixture(t, 4, 3)
	tr := f.trace(t, 1)
	app, err := sql.Open("sqlite3", "file:"+f.dir.Config.StorePath(f.dir.Config.Stores[1])+"?_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	tx, err := app.Begin()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	tx.QueryRow("SELECT count(*) FROM sqlite_master").Scan(&n)
	if _, err := f.run(t, &saga.Erasure{Stores: f.stores(), Trace: tr, ReclaimWait: time.Millisecond}); !errors.Is(err, saga.ErrPending) {
		t.Fatalf("want a paused erasure, got %v", err)
	}
	tx.Rollback()
	app.Close()
	// Move the state directory and open it through a relative path from
	// another working directory.
	moved := filepath.Join(filepath.Dir(f.dir.Path), "moved", "state")
	if err := os.MkdirAll(filepath.Dir(moved), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(f.dir.Path, moved); err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	defer os.Chdir(wd)
	if err := os.Chdir(filepath.Dir(filepath.Dir(moved))); err != nil {
		t.Fatal(err)
	}
	d, err := state.Open(filepath.Join("moved", "state"))
	if err != nil {
		t.Fatal(err)
	}
	d.Config = f.dir.Config
	res, err := saga.Run(context.Background(), &saga.Erasure{Dir: d, Ledger: f.ledger, Stores: f.stores(), Trace: tr})
	if err != nil {
		t.Fatalf("resume from a moved state dir through a relative path: %v", err)
	}
	if p := res.Statement.Predicate; !p.Complete || p.Counts.VerifiedPhysical == 0 {
		t.Fatalf("resumed erasure: complete=%v counts %+v", p.Complete, p.Counts)
	}
}
