package sqliteledger_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/lineage/ledgertest"
	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
)

// BenchmarkRecordBatch41 records 1 document, 20 chunks and 20 embeddings
// in one RecordBatch.
func BenchmarkRecordBatch41(b *testing.B) {
	ctx := context.Background()
	l, err := sqliteledger.Open(ctx, filepath.Join(b.TempDir(), "ledger.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	k := ledgertest.Keyer(b)
	owner, _ := k.Key("default", "alice@example.org")
	for i := 0; b.Loop(); i++ {
		doc := ledgertest.Art(k, owner, lineage.KindSource, "docs", fmt.Sprintf("d%d", i))
		arts := []lineage.Artifact{doc}
		for c := 0; c < 20; c++ {
			ch := ledgertest.Art(k, owner, lineage.KindChunk, "docs", fmt.Sprintf("d%d#%d", i, c), doc.ID)
			arts = append(arts, ch, ledgertest.Art(k, owner, lineage.KindEmbedding, "vectors", fmt.Sprintf("d%d#%d", i, c), ch.ID))
		}
		if err := l.RecordBatch(ctx, arts, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(41*b.N)/b.Elapsed().Seconds(), "records/s")
}
