package bench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/internal/demo"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/weaviate"
)

// weaviateURL is the Weaviate server the weaviate target uses:
// AMNESIA_BENCH_WEAVIATE_URL, else the test server (scripts/services).
func weaviateURL() string {
	if u := os.Getenv("AMNESIA_BENCH_WEAVIATE_URL"); u != "" {
		return u
	}
	return os.Getenv("AMNESIA_TEST_WEAVIATE_URL")
}

// weaviateDataDir is that server's PERSISTENCE_DATA_PATH, when this
// process may read it.
func weaviateDataDir() string {
	if d := os.Getenv("AMNESIA_BENCH_WEAVIATE_DATADIR"); d != "" {
		return d
	}
	if os.Getenv("AMNESIA_BENCH_WEAVIATE_URL") != "" {
		return ""
	}
	return os.Getenv("AMNESIA_TEST_WEAVIATE_DATADIR")
}

// weaviateSettle is how long B1 waits, after the native delete, for the
// server's own memtable flush and compaction: Weaviate has no compaction
// call, so "the store's own compaction" is waiting for it.
const weaviateSettle = 15 * time.Second

// The weaviate target keeps each chunk as an object with its text and
// embedding, written through capture (store/weaviate's capture backend).
// Native delete is DELETE /v1/objects/{class}/{id}, as an application
// does; B1 waits for the server's own flush and compaction; B2 rebuilds
// the class from its live objects (export, drop, create, import).
func init() {
	name := "wv"
	vecs := func(e *env) *capture.Vectors { return e.rec.Vectors(e.st.(*weaviate.Store)) }
	targets[weaviate.Type] = &target{
		typ:   weaviate.Type,
		fresh: true,
		config: func(dir string) store.Config {
			class := "Bench" + runTag + "_" + strings.ReplaceAll(filepath.Base(dir), "-", "_")
			return store.Config{Name: name, Type: weaviate.Type, DSN: weaviateURL(), Collection: class, Dimensions: demo.Dim, DataDir: weaviateDataDir()}
		},
		ingest: func(ctx context.Context, e *env, c *Corpus, d Doc) error {
			for i, ch := range d.Chunks {
				if err := vecs(e).Put(ctx, capture.Vector{ID: chunkID(d, i), Subject: c.Subjects[d.Owner].ID, Content: ch, Embedding: demo.Embed(ch, demo.Dim)}); err != nil {
					return err
				}
			}
			return nil
		},
		keys: chunkIDs,
		content: func(d Doc, key string) []byte {
			return weaviateText(d.Chunks[chunkIndex(d, key)])
		},
		native: func(ctx context.Context, s store.Store, keys []string) error {
			w := s.(*weaviate.Store)
			for _, k := range keys {
				req, err := http.NewRequestWithContext(ctx, http.MethodDelete, w.URL()+"/v1/objects/"+w.Class()+"/"+weaviate.KeyUUID(k), nil)
				if err != nil {
					return err
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return err
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusNotFound {
					return fmt.Errorf("native delete: %s", resp.Status)
				}
			}
			return nil
		},
		compact: func(ctx context.Context, _ store.Store, _ []string) error {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(weaviateSettle):
				return nil
			}
		},
		rebuild: func(ctx context.Context, s store.Store, _ []string) error {
			w := s.(*weaviate.Store)
			live, err := w.All(ctx)
			if err != nil {
				return err
			}
			if err := dropWeaviateClass(ctx, w); err != nil {
				return err
			}
			fresh, err := weaviate.Open(ctx, weaviate.Options{Name: name, URL: w.URL(), Class: w.Class(), Dimensions: demo.Dim}, true)
			if err != nil {
				return err
			}
			defer fresh.Close()
			for i := 0; i < len(live); i += 100 {
				if err := fresh.PutBatch(ctx, live[i:min(i+100, len(live))]); err != nil {
					return err
				}
			}
			return nil
		},
		visible: func(ctx context.Context, e *env, key string, vec []float32) (bool, error) {
			if r, err := vecs(e).Get(ctx, key); err != nil || r != nil {
				return r != nil, err
			}
			ns, err := vecs(e).Search(ctx, vec, 10)
			for _, n := range ns {
				if n.ID == key {
					return true, err
				}
			}
			return false, err
		},
		query: func(d Doc, key string) []float32 { return demo.Embed(d.Chunks[chunkIndex(d, key)], demo.Dim) },
		top5: func(ctx context.Context, e *env, key string, vec []float32) (bool, error) {
			ns, err := vecs(e).Search(ctx, vec, 5)
			for _, n := range ns {
				if n.ID == key {
					return true, err
				}
			}
			return false, err
		},
		drop: func(ctx context.Context, e *env) error { return dropWeaviateClass(ctx, e.st.(*weaviate.Store)) },
		notes: map[string]string{
			"B1": weaviateB1Note,
			"B4": weaviateReclaimNote,
			"B5": weaviateReclaimNote,
		},
	}
}

// What B1 and amnesia's reclaim mean on Weaviate (docs/weaviate.md,
// "Why a wait can end PENDING").
var (
	weaviateB1Note = fmt.Sprintf("Weaviate has no compaction call: B1 is the native delete, then a %.0f s wait for the server's own memtable flush and segment compaction", weaviateSettle.Seconds())
	// The erasure's reclaim wait is saga.DefaultReclaimWait (30 s), each
	// Reclaim call polling for up to weaviate.DefaultPoll (10 s).
	weaviateReclaimNote = "Weaviate has no compaction API: reclaim waits up to the erasure's reclaim wait (30 s, one Reclaim polls up to 10 s) for the server's own compaction, " +
		"which merges only segments of the same level: the delete's tombstone lands in a new level-0 segment, and an object in an older, higher-level segment stays there until later writes raise the newer segments to its level; " +
		"no server setting bounds that, so an erasure still waiting is PENDING-weaviate-compaction (outcomes)"
)

// weaviateText is a chunk's text as the object store writes it (a JSON
// string's body).
func weaviateText(s string) []byte { return weaviate.TextBytes(s) }

func dropWeaviateClass(ctx context.Context, w *weaviate.Store) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, w.URL()+"/v1/schema/"+w.Class(), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode != http.StatusNotFound {
		return fmt.Errorf("drop class %s: %s", w.Class(), resp.Status)
	}
	return nil
}
