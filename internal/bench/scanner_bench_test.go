package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/amnesia-dev/amnesia/store"
)

// BenchmarkScanText scans 64 MiB of amnesia-bench scanner's text (the same
// writeScanFile) in memory for 1,000 and 10,000 needles, and reports the
// bytes scanned per CPU second besides wall time: CPU time is less
// sensitive to other work on a shared machine. Profile it with
// go test ./internal/bench -run X -bench ScanText -cpuprofile cpu.out.
func BenchmarkScanText(b *testing.B) {
	path := filepath.Join(b.TempDir(), "scan-text.bin")
	_, needles, err := writeScanFile(path, "text", 64<<20, 10000)
	if err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	for _, want := range []int{1000, 10000} {
		b.Run(fmt.Sprint(want), func(b *testing.B) {
			ev := map[string]*store.Evidence{}
			n := 0
			for i, w := range needles {
				w = w[:min(len(w), want-n)]
				if len(w) == 0 {
					break
				}
				ev[fmt.Sprintf("r%05d", i)] = &store.Evidence{Needles: w}
				n += len(w)
			}
			set := store.NewNeedleSet(ev)
			b.ReportMetric(float64(set.Len()), "needles")
			b.SetBytes(int64(len(data)))
			b.ResetTimer()
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				sc := store.NewScanner(set, "bench")
				sc.ScanBytes(data)
				if sc.Report().NeedlesFound == 0 {
					b.Fatal("nothing found")
				}
			}
			if cpu := cpuTime() - cpu0; cpu > 0 {
				b.ReportMetric(float64(b.N)*float64(len(data))/1e6/cpu.Seconds(), "MB/cpu-s")
			}
		})
	}
}
