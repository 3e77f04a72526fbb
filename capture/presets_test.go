package capture_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"math"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/pgvector"
)

const presetDim = 8

func presetVec(seed int) []float32 {
	v := make([]float32, presetDim)
	for i := range v {
		v[i] = float32(math.Sin(float64(seed*presetDim+i)*0.91)) + float32(seed)*1e-3
	}
	return v
}

func presetUUID() string {
	b := make([]byte, 16)
	rand.Read(b)
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

func pgExec(t *testing.T, dsn string, stmts ...string) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	for _, q := range stmts {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// pgRows returns one column of every row of a query, as text.
func pgRows(t *testing.T, dsn, q string, a ...any) []string {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	rows, err := c.Query(ctx, q, a...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// eraseVerified erases who and checks that the certificate covers want
// artifacts, every one VERIFIED at the physical level with probe power.
func eraseVerified(t *testing.T, app *capture.App, who string, want int) {
	t.Helper()
	er, err := app.Erase(context.Background(), who, "DSR-PRESET-1")
	if err != nil {
		t.Fatal(err)
	}
	p := er.Statement.Predicate
	if !er.Complete || len(p.Artifacts) != want {
		t.Fatalf("erasure: complete=%v, %d artifacts, want %d (%+v)", er.Complete, len(p.Artifacts), want, p.Counts)
	}
	for _, a := range p.Artifacts {
		ph := a.Measurement.Physical
		if a.Outcome != certificate.Verified || a.Level != certificate.LevelPhysical || ph == nil || ph.FoundBefore == 0 || ph.FoundAfter != 0 {
			t.Errorf("%s: %s(%s) %q physical %+v", a.ID, a.Outcome, a.Level, a.Reason, ph)
		}
	}
}

// langchaingo's tables, created as its vectorstores/pgvector does
// (createCollectionTableIfNotExists, createEmbeddingTableIfNotExists with
// WithVectorDimensions and WithHNSWIndex), two collections in them; capture
// writes rows as its AddDocuments does (uuid, document, embedding,
// cmetadata, collection_id = the configured collection's uuid), and the
// erasure removes the subject's rows of that collection only.
func TestCaptureLangChainGoLayout(t *testing.T) {
	ctx := context.Background()
	dsn := pgWithVector(t)
	p := uniq("lcg_")
	emb, coll := p+"_embedding", p+"_collection"
	mine, other := presetUUID(), presetUUID()
	dropTables(t, dsn, emb, coll)
	pgExec(t, dsn,
		`CREATE TABLE IF NOT EXISTS `+coll+` (name varchar, cmetadata json, "uuid" uuid NOT NULL, UNIQUE (name), PRIMARY KEY (uuid))`,
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (collection_id uuid, embedding vector(%d), document varchar, cmetadata json, "uuid" uuid NOT NULL,
			CONSTRAINT langchain_pg_embedding_collection_id_fkey FOREIGN KEY (collection_id) REFERENCES %s (uuid) ON DELETE CASCADE, PRIMARY KEY (uuid))`, emb, presetDim, coll),
		`CREATE INDEX IF NOT EXISTS `+emb+`_collection_id ON `+emb+` (collection_id)`,
		`CREATE INDEX IF NOT EXISTS `+emb+`_embedding_hnsw ON `+emb+` USING hnsw (embedding vector_cosine_ops) WITH (m=16, ef_construction = 64)`,
		`INSERT INTO `+coll+` (uuid, name, cmetadata) VALUES ('`+mine+`', 'tickets', '{}'), ('`+other+`', 'other-app', '{}')`,
	)
	dir := initConfig(t, store.Config{Name: "kb", Type: pgvector.Type, DSN: dsn, Table: emb, Preset: pgvector.PresetLangChainGo,
		Mapping: &store.Mapping{Collections: []string{"tickets"}}})
	app, err := capture.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	vecs, err := app.Vectors(ctx, "kb")
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{presetUUID(), presetUUID(), presetUUID()}
	owners := []string{"alice@example.org", "bob@example.org", "alice@example.org"}
	for i, id := range ids {
		err := vecs.Put(ctx, capture.Vector{ID: id, Subject: owners[i], Embedding: presetVec(i), Content: fmt.Sprintf("langchaingo ticket %d: the printer on floor %d jams every morning", i, 10+i), Metadata: map[string]any{"source": "ticket"}})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Another application's row with the same content, in the other collection.
	pgExec(t, dsn, fmt.Sprintf(`INSERT INTO %s (uuid, document, embedding, cmetadata, collection_id) VALUES ('%s', 'other app row', '[%s]', '{"source": "x"}', '%s')`,
		emb, presetUUID(), vecList(presetVec(9)), other))
	if got := pgRows(t, dsn, `SELECT DISTINCT collection_id::text FROM `+emb+` WHERE document LIKE 'langchaingo%'`); len(got) != 1 || got[0] != mine {
		t.Fatalf("captured rows' collection_id = %v, want the configured collection %s as langchaingo writes it", got, mine)
	}
	if got := pgRows(t, dsn, `SELECT cmetadata->>'source' FROM `+emb+` WHERE uuid = $1::uuid`, ids[0]); len(got) != 1 || got[0] != "ticket" {
		t.Fatalf("cmetadata of a captured row: %v", got)
	}
	eraseVerified(t, app, "alice@example.org", 2)
	left := pgRows(t, dsn, `SELECT uuid::text FROM `+emb+` ORDER BY document`)
	if len(left) != 2 || left[0] != ids[1] {
		t.Errorf("rows after erasing alice: %v, want bob's %s and the other collection's row", left, ids[1])
	}
}

func vecList(v []float32) string {
	s := ""
	for i, f := range v {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprint(f)
	}
	return s
}

// LlamaIndex's PGVectorStore table data_<name>, created as
// llama-index-vector-stores-postgres does; capture writes each node as
// PGVectorStore.add does (text, metadata_ with the node's metadata,
// _node_content, _node_type and the document ids, node_id, embedding), and
// the erasure removes the subject's nodes.
func TestCaptureLlamaIndexLayout(t *testing.T) {
	ctx := context.Background()
	dsn := pgWithVector(t)
	name := uniq("li")
	tbl := "data_" + name
	dropTables(t, dsn, tbl)
	pgExec(t, dsn,
		fmt.Sprintf(`CREATE TABLE public.%s (id BIGSERIAL NOT NULL, text VARCHAR NOT NULL, metadata_ JSON, node_id VARCHAR, embedding VECTOR(%d), PRIMARY KEY (id))`, tbl, presetDim),
		`CREATE INDEX `+name+`_idx_1 ON public.`+tbl+` ((metadata_ ->> 'ref_doc_id'))`,
		`CREATE INDEX IF NOT EXISTS `+tbl+`_embedding_idx ON public.`+tbl+` USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)`,
	)
	dir := initConfig(t, store.Config{Name: "nodes", Type: pgvector.Type, DSN: dsn, Table: tbl, Preset: pgvector.PresetLlamaIndex})
	app, err := capture.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	vecs, err := app.Vectors(ctx, "nodes")
	if err != nil {
		t.Fatal(err)
	}
	nodes := []struct{ id, ref, who string }{{"node-a1", "doc-a", "alice@example.org"}, {"node-a2", "doc-a", "alice@example.org"}, {"node-b1", "doc-b", "bob@example.org"}}
	for i, n := range nodes {
		err := vecs.Put(ctx, capture.Vector{ID: n.id, Subject: n.who, Embedding: presetVec(20 + i), Content: fmt.Sprintf("llamaindex node %d: the delivery to dock %d was late twice", i, 30+i),
			Metadata: map[string]any{"file_name": "tickets.txt", "ref_doc_id": n.ref}})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := vecs.Put(ctx, capture.Vector{ID: "bad", Subject: "carol@example.org", Embedding: presetVec(1), Metadata: map[string]any{"_node_type": "x"}}); err == nil {
		t.Errorf("capture accepted metadata under a key LlamaIndex writes itself")
	}
	raw := pgRows(t, dsn, `SELECT metadata_::text FROM `+tbl+` WHERE node_id = 'node-a1'`)
	if len(raw) != 1 {
		t.Fatalf("node-a1 rows: %d", len(raw))
	}
	var meta map[string]any
	if err := json.Unmarshal([]byte(raw[0]), &meta); err != nil {
		t.Fatal(err)
	}
	var nc map[string]any
	if s, _ := meta["_node_content"].(string); json.Unmarshal([]byte(s), &nc) != nil || nc["id_"] != "node-a1" || nc["text"] != "" || nc["class_name"] != "TextNode" {
		t.Errorf("_node_content = %v, want the node without its text", meta["_node_content"])
	}
	for _, k := range []string{"document_id", "doc_id", "ref_doc_id"} {
		if meta[k] != "doc-a" {
			t.Errorf("metadata_ %s = %v, want doc-a", k, meta[k])
		}
	}
	if meta["_node_type"] != "TextNode" || meta["file_name"] != "tickets.txt" || meta["subject"] == nil {
		t.Errorf("metadata_ = %v", meta)
	}
	if got, err := vecs.Get(ctx, "node-a1"); err != nil || got == nil || got.Metadata["ref_doc_id"] != "doc-a" || got.Metadata["_node_content"] != nil {
		t.Errorf("Get through capture = %+v, %v: want the application's metadata back", got, err)
	}
	eraseVerified(t, app, "alice@example.org", 2)
	if left := pgRows(t, dsn, `SELECT node_id FROM `+tbl+` ORDER BY node_id`); len(left) != 1 || left[0] != "node-b1" {
		t.Errorf("nodes after erasing alice: %v, want node-b1", left)
	}
}

// Python LangChain's layout (langchain_community: custom_id is unique only
// within a collection): capture replacing a record in its collection never
// deletes another collection's row with the same custom_id.
func TestCaptureLangChainReplaceStaysInCollection(t *testing.T) {
	ctx := context.Background()
	dsn := pgWithVector(t)
	p := uniq("lcp_")
	emb, coll := p+"_embedding", p+"_collection"
	mine, other := presetUUID(), presetUUID()
	dropTables(t, dsn, emb, coll)
	pgExec(t, dsn,
		`CREATE TABLE `+coll+` (uuid uuid PRIMARY KEY, name varchar NOT NULL UNIQUE, cmetadata json)`,
		fmt.Sprintf(`CREATE TABLE %s (uuid uuid PRIMARY KEY, collection_id uuid REFERENCES %s (uuid) ON DELETE CASCADE,
			embedding vector(%d), document varchar, cmetadata jsonb, custom_id varchar)`, emb, coll, presetDim),
		`INSERT INTO `+coll+` (uuid, name) VALUES ('`+mine+`', 'tenant-a'), ('`+other+`', 'tenant-b')`,
		fmt.Sprintf(`INSERT INTO %s (uuid, collection_id, embedding, document, cmetadata, custom_id) VALUES (gen_random_uuid(), '%s', '[%s]', 'tenant b text', '{}', 'doc-1')`, emb, other, vecList(presetVec(3))),
	)
	dir := initConfig(t, store.Config{Name: "kb", Type: pgvector.Type, DSN: dsn, Table: emb, Preset: pgvector.PresetLangChain,
		Mapping: &store.Mapping{Collections: []string{"tenant-a"}}})
	app, err := capture.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	vecs, err := app.Vectors(ctx, "kb")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ { // the second Put replaces the first
		if err := vecs.Put(ctx, capture.Vector{ID: "doc-1", Subject: "alice@example.org", Embedding: presetVec(4 + i), Content: fmt.Sprintf("tenant a text, version %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	got := pgRows(t, dsn, `SELECT collection_id::text || ' ' || document FROM `+emb+` WHERE custom_id = 'doc-1' ORDER BY 1`)
	want := []string{mine + " tenant a text, version 1", other + " tenant b text"}
	if want[0] > want[1] {
		want[0], want[1] = want[1], want[0]
	}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("rows with custom_id doc-1: %q, want %q", got, want)
	}
}
