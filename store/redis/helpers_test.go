package redis_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	redisstore "github.com/amnesia-dev/amnesia/store/redis"
)

// shared returns the address and data directory of the test Redis server
// (scripts/services start), or skips the test.
func shared(t *testing.T) (addr, dir string) {
	t.Helper()
	addr, dir = os.Getenv("AMNESIA_TEST_REDIS_ADDR"), os.Getenv("AMNESIA_TEST_REDIS_DIR")
	if addr == "" || dir == "" {
		t.Skip("AMNESIA_TEST_REDIS_ADDR and AMNESIA_TEST_REDIS_DIR are unset: start the test services (eval \"$(scripts/services start)\")")
	}
	return addr, dir
}

// server is a private redis-server in a temporary directory, for tests
// that restart it.
type server struct {
	t    *testing.T
	dir  string
	port int
	cmd  *exec.Cmd
}

func (s *server) addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// private starts a redis-server of the test's own (AOF on), or skips the
// test when redis-server is not on PATH. It is stopped at the end.
func private(t *testing.T) *server {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not on PATH (apt-get install redis-server)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	s := &server{t: t, dir: t.TempDir(), port: port}
	s.start()
	t.Cleanup(s.stop)
	return s
}

func (s *server) start() {
	s.t.Helper()
	s.cmd = exec.Command("redis-server", "--bind", "127.0.0.1", "--port", strconv.Itoa(s.port),
		"--dir", s.dir, "--appendonly", "yes", "--save", "", "--logfile", filepath.Join(s.t.TempDir(), "redis.log"))
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if c, err := net.Dial("tcp", s.addr()); err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Fatalf("redis-server on %s did not answer", s.addr())
}

// stop shuts the server down (SHUTDOWN: it writes no RDB, --save "").
func (s *server) stop() {
	if s.cmd == nil {
		return
	}
	c := goredis.NewClient(&goredis.Options{Addr: s.addr(), Protocol: 2, DisableIdentity: true})
	c.Shutdown(context.Background())
	c.Close()
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
	s.cmd = nil
}

func openStore(t *testing.T, o redisstore.Options) *redisstore.Store {
	t.Helper()
	s, err := redisstore.Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

const dim = 16

func vector(seed int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(math.Sin(float64(seed*dim+i)*1.37)) + float32(seed)*1e-3
	}
	return v
}

// text is a record's content: every window of it holds a token unique to
// the layout and seed, so that no two records share a needle.
func text(layout string, seed int) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%s/%d", layout, seed)))
	x := hex.EncodeToString(h[:])
	return fmt.Sprintf("[%s] patient %s told %s the assistant %s their appointment %s is at clinic %s, allergy %s.", layout, x[0:8], x[8:16], x[16:24], x[24:32], x[32:40], x[40:48])
}
