package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/pgdoc"
)

// pgDSN is the PostgreSQL server the postgres target uses.
func pgDSN() string {
	if d := os.Getenv("AMNESIA_BENCH_PG_DSN"); d != "" {
		return d
	}
	return os.Getenv("AMNESIA_TEST_PG_DSN")
}

var runTag = fmt.Sprintf("%d", time.Now().UnixNano()%1e9)

// There is no capture wrapper for PostgreSQL yet: lineage is recorded with
// the same ledger calls capture makes, and the read path checks the ledger's
// suppression marker the way capture's wrappers do.
func init() {
	targets[pgdoc.Type] = &target{
		typ:    pgdoc.Type,
		fresh:  true,
		server: pgDSN,
		config: func(dir string) store.Config {
			return store.Config{Name: "pgdocs", Type: pgdoc.Type, DSN: pgDSN(), Table: "bench_docs_" + runTag + "_" + filepath.Base(dir)}
		},
		ingest: func(ctx context.Context, e *env, c *Corpus, d Doc) error {
			s := e.st.(*pgdoc.Store)
			owner, err := e.dir.Keyer.Key(e.dir.Config.Scope, c.Subjects[d.Owner].ID)
			if err != nil {
				return err
			}
			scope := e.dir.Config.Scope
			docID := lineage.ArtifactID(e.dir.Keyer, scope, "pgdocs", d.ID)
			if err := e.ledger.Record(ctx, lineage.Artifact{ID: docID, Scope: scope, Subject: owner, Kind: lineage.KindSource, Store: "pgdocs", Key: d.ID, Digest: lineage.ContentDigest(e.dir.Keyer, []byte(d.Text))}); err != nil {
				return err
			}
			for _, m := range d.Mentions {
				mk, _ := e.dir.Keyer.Key(scope, c.Subjects[m].ID)
				if err := e.ledger.Mention(ctx, lineage.Mention{Artifact: docID, Subject: mk}); err != nil {
					return err
				}
			}
			if err := s.Put(ctx, pgdoc.Record{ID: d.ID, Subject: owner.String(), Kind: "document", Content: d.Text}); err != nil {
				return err
			}
			for i, ch := range d.Chunks {
				k := chunkID(d, i)
				if err := e.ledger.Record(ctx, lineage.Artifact{ID: lineage.ArtifactID(e.dir.Keyer, scope, "pgdocs", k), Scope: scope, Subject: owner, Kind: lineage.KindChunk, Store: "pgdocs", Key: k, Digest: lineage.ContentDigest(e.dir.Keyer, []byte(ch)), Parents: []string{docID}}); err != nil {
					return err
				}
				if err := s.Put(ctx, pgdoc.Record{ID: k, Subject: owner.String(), Kind: "chunk", Content: ch}); err != nil {
					return err
				}
			}
			return nil
		},
		keys:    targets[sqlitedocType()].keys,
		content: targets[sqlitedocType()].content,
		native: func(ctx context.Context, s store.Store, keys []string) error {
			p := s.(*pgdoc.Store)
			return p.Exec(ctx, "DELETE FROM "+p.Table()+" WHERE id = ANY($1)", keys)
		},
		compact: func(ctx context.Context, s store.Store, _ []string) error {
			p := s.(*pgdoc.Store)
			return p.Exec(ctx, "VACUUM "+p.Table())
		},
		rebuild: func(ctx context.Context, s store.Store, _ []string) error {
			p := s.(*pgdoc.Store)
			if err := p.Exec(ctx, "VACUUM FULL "+p.Table()); err != nil {
				return err
			}
			return p.Exec(ctx, "CHECKPOINT")
		},
		visible: func(ctx context.Context, e *env, key string, _ []float32) (bool, error) {
			sup, err := e.ledger.Suppressed(ctx, lineage.ArtifactID(e.dir.Keyer, e.dir.Config.Scope, "pgdocs", key))
			if err != nil || sup {
				return false, err
			}
			r, err := e.st.(*pgdoc.Store).Get(ctx, key)
			return r != nil, err
		},
		query: func(Doc, string) []float32 { return nil },
		drop: func(ctx context.Context, e *env) error {
			p := e.st.(*pgdoc.Store)
			return p.Exec(ctx, "DROP TABLE IF EXISTS "+p.Table())
		},
	}
}

func sqlitedocType() string { return "sqlite-doc" }
