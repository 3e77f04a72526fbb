package chromem

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/amnesia-dev/amnesia/store"
)

// Check implements store.CheckFunc: path is a directory, the collection's
// directory exists in it and holds chromem-go's metadata file for the
// configured compress mode. It reads names and file types only, never a
// document.
func Check(ctx context.Context, c store.Config) []store.Problem {
	bad := func(key, format string, a ...any) []store.Problem {
		return []store.Problem{{Severity: store.SeverityError, Key: key, Message: fmt.Sprintf(format, a...)}}
	}
	if err := ctx.Err(); err != nil {
		return bad("", "check cancelled: %v", err)
	}
	if c.Path == "" {
		return bad("path", "path is required: the chromem-go DB directory (NewPersistentDB's path)")
	}
	if c.Collection == "" {
		return bad("collection", "collection is required: the name of the chromem-go collection")
	}
	fi, err := os.Stat(c.Path)
	if err != nil {
		return bad("path", "%s: %v (is the path the chromem-go DB directory?)", c.Path, err)
	}
	if !fi.IsDir() {
		return bad("path", "%s is not a directory: a persistent chromem-go DB is a directory", c.Path)
	}
	dir := filepath.Join(c.Path, hash2hex(c.Collection))
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return bad("collection", "%s has no directory for collection %q (expected %s): is the collection name right?", c.Path, c.Collection, dir)
	}
	ext, other := ".gob", ".gob.gz"
	if c.Compress {
		ext, other = other, ext
	}
	if _, err := os.Stat(filepath.Join(dir, metadataFile+ext)); err != nil {
		if _, err2 := os.Stat(filepath.Join(dir, metadataFile+other)); err2 == nil {
			return bad("compress", "collection %q in %s is stored with compress: %v: set compress: %v", c.Collection, c.Path, !c.Compress, !c.Compress)
		}
		return bad("collection", "%s has no chromem-go metadata file %s: it is not a chromem-go collection", dir, metadataFile+ext)
	}
	return nil
}

func init() {
	store.RegisterCheck(Type, []string{"name", "type", "path", "collection", "compress", "out_of_scope"}, Check)
	store.Register(Type, store.Adapter{
		Open: func(ctx context.Context, c store.Config, create bool) (store.Store, error) {
			return Open(ctx, c.Name, c.Path, c.Collection, c.Compress, create)
		},
		Validate: func(c store.Config) error {
			if c.Path == "" {
				return fmt.Errorf("path is required (the chromem-go DB directory)")
			}
			if c.Collection == "" {
				return fmt.Errorf("collection is required (the chromem-go collection name)")
			}
			return nil
		},
		List: list,
		Proof: func(store.Config) (string, string) {
			return "physical", "the collection's document files are read byte by byte (gzip mode decompressed); chromem-go keeps documents in a running application's memory until it reloads"
		},
	})
}

// list enumerates the collection's documents (store.List): metadata as
// fields ("subject" included), content and the embedding's float32 bytes as
// content. Opening reads the DB directory; it writes nothing.
func list(ctx context.Context, c store.Config, fn func(store.Listed) error) error {
	s, err := Open(ctx, c.Name, c.Path, c.Collection, c.Compress, false)
	if err != nil {
		return err
	}
	defer s.Close()
	rs, err := s.all(ctx)
	if err != nil {
		return err
	}
	for _, r := range rs {
		f := map[string]string{}
		for k, v := range r.Metadata {
			f[k] = v
		}
		if r.Subject != "" {
			f["subject"] = r.Subject
		}
		content := []byte(r.Content)
		for _, x := range r.Embedding {
			content = binary.LittleEndian.AppendUint32(content, math.Float32bits(x))
		}
		if err := fn(store.Listed{Key: r.ID, Fields: f, Content: content}); err != nil {
			return err
		}
	}
	return nil
}
