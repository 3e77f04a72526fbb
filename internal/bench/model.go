package bench

import (
	"context"
	"fmt"
	"io"
	"math/rand"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/bench/provenance"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/model"
	"github.com/amnesia-dev/amnesia/model/ngram"
)

// ModelPaths is the code the model benchmark measures: what the residue
// benchmarks measure, which holds the model package and the certificate.
var ModelPaths = provenance.ResiduePaths

// NgramOrder is the order of the benchmark's (and tests') n-gram model.
const NgramOrder = 10

// ModelOptions sizes a model-leg benchmark.
type ModelOptions struct {
	Shards     int    // dataset shards (one n-gram model each)
	People     int    // subjects, each with RowsEach rows and one canary
	RowsEach   int    //
	Erasures   int    // subjects erased, one after another
	References int    // reference canaries per canary
	Self       string // the retrain command: Self ngram-train {shard} {output} (RunNgramTrain)
	Work       string
	Progress   io.Writer
}

// ModelResult is bench/results/model.json.
type ModelResult struct {
	Kind string `json:"kind"` // "model"
	provenance.Provenance
	Setup struct {
		Model      string `json:"model"`
		Shards     int    `json:"shards"`
		People     int    `json:"people"`
		RowsEach   int    `json:"rows_per_person"`
		Rows       int    `json:"rows"`
		References int    `json:"references_per_canary"`
		Erasures   int    `json:"erasures"`
	} `json:"setup"`
	// Cost of one model-leg erasure (the whole saga: delete, probe,
	// retrain, switch, certificate), per erasure.
	Erasures []ModelErasure `json:"erasures"`
	// Power of the probe over all erased subjects' canaries.
	Power struct {
		Canaries        int     `json:"canaries"`
		ExtractedBefore int     `json:"extracted_before"`
		FlaggedBefore   int     `json:"flagged_before"`
		ExtractedAfter  int     `json:"extracted_after"`
		FlaggedAfter    int     `json:"flagged_after"`
		FPRPerCanary    float64 `json:"fpr_per_canary"`
		FPRAny          float64 `json:"fpr_any_of_erased"`
		// Controls: one other subject's canary in another shard, probed
		// after each erasure; it must still be extracted.
		ControlsExtracted int `json:"controls_extracted_after"`
		Controls          int `json:"controls"`
	} `json:"power"`
	// Smoke: run at sizes below the defaults of `amnesia-bench model`
	// (a check that the code works, not a measurement to quote).
	Smoke bool   `json:"smoke"`
	Note  string `json:"note"`
}

// Default sizes of `amnesia-bench model`.
const (
	ModelShards     = 4
	ModelPeople     = 40
	ModelRowsEach   = 5
	ModelErasures   = 5
	ModelReferences = 99
)

// RunNgramTrain is the benchmark's retrain command, for a main (or a
// TestMain) to call with os.Args: it handles `<self> ngram-train
// <shard.jsonl> <output>` and reports whether the arguments were that.
func RunNgramTrain(args []string) (bool, error) {
	if len(args) < 2 || args[1] != "ngram-train" {
		return false, nil
	}
	if len(args) != 4 {
		return true, fmt.Errorf("usage: %s ngram-train <shard.jsonl> <output>", filepath.Base(args[0]))
	}
	return true, ngram.TrainFile(args[2], "text", args[3], NgramOrder)
}

// ModelErasure is one erasure's cost.
type ModelErasure struct {
	RowsRemoved     int     `json:"rows_removed"`
	ShardsRetrained int     `json:"shards_retrained"`
	RetrainMs       int64   `json:"retrain_ms"`
	ProbeMs         int64   `json:"probe_ms"` // before + after
	ProbeRequests   int     `json:"probe_requests"`
	TotalMs         float64 `json:"total_ms"` // the whole erasure
	Outcome         string  `json:"outcome"`
	Complete        bool    `json:"complete"`
}

var benchWords = strings.Fields("the a ticket order refund shipping account password invoice delivery parcel support agent customer reply thanks please update address email phone number late early box item colour size return exchange warranty broken working")

// Model measures the model leg end to end on a sharded n-gram model served
// over an OpenAI-compatible endpoint.
func Model(ctx context.Context, o ModelOptions) (*ModelResult, error) {
	r := &ModelResult{Kind: "model", Provenance: provenance.Capture(ModelPaths)}
	r.Setup.Model = fmt.Sprintf("byte %d-gram, Witten-Bell, one per shard, served as their sequence mixture (model/ngram)", NgramOrder)
	r.Smoke = o.Shards < ModelShards || o.People < ModelPeople || o.RowsEach < ModelRowsEach || o.Erasures < ModelErasures || o.References < ModelReferences
	r.Setup.Shards, r.Setup.People, r.Setup.RowsEach, r.Setup.References, r.Setup.Erasures = o.Shards, o.People, o.RowsEach, o.References, o.Erasures
	root, err := os.MkdirTemp(o.Work, "model-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(root)
	cfg := state.DefaultConfig()
	var dataset, served []string
	for i := 0; i < o.Shards; i++ {
		name := fmt.Sprintf("train-%d", i)
		dataset = append(dataset, name)
		p := filepath.Join(root, name+".jsonl")
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			return nil, err
		}
		cfg.Stores = append(cfg.Stores, state.StoreConfig{Name: name, Type: "file", Path: p, Format: "jsonl", Key: "id", Subject: "subject", Content: []string{"text"}})
		served = append(served, filepath.Join(root, fmt.Sprintf("served-%d.ngram", i)))
	}
	srv := httptest.NewServer(&ngram.Server{Paths: served})
	defer srv.Close()
	mc := model.Config{Name: "bench", Dataset: dataset, Sharded: true, DeleteTainted: true, Served: filepath.Join(root, "served-{shard}.ngram"),
		Retrain: model.RetrainConfig{Command: []string{o.Self, "ngram-train", "{shard}", "{output}"}, Timeout: "10m"},
		Probe:   &model.ProbeConfig{URL: srv.URL, References: o.References, Timeout: "1m"}}
	cfg.Models = []model.Config{mc}
	sd, err := state.Init(filepath.Join(root, "state"), cfg)
	if err != nil {
		return nil, err
	}
	app, err := capture.Open(ctx, sd.Path)
	if err != nil {
		return nil, err
	}
	rnd := rand.New(rand.NewSource(15))
	people := make([]string, o.People)
	shardOf := map[string]int{}
	for p := range people {
		raw := fmt.Sprintf("bench-person-%d@example.org", p)
		people[p] = raw
		st, shard, err := app.TrainingShard("bench", raw)
		if err != nil {
			app.Close()
			return nil, err
		}
		shardOf[raw] = shard
		for j := 0; j < o.RowsEach; j++ {
			n := 6 + rnd.Intn(6)
			ws := make([]string, n)
			for i := range ws {
				ws[i] = benchWords[rnd.Intn(len(benchWords))]
			}
			if err := app.PutTrainingRow(ctx, st, capture.TrainingRow{ID: fmt.Sprintf("r%d-%d", p, j), Subject: raw, Text: strings.Join(ws, " ")}); err != nil {
				app.Close()
				return nil, err
			}
		}
		if err := app.PlantCanary(ctx, st, fmt.Sprintf("c%d", p), raw); err != nil {
			app.Close()
			return nil, err
		}
	}
	r.Setup.Rows = o.People * (o.RowsEach + 1)
	for i := 0; i < o.Shards; i++ {
		out := filepath.Join(root, fmt.Sprintf("run-%d.ngram", i))
		if err := ngram.TrainFile(sd.Config.StorePath(cfg.Stores[i]), "text", out, NgramOrder); err != nil {
			app.Close()
			return nil, err
		}
		b, _ := os.ReadFile(out)
		if err := os.WriteFile(served[i], b, 0o644); err != nil {
			app.Close()
			return nil, err
		}
		if _, err := app.RecordTrainingRun(ctx, capture.TrainingRun{Model: "bench", Shard: i, Command: mc.Retrain.Command, Output: out, Served: served[i]}); err != nil {
			app.Close()
			return nil, err
		}
	}
	if err := app.Close(); err != nil {
		return nil, err
	}
	l, err := lineage.Open(ctx, sd.LedgerSpec())
	if err != nil {
		return nil, err
	}
	defer l.Close()
	prober := &model.Prober{URL: srv.URL, Timeout: time.Minute}
	canaries := model.OpenCanaries(sd.Path, sd.Keyer)
	for e := 0; e < o.Erasures && e < len(people); e++ {
		raw := people[e]
		k, err := sd.Keyer.Key(sd.Config.Scope, raw)
		if err != nil {
			return nil, err
		}
		v, err := l.View(ctx, sd.Config.Scope, k)
		if err != nil {
			return nil, err
		}
		tr, err := lineage.BuildTrace(v)
		if err != nil {
			return nil, err
		}
		stores, failed := sd.Config.OpenStores(ctx)
		if len(failed) > 0 {
			return nil, fmt.Errorf("open stores: %v", failed)
		}
		start := time.Now()
		res, err := saga.Run(ctx, &saga.Erasure{Dir: sd, Ledger: l, Stores: stores, Trace: tr, Reason: "BENCH-MODEL"})
		total := time.Since(start)
		for _, s := range stores {
			s.Close()
		}
		if err != nil {
			return nil, err
		}
		p := res.Statement.Predicate
		if len(p.Models) != 1 {
			return nil, fmt.Errorf("erasure %d: %d model outcomes, want 1", e, len(p.Models))
		}
		m := p.Models[0]
		me := ModelErasure{RowsRemoved: len(tr.Artifacts), ShardsRetrained: 0, TotalMs: float64(total.Microseconds()) / 1000, Outcome: m.Outcome, Complete: p.Complete}
		for _, s := range m.Shards {
			if s.Retrain == "done" {
				me.ShardsRetrained++
			}
			me.RetrainMs += s.RetrainMillis
		}
		for _, pr := range []*certificate.ModelProbe{m.ProbeBefore, m.ProbeAfter} {
			if pr != nil {
				me.ProbeMs += pr.Millis
				me.ProbeRequests += pr.Requests
			}
		}
		r.Erasures = append(r.Erasures, me)
		if m.ProbeBefore != nil && m.ProbeAfter != nil {
			r.Power.Canaries += m.ProbeBefore.Canaries
			r.Power.ExtractedBefore += m.ProbeBefore.Extracted
			r.Power.FlaggedBefore += m.ProbeBefore.Flagged
			r.Power.ExtractedAfter += m.ProbeAfter.Extracted
			r.Power.FlaggedAfter += m.ProbeAfter.Flagged
		}
		// A control: a subject not erased, in another shard.
		for _, c := range people[o.Erasures:] {
			if shardOf[c] == shardOf[raw] {
				continue
			}
			ck, _ := sd.Keyer.Key(sd.Config.Scope, c)
			ps, err := canaries.Get(sd.Config.Scope, ck)
			if err != nil || len(ps) == 0 {
				return nil, fmt.Errorf("control canaries: %v", err)
			}
			cr, err := prober.Probe(ctx, []model.Canary{ps[0].Canary}, 1)
			if err != nil {
				return nil, err
			}
			r.Power.Controls++
			r.Power.ControlsExtracted += cr.Extracted
			break
		}
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "model: erasure %d/%d: %s, %d rows, %d shard(s) retrained in %d ms, probe %d ms, total %.0f ms\n",
				e+1, o.Erasures, m.Outcome, me.RowsRemoved, me.ShardsRetrained, me.RetrainMs, me.ProbeMs, me.TotalMs)
		}
	}
	r.Power.FPRPerCanary, r.Power.FPRAny = model.FalsePositiveRates(r.Power.Canaries, o.References)
	r.Note = "Rows removed: the erased subject's traced rows (its training rows and its canary row). Retrain: the configured command (this binary's ngram-train) on the shard's file; probe: greedy extraction and log-likelihood against the references over HTTP on loopback, before and after. Power: canaries of the erased subjects extracted/flagged before the retrain, and after; fpr_any_of_erased is the chance that any of them is flagged by chance. A byte n-gram memorises a canary seen once; a fine-tuned LLM may not, and its power must be measured the same way."
	return r, nil
}
