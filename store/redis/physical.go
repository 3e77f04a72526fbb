package redis

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/amnesia-dev/amnesia/store"
)

// aofFlushWait bounds how long the physical probe waits for the server to
// write its AOF buffer.
const aofFlushWait = 5 * time.Second

// ProbePhysical implements store.PhysicalProber: every regular file of
// data_dir and of its AOF directory (appendonlydir/: the manifest, the
// base and the increments), raw; and, of each file that is an RDB image
// (dump.rdb, an AOF base with the RDB preamble), every LZF-compressed
// string decompressed.
func (s *Store) ProbePhysical(ctx context.Context, set *store.NeedleSet) (store.ScanReport, error) {
	if s.o.DataDir == "" {
		return store.ScanReport{}, fmt.Errorf("physical probe: store %q has no data_dir: set it to the server's directory (CONFIG GET dir)", s.o.Name)
	}
	// With appendfsync everysec Redis may hold writes in its AOF buffer
	// for up to two seconds while a background fsync runs: wait until the
	// buffer is written, so that the scan sees what the server holds.
	method := "every file of the Redis data directory and its AOF directory, raw; LZF-compressed strings of RDB images decompressed"
	if _, err := s.waitFor(ctx, time.Now().Add(aofFlushWait), "the AOF buffer write", func(p persistence) bool {
		return p["aof_enabled"] != "1" || p["aof_buffer_length"] == "0" || p["aof_buffer_length"] == ""
	}); err != nil {
		if !errors.Is(err, errTimeout) {
			return store.ScanReport{}, fmt.Errorf("physical probe: %w", err)
		}
		method += "; the server's AOF buffer was not empty when the files were read"
	}
	sc := store.NewScanner(set, method)
	// A rewrite (BGREWRITEAOF) or a save (BGSAVE) may rename a new file
	// over one listed, or remove one, while the files are read: the
	// directories are listed again then (store.RescanGone).
	if _, err := store.RescanGone(ctx, func() ([]string, error) { return s.files(ctx) }, func(f string) (bool, string, error) { return scanFile(ctx, sc, f) }); err != nil {
		return store.ScanReport{}, fmt.Errorf("physical probe: %w", err)
	}
	return sc.Report(), nil
}

// scanFile reads the file at path once and scans its bytes raw and, when
// it is an RDB image, its LZF-compressed strings decompressed (from the
// same bytes: a file renamed over it meanwhile is not mixed in). gone: the
// file did not exist any more; ident: the identity of the file read
// (store.RescanGone reads a path again when another file is renamed onto
// it, as a save renames its temporary file onto dump.rdb).
func scanFile(ctx context.Context, sc *store.Scanner, path string) (gone bool, ident string, err error) {
	f, err := os.Open(path)
	if isNotExist(err) {
		return true, "", nil
	}
	if err != nil {
		return false, "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, "", err
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return false, "", err
	}
	if err := sc.Scan(ctx, bytes.NewReader(b)); err != nil {
		return false, "", fmt.Errorf("scan %s: %w", path, err)
	}
	if plain := rdbPlainOf(b); plain != nil {
		if err := sc.Scan(ctx, bytes.NewReader(plain)); err != nil {
			return false, "", fmt.Errorf("scan %s (decompressed strings): %w", path, err)
		}
	}
	return false, store.FileIdent(fi), nil
}

// files lists the regular files of data_dir and of its AOF directory.
func (s *Store) files(ctx context.Context) ([]string, error) {
	var out []string
	for _, dir := range []string{s.o.DataDir, s.aofDir(ctx)} {
		ents, err := os.ReadDir(dir)
		if err != nil {
			if dir != s.o.DataDir && os.IsNotExist(err) {
				continue
			}
			return nil, fmt.Errorf("read data_dir: %w", err)
		}
		for _, e := range ents {
			if e.Type().IsRegular() {
				out = append(out, filepath.Join(dir, e.Name()))
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// rdbPlain returns, for a file that starts with the RDB magic "REDIS", its
// LZF-compressed strings decompressed and joined by a zero byte; nil for
// any other file.
func rdbPlain(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) || isNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	return rdbPlainOf(b), nil
}

// rdbPlainOf is rdbPlain of a file's bytes b.
func rdbPlainOf(b []byte) []byte {
	if !bytes.HasPrefix(b, []byte("REDIS")) {
		return nil
	}
	var out []byte
	rdbLZFStrings(b, func(p []byte) {
		out = append(out, p...)
		out = append(out, 0)
	})
	if out == nil {
		out = []byte{}
	}
	return out
}

func isNotExist(err error) bool { return err != nil && (os.IsNotExist(err) || err == fs.ErrNotExist) }
