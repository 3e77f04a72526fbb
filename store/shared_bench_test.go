package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// BenchmarkDropSharedTemplates: an erasure window of many records made of
// template sentences (most of their windows are held by many other
// records, as in support tickets), against as many other records of the
// same kind. DropShared's work grew with (owners × holders) of each such
// window before needles were searched for once per distinct window.
func BenchmarkDropSharedTemplates(b *testing.B) {
	for _, c := range []struct{ owners, others int }{{300, 300}, {3000, 3000}, {70, 100000}} {
		n, m := c.owners, c.others
		b.Run(fmt.Sprintf("owners=%d/others=%d", n, m), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			phrases := make([]string, 60)
			for i := range phrases {
				phrases[i] = fmt.Sprintf("template sentence number %d about the usual problem. ", i)
			}
			doc := func(i int) []byte {
				var sb strings.Builder
				fmt.Fprintf(&sb, "Ticket %d for person %d, reachable at +31 6 %08d. ", i, i, r.IntN(1e8))
				for j := 0; j < 5; j++ {
					sb.WriteString(phrases[r.IntN(len(phrases))])
				}
				return []byte(sb.String())
			}
			owners := make([][]byte, n)
			for i := range owners {
				owners[i] = doc(i)
			}
			others := make([][]byte, m)
			keys := make([]string, m)
			for i := range others {
				keys[i] = fmt.Sprintf("x%07d", i)
				others[i] = doc(n + i)
			}
			b.ResetTimer()
			for range b.N {
				ev := map[string]*Evidence{}
				for i, o := range owners {
					e := &Evidence{}
					e.AddWindows(o)
					ev[fmt.Sprintf("o%05d", i)] = e
				}
				err := DropShared(context.Background(), ev, func(fn func(string, []byte) error) error {
					for i, o := range others {
						if err := fn(keys[i], o); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
