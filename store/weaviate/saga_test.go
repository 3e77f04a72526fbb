package weaviate_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/weaviate"
)

// restarting is the store as the saga sees it, except that after the
// adapter's own Reclaim the Weaviate server is restarted (SIGTERM, then a
// new process on the same data directory and port), and, with comeBack
// set, a deleted object is written back, as a replica that missed the
// delete, or a WAL replayed over a lost tombstone, would bring it back.
// The saga's probe step then runs against the restarted server.
type restarting struct {
	*weaviate.Store
	restart  func()
	comeBack func()
}

func (r *restarting) Reclaim(ctx context.Context) (store.ReclaimReport, error) {
	rep, err := r.Store.Reclaim(ctx)
	if err != nil {
		return rep, err
	}
	r.restart()
	if r.comeBack != nil {
		r.comeBack()
	}
	return rep, nil
}

// An erasure run by the saga, with the server restarted between reclaim
// and probe: the deleted objects do not come back, and the certificate
// says VERIFIED(physical); when one does come back, its artifact is
// RESIDUAL, found by id.
func TestWeaviateSagaRestartBeforeProbe(t *testing.T) {
	for _, comeBack := range []bool{false, true} {
		name := "stays-deleted"
		if comeBack {
			name = "comes-back"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			data := t.TempDir()
			port := freePort(t)
			srv, stop := ownOn(t, data, false, port)
			class := className(t)
			cfg := state.DefaultConfig()
			cfg.Stores = []state.StoreConfig{{Name: "memory", Type: weaviate.Type, DSN: srv.url, Collection: class, Dimensions: dim, DataDir: data}}
			d, err := state.Init(filepath.Join(t.TempDir(), "state"), cfg)
			if err != nil {
				t.Fatal(err)
			}
			l, err := sqliteledger.Open(ctx, d.LedgerPath())
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			st, err := d.Config.OpenStore(ctx, cfg.Stores[0], true)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			ws := st.(*weaviate.Store)
			vecs := capture.New(l, d.Keyer, d.Config.Scope).Vectors(ws)
			for i, p := range []string{"alice@example.org", "bob@example.org", "alice@example.org"} {
				if err := vecs.Put(ctx, capture.Vector{ID: []string{"t1", "t2", "t3"}[i], Subject: p, Content: content(i + 1), Embedding: vector(i + 1)}); err != nil {
					t.Fatal(err)
				}
			}
			k, err := d.Keyer.Key(d.Config.Scope, "alice@example.org")
			if err != nil {
				t.Fatal(err)
			}
			v, err := l.View(ctx, d.Config.Scope, k)
			if err != nil {
				t.Fatal(err)
			}
			tr, err := lineage.BuildTrace(v)
			if err != nil {
				t.Fatal(err)
			}
			var back weaviate.Record
			w := &restarting{Store: ws, restart: func() {
				stop()
				_, stop = ownOn(t, data, false, port)
			}}
			if comeBack {
				got, err := ws.Get(ctx, "t1")
				if err != nil || got == nil {
					t.Fatalf("get t1: %v", err)
				}
				back = *got
				w.comeBack = func() {
					if err := ws.Put(ctx, back); err != nil {
						t.Fatal(err)
					}
				}
			}
			res, err := saga.Run(ctx, &saga.Erasure{Dir: d, Ledger: l, Stores: map[string]store.Store{"memory": w}, Trace: tr, Reason: "T", ReclaimWait: 20 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			byKey := map[string]certificate.Artifact{}
			for _, a := range res.Statement.Predicate.Artifacts {
				for _, ta := range tr.Artifacts {
					if ta.ID == a.ID {
						byKey[ta.Key] = a
					}
				}
			}
			if len(byKey) != 2 {
				t.Fatalf("certificate has %d of alice's 2 artifacts", len(byKey))
			}
			for key, a := range byKey {
				switch {
				case comeBack && key == "t1":
					if a.Outcome != certificate.Residual || !strings.Contains(a.Reason, "lookup by id") {
						t.Errorf("%s came back after the restart, yet: %s %s: %s", key, a.Outcome, a.Level, a.Reason)
					}
				default:
					if a.Outcome != certificate.Verified || a.Level != certificate.LevelPhysical {
						t.Errorf("%s after a restart: %s %s: %s", key, a.Outcome, a.Level, a.Reason)
					}
				}
			}
			// Bob's object is still served by the restarted server.
			if got, err := ws.Get(ctx, "t2"); err != nil || got == nil {
				t.Fatalf("bob's object after the restart: %v", err)
			}
			resp, err := http.Get(srv.url + "/v1/.well-known/ready")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		})
	}
}
