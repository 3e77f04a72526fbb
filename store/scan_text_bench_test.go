package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/amnesia-dev/amnesia/internal/bench"
	"github.com/amnesia-dev/amnesia/store"
)

// textCorpus builds text as amnesia-bench scanner does (internal/bench
// scanner.go): filler documents of the residue corpus in random order, a
// 4 KiB zero run every 64 KiB, and every other one of the records of other
// subjects planted; the needles are those records' windows less those a
// filler document holds (store.DropShared), the first `needles` of them.
func textCorpus(tb testing.TB, needles, dataBytes int) (map[string]*store.Evidence, []byte) {
	rng := rand.New(rand.NewPCG(17, 19))
	pool := bench.NewCorpus(1, bench.FullSubjects, bench.FullDocsEach).Docs
	erased := bench.NewCorpus(2, 1000, 5).Docs
	var records [][]byte
	var kept [][][]byte
	for n := 0; n < needles && len(records) < len(erased); {
		var batch [][]byte
		ev := map[string]*store.Evidence{}
		for j := 0; j < 200 && len(records)+j < len(erased); j++ {
			d := []byte(erased[len(records)+j].Text)
			batch = append(batch, d)
			ev[fmt.Sprint(j)] = &store.Evidence{Needles: store.Windows(d)}
		}
		err := store.DropShared(context.Background(), ev, func(fn func(string, []byte) error) error {
			for _, d := range pool {
				if err := fn("", []byte(d.Text)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
		for j, d := range batch {
			records = append(records, d)
			kept = append(kept, ev[fmt.Sprint(j)].Needles)
			n += len(ev[fmt.Sprint(j)].Needles)
		}
	}
	ev := map[string]*store.Evidence{}
	n := 0
	for i, w := range kept {
		w = w[:min(len(w), needles-n)]
		if len(w) == 0 {
			break
		}
		ev[fmt.Sprintf("r%05d", i)] = &store.Evidence{Needles: w}
		n += len(w)
	}
	data := make([]byte, 0, dataBytes+4096)
	zeros := make([]byte, 4<<10)
	nextZero, planted := 60<<10, 0
	plantEvery := dataBytes / (len(records)/2 + 1)
	nextPlant := plantEvery / 2
	for len(data) < dataBytes {
		switch {
		case len(data) >= nextZero:
			data, nextZero = append(data, zeros...), nextZero+64<<10
		case len(data) >= nextPlant && planted < len(records):
			data, nextPlant = append(data, records[planted]...), nextPlant+plantEvery
			planted += 2
		default:
			data = append(data, pool[rng.IntN(len(pool))].Text+"\n"...)
		}
	}
	return ev, data[:dataBytes]
}

var textCache = struct {
	sync.Mutex
	m map[int]textCase
}{m: map[int]textCase{}}

type textCase struct {
	ev   map[string]*store.Evidence
	data []byte
}

func cachedText(tb testing.TB, needles int) textCase {
	textCache.Lock()
	defer textCache.Unlock()
	c, ok := textCache.m[needles]
	if !ok {
		c.ev, c.data = textCorpus(tb, needles, 64<<20)
		textCache.m[needles] = c
	}
	return c
}

// BenchmarkScanText scans 64 MiB of the scanner benchmark's text for 1,000
// and 10,000 needles.
func BenchmarkScanText(b *testing.B) {
	for _, needles := range []int{1000, 10000} {
		b.Run(fmt.Sprint(needles), func(b *testing.B) {
			c := cachedText(b, needles)
			set := store.NewNeedleSet(c.ev)
			b.ReportMetric(float64(set.Len()), "needles")
			b.SetBytes(int64(len(c.data)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				sc := store.NewScanner(set, "bench")
				sc.ScanBytes(c.data)
				if sc.Report().NeedlesFound == 0 {
					b.Fatal("nothing found")
				}
			}
		})
	}
}
