package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"

	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/file"
)

// The file target: a JSONL conversation log, one line per chunk ({"id",
// "kind", "parent", "text"}), appended as a logger appends
// (O_APPEND, one write per line), with lineage recorded in the ledger as
// capture records it. A native delete is what a script does to drop rows:
// write the surviving lines to a temporary file and rename it over the log,
// without overwriting the old one: its bytes leave the file (they stay in
// free disk blocks, which no file scan reads; amnesia zeroes the replaced
// file first), so B0 is expected to show no file residue. A flat file has
// no compaction and nothing to rebuild beyond that rewrite.
func init() {
	const name = "log"
	var cache struct {
		sync.Mutex
		size int64
		mod  int64
		keys map[string]bool
	}
	tg := &target{
		typ: "file-jsonl",
		config: func(dir string) store.Config {
			return store.Config{Name: name, Type: file.Type, Path: "../conversations.jsonl", Format: file.JSONL, Key: "id", Content: []string{"text"}}
		},
		ingest: func(ctx context.Context, e *env, c *Corpus, d Doc) error {
			owner, err := e.dir.Keyer.Key(e.dir.Config.Scope, c.Subjects[d.Owner].ID)
			if err != nil {
				return err
			}
			scope := e.dir.Config.Scope
			f, err := os.OpenFile(e.st.(*file.Store).Path(), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
			if err != nil {
				return err
			}
			defer f.Close()
			for i, ch := range d.Chunks {
				k := chunkID(d, i)
				if err := e.ledger.Record(ctx, lineage.Artifact{ID: lineage.ArtifactID(e.dir.Keyer, scope, name, k), Scope: scope, Subject: owner, Kind: lineage.KindLog, Store: name, Key: k, Digest: lineage.ContentDigest(e.dir.Keyer, []byte(ch))}); err != nil {
					return err
				}
				if _, err := f.Write(append(logLine(d, i), '\n')); err != nil {
					return err
				}
			}
			return f.Close()
		},
		keys:    chunkIDs,
		content: func(d Doc, key string) []byte { return logLine(d, chunkIndex(d, key)) },
		native: func(ctx context.Context, s store.Store, keys []string) error {
			path := s.(*file.Store).Path()
			drop := map[string]bool{}
			for _, k := range keys {
				drop[k] = true
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			var out bytes.Buffer
			sc := bufio.NewScanner(bytes.NewReader(b))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				var r struct {
					ID string `json:"id"`
				}
				if json.Unmarshal(sc.Bytes(), &r) == nil && drop[r.ID] {
					continue
				}
				out.Write(sc.Bytes())
				out.WriteByte('\n')
			}
			if err := sc.Err(); err != nil {
				return err
			}
			tmp := filepath.Join(filepath.Dir(path), ".conversations.jsonl.new")
			if err := os.WriteFile(tmp, out.Bytes(), 0o600); err != nil {
				return err
			}
			return os.Rename(tmp, path)
		},
		compact: noop,
		rebuild: noop,
		// What the application reads: the rows of the file, unless capture
		// suppressed them. The keys are read once per version of the file.
		visible: func(ctx context.Context, e *env, key string, _ []float32) (bool, error) {
			if sup, err := suppressed(ctx, e, name, key); err != nil || sup {
				return false, err
			}
			s := e.st.(*file.Store)
			fi, err := os.Stat(s.Path())
			if err != nil {
				return false, err
			}
			cache.Lock()
			defer cache.Unlock()
			if cache.keys == nil || cache.size != fi.Size() || cache.mod != fi.ModTime().UnixNano() {
				rows, err := s.Rows(ctx)
				if err != nil {
					return false, err
				}
				cache.keys = map[string]bool{}
				for _, r := range rows {
					cache.keys[r.Key] = true
				}
				cache.size, cache.mod = fi.Size(), fi.ModTime().UnixNano()
			}
			return cache.keys[key], nil
		},
		query:       func(Doc, string) []float32 { return nil },
		nativeDrops: true,
		notes: map[string]string{
			"B0": "a script's delete: the surviving lines written to a temporary file renamed over the log, the old file not overwritten: its bytes leave the file (they stay in free disk blocks, which the scan does not read)",
			"B1": "not applicable: a JSONL file has no compaction; B1 is B0 with nothing added",
			"B2": "not applicable: rebuilding a JSONL file from its live rows is the rewrite B0 already did; B2 is B0 with nothing added",
		},
	}
	targets[tg.typ] = tg
	residueExtra = append(residueExtra, tg.typ)
}

// logLine is the JSONL line of chunk i of d, without the line end. It has
// no subject field: the ledger links each line to its subject, as capture's
// lineage does for a log the application writes itself.
func logLine(d Doc, i int) []byte {
	b, _ := json.Marshal(struct {
		ID     string `json:"id"`
		Kind   string `json:"kind"`
		Parent string `json:"parent"`
		Text   string `json:"text"`
	}{chunkID(d, i), "chunk", d.ID, d.Chunks[i]})
	return b
}
