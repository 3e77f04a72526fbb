package bench

import (
	"context"
	"os"
	"strings"

	"github.com/amnesia-dev/amnesia/internal/demo"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store"
	redisstore "github.com/amnesia-dev/amnesia/store/redis"
)

// redisAddr and redisDir are the Redis server the redis target uses and
// its data directory: AMNESIA_BENCH_REDIS_ADDR and _DIR, else the test
// server (scripts/services start).
func redisAddr() string {
	if a := os.Getenv("AMNESIA_BENCH_REDIS_ADDR"); a != "" {
		return a
	}
	return os.Getenv("AMNESIA_TEST_REDIS_ADDR")
}

func redisDir() string {
	if d := os.Getenv("AMNESIA_BENCH_REDIS_DIR"); d != "" {
		return d
	}
	if os.Getenv("AMNESIA_BENCH_REDIS_ADDR") != "" {
		return ""
	}
	return os.Getenv("AMNESIA_TEST_REDIS_DIR")
}

// redisPrefix is the key prefix of this run's records. Baselines run one
// after another and each drops its keys when it is done (the next
// baseline's setup rewrites the files), so they share it.
var redisPrefix = "bench:" + runTag + ":"

func redisKey(d Doc, i int) string { return redisPrefix + chunkID(d, i) }

func redisKeys(d Doc) []string {
	out := make([]string, len(d.Chunks))
	for i := range d.Chunks {
		out[i] = redisKey(d, i)
	}
	return out
}

func redisChunk(d Doc, key string) string {
	return d.Chunks[chunkIndex(d, strings.TrimPrefix(key, redisPrefix))]
}

// The redis target is a semantic cache (LangChain's RedisSemanticCache
// layout, with the adapter's index set): one hash per chunk, the chunk's
// text as the prompt and its embedding as the vector, tagged with the
// owner. B1 is BGREWRITEAOF (Redis's own compaction); B2 is BGREWRITEAOF
// and BGSAVE, which is also what amnesia's reclaim runs.
func init() {
	targets[redisstore.Type] = &target{
		typ:   redisstore.Type,
		fresh: true,
		config: func(dir string) store.Config {
			return store.Config{Name: "semcache", Type: redisstore.Type, DSN: redisAddr(), Preset: redisstore.LayoutSemantic,
				Table: redisPrefix, Dimensions: demo.Dim, DataDir: redisDir()}
		},
		ingest: func(ctx context.Context, e *env, c *Corpus, d Doc) error {
			s := e.st.(*redisstore.Store)
			owner, err := e.dir.Keyer.Key(e.dir.Config.Scope, c.Subjects[d.Owner].ID)
			if err != nil {
				return err
			}
			scope := e.dir.Config.Scope
			for i, ch := range d.Chunks {
				key := redisKey(d, i)
				if err := e.ledger.Record(ctx, lineage.Artifact{ID: lineage.ArtifactID(e.dir.Keyer, scope, "semcache", key), Scope: scope, Subject: owner, Kind: lineage.KindCache, Store: "semcache", Key: key, Digest: lineage.ContentDigest(e.dir.Keyer, []byte(ch))}); err != nil {
					return err
				}
				if _, err := s.PutSemantic(ctx, redisstore.SemanticEntry{ID: strings.TrimPrefix(key, redisPrefix), Prompt: ch, Vector: demo.Embed(ch, demo.Dim), SubjectTag: owner.String()}); err != nil {
					return err
				}
			}
			return nil
		},
		keys:    redisKeys,
		content: func(d Doc, key string) []byte { return []byte(redisChunk(d, key)) },
		native: func(ctx context.Context, s store.Store, keys []string) error {
			r := s.(*redisstore.Store)
			members := make([]any, len(keys))
			for i, k := range keys {
				members[i] = k
			}
			if err := r.Client().SRem(ctx, r.IndexKey(), members...).Err(); err != nil {
				return err
			}
			return r.Client().Del(ctx, keys...).Err()
		},
		compact: func(ctx context.Context, s store.Store, _ []string) error {
			return s.(*redisstore.Store).RewriteAOF(ctx)
		},
		rebuild: func(ctx context.Context, s store.Store, _ []string) error {
			_, err := s.(*redisstore.Store).Reclaim(ctx)
			return err
		},
		visible: func(ctx context.Context, e *env, key string, vec []float32) (bool, error) {
			sup, err := e.ledger.Suppressed(ctx, lineage.ArtifactID(e.dir.Keyer, e.dir.Config.Scope, "semcache", key))
			if err != nil || sup {
				return false, err
			}
			r := e.st.(*redisstore.Store)
			if n, err := r.Client().Exists(ctx, key).Result(); err != nil || n > 0 {
				return n > 0, err
			}
			ns, err := r.Search(ctx, vec, 10)
			for _, n := range ns {
				if n.Key == key {
					return true, err
				}
			}
			return false, err
		},
		query: func(d Doc, key string) []float32 { return demo.Embed(redisChunk(d, key), demo.Dim) },
		top5: func(ctx context.Context, e *env, key string, vec []float32) (bool, error) {
			ns, err := e.st.(*redisstore.Store).Search(ctx, vec, 5)
			for _, n := range ns {
				if n.Key == key {
					return true, err
				}
			}
			return false, err
		},
		drop: func(ctx context.Context, e *env) error {
			r := e.st.(*redisstore.Store)
			keys, err := r.Client().Keys(ctx, redisPrefix+"*").Result()
			if err != nil {
				return err
			}
			keys = append(keys, r.IndexKey())
			return r.Client().Del(ctx, keys...).Err()
		},
	}
}
