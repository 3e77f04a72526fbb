package bench

import (
	"context"
	"os"
	"path/filepath"

	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/pgvector"
)

// pgvectorDSN is the PostgreSQL server with pgvector the pgvector target
// uses: AMNESIA_BENCH_PGVECTOR_DSN, else the test server.
func pgvectorDSN() string {
	if d := os.Getenv("AMNESIA_BENCH_PGVECTOR_DSN"); d != "" {
		return d
	}
	return os.Getenv("AMNESIA_TEST_PG_DSN")
}

// pgvectorDataDir is that server's data directory, when this process may
// read it: the physical probe then reads the relation and pg_wal files
// directly instead of through pg_read_binary_file.
func pgvectorDataDir() string {
	if d := os.Getenv("AMNESIA_BENCH_PGVECTOR_DATADIR"); d != "" {
		return d
	}
	if os.Getenv("AMNESIA_BENCH_PGVECTOR_DSN") != "" {
		return "" // another server: its data directory is not the test server's
	}
	return os.Getenv("AMNESIA_TEST_PG_DATADIR")
}

// The pgvector target keeps each chunk's embedding and text, as RAG tables
// do. Lineage and the read path are handled as for the postgres target.
func init() {
	targets[pgvector.Type] = &target{
		typ:    pgvector.Type,
		fresh:  true,
		server: pgvectorDSN,
		config: func(dir string) store.Config {
			return store.Config{Name: "pgvec", Type: pgvector.Type, DSN: pgvectorDSN(), Table: "bench_vec_" + runTag + "_" + filepath.Base(dir), Dimensions: Dim, DataDir: pgvectorDataDir()}
		},
		ingest: func(ctx context.Context, e *env, c *Corpus, d Doc) error {
			s := e.st.(*pgvector.Store)
			owner, err := e.dir.Keyer.Key(e.dir.Config.Scope, c.Subjects[d.Owner].ID)
			if err != nil {
				return err
			}
			scope := e.dir.Config.Scope
			for i, ch := range d.Chunks {
				k := chunkID(d, i)
				if err := e.ledger.Record(ctx, lineage.Artifact{ID: lineage.ArtifactID(e.dir.Keyer, scope, "pgvec", k), Scope: scope, Subject: owner, Kind: lineage.KindEmbedding, Store: "pgvec", Key: k, Digest: lineage.ContentDigest(e.dir.Keyer, []byte(ch))}); err != nil {
					return err
				}
				if err := s.Put(ctx, pgvector.Record{ID: k, Subject: owner.String(), Embedding: embed(ch), Content: ch}); err != nil {
					return err
				}
			}
			return nil
		},
		keys: chunkIDs,
		content: func(d Doc, key string) []byte {
			return pgvector.OnDisk(embed(d.Chunks[chunkIndex(d, key)]))
		},
		native: func(ctx context.Context, s store.Store, keys []string) error {
			p := s.(*pgvector.Store)
			return p.Exec(ctx, "DELETE FROM "+p.Table()+" WHERE id = ANY($1)", keys)
		},
		compact: func(ctx context.Context, s store.Store, _ []string) error {
			p := s.(*pgvector.Store)
			return p.Exec(ctx, "VACUUM "+p.Table())
		},
		rebuild: func(ctx context.Context, s store.Store, _ []string) error {
			p := s.(*pgvector.Store)
			if err := p.Exec(ctx, "VACUUM FULL "+p.Table()); err != nil {
				return err
			}
			return p.Exec(ctx, "CHECKPOINT")
		},
		visible: func(ctx context.Context, e *env, key string, vec []float32) (bool, error) {
			sup, err := e.ledger.Suppressed(ctx, lineage.ArtifactID(e.dir.Keyer, e.dir.Config.Scope, "pgvec", key))
			if err != nil || sup {
				return false, err
			}
			p := e.st.(*pgvector.Store)
			if r, err := p.Get(ctx, key); err != nil || r != nil {
				return r != nil, err
			}
			ns, err := p.Search(ctx, vec, 10, true)
			for _, n := range ns {
				if n.ID == key {
					return true, err
				}
			}
			return false, err
		},
		query: func(d Doc, key string) []float32 { return embed(d.Chunks[chunkIndex(d, key)]) },
		top5: func(ctx context.Context, e *env, key string, vec []float32) (bool, error) {
			ns, err := e.st.(*pgvector.Store).Search(ctx, vec, 5, false)
			for _, n := range ns {
				if n.ID == key {
					return true, err
				}
			}
			return false, err
		},
		drop: func(ctx context.Context, e *env) error {
			p := e.st.(*pgvector.Store)
			return p.Exec(ctx, "DROP TABLE IF EXISTS "+p.Table())
		},
	}
}
