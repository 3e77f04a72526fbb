package saga_test

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/pgtest"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/pgdoc"
	"github.com/amnesia-dev/amnesia/store/pgvector"
)

const pgDim = 16

func pgVector(seed int) []float32 {
	v := make([]float32, pgDim)
	var n float64
	for i := range v {
		x := math.Sin(float64(seed*pgDim+i) * 0.73)
		v[i] = float32(x)
		n += x * x
	}
	for i := range v {
		v[i] /= float32(math.Sqrt(n))
	}
	return v
}

// An erasure across a PostgreSQL table and a pgvector table, driven by the
// configuration exactly as the CLI does, reaches the physical level in both.
func TestEraseAcrossPostgresAndPgvector(t *testing.T) {
	pgtest.Server(t)
	// "full-emptied": the subject owns every row, so the erasure empties the
	// table, and ANALYZE of an empty table keeps the old statistics.
	for _, mode := range []string{"full", "delete-only", "full-emptied"} {
		t.Run(mode, func(t *testing.T) {
			reclaim, people := mode, []int{0, 1, 2}
			if mode == "full-emptied" {
				reclaim, people = "full", []int{1}
			}
			// A database of the subtest's own, with pgvector.
			dsn := pgtest.DB(t, "vector", "pgstattuple")
			ctx := context.Background()
			suffix := fmt.Sprintf("%d", time.Now().UnixNano()%1e9)
			cfg := state.DefaultConfig()
			cfg.Stores = []state.StoreConfig{
				{Name: "pgdocs", Type: pgdoc.Type, DSN: dsn, Table: "saga_docs_" + suffix, Reclaim: reclaim},
				{Name: "pgvec", Type: pgvector.Type, DSN: dsn, Table: "saga_vec_" + suffix, Dimensions: pgDim, Reclaim: reclaim},
			}
			sd, err := state.Init(filepath.Join(t.TempDir(), "state"), cfg)
			if err != nil {
				t.Fatal(err)
			}
			l, err := sqliteledger.Open(ctx, sd.LedgerPath())
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			docsS, err := sd.Config.OpenStore(ctx, cfg.Stores[0], true)
			if err != nil {
				t.Fatal(err)
			}
			vecS, err := sd.Config.OpenStore(ctx, cfg.Stores[1], true)
			if err != nil {
				t.Fatal(err)
			}
			docs, vecs := docsS.(*pgdoc.Store), vecS.(*pgvector.Store)
			defer func() {
				docs.Exec(ctx, "DROP TABLE IF EXISTS "+docs.Table())
				vecs.Exec(ctx, "DROP TABLE IF EXISTS "+vecs.Table())
				docs.Close()
				vecs.Close()
			}()
			// Lineage as capture records it: document → embedding.
			for _, p := range people {
				owner, _ := sd.Keyer.Key(cfg.Scope, fmt.Sprintf("person-%d@example.org", p))
				for d := 0; d < 3; d++ {
					key := fmt.Sprintf("p%d-d%d", p, d)
					text := fmt.Sprintf("Person %d, note %d: the patient reported dizziness after the dose change on day %d and asked for a call back at %d.", p, d, 10+d, 5550100+p*10+d)
					docID := lineage.ArtifactID(sd.Keyer, cfg.Scope, "pgdocs", key)
					vecID := lineage.ArtifactID(sd.Keyer, cfg.Scope, "pgvec", key)
					must(t, l.Record(ctx, lineage.Artifact{ID: docID, Scope: cfg.Scope, Subject: owner, Kind: lineage.KindSource, Store: "pgdocs", Key: key, Digest: "d"}))
					must(t, l.Record(ctx, lineage.Artifact{ID: vecID, Scope: cfg.Scope, Subject: owner, Kind: lineage.KindEmbedding, Store: "pgvec", Key: key, Digest: "v", Parents: []string{docID}}))
					must(t, docs.Put(ctx, pgdoc.Record{ID: key, Subject: owner.String(), Content: text}))
					must(t, vecs.Put(ctx, pgvector.Record{ID: key, Subject: owner.String(), Embedding: pgVector(p*10 + d), Content: text}))
				}
			}
			// Statistics hold sample values (whole 16-dimension vectors,
			// short texts) in pg_statistic: the erasure must reach them too.
			must(t, docs.Exec(ctx, "ANALYZE "+docs.Table()))
			must(t, vecs.Exec(ctx, "ANALYZE "+vecs.Table()))
			target, _ := sd.Keyer.Key(cfg.Scope, "person-1@example.org")
			v, err := l.View(ctx, cfg.Scope, target)
			if err != nil {
				t.Fatal(err)
			}
			tr, err := lineage.BuildTrace(v)
			if err != nil {
				t.Fatal(err)
			}
			res, err := saga.Run(ctx, &saga.Erasure{Dir: sd, Ledger: l, Stores: map[string]store.Store{"pgdocs": docs, "pgvec": vecs}, Trace: tr, Reason: "PG-1"})
			if err != nil {
				t.Fatal(err)
			}
			p := res.Statement.Predicate
			states := map[string]string{}
			for _, s := range p.DeclaredScope {
				states[s.Name] = s.Residue + " (" + s.Evidence + ")"
			}
			switch reclaim {
			case "full":
				if !p.Complete || p.Counts.VerifiedPhysical != len(tr.Artifacts) {
					t.Errorf("full: complete=%v counts=%+v states=%v", p.Complete, p.Counts, states)
				}
			case "delete-only":
				for name, st := range states {
					if !strings.HasPrefix(st, "PENDING-reclaim-deferred") {
						t.Errorf("delete-only: store %s residue %s, want PENDING-reclaim-deferred", name, st)
					}
				}
				for _, a := range p.Artifacts {
					if a.Outcome == certificate.Verified && a.Level == certificate.LevelPhysical {
						t.Errorf("delete-only claimed VERIFIED(physical) for %s", a.ID)
					}
				}
				if p.Complete {
					t.Errorf("delete-only reported a complete erasure")
				}
			}
			if r, _ := docs.Get(ctx, tr.Plan[0].Delete[0]); r != nil {
				t.Errorf("document still readable after erasure")
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
