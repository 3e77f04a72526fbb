package saga

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/internal/pgtest"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/lineage/pgledger"
	"github.com/amnesia-dev/amnesia/store"
)

// durableKit is one Durable under test and what the suite needs to reach
// behind it.
type durableKit struct {
	d Durable
	// appendRaw writes one raw line at the end of a journal, behind the
	// Durable's back (damage, or a second writer).
	appendRaw func(t *testing.T, erasure, name string, seq int, line string)
}

// TestDurable is the conformance suite of Durable, run on both
// implementations: files in a state directory, and the PostgreSQL ledger.
func TestDurable(t *testing.T) {
	t.Run("files", func(t *testing.T) {
		testDurable(t, func(t *testing.T) durableKit {
			sd := newStateDir(t)
			d := FileDurable(sd)
			return durableKit{d: d, appendRaw: func(t *testing.T, erasure, name string, _ int, line string) {
				f, err := os.OpenFile(filepath.Join(sd.ErasureDir(erasure), name+".jsonl"), os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				f.WriteString(line + "\n")
			}}
		})
	})
	t.Run("postgres", func(t *testing.T) {
		testDurable(t, func(t *testing.T) durableKit {
			sd := newStateDir(t)
			dsn := pgtest.DB(t)
			l, err := pgledger.Open(context.Background(), dsn)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			return durableKit{d: DurableFor(sd, l), appendRaw: func(t *testing.T, erasure, name string, seq int, line string) {
				pgExec(t, dsn, `INSERT INTO erasure_journal (erasure, name, seq, step, phase, line) VALUES ($1, $2, $3, '', '', $4)`, erasure, name, seq, line)
			}}
		})
	})
}

func newStateDir(t *testing.T) *state.Dir {
	t.Helper()
	sd, err := state.Init(filepath.Join(t.TempDir(), "state"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return sd
}

func pgExec(t *testing.T, dsn, q string, args ...any) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func testDurable(t *testing.T, open func(t *testing.T) durableKit) {
	ctx := context.Background()
	now := func() time.Time { return time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC) }

	t.Run("Traces", func(t *testing.T) {
		d := open(t).d
		if _, err := d.Trace(ctx, "t1"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("a missing trace: %v, want fs.ErrNotExist", err)
		}
		for _, body := range []string{`{"v":1}`, `{"v":2}`} { // saved again: replaced
			if err := d.SaveTrace(ctx, "t1", []byte(body)); err != nil {
				t.Fatal(err)
			}
			if b, err := d.Trace(ctx, "t1"); err != nil || string(b) != body {
				t.Fatalf("Trace = %q, %v, want %q", b, err, body)
			}
		}
	})

	t.Run("Certificates", func(t *testing.T) {
		d := open(t).d
		if _, err := d.Certificate(ctx, "er-b"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("a missing certificate: %v, want fs.ErrNotExist", err)
		}
		for _, id := range []string{"er-b", "er-a"} {
			if err := d.PutCertificate(ctx, id, []byte("bundle of "+id)); err != nil {
				t.Fatal(err)
			}
		}
		if b, err := d.Certificate(ctx, "er-a"); err != nil || string(b) != "bundle of er-a" {
			t.Fatalf("Certificate = %q, %v", b, err)
		}
		ids, err := d.Certificates(ctx)
		if err != nil || strings.Join(ids, ",") != "er-a,er-b" {
			t.Fatalf("Certificates = %v, %v, want [er-a er-b]", ids, err)
		}
		// CertificateRef is a file this host can hand to a person.
		if b, err := os.ReadFile(d.CertificateRef("er-b")); err != nil || string(b) != "bundle of er-b" {
			t.Fatalf("the file at CertificateRef: %q, %v", b, err)
		}
	})

	t.Run("Journal", func(t *testing.T) {
		d := open(t).d
		if _, ok, err := d.readJournal(ctx, "er-1", mainJournal); ok || err != nil {
			t.Fatalf("a missing journal: exists %v, %v", ok, err)
		}
		j, err := d.openJournal(ctx, "er-1", mainJournal, now)
		if err != nil {
			t.Fatal(err)
		}
		if err := j.write("plan", phaseBegin, nil, nil); err != nil {
			t.Fatal(err)
		}
		if err := j.append("plan", phaseDone, map[string]int{"artifacts": 3}, nil); err != nil {
			t.Fatal(err)
		}
		if err := j.append("delete:x", phaseFailed, nil, errors.New("store down")); err != nil {
			t.Fatal(err)
		}
		head, steps := j.head("")
		j.close()

		es, ok, err := d.readJournal(ctx, "er-1", mainJournal)
		if err != nil || !ok || len(es) != 3 || es[2].Error != "store down" || string(es[1].Result) != `{"artifacts":3}` {
			t.Fatalf("readJournal: %d entries, exists %v, %v", len(es), ok, err)
		}
		j, err = d.openJournal(ctx, "er-1", mainJournal, now)
		if err != nil {
			t.Fatal(err)
		}
		if h, n := j.head(""); h != head || n != steps || len(j.entries) != 3 {
			t.Fatalf("replayed journal: head %s/%d, want %s/%d", h, n, head, steps)
		}
		if ids, err := d.journaled(ctx, "publish"); err != nil || len(ids) != 1 || ids[0] != "er-1" {
			t.Fatalf("journaled before publish = %v, %v", ids, err)
		}
		if err := j.append("publish", phaseDone, nil, nil); err != nil {
			t.Fatal(err)
		}
		j.close()
		if ids, err := d.journaled(ctx, "publish"); err != nil || len(ids) != 0 {
			t.Fatalf("journaled(publish) after publish = %v, %v, want none", ids, err)
		}
		if ids, err := d.journaled(ctx, ""); err != nil || len(ids) != 1 {
			t.Fatalf("journaled() = %v, %v, want [er-1]", ids, err)
		}
		// Another journal of the same erasure (a re-verification's) is
		// not its main journal.
		rj, err := d.openJournal(ctx, "er-1", "reverify-rv-1", now)
		if err != nil {
			t.Fatal(err)
		}
		rj.append("verify", phaseDone, nil, nil)
		rj.close()
		if es, _, _ := d.readJournal(ctx, "er-1", mainJournal); len(es) != 4 {
			t.Fatalf("main journal has %d entries after another journal was written, want 4", len(es))
		}
	})

	t.Run("JournalDamage", func(t *testing.T) {
		k := open(t)
		j, err := k.d.openJournal(ctx, "er-2", mainJournal, now)
		if err != nil {
			t.Fatal(err)
		}
		j.append("plan", phaseDone, nil, nil)
		j.close()
		// An entry whose prev is not the hash before it: the chain breaks.
		bad := JournalEntry{Seq: 2, Step: "suppress", Phase: phaseDone, At: "x", Prev: "00"}
		bad.Hash = bad.hash()
		line := mustJSON(t, bad)
		k.appendRaw(t, "er-2", mainJournal, 2, line)
		if _, err := k.d.openJournal(ctx, "er-2", mainJournal, now); err == nil || !strings.Contains(err.Error(), "breaks the hash chain") {
			t.Fatalf("openJournal of a broken chain: %v", err)
		}
		if es, ok, err := k.d.readJournal(ctx, "er-2", mainJournal); err != nil || !ok || len(es) != 2 {
			t.Fatalf("readJournal of a broken chain: %d entries, %v (it reads leniently)", len(es), err)
		}
	})

	t.Run("Sealed", func(t *testing.T) {
		d := open(t).d
		r := &runner{Erasure: &Erasure{Dir: newStateDir(t)}, id: "er-3", dur: d}
		key := make([]byte, 32)
		ev := map[string]*store.Evidence{"k1": {Key: "k1", Needles: [][]byte{[]byte("a window of text")}}}
		if _, ok, err := r.getEvidence(ctx, evidenceName("s"), key); ok || err != nil {
			t.Fatalf("missing evidence: ok %v, %v", ok, err)
		}
		if err := r.putEvidence(ctx, evidenceName("s"), key, ev); err != nil {
			t.Fatal(err)
		}
		raw, err := d.sealed(ctx, "er-3", evidenceName("s"))
		if err != nil || strings.Contains(string(raw), "a window of text") {
			t.Fatalf("stored evidence: %v, or in clear", err)
		}
		got, ok, err := r.getEvidence(ctx, evidenceName("s"), key)
		if err != nil || !ok || string(got["k1"].Needles[0]) != "a window of text" {
			t.Fatalf("unsealed: %v %v", ok, err)
		}
		// Bound to its name: one store's evidence cannot pass for another's.
		if err := d.putSealed(ctx, "er-3", evidenceName("t"), raw); err != nil {
			t.Fatal(err)
		}
		if _, _, err := r.getEvidence(ctx, evidenceName("t"), key); err == nil {
			t.Fatal("evidence moved to another name was opened")
		}
		how, err := d.shredSealed(ctx, "er-3", []string{evidenceName("s"), evidenceName("t"), evidenceName("never")})
		if err != nil || how == "" {
			t.Fatalf("shredSealed: %q, %v", how, err)
		}
		if _, err := d.sealed(ctx, "er-3", evidenceName("s")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("evidence after shredSealed: %v, want fs.ErrNotExist", err)
		}
	})
}

func mustJSON(t *testing.T, e JournalEntry) string {
	t.Helper()
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestLedgerDurableFenced: with a claim, the ledger refuses every write of
// the erasure once the claim is no longer the job's current one, and a
// second writer of a journal entry fails instead of forking the journal.
func TestLedgerDurableFenced(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DB(t)
	l, err := pgledger.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	sd := newStateDir(t)
	k := sd.Keyer
	s, _ := k.Key("default", "fence@example.org")
	if err := l.Enqueue(ctx, "trace-1", s.String(), "default", "TICKET-1"); err != nil {
		t.Fatal(err)
	}
	a, err := l.Claim(ctx, "A", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	da := DurableFor(sd, l).fenced(a)
	ja, err := da.openJournal(ctx, "er-f", mainJournal, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if err := ja.append("plan", phaseDone, nil, nil); err != nil {
		t.Fatalf("write under the current claim: %v", err)
	}
	if err := da.putSealed(ctx, "er-f", "evidence-s.sealed", []byte("x")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // A's lease runs out
	if err := ja.append("suppress", phaseBegin, nil, nil); !errors.Is(err, lineage.ErrLeaseLost) {
		t.Fatalf("write after the lease ran out: %v, want ErrLeaseLost", err)
	}
	b, err := l.Claim(ctx, "B", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	db := DurableFor(sd, l).fenced(b)
	jb, err := db.openJournal(ctx, "er-f", mainJournal, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if len(jb.entries) != 1 {
		t.Fatalf("B replays %d entries, want 1 (A's refused write left nothing)", len(jb.entries))
	}
	if err := jb.append("suppress", phaseBegin, nil, nil); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func() error{
		"journal":     func() error { return ja.append("x", phaseBegin, nil, nil) },
		"sealed":      func() error { return da.putSealed(ctx, "er-f", "evidence-s.sealed", []byte("y")) },
		"certificate": func() error { return da.PutCertificate(ctx, "er-f", []byte("z")) },
		"shred":       func() error { _, err := da.shredSealed(ctx, "er-f", []string{"evidence-s.sealed"}); return err },
	} {
		if err := f(); !errors.Is(err, lineage.ErrLeaseLost) {
			t.Errorf("%s write of the fenced-off claim: %v, want ErrLeaseLost", name, err)
		}
	}
	// Two writers of one entry: the second is refused.
	jc, _ := DurableFor(sd, l).openJournal(ctx, "er-f", mainJournal, time.Now)
	if err := jb.append("suppress", phaseDone, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := jc.append("suppress", phaseDone, nil, nil); !errors.Is(err, lineage.ErrJournalConflict) {
		t.Fatalf("a second writer of entry 3: %v, want ErrJournalConflict", err)
	}
	if b, err := db.sealed(ctx, "er-f", "evidence-s.sealed"); err != nil || string(b) != "x" {
		t.Fatalf("sealed evidence after fenced writes: %q, %v", b, err)
	}
}
