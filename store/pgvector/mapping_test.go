package pgvector_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/pgvector"
	"github.com/amnesia-dev/amnesia/store/storetest"
)

// llamaIndexConfig creates a LlamaIndex PGVectorStore table, data_<name>,
// exactly as llama-index-vector-stores-postgres 0.9.0 does
// (llama_index/vector_stores/postgres/base.py: get_data_model without hybrid
// search and with use_jsonb=False, the "<name>_idx_1" index on
// metadata_->>'ref_doc_id', and _create_hnsw_index with hnsw_m=16,
// hnsw_ef_construction=64, its default vector_cosine_ops), and returns the
// store configuration with the llamaindex preset.
func llamaIndexConfig(t *testing.T) store.Config {
	t.Helper()
	name := uniq("li")
	tbl := "data_" + name
	sql(t,
		fmt.Sprintf(`CREATE TABLE public.%s (id BIGSERIAL NOT NULL, text VARCHAR NOT NULL, metadata_ JSON, node_id VARCHAR, embedding VECTOR(%d), PRIMARY KEY (id))`, tbl, dim),
		`CREATE INDEX `+name+`_idx_1 ON public.`+tbl+` ((metadata_ ->> 'ref_doc_id'))`,
		`CREATE INDEX IF NOT EXISTS `+tbl+`_embedding_idx ON public.`+tbl+` USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)`,
	)
	c := config(t)
	c.Table, c.Dimensions, c.Preset = tbl, 0, pgvector.PresetLlamaIndex
	return c
}

// llamaIndexAdd writes a node as PGVectorStore.add does: _node_to_table_row
// (text without metadata, metadata_ from node_to_metadata_dict with
// remove_text=True: the node's metadata, _node_content, _node_type and the
// three document ids) in SQLAlchemy's INSERT.
func llamaIndexAdd(t *testing.T, exec func(string, ...any) error, ident, nodeID, refDoc, subject string, seed int) {
	t.Helper()
	node := map[string]any{"id_": nodeID, "embedding": nil, "metadata": map[string]any{"subject": subject, "file_name": "ticket.txt"},
		"excluded_embed_metadata_keys": []string{}, "excluded_llm_metadata_keys": []string{},
		"relationships": map[string]any{"1": map[string]any{"node_id": refDoc, "node_type": "4", "metadata": map[string]any{}, "hash": "h", "class_name": "RelatedNodeInfo"}},
		"text":          "", "mimetype": "text/plain", "start_char_idx": 0, "end_char_idx": 800, "text_template": "{metadata_str}\n\n{content}",
		"metadata_template": "{key}: {value}", "metadata_seperator": "\n", "class_name": "TextNode"}
	nc, _ := json.Marshal(node)
	meta, _ := json.Marshal(map[string]any{"subject": subject, "file_name": "ticket.txt", "_node_content": string(nc), "_node_type": "TextNode",
		"document_id": refDoc, "doc_id": refDoc, "ref_doc_id": refDoc})
	if err := exec(`INSERT INTO `+ident+` (text, metadata_, node_id, embedding) VALUES ($1, $2::text::json, $3, $4::text::vector) RETURNING `+ident+`.id`,
		text(seed), string(meta), nodeID, vecText(vector(seed))); err != nil {
		t.Fatal(err)
	}
}

func storeExec(s *pgvector.Store) func(string, ...any) error {
	return func(q string, a ...any) error { return s.Exec(context.Background(), q, a...) }
}

func TestConformanceLlamaIndex(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		Open: func(t *testing.T) store.Store {
			s, err := pgvector.Open(context.Background(), llamaIndexConfig(t), false)
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		Put: func(t *testing.T, s store.Store, key, tag string, seed int) {
			v := s.(*pgvector.Store)
			llamaIndexAdd(t, storeExec(v), v.Table(), key, "doc-"+key, tag, seed)
		},
		NativeDelete: func(t *testing.T, s store.Store, key string) {
			// PGVectorStore.delete_nodes(node_ids=[key])
			v := s.(*pgvector.Store)
			if err := v.Exec(context.Background(), `DELETE FROM `+v.Table()+` WHERE node_id IN ($1)`, key); err != nil {
				t.Fatal(err)
			}
		},
		NativeLeavesBytes: true,
	})
}

// langchainPostgres creates the tables langchain-postgres 0.0.19 creates
// (langchain_postgres/vectorstores.py: CollectionStore, EmbeddingStore with
// id varchar primary key, cmetadata jsonb and the ix_cmetadata_gin index)
// under unique names, and the named collections; it returns the config and
// the collections' uuids by name.
func langchainPostgres(t *testing.T, collections ...string) (store.Config, map[string]string) {
	t.Helper()
	p := uniq("lcp_")
	emb, coll := p+"_embedding", p+"_collection"
	sql(t,
		`CREATE TABLE `+coll+` (uuid UUID NOT NULL, name VARCHAR NOT NULL, cmetadata JSON, PRIMARY KEY (uuid), UNIQUE (name))`,
		fmt.Sprintf(`CREATE TABLE %s (id VARCHAR NOT NULL, collection_id UUID, embedding VECTOR(%d), document VARCHAR, cmetadata JSONB,
			PRIMARY KEY (id), FOREIGN KEY(collection_id) REFERENCES %s (uuid) ON DELETE CASCADE)`, emb, dim, coll),
		`CREATE INDEX ix_`+p+`_cmetadata_gin ON `+emb+` USING gin (cmetadata jsonb_path_ops)`,
	)
	ids := map[string]string{}
	for _, n := range collections {
		ids[n] = newUUID()
		sql(t, `INSERT INTO `+coll+` (uuid, name, cmetadata) VALUES ('`+ids[n]+`', '`+n+`', '{}')`)
	}
	c := config(t)
	c.Table, c.Dimensions, c.Preset = emb, 0, pgvector.PresetLangChain
	return c, ids
}

func TestConformanceLangChainPostgres(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		Open: func(t *testing.T) store.Store {
			c, _ := langchainPostgres(t)
			s, err := pgvector.Open(context.Background(), c, false)
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		Put: func(t *testing.T, s store.Store, key, tag string, seed int) {
			put(t, s.(*pgvector.Store), key, tag, seed)
		},
		NativeDelete: func(t *testing.T, s store.Store, key string) {
			// PGVector.delete(ids=[key]) without a collection filter.
			v := s.(*pgvector.Store)
			if err := v.Exec(context.Background(), `DELETE FROM `+v.Table()+` WHERE id IN ($1)`, key); err != nil {
				t.Fatal(err)
			}
		},
		NativeLeavesBytes: true,
	})
}

// snapshot is every row of a table (as text), for byte-for-byte comparison.
func snapshot(t *testing.T, table, where string) string {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var s *string
	if err := c.QueryRow(ctx, `SELECT string_agg(x::text, E'\n' ORDER BY x::text) FROM `+table+` x WHERE `+where).Scan(&s); err != nil {
		t.Fatal(err)
	}
	if s == nil {
		return ""
	}
	return *s
}

// LlamaIndex rows: the subject's nodes are found by every path and in the
// files before, gone after; the other document's nodes are untouched.
func TestLlamaIndex(t *testing.T) {
	ctx := context.Background()
	c := llamaIndexConfig(t)
	s, err := pgvector.Open(ctx, c, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Dimensions() != dim {
		t.Fatalf("Dimensions() = %d, want %d from the column", s.Dimensions(), dim)
	}
	for i, n := range []string{"node-a1", "node-a2", "node-b1"} {
		doc, sub := "doc-a", "hmac:aa"
		if i == 2 {
			doc, sub = "doc-b", "hmac:bb"
		}
		llamaIndexAdd(t, storeExec(s), "public."+c.Table, n, doc, sub, 60+i)
	}
	others := snapshot(t, c.Table, `node_id = 'node-b1'`)
	keys := []string{"node-a1", "node-a2"}
	ev := evidence(t, s, keys...)
	ev["node-b1"] = evidence(t, s, "node-b1")["node-b1"] // alone: windows it shares with the erased nodes are not its evidence
	if e := ev["node-a1"]; e == nil || e.Filter["subject"] != "hmac:aa" || len(e.Vector) != dim || len(e.Needles) == 0 {
		t.Fatalf("evidence for a LlamaIndex node = %+v", e)
	}
	if r, err := s.Get(ctx, "node-a1"); err != nil || r.Parent != "doc-a" {
		t.Fatalf("Get = %+v, %v: want the parent from metadata_->ref_doc_id", r, err)
	}
	before, err := s.ProbeLogical(ctx, keys, ev)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range before {
		if !b.ByID || !b.ByFilter || !b.BySimilarity {
			t.Fatalf("live LlamaIndex node not found by every path: %+v", b)
		}
	}
	if m := strings.Join(before[0].Methods, ","); !strings.Contains(m, "by-filter:metadata_->subject") || !strings.Contains(m, "hnsw-index-vector_cosine") {
		t.Errorf("methods %s", m)
	}
	if f := found(t, s, ev); f["node-a1"] == 0 || f["node-a2"] == 0 {
		t.Fatalf("before deletion the probe found %v: no power", f)
	}
	if err := s.Delete(ctx, keys); err != nil {
		t.Fatal(err)
	}
	if rep := reclaim(t, s); rep.State != "" {
		t.Fatalf("Reclaim = %q %q", rep.State, rep.Evidence)
	}
	after, err := s.ProbeLogical(ctx, keys, ev)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range after {
		if a.Found() {
			t.Fatalf("after erasure: %+v", a)
		}
	}
	if f := found(t, s, ev); f["node-a1"] != 0 || f["node-a2"] != 0 || f["node-b1"] == 0 {
		t.Fatalf("after Delete+Reclaim found %v: want none of the erased nodes, some of the live one", f)
	}
	if got := snapshot(t, c.Table, `node_id = 'node-b1'`); got != others {
		t.Fatalf("the other document's node changed:\n%s\nwas\n%s", got, others)
	}
	if got := snapshot(t, c.Table, `TRUE`); got != others {
		t.Fatalf("rows left: %s", got)
	}
}

// Two collections in one LangChain table (langchain_community's layout:
// uuid and custom_id, which is unique only within a collection), one store
// per tenant scoped to its collection. Deleting tenant A's keys leaves
// tenant B's rows with the same custom_ids and subject tags byte-for-byte,
// and tenant A's other subject too.
func TestLangChainCollections(t *testing.T) {
	ctx := context.Background()
	base, _ := langchainConfig(t, true)
	coll := strings.TrimSuffix(base.Table, "_embedding") + "_collection"
	ids := map[string]string{"tenant-a": newUUID(), "tenant-b": newUUID()}
	for n, u := range ids {
		sql(t, `INSERT INTO `+coll+` (uuid, name) VALUES ('`+u+`', '`+n+`')`)
	}
	open := func(name string) *pgvector.Store {
		c := base
		c.Mapping = &store.Mapping{Collections: []string{name}}
		s, err := pgvector.Open(ctx, c, false)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := open("tenant-a"), open("tenant-b")
	for _, x := range []struct {
		s    *pgvector.Store
		coll string
		key  string
		sub  string
		seed int
	}{
		{a, "tenant-a", "doc-1", "hmac:s1", 70}, {a, "tenant-a", "doc-2", "hmac:s2", 71},
		{b, "tenant-b", "doc-1", "hmac:s1", 72}, {b, "tenant-b", "doc-2", "hmac:s1", 73},
	} {
		// langchain_community's add_embeddings: uuid, collection_id, embedding, document, cmetadata, custom_id.
		if err := x.s.Exec(ctx, `INSERT INTO `+x.s.Table()+` (uuid, collection_id, embedding, document, cmetadata, custom_id) VALUES (gen_random_uuid(), $1, $2::text::vector, $3, $4::text::jsonb, $5)`,
			ids[x.coll], vecText(vector(x.seed)), text(x.seed), `{"subject": "`+x.sub+`"}`, x.key); err != nil {
			t.Fatal(err)
		}
	}
	tenantB := snapshot(t, base.Table, `collection_id = '`+ids["tenant-b"]+`'`)
	keep := snapshot(t, base.Table, `custom_id = 'doc-2' AND collection_id = '`+ids["tenant-a"]+`'`)
	ev := evidence(t, a, "doc-1")
	if ev["doc-1"] == nil {
		t.Fatal("no evidence for tenant A's doc-1")
	}
	if bs, err := a.BySubject(ctx, "hmac:s1"); err != nil || len(bs) != 1 {
		t.Fatalf("BySubject in tenant A = %v, %v: want only tenant A's row", bs, err)
	}
	if f := found(t, a, ev); f["doc-1"] == 0 {
		t.Fatalf("before deletion the probe found %v", f)
	}
	if err := a.Delete(ctx, []string{"doc-1"}); err != nil {
		t.Fatal(err)
	}
	reclaim(t, a)
	if got := snapshot(t, base.Table, `collection_id = '`+ids["tenant-b"]+`'`); got != tenantB {
		t.Fatalf("tenant B's rows changed:\n%s\nwas\n%s", got, tenantB)
	}
	if got := snapshot(t, base.Table, `custom_id = 'doc-2' AND collection_id = '`+ids["tenant-a"]+`'`); got != keep {
		t.Fatalf("tenant A's other row changed")
	}
	if r, err := a.Get(ctx, "doc-1"); err != nil || r != nil {
		t.Fatalf("tenant A's doc-1 after erasure: %+v, %v", r, err)
	}
	if r, err := b.Get(ctx, "doc-1"); err != nil || r == nil || r.Content != text(72) {
		t.Fatalf("tenant B's doc-1: %+v, %v", r, err)
	}
	if f := found(t, a, ev); f["doc-1"] != 0 {
		t.Fatalf("after Delete+Reclaim found %v", f)
	}
}

// amnesia check refuses a mapping that does not match the table, naming the
// table and the column.
func TestCheckMapping(t *testing.T) {
	ctx := context.Background()
	c := llamaIndexConfig(t)
	sql(t, `ALTER TABLE `+c.Table+` ADD COLUMN owner_id integer, ADD COLUMN note bytea`)
	if errs := store.Errors(store.Check(ctx, c)); len(errs) != 0 {
		t.Fatalf("the llamaindex preset on LlamaIndex's table: %v", errs)
	}
	for _, tc := range []struct {
		name string
		m    store.Mapping
		dims int
		key  string
		want string
	}{
		{"missing column", store.Mapping{Key: "nodeid"}, 0, "mapping", `no column "nodeid"`},
		{"missing subject column", store.Mapping{Subject: &store.Field{Column: "user_id"}}, 0, "mapping", `no column "user_id"`},
		{"subject path in a non-json column", store.Mapping{Subject: &store.Field{JSON: "text", Path: []string{"subject"}}}, 0, "mapping", `column "text" is character varying, want json or jsonb`},
		{"vector column of the wrong type", store.Mapping{Vector: "text"}, 0, "mapping", `column "text" is character varying, want vector`},
		{"content of the wrong type", store.Mapping{Content: []string{"text", "note"}}, 0, "mapping", `column "note" is bytea`},
		{"wrong dimensions", store.Mapping{}, dim + 1, "dimensions", fmt.Sprintf("column embedding of table %s in database", c.Table)},
		{"missing collection link", store.Mapping{Collections: []string{"x"}, CollectionTable: "nope"}, 0, "mapping", `no column "collection_id"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc := c
			m := tc.m
			cc.Mapping, cc.Dimensions = &m, tc.dims
			errs := store.Errors(store.Check(ctx, cc))
			if len(errs) != 1 || errs[0].Key != tc.key || !strings.Contains(errs[0].Message, tc.want) || !strings.Contains(errs[0].Message, c.Table) {
				t.Fatalf("check = %v, want one %s error with %q naming table %s", errs, tc.key, tc.want, c.Table)
			}
		})
	}
	// A subject in its own column works.
	sql(t, `UPDATE `+c.Table+` SET owner_id = 1`)
	cc := c
	cc.Mapping = &store.Mapping{Subject: &store.Field{Column: "owner_id"}}
	if errs := store.Errors(store.Check(ctx, cc)); len(errs) != 0 {
		t.Fatalf("subject in a column: %v", errs)
	}
	// A collection table without the collection.
	lc, _ := langchainPostgres(t)
	lc.Mapping = &store.Mapping{Collections: []string{"a"}, CollectionTable: "no_such_table"}
	errs := store.Errors(store.Check(ctx, lc))
	if len(errs) != 1 || !strings.Contains(errs[0].Message, "no_such_table") || !strings.Contains(errs[0].Message, "does not exist") {
		t.Fatalf("missing collection table: %v", errs)
	}
}

// A mapping over LlamaIndex's table with the bigserial id as key and a
// subject path whose key holds a quote: statements quote both.
func TestMappingQuotedPathAndBigintKey(t *testing.T) {
	ctx := context.Background()
	c := llamaIndexConfig(t)
	c.Mapping = &store.Mapping{Key: "id", Subject: &store.Field{JSON: "metadata_", Path: []string{"own'er", "tag"}}}
	s, err := pgvector.Open(ctx, c, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Exec(ctx, `INSERT INTO `+s.Table()+` (text, metadata_, node_id, embedding) VALUES ($1, $2::text::json, 'n1', $3::text::vector), ($4, '{}', 'n2', $5::text::vector)`,
		text(90), `{"own'er": {"tag": "hmac:q"}}`, vecText(vector(90)), text(91), vecText(vector(91))); err != nil {
		t.Fatal(err)
	}
	ids, err := s.BySubject(ctx, "hmac:q")
	if err != nil || len(ids) != 1 || ids[0][0] != "1" {
		t.Fatalf("BySubject = %v, %v: want the row with id 1", ids, err)
	}
	if err := s.Delete(ctx, []string{"1"}); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Get(ctx, "1"); err != nil || r != nil {
		t.Fatalf("after Delete: %+v, %v", r, err)
	}
	if r, err := s.Get(ctx, "2"); err != nil || r == nil || r.Content != text(91) {
		t.Fatalf("the other row: %+v, %v", r, err)
	}
}
