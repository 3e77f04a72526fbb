package sqliteledger_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/lineage/ledgertest"
	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/subject"
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

// BenchmarkViewTrace is one trace (View + BuildTrace) of a random subject
// of 2,000, each owning 10 documents of 4 chunks with an embedding each
// (the shape of amnesia-bench trace): CPU and allocation of the read path.
func BenchmarkViewTrace(b *testing.B) {
	ctx := context.Background()
	l, err := sqliteledger.Open(ctx, filepath.Join(b.TempDir(), "ledger.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	k := ledgertest.Keyer(b)
	const subjects = 2000
	var owners []subject.Key
	var arts []lineage.Artifact
	for s := 0; s < subjects; s++ {
		owner, _ := k.Key("default", fmt.Sprintf("subject-%d", s))
		owners = append(owners, owner)
		for d := 0; d < 10; d++ {
			doc := ledgertest.Art(k, owner, lineage.KindSource, "docs", fmt.Sprintf("s%d-d%d", s, d))
			arts = append(arts, doc)
			for c := 0; c < 4; c++ {
				ch := ledgertest.Art(k, owner, lineage.KindChunk, "docs", fmt.Sprintf("s%d-d%d#%d", s, d, c), doc.ID)
				arts = append(arts, ch, ledgertest.Art(k, owner, lineage.KindEmbedding, "vectors", fmt.Sprintf("s%d-d%d#%d", s, d, c), ch.ID))
			}
		}
		if s%20 == 19 { // 20 subjects a transaction
			if err := l.RecordBatch(ctx, arts, nil); err != nil {
				b.Fatal(err)
			}
			arts = arts[:0]
		}
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		v, err := l.View(ctx, "default", owners[(i*7919)%subjects])
		if err != nil {
			b.Fatal(err)
		}
		t, err := lineage.BuildTrace(v)
		if err != nil || len(t.Artifacts) != 90 {
			b.Fatalf("trace of %d artifacts: %v", len(t.Artifacts), err)
		}
	}
}
