package store

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// vectorCorpus returns 384-dimension float32 vectors tiled into about
// needles needles, and data bytes of other vectors with every other one
// of the needles' vectors in it.
func vectorCorpus(needles, dataBytes int) (map[string]*Evidence, []byte) {
	rng := rand.New(rand.NewPCG(21, 22))
	vec := func() []byte {
		v := make([]float32, 384)
		for i := range v {
			v[i] = float32(rng.NormFloat64() * 0.05)
		}
		return Float32LE(v)
	}
	ev := map[string]*Evidence{}
	var recs [][]byte
	for n := 0; n < needles; {
		r := vec()
		e := &Evidence{}
		e.AddWindows(r)
		ev[fmt.Sprintf("v%05d", len(recs))] = e
		recs = append(recs, r)
		n += len(e.Needles)
	}
	data := make([]byte, 0, dataBytes+2048)
	for i := 0; len(data) < dataBytes; i++ {
		if i%1000 == 0 && 2*(i/1000) < len(recs) {
			data = append(data, recs[2*(i/1000)]...)
		} else {
			data = append(data, vec()...)
		}
	}
	return ev, data[:dataBytes]
}

// BenchmarkScanVectors scans 64 MiB of vectors for about 10,000 needles.
func BenchmarkScanVectors(b *testing.B) {
	ev, data := vectorCorpus(10000, 64<<20)
	set := NewNeedleSet(ev)
	b.ReportMetric(float64(set.Len()), "needles")
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sc := NewScanner(set, "bench")
		sc.ScanBytes(data)
		if sc.Report().NeedlesFound == 0 {
			b.Fatal("nothing found")
		}
	}
}
