package bench

import (
	"context"
	"testing"

	"github.com/amnesia-dev/amnesia/internal/demo"
	"github.com/amnesia-dev/amnesia/store"
)

// BenchmarkDropSharedEmbeddings: one subject's chunk embeddings (384
// dimensions, demo.Embed, as the residue benchmark stores them) against
// every other subject's, as sqlite-vec and pgvector pass them.
func BenchmarkDropSharedEmbeddings(b *testing.B) {
	c := demo.Generate(1, 200, 15)
	var mine, others [][]byte
	for _, d := range c.Docs {
		for _, ch := range demo.Chunk(d.Text, 120) {
			v := store.Float32LE(demo.Embed(ch, 384))
			if d.Owner == 0 {
				mine = append(mine, v)
			} else {
				others = append(others, v)
			}
		}
	}
	b.Logf("%d erased vectors, %d others", len(mine), len(others))
	for b.Loop() {
		ev := map[string]*store.Evidence{}
		for i, v := range mine {
			e := &store.Evidence{}
			e.AddWindows(v)
			ev[string(rune('A'+i))] = e
		}
		err := store.DropShared(context.Background(), ev, func(fn func(string, []byte) error) error {
			for _, o := range others {
				if err := fn("", o); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
