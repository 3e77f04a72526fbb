package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/amnesia-dev/amnesia/internal/demo"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/chroma"
)

// The chroma target runs against a Chroma server of its own: the byte scan
// covers the server's whole persist directory, and Chroma writes a new
// index file from uninitialised memory, so another collection created
// while the benchmark runs (a test's, an application's) can hold
// fragments of the benchmark's records that no erasure of the benchmark's
// collection can reach. AMNESIA_BENCH_CHROMA_URL and
// AMNESIA_BENCH_CHROMA_DIR name a server to use instead (its persist
// directory must be readable here, and nothing else should use it).
// Otherwise the chroma command (AMNESIA_BENCH_CHROMA_BIN, else
// AMNESIA_TEST_CHROMA_BIN from scripts/services) is started once per
// process on a free loopback port with a fresh persist directory under
// the system's temporary directory, and killed when the process exits.
func chromaBin() string {
	if b := os.Getenv("AMNESIA_BENCH_CHROMA_BIN"); b != "" {
		return b
	}
	return os.Getenv("AMNESIA_TEST_CHROMA_BIN")
}

func chromaAvailable() bool {
	return (os.Getenv("AMNESIA_BENCH_CHROMA_URL") != "" && os.Getenv("AMNESIA_BENCH_CHROMA_DIR") != "") || chromaBin() != ""
}

var chromaSrv struct {
	once     sync.Once
	url, dir string
	err      error
}

// chromaServer returns the server's URL and persist directory, starting a
// private one on first use.
func chromaServer() (string, string, error) {
	if u := os.Getenv("AMNESIA_BENCH_CHROMA_URL"); u != "" {
		return u, os.Getenv("AMNESIA_BENCH_CHROMA_DIR"), nil
	}
	chromaSrv.once.Do(func() {
		chromaSrv.url, chromaSrv.dir, chromaSrv.err = startChroma(chromaBin())
	})
	return chromaSrv.url, chromaSrv.dir, chromaSrv.err
}

func startChroma(bin string) (string, string, error) {
	if bin == "" {
		return "", "", fmt.Errorf("chroma target: set AMNESIA_BENCH_CHROMA_BIN to the chroma command (scripts/services start exports AMNESIA_TEST_CHROMA_BIN)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", "", err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	// Directories of earlier processes that are gone are removed: the
	// server cannot outlive them (see chromaProcAttr).
	old, _ := filepath.Glob(filepath.Join(os.TempDir(), "amnesia-bench-chroma-*"))
	for _, d := range old {
		var pid int
		if _, err := fmt.Sscanf(filepath.Base(d), "amnesia-bench-chroma-%d-", &pid); err == nil && pid > 0 && !alive(pid) {
			os.RemoveAll(d)
		}
	}
	dir, err := os.MkdirTemp("", fmt.Sprintf("amnesia-bench-chroma-%d-", os.Getpid()))
	if err != nil {
		return "", "", err
	}
	cmd := exec.Command(bin, "run", "--host", "127.0.0.1", "--port", strconv.Itoa(port), "--path", dir)
	cmd.Env = append(os.Environ(), "ANONYMIZED_TELEMETRY=False")
	cmd.SysProcAttr = chromaProcAttr()
	if err := cmd.Start(); err != nil {
		return "", "", fmt.Errorf("chroma target: start %s: %w", bin, err)
	}
	go cmd.Wait()
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	for i := 0; i < 120; i++ {
		resp, err := http.Get(url + "/api/v2/heartbeat")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url, dir, nil
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	cmd.Process.Kill()
	return "", "", fmt.Errorf("chroma target: %s run did not answer on %s within 60 s", bin, url)
}

// The chroma target keeps each chunk's embedding and text in one
// collection of the server (a collection per baseline), as a LangChain
// Chroma vector store does. The physical probe scans the whole persist
// directory, which every collection of the server shares.
func init() {
	targets[chroma.Type] = &target{
		typ:   chroma.Type,
		fresh: true,
		config: func(dir string) store.Config {
			// A server that could not start leaves dsn empty: opening the
			// store then fails with the reason in chromaServer's error.
			u, d, _ := chromaServer()
			return store.Config{Name: "chroma", Type: chroma.Type, DSN: u, Collection: "bench-" + runTag + "-" + filepath.Base(dir), Dimensions: demo.Dim, DataDir: d}
		},
		ingest: func(ctx context.Context, e *env, c *Corpus, d Doc) error {
			if _, _, err := chromaServer(); err != nil {
				return err
			}
			s := e.st.(*chroma.Store)
			owner, err := e.dir.Keyer.Key(e.dir.Config.Scope, c.Subjects[d.Owner].ID)
			if err != nil {
				return err
			}
			scope := e.dir.Config.Scope
			for i, ch := range d.Chunks {
				k := chunkID(d, i)
				if err := e.ledger.Record(ctx, lineage.Artifact{ID: lineage.ArtifactID(e.dir.Keyer, scope, "chroma", k), Scope: scope, Subject: owner, Kind: lineage.KindEmbedding, Store: "chroma", Key: k, Digest: lineage.ContentDigest(e.dir.Keyer, []byte(ch))}); err != nil {
					return err
				}
				if err := s.Put(ctx, chroma.Record{ID: k, Subject: owner.String(), Embedding: demo.Embed(ch, demo.Dim), Document: ch}); err != nil {
					return err
				}
			}
			return nil
		},
		keys: chunkIDs,
		content: func(d Doc, key string) []byte {
			return []byte(d.Chunks[chunkIndex(d, key)])
		},
		// B0: Chroma's delete through its API.
		native: func(ctx context.Context, s store.Store, keys []string) error {
			return s.Delete(ctx, keys)
		},
		// B1: Chroma's own maintenance, `chroma vacuum` (purges the log,
		// VACUUMs chroma.sqlite3; nothing compacts a local HNSW index).
		compact: func(ctx context.Context, s store.Store, _ []string) error {
			return chromaVacuum(ctx, s.(*chroma.Store))
		},
		// B2: the collection rebuilt through the API from its live records
		// (what an application can do), then `chroma vacuum`.
		rebuild: func(ctx context.Context, s store.Store, _ []string) error {
			if _, err := s.(*chroma.Store).Rebuild(ctx); err != nil {
				return err
			}
			return chromaVacuum(ctx, s.(*chroma.Store))
		},
		visible: func(ctx context.Context, e *env, key string, vec []float32) (bool, error) {
			sup, err := e.ledger.Suppressed(ctx, lineage.ArtifactID(e.dir.Keyer, e.dir.Config.Scope, "chroma", key))
			if err != nil || sup {
				return false, err
			}
			s := e.st.(*chroma.Store)
			if r, err := s.Get(ctx, key); err != nil || r != nil {
				return r != nil, err
			}
			ns, err := s.Search(ctx, vec, 10)
			for _, n := range ns {
				if n.ID == key {
					return true, err
				}
			}
			return false, err
		},
		query: func(d Doc, key string) []float32 { return demo.Embed(d.Chunks[chunkIndex(d, key)], demo.Dim) },
		top5: func(ctx context.Context, e *env, key string, vec []float32) (bool, error) {
			ns, err := e.st.(*chroma.Store).Search(ctx, vec, 5)
			for _, n := range ns {
				if n.ID == key {
					return true, err
				}
			}
			return false, err
		},
		drop: func(ctx context.Context, e *env) error {
			return e.st.(*chroma.Store).DeleteCollection(ctx)
		},
	}
}

// chromaVacuum runs Chroma's own `chroma vacuum --force` on the persist
// directory (see chromaBin).
func chromaVacuum(ctx context.Context, s *chroma.Store) error {
	bin := chromaBin()
	if bin == "" || s.DataDir() == "" {
		return fmt.Errorf("chroma vacuum: set AMNESIA_BENCH_CHROMA_BIN (the chroma command) and the persist directory (AMNESIA_BENCH_CHROMA_DIR)")
	}
	out, err := exec.CommandContext(ctx, bin, "vacuum", "--path", s.DataDir(), "--force", "--timeout", "30").CombinedOutput()
	if err != nil {
		return fmt.Errorf("chroma vacuum: %v: %s", err, lastLine(out))
	}
	return nil
}

// alive reports whether process pid exists.
func alive(pid int) bool {
	p, err := os.FindProcess(pid)
	return err == nil && p.Signal(syscall.Signal(0)) == nil
}

func lastLine(b []byte) string {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\n' {
			return string(b[i+1:])
		}
	}
	return string(b)
}
