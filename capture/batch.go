package capture

import (
	"context"
	"errors"
	"fmt"

	"github.com/amnesia-dev/amnesia/capture/backend"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/subject"
)

// PutBatch writes documents (a document and its chunks, say) through d and
// their embeddings through v (nil when vecs is empty), recording all of
// them in the ledger in one transaction (one commit), then writing the
// records to the stores, documents first, in the order given.
//
// Everything Put and Vectors.Put would refuse is checked for every write
// of the batch before anything is written: a store's own checks, whose
// data a write is (a chunk or embedding may name a parent written earlier
// in the same batch), keys that hold a person's id, and, in the ledger's
// transaction, erased artifacts and owner conflicts. A refused batch
// writes nothing to the ledger and nothing to the stores. As with Put,
// the ledger is written before the stores: a store write that fails after
// the ledger's commit leaves artifacts in the ledger that an erasure
// treats as already deleted. A store that writes batches
// (backend.DocBatchStore, backend.VectorBatchStore: the SQLite and
// PostgreSQL adapters) gets the batch's records in one transaction, so a
// failure there writes none of them to it; a store that does not gets one
// write per record, and those before a failed one stay written.
//
// The ledger appends the artifacts' events in the order given (documents,
// then embeddings), then the mentions: the chain is that of
// lineage.BatchRecorder, identical to Put then Vectors.Put one by one when
// no document has mentions. A ledger that is no lineage.BatchRecorder gets
// the writes one at a time.
func (d *Docs) PutBatch(ctx context.Context, docs []Doc, v *Vectors, vecs []Vector) error {
	r := d.r
	if len(vecs) > 0 && v == nil {
		return errors.New("capture batch: embeddings given without the vector store to write them to")
	}
	if v != nil && v.r != r {
		return errors.New("capture batch: the document and vector stores are wrapped by different recorders; wrap both with one Recorder")
	}
	batch := map[[2]string]*lineage.Artifact{}
	arts := make([]lineage.Artifact, 0, len(docs)+len(vecs))
	var mentions []lineage.Mention
	recs := make([]Record, len(docs))
	var sealed []string // artifacts whose content is written sealed
	checked := keyChecks{}
	for i, doc := range docs {
		kind, err := docKind(doc.Kind)
		if err != nil {
			return err
		}
		rec := Record{ID: doc.ID, Kind: doc.Kind, Parent: doc.Parent, Text: doc.Text, Metadata: doc.Metadata}
		if err := d.s.CaptureCheck(rec); err != nil {
			return err
		}
		owner, parent, err := r.ownerIn(ctx, doc.Subject, doc.Parent, []string{d.name}, batch)
		if err != nil {
			return fmt.Errorf("capture document: %w", err)
		}
		if err := r.checkKeysIn(checked, doc.ID, doc.Parent, doc.Subject, owner, doc.Mentions); err != nil {
			return fmt.Errorf("capture document: %w", err)
		}
		a := r.artifact(owner, kind, d.name, doc.ID, []byte(doc.Text), parent)
		for _, raw := range doc.Mentions {
			k, err := r.SubjectKey(raw)
			if err != nil {
				return fmt.Errorf("capture mention: %w", err)
			}
			mentions = append(mentions, lineage.Mention{Artifact: a.ID, Subject: k})
		}
		arts = append(arts, a)
		batch[[2]string{d.name, doc.ID}] = &a
		text, isSealed, err := r.seal(ctx, owner, d.name, doc.ID, "text", doc.Text)
		if err != nil {
			return err
		}
		if isSealed {
			sealed = append(sealed, a.ID)
		}
		rec.Subject, rec.Text = owner.String(), text
		recs[i] = rec
	}
	vrecs := make([]VectorRecord, len(vecs))
	if len(vecs) > 0 {
		stores := r.docStores()
		for i, vec := range vecs {
			rec := VectorRecord{ID: vec.ID, Embedding: vec.Embedding, Content: vec.Content, Metadata: vec.Metadata}
			if err := v.s.CaptureCheck(rec); err != nil {
				return err
			}
			of := vec.Of
			if of == "" {
				of = vec.ID
			}
			owner, parent, err := r.ownerIn(ctx, vec.Subject, of, stores, batch)
			if err != nil {
				return fmt.Errorf("capture embedding: %w", err)
			}
			if err := r.checkKeysIn(checked, vec.ID, vec.Of, vec.Subject, owner, nil); err != nil {
				return fmt.Errorf("capture embedding: %w", err)
			}
			va := r.artifact(owner, lineage.KindEmbedding, v.name, vec.ID, store.Float32LE(vec.Embedding), parent)
			arts = append(arts, va)
			content, isSealed, err := r.seal(ctx, owner, v.name, vec.ID, "content", vec.Content)
			if err != nil {
				return err
			}
			if isSealed {
				sealed = append(sealed, va.ID)
			}
			rec.Subject, rec.Content = owner.String(), content
			vrecs[i] = rec
		}
	}
	admitted := map[subject.Key]string{} // subject -> its queued erasure's trace ("": none)
	for _, a := range arts {
		if _, ok := admitted[a.Subject]; !ok {
			queued, err := r.admit(ctx, a.Subject)
			if err != nil {
				return fmt.Errorf("capture batch: %w", err)
			}
			admitted[a.Subject] = queued
		}
	}
	if err := lineage.RecordAll(ctx, r.ledger, arts, mentions); err != nil {
		return fmt.Errorf("capture batch: %w", err)
	}
	hide := map[string][]string{} // queued trace -> artifacts recorded for its subject
	for _, a := range arts {
		if q := admitted[a.Subject]; q != "" {
			hide[q] = append(hide[q], a.ID)
		}
	}
	for q, ids := range hide {
		if err := r.suppressQueued(ctx, q, ids); err != nil {
			return err
		}
	}
	if err := r.markSealed(ctx, sealed); err != nil {
		return err
	}
	if bs, ok := d.s.(backend.DocBatchStore); ok && len(recs) > 1 {
		if err := bs.CapturePutBatch(ctx, recs); err != nil {
			return err
		}
	} else {
		for _, rec := range recs {
			if err := d.s.CapturePut(ctx, rec); err != nil {
				return err
			}
		}
	}
	if len(vrecs) == 0 {
		return nil
	}
	if bs, ok := v.s.(backend.VectorBatchStore); ok && len(vrecs) > 1 {
		return bs.CapturePutBatch(ctx, vrecs)
	}
	for _, rec := range vrecs {
		if err := v.s.CapturePut(ctx, rec); err != nil {
			return err
		}
	}
	return nil
}
