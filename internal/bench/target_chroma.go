package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/amnesia-dev/amnesia/internal/demo"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/chroma"
)

// chromaURL is the Chroma server the chroma target uses:
// AMNESIA_BENCH_CHROMA_URL, else the test server.
func chromaURL() string {
	if u := os.Getenv("AMNESIA_BENCH_CHROMA_URL"); u != "" {
		return u
	}
	return os.Getenv("AMNESIA_TEST_CHROMA_URL")
}

// chromaDir is that server's persist directory (chroma run --path).
func chromaDir() string {
	if d := os.Getenv("AMNESIA_BENCH_CHROMA_DIR"); d != "" {
		return d
	}
	if os.Getenv("AMNESIA_BENCH_CHROMA_URL") != "" {
		return "" // another server: its directory is not the test server's
	}
	return os.Getenv("AMNESIA_TEST_CHROMA_DIR")
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
			return store.Config{Name: "chroma", Type: chroma.Type, DSN: chromaURL(), Collection: "bench-" + runTag + "-" + filepath.Base(dir), Dimensions: demo.Dim, DataDir: chromaDir()}
		},
		ingest: func(ctx context.Context, e *env, c *Corpus, d Doc) error {
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
// directory: the binary named by AMNESIA_BENCH_CHROMA_BIN, else
// AMNESIA_TEST_CHROMA_BIN (scripts/services exports it).
func chromaVacuum(ctx context.Context, s *chroma.Store) error {
	bin := os.Getenv("AMNESIA_BENCH_CHROMA_BIN")
	if bin == "" {
		bin = os.Getenv("AMNESIA_TEST_CHROMA_BIN")
	}
	if bin == "" || s.DataDir() == "" {
		return fmt.Errorf("chroma vacuum: set AMNESIA_BENCH_CHROMA_BIN (the chroma command) and the persist directory (AMNESIA_BENCH_CHROMA_DIR)")
	}
	out, err := exec.CommandContext(ctx, bin, "vacuum", "--path", s.DataDir(), "--force", "--timeout", "30").CombinedOutput()
	if err != nil {
		return fmt.Errorf("chroma vacuum: %v: %s", err, lastLine(out))
	}
	return nil
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
