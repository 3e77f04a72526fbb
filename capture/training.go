package capture

import (
	"context"
	"fmt"

	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/model"
)

// KindTrain is a training row: lineage kind "train" (package model).
const KindTrain = "train"

// TrainingRow is one row of a training set kept in a file store (JSONL or
// CSV).
type TrainingRow struct {
	ID       string // opaque row key (never personal data)
	Subject  string // raw subject id: whose row it is
	Text     string
	Mentions []string
}

// TrainingShard returns the dataset store (and its shard number) that holds
// every training row of the subject for a configured model: the keyed hash
// of the subject (model.Shard), never the raw id. Write the subject's rows
// there with PutTrainingRow. A model that is not sharded has one shard.
func (a *App) TrainingShard(modelName, subjectRaw string) (store string, shard int, err error) {
	c, err := a.dir.Config.Model(modelName)
	if err != nil {
		return "", 0, fmt.Errorf("capture: %w", err)
	}
	k, err := a.rec.SubjectKey(subjectRaw)
	if err != nil {
		return "", 0, fmt.Errorf("capture training row: %w", err)
	}
	if !c.Sharded {
		return c.Dataset[0], 0, nil
	}
	shard = model.Shard(a.dir.Keyer, k, len(c.Dataset))
	return c.Dataset[shard], shard, nil
}

// PutTrainingRow appends a training row to a dataset file store and records
// it in the ledger as kind "train", owned by row.Subject.
func (a *App) PutTrainingRow(ctx context.Context, storeName string, row TrainingRow) error {
	_, err := a.putTrainingRow(ctx, storeName, row)
	return err
}

func (a *App) putTrainingRow(ctx context.Context, storeName string, row TrainingRow) (string, error) {
	d, err := a.Docs(ctx, storeName)
	if err != nil {
		return "", err
	}
	rec := Record{ID: row.ID, Kind: KindTrain, Text: row.Text}
	if err := d.s.CaptureCheck(rec); err != nil {
		return "", err
	}
	owner, _, err := d.r.owner(ctx, row.Subject, row.ID, "", []string{d.name})
	if err != nil {
		return "", fmt.Errorf("capture training row: %w", err)
	}
	if err := d.r.checkKeys(row.ID, "", row.Subject, owner, row.Mentions); err != nil {
		return "", fmt.Errorf("capture training row: %w", err)
	}
	// The row and the people it mentions in one ledger transaction: a
	// crash between two would leave a row that a mentioned person's trace
	// does not reach.
	id, err := d.r.recordMentioned(ctx, owner, lineage.KindTrain, d.name, row.ID, []byte(row.Text), row.Mentions)
	if err != nil {
		return "", err
	}
	rec.Subject = owner.String()
	return id, d.s.CapturePut(ctx, rec)
}

// PlantCanary plants a canary in the subject's training rows: a row rowID,
// written like PutTrainingRow, whose text is a random secret phrase
// (model.NewCanary). amnesia keeps the canary only as a keyed digest and
// sealed under the installation pepper (<state>/models/canaries); the model
// probe asks the served model for it after an erasure (docs/models.md).
func (a *App) PlantCanary(ctx context.Context, storeName, rowID, subjectRaw string) error {
	c, err := model.NewCanary()
	if err != nil {
		return fmt.Errorf("capture canary: %w", err)
	}
	k, err := a.rec.SubjectKey(subjectRaw)
	if err != nil {
		return fmt.Errorf("capture canary: %w", err)
	}
	id, err := a.putTrainingRow(ctx, storeName, TrainingRow{ID: rowID, Subject: subjectRaw, Text: c.Text()})
	if err != nil {
		return err
	}
	return model.OpenCanaries(a.dir.Path, a.dir.Keyer).Put(a.rec.scope, k, c, storeName, id)
}

// TrainingRun is what RecordTrainingRun needs of a finished training run.
type TrainingRun struct {
	Model string
	// Shard is the dataset store (by its index in the model's dataset)
	// the run trained on; a model that is not sharded trains on every
	// store of its dataset and leaves Shard 0.
	Shard   int
	Command []string // how the artifact was made (no personal data)
	Output  string   // the artifact file it wrote
	Served  string   // where it is served from, when amnesia may switch it; else ""
}

// RecordTrainingRun records, in one call, a training run of a configured
// model: the dataset files it read (their SHA-256, and the keyed ids of
// the rows in them, as they are now), the artifact it wrote (path and
// SHA-256), and where that artifact is served. Call it right after the run,
// before the dataset changes. `amnesia trace` then lists the artifacts a
// subject's rows reached, and an erasure taints and retrains them.
func (a *App) RecordTrainingRun(ctx context.Context, tr TrainingRun) (*model.Run, error) {
	c, err := a.dir.Config.Model(tr.Model)
	if err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	stores := c.Dataset
	if c.Sharded {
		if tr.Shard < 0 || tr.Shard >= len(c.Dataset) {
			return nil, fmt.Errorf("capture training run: model %q has %d shards: shard %d does not exist", tr.Model, len(c.Dataset), tr.Shard)
		}
		stores = c.Dataset[tr.Shard : tr.Shard+1]
	} else if tr.Shard != 0 {
		return nil, fmt.Errorf("capture training run: model %q is not sharded: leave Shard 0", tr.Model)
	}
	out, err := model.FileDigest(tr.Output)
	if err != nil {
		return nil, fmt.Errorf("capture training run: read the artifact: %w", err)
	}
	run := &model.Run{Model: c.Name, Shard: tr.Shard, Sharded: c.Sharded, Command: tr.Command, Output: out, Served: tr.Served}
	for _, name := range stores {
		d, err := a.Docs(ctx, name)
		if err != nil {
			return nil, err
		}
		sc, _ := a.dir.Config.Store(name)
		in, err := model.FileDigest(a.dir.Config.StorePath(sc))
		if err != nil {
			return nil, fmt.Errorf("capture training run: read dataset %q: %w", name, err)
		}
		recs, err := d.s.CaptureAll(ctx)
		if err != nil {
			return nil, fmt.Errorf("capture training run: list dataset %q: %w", name, err)
		}
		ids := make([]string, 0, len(recs))
		for _, r := range recs {
			ids = append(ids, lineage.ArtifactID(a.dir.Keyer, a.rec.scope, name, r.ID))
		}
		run.Inputs = append(run.Inputs, model.Input{Store: name, SHA256: in.SHA256, RowIDs: ids})
	}
	if err := model.OpenRegistry(a.dir.Path).RecordRun(run); err != nil {
		return nil, err
	}
	return run, nil
}
