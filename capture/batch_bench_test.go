package capture_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/amnesia-dev/amnesia/capture"
)

// BenchmarkPutBatch is one ingestion of 1 document, 20 chunks and 20
// embeddings through PutBatch (SQLite ledger and stores).
func BenchmarkPutBatch(b *testing.B) {
	e := newBatchEnv(b)
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		docs, vecs := ingestion(fmt.Sprintf("doc-%d", i), "alice@example.org", 20)
		if err := e.docs.PutBatch(ctx, docs, e.vecs, vecs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(41*b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkPlainBatch is the same 41 records written to the stores
// without capture.
func BenchmarkPlainBatch(b *testing.B) {
	e := newBatchEnv(b)
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		docs, vecs := ingestion(fmt.Sprintf("doc-%d", i), "alice@example.org", 20)
		for _, d := range docs {
			if err := e.ds.CapturePut(ctx, capture.Record{ID: d.ID, Kind: d.Kind, Parent: d.Parent, Text: d.Text, Subject: "hmac:x"}); err != nil {
				b.Fatal(err)
			}
		}
		for _, v := range vecs {
			if err := e.vs.CapturePut(ctx, capture.VectorRecord{ID: v.ID, Embedding: v.Embedding, Subject: "hmac:x"}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(41*b.N)/b.Elapsed().Seconds(), "records/s")
}
