package model_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/pgtest"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
)

// With a PostgreSQL ledger the model leg's journal is the ledger's: an
// erasure stopped in the middle of a shard's retrain leaves no
// model-<name>.json in the state directory, and the leg's state (the
// shard's retrain started, attempt 1) in the ledger. The erasure resumed
// from another state directory (a copy of the first one's models/, the
// dataset owner's files, without erasures/) reads it there: the shard is
// retrained as attempt 2, and the certificate is complete.
func TestModelLegJournalInTheLedger(t *testing.T) {
	ctx := context.Background()
	w := newWorldOn(t, true, true, pgtest.DB(t))
	l, err := lineage.Open(ctx, w.sd.LedgerSpec())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	target := w.people[0]
	tr := w.trace(t, l, target)
	id := saga.ID(tr.ID)

	t.Setenv("AMNESIA_NGRAM_SLOW", "30s")
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { _, err := w.erase(cctx, t, l, tr); done <- err }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if m, _ := filepath.Glob(filepath.Join(w.sd.Path, "models", "bot", "artifacts", "*.artifact")); len(m) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the retrain command never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("an erasure stopped mid-retrain reported success")
	}
	os.Unsetenv("AMNESIA_NGRAM_SLOW")

	if got, _ := filepath.Glob(filepath.Join(w.sd.Path, "erasures", "*", "*")); len(got) > 0 {
		t.Fatalf("the erasure wrote files in the state directory with a PostgreSQL ledger: %v", got)
	}
	type leg struct {
		Shards map[string]struct {
			Started bool `json:"started"`
			Attempt int  `json:"attempt"`
			Done    bool `json:"done"`
		} `json:"shards"`
		AfterDone bool `json:"probe_after_done"`
	}
	read := func(sd *state.Dir) leg {
		t.Helper()
		b, err := saga.ModelLegState(ctx, saga.DurableFor(sd, l), id, "bot")
		if err != nil || b == nil {
			t.Fatalf("the model leg's state in the ledger: %q, %v", b, err)
		}
		var g leg
		if err := json.Unmarshal(b, &g); err != nil {
			t.Fatal(err)
		}
		return g
	}
	g := read(w.sd)
	if len(g.Shards) != 1 {
		t.Fatalf("leg state after the stop: %+v, want one shard started", g)
	}
	for _, s := range g.Shards {
		if !s.Started || s.Attempt != 1 || s.Done {
			t.Fatalf("leg state after the stop: %+v, want attempt 1 started, not done", g)
		}
	}

	// Another state directory: the first one's files without erasures/.
	other := filepath.Join(w.root, "state-b")
	if out, err := exec.Command("cp", "-a", w.sd.Path, other).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	os.RemoveAll(filepath.Join(other, "erasures"))
	sdB, err := state.Open(other)
	if err != nil {
		t.Fatal(err)
	}
	w.sd = sdB
	res, err := w.erase(ctx, t, l, tr)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Resumed {
		t.Fatal("the erasure did not resume on the other state directory")
	}
	arts, _ := filepath.Glob(filepath.Join(other, "models", "bot", "artifacts", "*.artifact"))
	if len(arts) != 1 || !strings.HasSuffix(arts[0], "-2.artifact") {
		t.Fatalf("artifacts after the resume on the other state directory: %v, want only attempt 2 (the ledger's leg journal read)", arts)
	}
	g = read(sdB)
	for _, s := range g.Shards {
		if !s.Done || s.Attempt != 2 || !g.AfterDone {
			t.Fatalf("leg state after the resume: %+v", g)
		}
	}
	p := res.Statement.Predicate
	if !p.Complete || len(p.Models) != 1 || p.Models[0].Outcome != certificate.Verified {
		t.Fatalf("certificate after the resume: complete %v, models %+v", p.Complete, p.Models)
	}
	for _, dir := range []string{w.root + "/state", other} {
		if got, _ := filepath.Glob(filepath.Join(dir, "erasures", "*", "model-*")); len(got) > 0 {
			t.Fatalf("a model leg journal file in %s: %v", dir, got)
		}
	}
}

// An erasure begun before the model leg kept its journal in the ledger
// left it in erasures/<id>/model-<name>.json. Resumed with a PostgreSQL
// ledger that holds no entry for the leg, it continues from the file (the
// shard's retrain started as attempt 1: it is retrained as attempt 2, not
// started over), the ledger holds the leg's entries afterwards, and the
// file is gone.
func TestModelLegJournalFileCarriedIntoTheLedger(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DB(t)
	w := newWorldOn(t, true, true, dsn)
	l, err := lineage.Open(ctx, w.sd.LedgerSpec())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	target := w.people[0]
	tr := w.trace(t, l, target)
	id := saga.ID(tr.ID)

	t.Setenv("AMNESIA_NGRAM_SLOW", "30s")
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { _, err := w.erase(cctx, t, l, tr); done <- err }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if m, _ := filepath.Glob(filepath.Join(w.sd.Path, "models", "bot", "artifacts", "*.artifact")); len(m) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the retrain command never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("an erasure stopped mid-retrain reported success")
	}
	os.Unsetenv("AMNESIA_NGRAM_SLOW")

	// Make it the old way: the leg's state in its file, none in the ledger.
	d := saga.DurableFor(w.sd, l)
	b, err := saga.ModelLegState(ctx, d, id, "bot")
	if err != nil || b == nil {
		t.Fatalf("the model leg's state in the ledger: %q, %v", b, err)
	}
	file := filepath.Join(w.sd.ErasureDir(id), "model-bot.json")
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	for _, q := range []string{
		`ALTER TABLE erasure_journal DISABLE TRIGGER erasure_journal_no_update`,
		`DELETE FROM erasure_journal WHERE name = 'model-bot'`,
		`ALTER TABLE erasure_journal ENABLE TRIGGER erasure_journal_no_update`,
	} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if b, err := saga.ModelLegState(ctx, d, id, "bot"); err != nil || b != nil {
		t.Fatalf("the ledger still holds the leg's state: %q, %v", b, err)
	}

	res, err := w.erase(ctx, t, l, tr)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Resumed {
		t.Fatal("the erasure did not resume")
	}
	arts, _ := filepath.Glob(filepath.Join(w.sd.Path, "models", "bot", "artifacts", "*.artifact"))
	if len(arts) != 1 || !strings.HasSuffix(arts[0], "-2.artifact") {
		t.Fatalf("artifacts after the resume: %v, want only attempt 2 (the leg journal file read)", arts)
	}
	b, err = saga.ModelLegState(ctx, d, id, "bot")
	if err != nil || b == nil {
		t.Fatalf("the ledger holds no leg state after the resume: %q, %v", b, err)
	}
	var g struct {
		Shards map[string]struct {
			Attempt int  `json:"attempt"`
			Done    bool `json:"done"`
		} `json:"shards"`
		AfterDone bool `json:"probe_after_done"`
	}
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Shards) != 1 || !g.AfterDone {
		t.Fatalf("leg state in the ledger after the resume: %+v", g)
	}
	for _, s := range g.Shards {
		if !s.Done || s.Attempt != 2 {
			t.Fatalf("leg state in the ledger after the resume: %+v", g)
		}
	}
	var n int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM erasure_journal WHERE name = 'model-bot'`).Scan(&n); err != nil || n < 2 {
		t.Fatalf("leg journal entries in the ledger: %d, %v", n, err)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("the leg journal file is still there after the resume: %v", err)
	}
	p := res.Statement.Predicate
	if !p.Complete || len(p.Models) != 1 || p.Models[0].Outcome != certificate.Verified {
		t.Fatalf("certificate after the resume: complete %v, models %+v", p.Complete, p.Models)
	}
}
