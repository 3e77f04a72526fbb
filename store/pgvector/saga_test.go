package pgvector_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/saga"
	"github.com/amnesia-dev/amnesia/internal/state"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/pgvector"
)

// tenant is one amnesia deployment (state directory, scope, ledger) whose
// store is one collection of a shared LangChain table.
type tenant struct {
	dir   *state.Dir
	l     lineage.Ledger
	s     *pgvector.Store
	coll  string // collection uuid
	scope string
}

// Two tenants, each with its own scope and its own collection of one
// LangChain table (langchain_community's layout: custom_id is unique only
// within a collection, and both tenants use the same ids). The same person
// is in both. Erasing them in tenant A through the saga removes tenant A's
// rows, VERIFIED(physical) with the probe having found their bytes before;
// tenant B's rows, with the same custom_ids, and tenant A's other person
// stay byte-for-byte.
func TestSagaTwoCollectionsTwoScopes(t *testing.T) {
	ctx := context.Background()
	base, _ := langchainConfig(t, true)
	coll := base.Table[:len(base.Table)-len("_embedding")] + "_collection"
	tenants := map[string]*tenant{}
	for _, name := range []string{"tenant-a", "tenant-b"} {
		tn := &tenant{coll: newUUID(), scope: name}
		sql(t, `INSERT INTO `+coll+` (uuid, name) VALUES ('`+tn.coll+`', '`+name+`')`)
		cfg := state.DefaultConfig()
		cfg.Scope = name
		c := base
		c.Name, c.Schema, c.Preset = "kb", "", pgvector.PresetLangChain
		c.Mapping = &store.Mapping{Collections: []string{name}}
		cfg.Stores = []state.StoreConfig{c}
		d, err := state.Init(filepath.Join(t.TempDir(), name), cfg)
		if err != nil {
			t.Fatal(err)
		}
		tn.dir = d
		if tn.l, err = sqliteledger.Open(ctx, d.LedgerPath()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tn.l.Close() })
		st, err := d.Config.OpenStore(ctx, cfg.Stores[0], false)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		tn.s = st.(*pgvector.Store)
		tenants[name] = tn
	}
	// Rows as langchain_community's add_embeddings writes them, lineage as
	// capture records it (one embedding artifact per key, the content's
	// digest).
	add := func(tn *tenant, key, person string, seed int) {
		owner, err := tn.dir.Keyer.Key(tn.scope, person)
		if err != nil {
			t.Fatal(err)
		}
		if err := tn.s.Exec(ctx, `INSERT INTO `+tn.s.Table()+` (uuid, collection_id, embedding, document, cmetadata, custom_id) VALUES (gen_random_uuid(), $1, $2::text::vector, $3, $4::text::jsonb, $5)`,
			tn.coll, vecText(vector(seed)), text(seed), `{"subject": "`+owner.String()+`", "source": "ticket"}`, key); err != nil {
			t.Fatal(err)
		}
		if err := tn.l.Record(ctx, lineage.Artifact{ID: lineage.ArtifactID(tn.dir.Keyer, tn.scope, "kb", key), Scope: tn.scope, Subject: owner,
			Kind: lineage.KindEmbedding, Store: "kb", Key: key, Digest: lineage.ContentDigest(tn.dir.Keyer, []byte(text(seed)))}); err != nil {
			t.Fatal(err)
		}
	}
	a, b := tenants["tenant-a"], tenants["tenant-b"]
	add(a, "doc-1", "alice@example.org", 80)
	add(a, "doc-2", "bob@example.org", 81)
	add(a, "doc-3", "alice@example.org", 82)
	add(b, "doc-1", "alice@example.org", 83)
	add(b, "doc-3", "alice@example.org", 84)
	bRows := snapshot(t, base.Table, `collection_id = '`+b.coll+`'`)
	bob := snapshot(t, base.Table, `custom_id = 'doc-2'`)

	owner, _ := a.dir.Keyer.Key(a.scope, "alice@example.org")
	v, err := a.l.View(ctx, a.scope, owner)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := lineage.BuildTrace(v)
	if err != nil {
		t.Fatal(err)
	}
	res, err := saga.Run(ctx, &saga.Erasure{Dir: a.dir, Ledger: a.l, Stores: map[string]store.Store{"kb": a.s}, Trace: tr, Reason: "TENANT-A-1"})
	if err != nil {
		t.Fatal(err)
	}
	p := res.Statement.Predicate
	if !p.Complete || len(p.Artifacts) != 2 {
		t.Fatalf("erasure: complete=%v, %d artifacts (%+v)", p.Complete, len(p.Artifacts), p.Counts)
	}
	for _, art := range p.Artifacts {
		ph := art.Measurement.Physical
		if art.Outcome != certificate.Verified || art.Level != certificate.LevelPhysical || ph == nil || ph.FoundBefore == 0 || ph.FoundAfter != 0 {
			t.Errorf("%s: %s(%s) %q physical %+v: want VERIFIED(physical), found before, none after", art.ID, art.Outcome, art.Level, art.Reason, ph)
		}
	}
	if got := snapshot(t, base.Table, `collection_id = '`+a.coll+`'`); got != bob {
		t.Errorf("tenant A's rows after the erasure:\n%s\nwant only bob's:\n%s", got, bob)
	}
	if got := snapshot(t, base.Table, `collection_id = '`+b.coll+`'`); got != bRows {
		t.Errorf("tenant B's rows changed:\n%s\nwas\n%s", got, bRows)
	}
}
