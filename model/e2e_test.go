package model_test

import (
	"context"
	"fmt"
	"math/rand"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/model"
	"github.com/amnesia-dev/amnesia/model/ngram"
	"github.com/amnesia-dev/amnesia/subject"
)

const order = 10

// refs is the number of reference canaries. A canary the model never saw
// is flagged by chance with probability at most 1/(refs+1) (lower still
// with the 100× margin): 999 keeps that chance of a spurious test failure
// at or below 0.1% per probe.
const refs = 999

// TestMain doubles as the operator's retrain command: the test binary run
// as `<binary> ngram-train <shard.jsonl> <output>` trains the shard's
// n-gram model. With AMNESIA_NGRAM_SLOW set it first writes a partial
// output and sleeps, so that a test can stop amnesia mid-retrain.
func TestMain(m *testing.M) {
	if len(os.Args) == 4 && os.Args[1] == "ngram-train" {
		// AMNESIA_NGRAM_DROP_ONCE=<marker>:<row id>: while the marker exists,
		// delete that row from the shard file (as another erasure would)
		// and the marker, then train.
		if v := os.Getenv("AMNESIA_NGRAM_DROP_ONCE"); v != "" {
			mark, row, _ := strings.Cut(v, ":")
			if os.Remove(mark) == nil {
				b, _ := os.ReadFile(os.Args[2])
				var keep []string
				for _, line := range strings.SplitAfter(string(b), "\n") {
					if !strings.Contains(line, `"id":"`+row+`"`) {
						keep = append(keep, line)
					}
				}
				os.WriteFile(os.Args[2], []byte(strings.Join(keep, "")), 0o644)
			}
		}
		if d, err := time.ParseDuration(os.Getenv("AMNESIA_NGRAM_SLOW")); err == nil {
			os.WriteFile(os.Args[3], []byte("partial"), 0o644)
			time.Sleep(d)
		}
		if err := ngram.TrainFile(os.Args[2], "text", os.Args[3], order); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

var words = strings.Fields("the a ticket order refund shipping account password invoice delivery parcel support agent customer reply thanks please update address email phone number late early box item colour size return exchange warranty broken working")

func sentence(r *rand.Rand) string {
	n := 6 + r.Intn(6)
	ws := make([]string, n)
	for i := range ws {
		ws[i] = words[r.Intn(len(words))]
	}
	return strings.Join(ws, " ")
}

type world struct {
	root     string
	sd       *state.Dir
	served   []string
	shards   int
	people   []string
	shardOf  map[string]int
	canaries map[string][]model.Canary // read back from the sealed store, test only
	prober   *model.Prober
	srv      *httptest.Server
}

// newWorld ingests people's training rows (and one canary each) into a
// sharded (or not) dataset, trains one n-gram model per shard, serves them
// over an OpenAI-compatible endpoint and records the runs.
func newWorld(t *testing.T, sharded bool, served bool) *world {
	t.Helper()
	return newWorldOn(t, sharded, served, "")
}

// newWorldOn is newWorld with the ledger at ledger ("": the state
// directory's SQLite ledger).
func newWorldOn(t *testing.T, sharded bool, served bool, ledger string) *world {
	t.Helper()
	ctx := context.Background()
	w := &world{root: t.TempDir(), shards: 4, shardOf: map[string]int{}, canaries: map[string][]model.Canary{}}
	cfg := state.DefaultConfig()
	var dataset []string
	for i := 0; i < w.shards; i++ {
		name := fmt.Sprintf("train-%d", i)
		dataset = append(dataset, name)
		cfg.Stores = append(cfg.Stores, state.StoreConfig{Name: name, Type: "file", Path: filepath.Join(w.root, name+".jsonl"),
			Format: "jsonl", Key: "id", Subject: "subject", Content: []string{"text"}})
		w.served = append(w.served, filepath.Join(w.root, "served", fmt.Sprintf("shard-%d.ngram", i)))
	}
	for _, name := range dataset { // a shard may get no subject
		if err := os.WriteFile(filepath.Join(w.root, name+".jsonl"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(w.root, "served"), 0o755)
	os.MkdirAll(filepath.Join(w.root, "runs"), 0o755)
	srv := httptest.NewServer(&ngram.Server{Paths: w.served})
	t.Cleanup(srv.Close)
	w.srv = srv
	w.prober = &model.Prober{URL: srv.URL, Timeout: 10 * time.Second}
	mc := model.Config{Name: "bot", Dataset: dataset, Sharded: sharded, DeleteTainted: true,
		Retrain: model.RetrainConfig{Command: []string{os.Args[0], "ngram-train", "{shard}", "{output}"}, Timeout: "2m"},
		Probe:   &model.ProbeConfig{URL: srv.URL, References: refs}}
	if served {
		mc.Served = filepath.Join(w.root, "served", "shard-{shard}.ngram")
	}
	cfg.Models = []model.Config{mc}
	cfg.Ledger = ledger
	sd, err := state.Init(filepath.Join(w.root, "state"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.sd = sd
	app, err := capture.Open(ctx, sd.Path)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewSource(7))
	for p := 0; p < 16; p++ {
		raw := fmt.Sprintf("person-%d@example.com", p)
		w.people = append(w.people, raw)
		st, shard := dataset[p%w.shards], p%w.shards
		if sharded {
			if st, shard, err = app.TrainingShard("bot", raw); err != nil {
				t.Fatal(err)
			}
		}
		w.shardOf[raw] = shard
		for j := 0; j < 3; j++ {
			if err := app.PutTrainingRow(ctx, st, capture.TrainingRow{ID: fmt.Sprintf("r%d-%d", p, j), Subject: raw, Text: sentence(r)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := app.PlantCanary(ctx, st, fmt.Sprintf("c%d", p), raw); err != nil {
			t.Fatal(err)
		}
		k, _ := sd.Keyer.Key(sd.Config.Scope, raw)
		ps, err := model.OpenCanaries(sd.Path, sd.Keyer).Get(sd.Config.Scope, k)
		if err != nil || len(ps) != 1 {
			t.Fatalf("canaries of person %d: %v %v", p, ps, err)
		}
		w.canaries[raw] = []model.Canary{ps[0].Canary}
	}
	// The operator's pipeline: train, serve, record each run.
	if sharded {
		for i := 0; i < w.shards; i++ {
			out := filepath.Join(w.root, "runs", fmt.Sprintf("shard-%d-v1.ngram", i))
			if err := ngram.TrainFile(filepath.Join(w.root, dataset[i]+".jsonl"), "text", out, order); err != nil {
				t.Fatal(err)
			}
			copyFile(t, out, w.served[i])
			if _, err := app.RecordTrainingRun(ctx, capture.TrainingRun{Model: "bot", Shard: i, Command: []string{"ngram-train", "{shard}", "{output}"}, Output: out, Served: mc.ServedPath(i)}); err != nil {
				t.Fatal(err)
			}
		}
	} else {
		var texts []string
		for i := 0; i < w.shards; i++ {
			ts, err := ngram.ReadJSONL(filepath.Join(w.root, dataset[i]+".jsonl"), "text")
			if err != nil {
				t.Fatal(err)
			}
			texts = append(texts, ts...)
		}
		out := filepath.Join(w.root, "runs", "whole-v1.ngram")
		if err := ngram.Train(texts, order).Save(out); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < w.shards; i++ { // the endpoint serves the one model
			copyFile(t, out, w.served[i])
		}
		if _, err := app.RecordTrainingRun(ctx, capture.TrainingRun{Model: "bot", Command: []string{"train-all"}, Output: out}); err != nil {
			t.Fatal(err)
		}
	}
	if err := app.Close(); err != nil {
		t.Fatal(err)
	}
	return w
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func (w *world) probe(t *testing.T, raw string) *model.ProbeResult {
	t.Helper()
	res, err := w.prober.Probe(context.Background(), w.canaries[raw], refs)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func (w *world) trace(t *testing.T, l lineage.Ledger, raw string) *lineage.Trace {
	t.Helper()
	k, err := w.sd.Keyer.Key(w.sd.Config.Scope, raw)
	if err != nil {
		t.Fatal(err)
	}
	v, err := l.View(context.Background(), w.sd.Config.Scope, k)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := lineage.BuildTrace(v)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func (w *world) erase(ctx context.Context, t *testing.T, l lineage.Ledger, tr *lineage.Trace) (*saga.Result, error) {
	t.Helper()
	stores, failed := w.sd.Config.OpenStores(context.Background())
	if len(failed) > 0 {
		t.Fatal(failed)
	}
	defer func() {
		for _, s := range stores {
			s.Close()
		}
	}()
	return saga.Run(ctx, &saga.Erasure{Dir: w.sd, Ledger: l, Stores: stores, Trace: tr, Reason: "TICKET-15"})
}

func ids(tr *lineage.Trace) []string {
	var out []string
	for _, a := range tr.Artifacts {
		out = append(out, a.ID)
	}
	return out
}

func digest(t *testing.T, p string) string {
	t.Helper()
	f, err := model.FileDigest(p)
	if err != nil {
		t.Fatal(err)
	}
	return f.SHA256
}

// The whole model leg on a real (small) model: lineage to the served
// artifact, the canary extracted before the shard retrain and not after,
// the other shards unchanged, a crash in the middle of the retrain resumed,
// and the certificate's model-level claims matching what the probe saw.
func TestShardedRetrainForgetsTheCanary(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, true, true)
	l, err := lineage.Open(ctx, w.sd.LedgerSpec())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	// Every subject's rows are in exactly one shard: its keyed hash's.
	used := map[int]bool{}
	for _, p := range w.people {
		used[w.shardOf[p]] = true
		k, _ := w.sd.Keyer.Key(w.sd.Config.Scope, p)
		if got := model.Shard(w.sd.Keyer, k, w.shards); got != w.shardOf[p] {
			t.Fatalf("shard of a subject: %d, want %d", got, w.shardOf[p])
		}
	}
	if len(used) < 2 {
		t.Fatalf("16 subjects landed in %d shard(s): the keyed hash does not spread them", len(used))
	}
	target := w.people[0]
	ts := w.shardOf[target]
	var control string // a subject in another shard
	for _, p := range w.people {
		if w.shardOf[p] != ts {
			control = p
			break
		}
	}

	// Lineage: the trace's rows reach exactly the target shard's artifact.
	tr := w.trace(t, l, target)
	reach, err := model.TraceModels(w.sd.Path, ids(tr))
	if err != nil {
		t.Fatal(err)
	}
	if len(reach) != 1 || reach[0].Model != "bot" || reach[0].Shard != ts || reach[0].Rows != 4 || reach[0].Served != w.served[ts] {
		t.Fatalf("trace reached %+v, want bot shard %d, 4 rows (3 + canary), served at %s", reach, ts, w.served[ts])
	}

	// Before: the served model gives up both canaries.
	if b := w.probe(t, target); b.Extracted != 1 || b.Flagged != 1 {
		t.Fatalf("before retraining the target's canary: %+v, want extracted and flagged", b)
	}
	if b := w.probe(t, control); b.Extracted != 1 {
		t.Fatalf("before: control canary %+v, want extracted", b)
	}
	before := map[int]string{}
	for i, p := range w.served {
		before[i] = digest(t, p)
	}

	// A crash in the middle of the retrain: amnesia is stopped while the
	// retrain command runs (it has written a partial artifact).
	t.Setenv("AMNESIA_NGRAM_SLOW", "30s")
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { _, err := w.erase(cctx, t, l, tr); done <- err }()
	partial := filepath.Join(w.sd.Path, "models", "bot", "artifacts")
	deadline := time.Now().Add(60 * time.Second)
	for {
		if m, _ := filepath.Glob(filepath.Join(partial, "*.artifact")); len(m) > 0 {
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
	if got := digest(t, w.served[ts]); got != before[ts] {
		t.Fatal("a stopped retrain changed the served artifact")
	}
	os.Unsetenv("AMNESIA_NGRAM_SLOW")

	res, err := w.erase(ctx, t, l, tr)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Resumed {
		t.Fatal("the second run did not resume the journal")
	}
	arts, _ := filepath.Glob(filepath.Join(partial, "*.artifact"))
	if len(arts) != 1 || !strings.HasSuffix(arts[0], "-2.artifact") {
		t.Fatalf("artifacts after the resume: %v, want only the second attempt's", arts)
	}
	logs, _ := filepath.Glob(filepath.Join(w.sd.Path, "models", "logs", "*.log"))
	if len(logs) != 1 {
		t.Fatalf("retrain logs: %v", logs)
	}
	lb, _ := os.ReadFile(logs[0])
	if strings.Count(string(lb), `"event":"start"`) != 2 || strings.Count(string(lb), `"status":"exit status 0"`) != 1 {
		t.Fatalf("retrain log does not show the stopped run and the resumed one:\n%s", lb)
	}
	for _, secret := range []string{target, w.canaries[target][0].Secret, "person-"} {
		if strings.Contains(string(lb), secret) {
			t.Fatal("the retrain log holds personal data or a canary")
		}
	}

	// After: the target's canary is gone, the control's is not, the other
	// shards' served artifacts are byte-identical.
	a := w.probe(t, target)
	if a.Extracted != 0 || a.Flagged != 0 {
		t.Fatalf("after retraining: %+v, want nothing extracted or flagged", a)
	}
	if c := w.probe(t, control); c.Extracted != 1 {
		t.Fatalf("after: the control canary in shard %d is no longer extracted: %+v", w.shardOf[control], c)
	}
	for i, p := range w.served {
		if got := digest(t, p); (got == before[i]) != (i != ts) {
			t.Fatalf("served shard %d changed=%v, want changed only for shard %d", i, got != before[i], ts)
		}
	}

	// The certificate says what the probe saw, and no more.
	p := res.Statement.Predicate
	if len(p.Models) != 1 {
		t.Fatalf("certificate models: %+v", p.Models)
	}
	m := p.Models[0]
	if m.Outcome != certificate.Verified || m.Level != certificate.LevelModel || !m.Sharded || len(m.Shards) != 1 {
		t.Fatalf("model outcome %+v", m)
	}
	// Its out_of_scope names the model checked, and does not say that no
	// model is configured.
	named := false
	for _, x := range p.OutOfScope {
		if strings.Contains(x.Reason, "no training set or model store is configured") {
			t.Errorf("out_of_scope says no model is configured, next to a models section: %+v", x)
		}
		named = named || strings.Contains(x.Reason, "(bot)")
	}
	if !named {
		t.Errorf("out_of_scope does not name the configured model: %+v", p.OutOfScope)
	}
	s := m.Shards[0]
	if s.Shard != ts || s.Retrained == nil || s.Retrained.SubjectRows != 0 || !s.TrainedWithout || s.Served != certificate.ServedSwitched ||
		s.TaintedFilesLeft != 0 || len(s.Tainted) != 1 || s.Tainted[0].SubjectRows != 4 || s.Retrained.SHA256 != digest(t, w.served[ts]) {
		t.Fatalf("shard outcome %+v", s)
	}
	if m.ProbeBefore == nil || m.ProbeBefore.Extracted != 1 || m.ProbeBefore.Flagged != 1 || m.ProbeAfter == nil || m.ProbeAfter.Extracted != a.Extracted || m.ProbeAfter.Flagged != a.Flagged {
		t.Fatalf("certificate probes %+v / %+v, the probe saw before 1/1, after %d/%d", m.ProbeBefore, m.ProbeAfter, a.Extracted, a.Flagged)
	}
	if m.ProbeAfter.FPRPerCanary != 0.001 {
		t.Fatalf("fpr per canary %v, want 1/(999+1)", m.ProbeAfter.FPRPerCanary)
	}
	if !p.Complete {
		t.Fatalf("certificate incomplete: %+v", p.Counts)
	}
	if _, err := os.Stat(filepath.Join(w.root, "runs", fmt.Sprintf("shard-%d-v1.ngram", ts))); !os.IsNotExist(err) {
		t.Fatal("the tainted artifact file is still there (delete_tainted: true)")
	}
	// The registry: the tainted run is marked; the new run has none of the rows.
	snap, err := model.OpenRegistry(w.sd.Path).Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Tainted[reach[0].Run]) != 1 || snap.Served["bot"][ts].SHA256 != s.Retrained.SHA256 {
		t.Fatalf("registry: tainted %v served %+v", snap.Tainted, snap.Served["bot"][ts])
	}
	after, err := model.TraceModels(w.sd.Path, ids(tr))
	if err != nil || len(after) != 1 || !after[0].Tainted || !after[0].Deleted {
		t.Fatalf("reach after the erasure %+v %v: want only the old run, tainted and deleted", after, err)
	}
	// Certificate files hold no canary and no raw id.
	cb, _ := os.ReadFile(res.CertificatePath)
	if strings.Contains(string(cb), w.canaries[target][0].Secret) || strings.Contains(string(cb), "person-0") {
		t.Fatal("the certificate holds a canary or a raw id")
	}
	cdir, _ := os.ReadDir(filepath.Join(w.sd.Path, "models", "canaries"))
	for _, e := range cdir {
		b, _ := os.ReadFile(filepath.Join(w.sd.Path, "models", "canaries", e.Name()))
		if strings.Contains(string(b), w.canaries[target][0].Secret) || strings.Contains(string(b), "canary ") {
			t.Fatal("a canary is stored in clear")
		}
	}
}

// A model trained without sharding is TAINTED with the choices stated,
// never VERIFIED: the certificate is incomplete and the probe still finds
// the canary.
func TestUnshardedModelIsTainted(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, false, false)
	l, err := lineage.Open(ctx, w.sd.LedgerSpec())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	target := w.people[1]
	res, err := w.erase(ctx, t, l, w.trace(t, l, target))
	if err != nil {
		t.Fatal(err)
	}
	p := res.Statement.Predicate
	if len(p.Models) != 1 || p.Models[0].Outcome != certificate.Tainted || len(p.Models[0].Choices) == 0 || p.Complete {
		t.Fatalf("unsharded: %+v complete=%v", p.Models, p.Complete)
	}
	m := p.Models[0]
	if m.ProbeAfter == nil || m.ProbeAfter.Extracted != 1 {
		t.Fatalf("the unsharded model still holds the canary; the certificate's probe says %+v", m.ProbeAfter)
	}
	if !res.Statement.Predicate.Complete && res.Err() == nil {
		t.Fatal("an incomplete certificate reported no error")
	}
}

// A sharded model whose serving amnesia does not manage: retrained, but
// NEEDS_HUMAN until the operator serves the new artifact.
func TestRetrainWithoutServedPathNeedsTheOperator(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, true, false)
	l, err := lineage.Open(ctx, w.sd.LedgerSpec())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	target := w.people[2]
	res, err := w.erase(ctx, t, l, w.trace(t, l, target))
	if err != nil {
		t.Fatal(err)
	}
	m := res.Statement.Predicate.Models[0]
	if m.Outcome != certificate.NeedsHuman || m.Shards[0].Served != certificate.ServedOperatorMust || !m.Shards[0].TrainedWithout || res.Statement.Predicate.Complete {
		t.Fatalf("%+v", m)
	}
	if !strings.Contains(m.Reason, m.Shards[0].Retrained.SHA256) {
		t.Fatalf("the reason does not name the artifact to serve: %s", m.Reason)
	}
	// The endpoint still serves the old artifact: the probe says so.
	if m.ProbeAfter == nil || m.ProbeAfter.Extracted != 1 {
		t.Fatalf("probe after %+v: the old artifact is still served", m.ProbeAfter)
	}
}

// An endpoint that fails does not stop the retrain, and a model whose probe
// could not run is not VERIFIED.
func TestProbeDownStillRetrainsButIsUnverified(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, true, true)
	l, err := lineage.Open(ctx, w.sd.LedgerSpec())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	w.srv.Close()
	res, err := w.erase(ctx, t, l, w.trace(t, l, w.people[3]))
	if err != nil {
		t.Fatal(err)
	}
	m := res.Statement.Predicate.Models[0]
	if m.Outcome != certificate.Unverified || !strings.Contains(m.Reason, "probe failed") || m.ProbeAfter == nil || m.ProbeAfter.Error == "" ||
		m.Shards[0].Served != certificate.ServedSwitched || !m.Shards[0].TrainedWithout || res.Statement.Predicate.Complete {
		t.Fatalf("%+v\n%+v", m, m.Shards)
	}
}

// Rows deleted from the shard while it trains (another erasure) may be in
// the artifact: the leg trains again, and records only what the file held.
func TestRowsDeletedDuringRetrainTrainAgain(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, true, true)
	l, err := lineage.Open(ctx, w.sd.LedgerSpec())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var target, other string
	for i, p := range w.people {
		for _, q := range w.people[i+1:] {
			if w.shardOf[p] == w.shardOf[q] && target == "" {
				target, other = p, q
			}
		}
	}
	if target == "" {
		t.Skip("no two subjects share a shard")
	}
	oi := 0
	for i, p := range w.people {
		if p == other {
			oi = i
		}
	}
	dropped := fmt.Sprintf("r%d-0", oi)
	mark := filepath.Join(w.root, "drop-once")
	os.WriteFile(mark, nil, 0o600)
	t.Setenv("AMNESIA_NGRAM_DROP_ONCE", mark+":"+dropped)
	res, err := w.erase(ctx, t, l, w.trace(t, l, target))
	if err != nil {
		t.Fatal(err)
	}
	m := res.Statement.Predicate.Models[0]
	if m.Outcome != certificate.Verified {
		t.Fatalf("%+v", m)
	}
	logs, _ := filepath.Glob(filepath.Join(w.sd.Path, "models", "logs", "*.log"))
	lb, _ := os.ReadFile(logs[0])
	if strings.Count(string(lb), `"event":"start"`) != 2 {
		t.Fatalf("want a second training after rows were deleted during the first:\n%s", lb)
	}
	snap, err := model.OpenRegistry(w.sd.Path).Load()
	if err != nil {
		t.Fatal(err)
	}
	run := snap.Runs[m.Shards[0].Retrained.Run]
	did := lineage.ArtifactID(w.sd.Keyer, w.sd.Config.Scope, fmt.Sprintf("train-%d", w.shardOf[target]), dropped)
	for _, id := range run.Inputs[0].RowIDs {
		if id == did {
			t.Fatal("the new run records a row that was deleted before its training")
		}
	}
}

// A retrain that runs past its timeout is stopped; the model stays UNVERIFIED
// and the tainted artifact stays served.
func TestRetrainTimeoutIsUnverified(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, true, true)
	l, err := lineage.Open(ctx, w.sd.LedgerSpec())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	mc := &w.sd.Config.Models[0]
	mc.Retrain.Timeout = "300ms"
	if err := mc.Validate(0, func(string) (string, bool) { return "file", true }); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AMNESIA_NGRAM_SLOW", "30s")
	target := w.people[0]
	before := digest(t, w.served[w.shardOf[target]])
	start := time.Now()
	res, err := w.erase(ctx, t, l, w.trace(t, l, target))
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 20*time.Second {
		t.Fatal("the timeout did not stop the retrain")
	}
	m := res.Statement.Predicate.Models[0]
	if m.Outcome != certificate.Unverified || !strings.Contains(m.Reason, "retrain.timeout") || m.Shards[0].Retrained != nil || res.Statement.Predicate.Complete {
		t.Fatalf("%+v %+v", m, m.Shards)
	}
	if digest(t, w.served[w.shardOf[target]]) != before {
		t.Fatal("a timed-out retrain changed the served artifact")
	}
	if m.ProbeAfter == nil || m.ProbeAfter.Extracted != 1 {
		t.Fatalf("the tainted artifact is still served; the probe after says %+v", m.ProbeAfter)
	}
	logs, _ := filepath.Glob(filepath.Join(w.sd.Path, "models", "logs", "*.log"))
	lb, _ := os.ReadFile(logs[0])
	if !strings.Contains(string(lb), `"status":"timeout"`) {
		t.Fatalf("log: %s", lb)
	}
}

var _ = subject.DefaultScope
