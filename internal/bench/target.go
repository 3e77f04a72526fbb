package bench

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/internal/demo"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/chroma"
	"github.com/amnesia-dev/amnesia/store/pgvector"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
	"github.com/amnesia-dev/amnesia/store/sqlitevec"
)

// target adapts one store type to the benchmark.
type target struct {
	typ string
	// config returns the store's amnesia.yaml entry for a store in dir.
	config func(dir string) store.Config
	// ingest writes one document (and its chunks, or their embeddings)
	// through capture.
	ingest func(ctx context.Context, e *env, c *Corpus, d Doc) error
	// keys returns the store keys of one document.
	keys func(d Doc) []string
	// content returns the bytes the store keeps for one key (for shared-byte accounting).
	content func(d Doc, key string) []byte
	// native, compact and rebuild are what an application does without
	// amnesia: a plain DELETE; then the store's own compaction; then a full rebuild.
	native, compact, rebuild func(ctx context.Context, s store.Store, keys []string) error
	// visible reports whether the application's read path (through capture)
	// still returns the record.
	visible func(ctx context.Context, e *env, key string, vec []float32) (bool, error)
	// query returns a surviving record's own vector for Recall@5, or nil.
	query func(d Doc, key string) []float32
	// top5 reports whether a search with vec returns key among the 5 nearest.
	top5 func(ctx context.Context, e *env, key string, vec []float32) (bool, error)
	// refresh, when set, runs before a Recall@5 measurement: a store whose
	// search reads this process's copy (chromem-go) loads it again, as
	// the application would.
	refresh func(ctx context.Context, e *env) error
	// fresh: each baseline ingests anew instead of copying the template
	// (for server stores, whose data is not in the template directory).
	fresh bool
	// server, if set, returns the DSN of the database server the store
	// lives on: its settings are recorded with the results.
	server func() string
	// drop, if set, removes the store's data when a baseline is done.
	drop func(ctx context.Context, e *env) error
	// notes, per baseline, say what the numbers mean for this store: a
	// baseline that does not apply (no native compaction) and why; they
	// go into the cell's note in the JSON.
	notes map[string]string
	// nativeDrops says a native delete removes the record's bytes from the
	// store's files (it rewrites or unlinks them): B0 then shows no file
	// residue, and the smoke test does not require one.
	nativeDrops bool
	// nativeKeeps says the store offers no native delete at all (FAISS
	// HNSW): B0 removes nothing, so the smoke test expects the records to
	// stay findable.
	nativeKeeps bool
	// flush, if set, runs once after every document was ingested (a
	// target that buffers, such as FAISS, writes its file then).
	flush func(ctx context.Context, e *env) error
}

// Dim is the embedding dimension of the benchmark's vectors: 384, what
// the small sentence-embedding models RAG applications use produce
// (all-MiniLM-L6-v2, bge-small). The vectors are demo.Embed's
// deterministic hashing embedding of each chunk.
const Dim = 384

// embed is the benchmark's embedding of a chunk.
func embed(text string) []float32 { return demo.Embed(text, Dim) }

// residueExtra are the targets that need no server, registered by the
// target_*.go files (faiss only with its build tag).
var residueExtra []string

var targets = map[string]*target{
	sqlitedoc.Type: {
		typ: sqlitedoc.Type,
		config: func(dir string) store.Config {
			return store.Config{Name: "docs", Type: sqlitedoc.Type, Path: "../docs.db"}
		},
		ingest: func(ctx context.Context, e *env, c *Corpus, d Doc) error {
			docs := e.rec.Docs(e.st.(*sqlitedoc.Store))
			if err := docs.Put(ctx, capture.Doc{ID: d.ID, Kind: sqlitedoc.KindDocument, Subject: c.Subjects[d.Owner].ID, Text: d.Text, Mentions: mentionIDs(c, d)}); err != nil {
				return err
			}
			for i, ch := range d.Chunks {
				if err := docs.Put(ctx, capture.Doc{ID: chunkID(d, i), Kind: sqlitedoc.KindChunk, Parent: d.ID, Text: ch}); err != nil {
					return err
				}
			}
			return nil
		},
		keys: func(d Doc) []string { return append([]string{d.ID}, chunkIDs(d)...) },
		content: func(d Doc, key string) []byte {
			if key == d.ID {
				return []byte(d.Text)
			}
			return []byte(d.Chunks[chunkIndex(d, key)])
		},
		native:  sqlDelete("documents"),
		compact: sqlExec("VACUUM"),
		rebuild: sqlExec("VACUUM", "PRAGMA wal_checkpoint(TRUNCATE)"),
		visible: func(ctx context.Context, e *env, key string, _ []float32) (bool, error) {
			r, err := e.rec.Docs(e.st.(*sqlitedoc.Store)).Get(ctx, key)
			return r != nil, err
		},
		query: func(Doc, string) []float32 { return nil },
		top5:  nil,
	},
	sqlitevec.Type: {
		typ: sqlitevec.Type,
		config: func(dir string) store.Config {
			return store.Config{Name: "vectors", Type: sqlitevec.Type, Path: "../vectors.db", Dimensions: Dim}
		},
		ingest: func(ctx context.Context, e *env, c *Corpus, d Doc) error {
			vecs := e.rec.Vectors(e.st.(*sqlitevec.Store))
			for i, ch := range d.Chunks {
				if err := vecs.Put(ctx, capture.Vector{ID: chunkID(d, i), Subject: c.Subjects[d.Owner].ID, Embedding: embed(ch)}); err != nil {
					return err
				}
			}
			return nil
		},
		keys: chunkIDs,
		content: func(d Doc, key string) []byte {
			return store.Float32LE(embed(d.Chunks[chunkIndex(d, key)]))
		},
		native:  sqlDelete("vectors"),
		compact: sqlExec("VACUUM"),
		rebuild: vecRebuild,
		visible: func(ctx context.Context, e *env, key string, vec []float32) (bool, error) {
			vs := e.rec.Vectors(e.st.(*sqlitevec.Store))
			if r, err := vs.Get(ctx, key); err != nil || r != nil {
				return r != nil, err
			}
			ns, err := vs.Search(ctx, vec, 10)
			for _, n := range ns {
				if n.ID == key {
					return true, err
				}
			}
			return false, err
		},
		query: func(d Doc, key string) []float32 { return embed(d.Chunks[chunkIndex(d, key)]) },
		top5: func(ctx context.Context, e *env, key string, vec []float32) (bool, error) {
			ns, err := e.rec.Vectors(e.st.(*sqlitevec.Store)).Search(ctx, vec, 5)
			for _, n := range ns {
				if n.ID == key {
					return true, err
				}
			}
			return false, err
		},
	},
}

func mentionIDs(c *Corpus, d Doc) []string {
	var out []string
	for _, m := range d.Mentions {
		out = append(out, c.Subjects[m].ID)
	}
	return out
}

func chunkID(d Doc, i int) string { return fmt.Sprintf("%s#%d", d.ID, i) }

func chunkIDs(d Doc) []string {
	out := make([]string, len(d.Chunks))
	for i := range d.Chunks {
		out[i] = chunkID(d, i)
	}
	return out
}

func chunkIndex(d Doc, key string) int {
	var i int
	fmt.Sscanf(key[len(d.ID)+1:], "%d", &i)
	return i
}

type pather interface{ Path() string }

// appDB opens the application's own connection: default settings, as an
// application without amnesia has them (secure_delete off).
func appDB(s store.Store) (*sql.DB, error) {
	db, err := sql.Open("sqlite3", "file:"+filepath.Clean(s.(pather).Path())+"?_busy_timeout=10000")
	if err == nil {
		db.SetMaxOpenConns(1) // one connection: statements share temp tables
	}
	return db, err
}

func sqlDelete(table string) func(context.Context, store.Store, []string) error {
	return func(ctx context.Context, s store.Store, keys []string) error {
		db, err := appDB(s)
		if err != nil {
			return err
		}
		defer db.Close()
		for _, k := range keys {
			if _, err := db.ExecContext(ctx, "DELETE FROM "+table+" WHERE id = ?", k); err != nil {
				return err
			}
		}
		return nil
	}
}

func sqlExec(stmts ...string) func(context.Context, store.Store, []string) error {
	return func(ctx context.Context, s store.Store, _ []string) error {
		db, err := appDB(s)
		if err != nil {
			return err
		}
		defer db.Close()
		for _, q := range stmts {
			if _, err := db.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		return nil
	}
}

// vecRebuild rebuilds the vec0 table from its live rows: a new table, a copy,
// the old one dropped, VACUUM and a truncating checkpoint.
func vecRebuild(ctx context.Context, s store.Store, _ []string) error {
	return sqlExec(
		"CREATE TEMP TABLE live AS SELECT id, embedding, subject FROM vectors",
		"DROP TABLE vectors",
		fmt.Sprintf("CREATE VIRTUAL TABLE vectors USING vec0(id TEXT PRIMARY KEY, embedding float[%d], subject TEXT)", Dim),
		"INSERT INTO vectors (id, embedding, subject) SELECT id, embedding, subject FROM live",
		"DROP TABLE live",
		"VACUUM",
		"PRAGMA wal_checkpoint(TRUNCATE)",
	)(ctx, s, nil)
}

// ResidueTypes returns the store types the residue benchmark covers.
// The postgres and pgvector targets need a server (for pgvector, with the
// extension): each is listed only when one is configured.
func ResidueTypes() []string {
	types := []string{sqlitedoc.Type, sqlitevec.Type}
	types = append(types, residueExtra...)
	if pgDSN() != "" {
		types = append(types, "postgres")
	}
	if pgvectorDSN() != "" {
		types = append(types, pgvector.Type)
	}
	if weaviateURL() != "" {
		types = append(types, "weaviate") // target_weaviate.go
	}
	if chromaAvailable() {
		types = append(types, chroma.Type)
	}
	return types
}
