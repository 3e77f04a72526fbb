package bench

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	chromemgo "github.com/philippgille/chromem-go"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/chromem"
)

// The chromem targets: a persistent chromem-go DB (one collection), plain
// and gzip-compressed, written through capture as an application does.
// chromem-go keeps one gob file per document and its Delete unlinks the
// file: a native delete leaves no bytes in any file of the collection (they
// stay in free disk blocks, which no file scan reads; amnesia zeroes the
// file before the unlink), so B0 is expected to show no file residue.
// chromem-go has neither compaction nor rebuild: B1 and B2 run B0 and add
// nothing, and their notes say so.
func init() {
	for _, compress := range []bool{false, true} {
		typ := chromem.Type
		if compress {
			typ = chromem.Type + "-gzip"
		}
		tg := &target{
			typ: typ,
			config: func(dir string) store.Config {
				return store.Config{Name: "memory", Type: chromem.Type, Path: "../chromem", Collection: "bench", Compress: compress}
			},
			ingest: func(ctx context.Context, e *env, c *Corpus, d Doc) error {
				vecs := e.rec.Vectors(e.st.(*chromem.Store))
				for i, ch := range d.Chunks {
					if err := vecs.Put(ctx, capture.Vector{ID: chunkID(d, i), Subject: c.Subjects[d.Owner].ID, Embedding: embed(ch), Content: ch}); err != nil {
						return err
					}
				}
				return nil
			},
			keys:    chunkIDs,
			content: func(d Doc, key string) []byte { return []byte(d.Chunks[chunkIndex(d, key)]) },
			native: func(ctx context.Context, s store.Store, keys []string) error {
				// The application's own process: chromem-go's Delete on a DB
				// it opened (memory and unlink, no overwrite).
				cs := s.(*chromem.Store)
				db, err := chromemgo.NewPersistentDB(filepath.Dir(cs.Dir()), compress)
				if err != nil {
					return err
				}
				col := db.GetCollection("bench", nil)
				if col == nil {
					return errors.New("chromem bench: collection bench missing")
				}
				return col.Delete(ctx, nil, nil, keys...)
			},
			compact: noop,
			rebuild: noop,
			// What an application that opens the DB now sees: the document's
			// file (chromem-go loads every file of the collection), unless
			// capture suppressed it.
			visible: func(ctx context.Context, e *env, key string, _ []float32) (bool, error) {
				if sup, err := suppressed(ctx, e, "memory", key); err != nil || sup {
					return false, err
				}
				_, err := os.Stat(e.st.(*chromem.Store).DocPath(key))
				if errors.Is(err, fs.ErrNotExist) {
					return false, nil
				}
				return err == nil, err
			},
			query:   func(d Doc, key string) []float32 { return embed(d.Chunks[chunkIndex(d, key)]) },
			refresh: func(ctx context.Context, e *env) error { return e.st.(*chromem.Store).Reload(ctx) },
			top5: func(ctx context.Context, e *env, key string, vec []float32) (bool, error) {
				ns, err := e.rec.Vectors(e.st.(*chromem.Store)).Search(ctx, vec, 5)
				for _, n := range ns {
					if n.ID == key {
						return true, err
					}
				}
				return false, err
			},
			nativeDrops: true,
			notes: map[string]string{
				"B0": "chromem-go's Delete unlinks the document's file without overwriting it: its bytes leave the collection's files (they stay in free disk blocks, which the scan does not read), and an application process that loaded the DB keeps them in memory until it reloads",
				"B1": "not applicable: chromem-go has no compaction; B1 is B0 with nothing added",
				"B2": "not applicable: chromem-go has no rebuild (one file per document, which Delete already unlinks); B2 is B0 with nothing added",
			},
		}
		targets[typ] = tg
		residueExtra = append(residueExtra, typ)
	}
}

// suppressed reports whether capture hides the record (B3).
func suppressed(ctx context.Context, e *env, storeName, key string) (bool, error) {
	return e.ledger.Suppressed(ctx, lineage.ArtifactID(e.dir.Keyer, e.dir.Config.Scope, storeName, key))
}

func noop(context.Context, store.Store, []string) error { return nil }
