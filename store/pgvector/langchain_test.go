package pgvector_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/pgvector"
	"github.com/amnesia-dev/amnesia/store/storetest"
)

func newUUID() string {
	b := make([]byte, 16)
	rand.Read(b)
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// langchainConfig creates the two tables of a LangChain pgvector store under
// unique names and returns the store configuration. python selects Python
// LangChain's layout (cmetadata jsonb, custom_id); otherwise the tables are
// exactly what langchaingo's vectorstores/pgvector creates (cmetadata json,
// no custom_id) with an HNSW index over cosine distance.
func langchainConfig(t *testing.T, python bool) (store.Config, string) {
	t.Helper()
	p := uniq("lc_")
	emb, coll := p+"_embedding", p+"_collection"
	c := config(t)
	c.Schema, c.Table, c.Dimensions = pgvector.SchemaLangChain, emb, 0
	if python {
		sql(t,
			`CREATE TABLE `+coll+` (uuid uuid PRIMARY KEY, name varchar NOT NULL UNIQUE, cmetadata json)`,
			fmt.Sprintf(`CREATE TABLE %s (uuid uuid PRIMARY KEY, collection_id uuid REFERENCES %s (uuid) ON DELETE CASCADE,
				embedding vector(%d), document varchar, cmetadata jsonb, custom_id varchar)`, emb, coll, dim),
			`CREATE INDEX `+emb+`_hnsw ON `+emb+` USING hnsw (embedding vector_l2_ops)`,
		)
		return c, ""
	}
	// langchaingo: createCollectionTableIfNotExists, createEmbeddingTableIfNotExists
	// (with WithVectorDimensions and WithHNSWIndex), createOrGetCollection.
	collID := newUUID()
	sql(t,
		`CREATE TABLE IF NOT EXISTS `+coll+` (name varchar, cmetadata json, "uuid" uuid NOT NULL, UNIQUE (name), PRIMARY KEY (uuid))`,
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (collection_id uuid, embedding vector(%d), document varchar, cmetadata json, "uuid" uuid NOT NULL,
			CONSTRAINT langchain_pg_embedding_collection_id_fkey FOREIGN KEY (collection_id) REFERENCES %s (uuid) ON DELETE CASCADE, PRIMARY KEY (uuid))`, emb, dim, coll),
		`CREATE INDEX IF NOT EXISTS `+emb+`_collection_id ON `+emb+` (collection_id)`,
		`CREATE INDEX IF NOT EXISTS `+emb+`_embedding_hnsw ON `+emb+` USING hnsw (embedding vector_cosine_ops) WITH (m=16, ef_construction = 64)`,
		`INSERT INTO `+coll+` (uuid, name, cmetadata) VALUES ('`+collID+`', 'support-tickets', '{}')`,
	)
	return c, collID
}

// Python LangChain's layout: keys are custom_id, so the suite's keys work.
func TestConformanceLangChain(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		Open: func(t *testing.T) store.Store {
			c, _ := langchainConfig(t, true)
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
			v := s.(*pgvector.Store)
			if err := v.Exec(context.Background(), `DELETE FROM `+v.Table()+` WHERE custom_id = $1`, key); err != nil {
				t.Fatal(err)
			}
		},
		NativeLeavesBytes: true,
	})
}

// langchaingo's own tables and rows, as its AddDocuments writes them: its
// interface has no delete, amnesia deletes by uuid.
func TestLangChainGo(t *testing.T) {
	ctx := context.Background()
	c, coll := langchainConfig(t, false)
	s, err := pgvector.Open(ctx, c, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Dimensions() != dim {
		t.Fatalf("Dimensions() = %d, want %d from the column", s.Dimensions(), dim)
	}
	ids := []string{newUUID(), newUUID(), newUUID()}
	for i, id := range ids {
		// langchaingo's AddDocuments statement, column for column.
		err := s.Exec(ctx, `INSERT INTO `+s.Table()+` (uuid, document, embedding, cmetadata, collection_id) VALUES($1, $2, $3::text::vector, $4::text::json, $5)`,
			id, text(50+i), vecText(vector(50+i)), fmt.Sprintf(`{"subject": "hmac:%02d", "source": "ticket"}`, i), coll)
		if err != nil {
			t.Fatal(err)
		}
	}
	target := strings.ToUpper(ids[0]) // keys are matched as uuids, in any case
	ev := evidence(t, s, target)
	ev[ids[1]] = evidence(t, s, ids[1])[ids[1]]
	if e := ev[target]; e == nil || e.Filter["subject"] != "hmac:00" || len(e.Vector) != dim || len(e.Needles) == 0 {
		t.Fatalf("evidence for a langchaingo row = %+v", e)
	}
	before, err := s.ProbeLogical(ctx, []string{target}, ev)
	if err != nil {
		t.Fatal(err)
	}
	if !before[0].ByID || !before[0].ByFilter || !before[0].BySimilarity {
		t.Fatalf("live langchaingo row not found by every path: %+v", before[0])
	}
	if !strings.Contains(strings.Join(before[0].Methods, ","), "hnsw-index-vector_cosine(approximate)") {
		t.Errorf("methods %v: want the cosine HNSW index path", before[0].Methods)
	}
	if f := found(t, s, ev); f[target] == 0 || f[ids[1]] == 0 {
		t.Fatalf("before deletion the probe found %v: no power", f)
	}
	if err := s.Delete(ctx, []string{target, "not-a-uuid"}); err != nil {
		t.Fatal(err)
	}
	if rep := reclaim(t, s); rep.State != "" {
		t.Fatalf("Reclaim = %q %q", rep.State, rep.Evidence)
	}
	after, err := s.ProbeLogical(ctx, []string{target, ids[1]}, ev)
	if err != nil {
		t.Fatal(err)
	}
	if after[0].Found() || !after[1].ByID {
		t.Fatalf("after erasure: %+v / %+v", after[0], after[1])
	}
	if f := found(t, s, ev); f[target] != 0 || f[ids[1]] == 0 {
		t.Fatalf("after Delete+Reclaim found %v: want none of the erased row, some of the live one", f)
	}
	// The collection row and the other rows are untouched.
	if err := s.Exec(ctx, `DO $$ BEGIN IF (SELECT count(*) FROM `+s.Table()+`) <> 2 THEN RAISE EXCEPTION 'rows'; END IF; END $$`); err != nil {
		t.Fatalf("other rows were touched: %v", err)
	}
}

func vecText(v []float32) string {
	parts := make([]string, len(v))
	for i, f := range v {
		parts[i] = fmt.Sprint(f)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// A key several rows answer to (Python LangChain's custom_id is not
// unique) is deleted in all of them: its evidence holds the windows of every
// such row, so the byte probe searches for them all, not for one row's.
func TestEvidenceCoversEveryRowOfAKey(t *testing.T) {
	ctx := context.Background()
	c, _ := langchainConfig(t, true)
	s := open(t, c)
	put(t, s, "dup", "subj", 1)
	put(t, s, "other", "subj", 2)
	// A second row under the same custom_id, as add_texts with a repeated
	// id writes it: another uuid, another document.
	if err := s.Exec(ctx, `INSERT INTO `+s.Table()+` (uuid, collection_id, embedding, document, cmetadata, custom_id)
		SELECT $1, collection_id, embedding, $2, cmetadata, custom_id FROM `+s.Table()+` WHERE custom_id = 'dup'`, newUUID(), text(99)); err != nil {
		t.Fatal(err)
	}
	ev := evidence(t, s, "dup")
	set := store.NewNeedleSet(ev)
	for _, seed := range []int{1, 99} {
		sc := store.NewScanner(set, "test")
		sc.ScanBytes([]byte(text(seed)))
		if sc.Report().Found["dup"] == 0 {
			t.Errorf("the evidence of key dup holds no window of the document of its row with text(%d): that row's bytes would not be searched", seed)
		}
	}
	sc := store.NewScanner(set, "test")
	sc.ScanBytes([]byte(text(2)))
	if n := sc.Report().Found["dup"]; n != 0 {
		t.Errorf("the evidence of dup holds %d windows of another key's document", n)
	}
	if err := s.Delete(ctx, []string{"dup"}); err != nil {
		t.Fatal(err)
	}
	res, err := s.ProbeLogical(ctx, []string{"dup", "other"}, ev)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Found() || !res[1].ByID {
		t.Errorf("after Delete of dup: %+v", res)
	}
}
