package saga_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/pgtest"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/pgdoc"
)

// orphanDB returns the DSN of a database of its own for the orphan tests
// (other packages' open transactions in the default database would pin the
// xmin horizon and keep reclaim from rewriting), and an admin connection.
func orphanDB(t *testing.T) (string, *pgx.Conn) {
	t.Helper()
	dsn := pgtest.DB(t) // dropped, with its connections, when the test ends
	a, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(context.Background()) })
	return dsn, a
}

// The application deleted person 1's rows with a plain DELETE before the
// erasure: their dead tuples keep the content. With pg_dirtyread the orphan
// probe finds them by the ledger's digest, and the erasure certifies them
// VERIFIED(physical) after reclaim removed them; without it, they are
// UNVERIFIED with the true reason and the certificate is not complete. In
// both, reclaim runs and no dead tuple holds the content afterwards.
func TestEraseAppDeletedPostgresRows(t *testing.T) {
	for _, dirtyread := range []bool{true, false} {
		t.Run(fmt.Sprintf("dirtyread=%v", dirtyread), func(t *testing.T) {
			ctx := context.Background()
			dsn, a := orphanDB(t)
			if dirtyread {
				must(t, exec(a, "CREATE EXTENSION IF NOT EXISTS pg_dirtyread"))
			} else {
				must(t, exec(a, "DROP EXTENSION IF EXISTS pg_dirtyread"))
			}
			cfg := state.DefaultConfig()
			table := fmt.Sprintf("saga_orph_%d", time.Now().UnixNano()%1e9)
			cfg.Stores = []state.StoreConfig{{Name: "pgdocs", Type: pgdoc.Type, DSN: dsn, Table: table}}
			sd, err := state.Init(filepath.Join(t.TempDir(), "state"), cfg)
			if err != nil {
				t.Fatal(err)
			}
			l, err := sqliteledger.Open(ctx, sd.LedgerPath())
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			st, err := sd.Config.OpenStore(ctx, cfg.Stores[0], true)
			if err != nil {
				t.Fatal(err)
			}
			docs := st.(*pgdoc.Store)
			defer func() {
				docs.Exec(ctx, "DROP TABLE IF EXISTS "+docs.Table())
				docs.Close()
			}()
			text := func(p, d int) string {
				return fmt.Sprintf("Person %d, note %d: the patient reported dizziness after the dose change on day %d and asked for a call back at %d.", p, d, 10+d, 5550100+p*10+d)
			}
			for p := 0; p < 2; p++ {
				owner, _ := sd.Keyer.Key(cfg.Scope, fmt.Sprintf("person-%d@example.org", p))
				for d := 0; d < 2; d++ {
					key := fmt.Sprintf("p%d-d%d", p, d)
					must(t, l.Record(ctx, lineage.Artifact{ID: lineage.ArtifactID(sd.Keyer, cfg.Scope, "pgdocs", key), Scope: cfg.Scope, Subject: owner,
						Kind: lineage.KindSource, Store: "pgdocs", Key: key, Digest: lineage.ContentDigest(sd.Keyer, []byte(text(p, d)))}))
					must(t, docs.Put(ctx, pgdoc.Record{ID: key, Subject: owner.String(), Content: text(p, d)}))
				}
			}
			must(t, exec(a, `DELETE FROM `+docs.Table()+` WHERE id LIKE 'p1-%'`))

			target, _ := sd.Keyer.Key(cfg.Scope, "person-1@example.org")
			v, err := l.View(ctx, cfg.Scope, target)
			if err != nil {
				t.Fatal(err)
			}
			tr, err := lineage.BuildTrace(v)
			if err != nil {
				t.Fatal(err)
			}
			res, err := saga.Run(ctx, &saga.Erasure{Dir: sd, Ledger: l, Stores: map[string]store.Store{"pgdocs": docs}, Trace: tr, Reason: "PG-orphans"})
			if err != nil {
				t.Fatal(err)
			}
			p := res.Statement.Predicate
			if len(p.Artifacts) != 2 {
				t.Fatalf("%d artifacts, want 2", len(p.Artifacts))
			}
			for _, art := range p.Artifacts {
				switch {
				case dirtyread && (art.Outcome != certificate.Verified || art.Level != certificate.LevelPhysical):
					t.Errorf("with pg_dirtyread: %s %s(%s) %q, want VERIFIED(physical) by the orphan probe", art.ID, art.Outcome, art.Level, art.Reason)
				case !dirtyread && (art.Outcome != certificate.Unverified || !strings.Contains(art.Reason, "could not be measured without its content") || !strings.Contains(art.Reason, "pg_dirtyread is not installed")):
					t.Errorf("without pg_dirtyread: %s %s %q, want UNVERIFIED with the true reason", art.ID, art.Outcome, art.Reason)
				}
				if !strings.HasPrefix(art.Reason, "the record was already deleted when the erasure began") || !strings.Contains(art.Method, "reclaim ran: full:") {
					t.Errorf("%s: reason %q method %q", art.ID, art.Reason, art.Method)
				}
			}
			if p.Complete != dirtyread {
				t.Errorf("complete = %v, want %v", p.Complete, dirtyread)
			}
			// The attacker's view after the erasure.
			must(t, exec(a, "CREATE EXTENSION IF NOT EXISTS pg_dirtyread"))
			rows, err := a.Query(ctx, `SELECT content FROM pg_dirtyread($1::text::regclass) AS t(content text)`, docs.Table())
			if err != nil {
				t.Fatal(err)
			}
			var all []string
			var c string
			if _, err := pgx.ForEachRow(rows, []any{&c}, func() error { all = append(all, c); return nil }); err != nil {
				t.Fatal(err)
			}
			joined := strings.Join(all, "\n")
			if strings.Contains(joined, "Person 1, note") {
				t.Errorf("after the erasure pg_dirtyread still returns person 1's content")
			}
			if !strings.Contains(joined, "Person 0, note") {
				t.Fatal("pg_dirtyread no longer returns person 0's live rows: the check went blind")
			}
		})
	}
}

func exec(c *pgx.Conn, sql string) error {
	_, err := c.Exec(context.Background(), sql)
	return err
}
