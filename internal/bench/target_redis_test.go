package bench

import (
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	redisstore "github.com/amnesia-dev/amnesia/store/redis"
)

// The redis target's smoke run: a native DEL hides the entries and leaves
// their bytes, BGREWRITEAOF alone leaves them in the RDB, amnesia leaves
// none. It runs on a redis-server of its own, with Redis's default snapshot
// settings (an RDB exists, which B1 does not rewrite): another package's reclaim on
// a shared server would rewrite the files between a native delete and its
// measurement.
func TestRedisResidueSmoke(t *testing.T) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not on PATH (apt-get install redis-server)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	cmd := exec.Command(bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(l.Addr().(*net.TCPAddr).Port), "--dir", dir,
		"--appendonly", "yes", "--logfile", filepath.Join(t.TempDir(), "redis.log"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for i := 0; ; i++ {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if i == 100 {
			t.Fatalf("redis-server on %s did not answer", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Setenv("AMNESIA_BENCH_REDIS_ADDR", addr)
	t.Setenv("AMNESIA_BENCH_REDIS_DIR", dir)
	res, err := Residue(context.Background(), redisstore.Type, Options{Seed: 1, Subjects: 6, DocsEach: 2, Sample: 2, Work: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]Cell{}
	for _, c := range res.Cells {
		byID[c.Baseline] = c
		if c.Records == 0 || c.ProbePower < 0.5 {
			t.Errorf("%s: %d records, probe power %.2f: the measurement has no power", c.Baseline, c.Records, c.ProbePower)
		}
	}
	for _, id := range []string{"B0", "B1"} {
		if c := byID[id]; c.PhysicalResidue < 0.5 || c.LogicalExclusion != 1 {
			t.Errorf("%s: residue %.2f, exclusion %.2f; DEL (and BGREWRITEAOF alone: the RDB keeps them) should hide the entries and leave their bytes", id, c.PhysicalResidue, c.LogicalExclusion)
		}
	}
	for _, id := range []string{"B2", "B4", "B5"} {
		if c := byID[id]; c.PhysicalResidue != 0 || c.LogicalExclusion != 1 {
			t.Errorf("%s: residue %.2f, exclusion %.2f; want none left", id, c.PhysicalResidue, c.LogicalExclusion)
		}
	}
}
