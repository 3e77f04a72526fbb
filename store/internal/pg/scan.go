package pg

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/store"
)

// ChunkSize is how much one pg_read_binary_file call returns.
const ChunkSize = 4 << 20

// chunkSize is ChunkSize; tests lower it.
var chunkSize int64 = ChunkSize

// Relation is one relation whose files can hold record bytes.
type Relation struct {
	Name string // schema-qualified, as regclass prints it
	Kind string // heap, toast, toast-index, index
	Path string // pg_relation_filepath: relative to the data directory
	Size int64  // main fork size in bytes
}

// Relations lists t's heap, its TOAST table and the TOAST index, its
// indexes (of every partition, when t is partitioned), and pg_statistic with its TOAST table (where ANALYZE keeps sample
// values), with their file paths and sizes.
func Relations(ctx context.Context, c *pgx.Conn, t Table) ([]Relation, error) {
	rows, err := c.Query(ctx, `WITH t AS (SELECT oid, reltoastrelid FROM pg_class WHERE oid IN `+leavesSQL+`),
	r AS (
		SELECT oid, 'heap' AS kind, 0 AS ord FROM t
		UNION ALL SELECT reltoastrelid, 'toast', 1 FROM t WHERE reltoastrelid <> 0
		UNION ALL SELECT i.indexrelid, 'toast-index', 2 FROM pg_index i, t WHERE t.reltoastrelid <> 0 AND i.indrelid = t.reltoastrelid
		UNION ALL SELECT i.indexrelid, 'index', 3 FROM pg_index i, t WHERE i.indrelid = t.oid
		-- ANALYZE keeps sample values (vectors up to ~254 dimensions, short text)
		-- in pg_statistic and its TOAST table: copies of rows, deleted or not.
		UNION ALL SELECT 'pg_catalog.pg_statistic'::regclass::oid, 'statistics', 4
		UNION ALL SELECT reltoastrelid, 'statistics-toast', 5 FROM pg_class WHERE oid = 'pg_catalog.pg_statistic'::regclass AND reltoastrelid <> 0)
	SELECT r.oid::regclass::text, r.kind, pg_relation_filepath(r.oid), pg_relation_size(r.oid)
	FROM r ORDER BY r.ord, 1`, t.Ident())
	if err != nil {
		return nil, fmt.Errorf("list relations: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Relation, error) {
		var x Relation
		err := r.Scan(&x.Name, &x.Kind, &x.Path, &x.Size)
		return x, err
	})
	if err != nil {
		return nil, fmt.Errorf("list relations: %w", err)
	}
	return out, nil
}

// Probe is the physical probe: CHECKPOINT (so the files hold what the server
// holds), then a byte scan of every segment file of the table's heap, TOAST
// table, TOAST index and indexes, and of every pg_wal segment, read from
// data_dir when it is configured and readable, else in ChunkSize pieces
// through pg_read_binary_file. The report's Method says what was read.
func (t *Target) Probe(ctx context.Context, set *store.NeedleSet) (store.ScanReport, error) {
	if !t.Priv.Physical() {
		return store.ScanReport{}, fmt.Errorf("probe physical: %s", t.Priv.MissingPhysical())
	}
	var rep store.ScanReport
	err := t.DB.With(ctx, func(c *pgx.Conn) error {
		if _, err := c.Exec(ctx, "CHECKPOINT"); err != nil {
			return fmt.Errorf("probe physical: checkpoint: %w", err)
		}
		var segSize int64
		if err := c.QueryRow(ctx, `SELECT pg_size_bytes(current_setting('segment_size'))`).Scan(&segSize); err != nil {
			return fmt.Errorf("probe physical: segment size: %w", err)
		}
		rels, err := Relations(ctx, c, t.Table)
		if err != nil {
			return fmt.Errorf("probe physical: %w", err)
		}
		how := "pg_read_binary_file in 4 MiB chunks"
		if t.Priv.DataDir {
			how = "files read from data_dir"
		}
		sc := store.NewScanner(set, "")
		var parts []string
		for _, r := range rels {
			nseg := (r.Size + segSize - 1) / segSize
			for i := int64(0); i < nseg; i++ {
				path := r.Path
				if i > 0 {
					path = fmt.Sprintf("%s.%d", r.Path, i)
				}
				if err := t.scanFile(ctx, c, sc, path, min(segSize, r.Size-i*segSize)); err != nil {
					return err
				}
			}
			parts = append(parts, fmt.Sprintf("%s %s (%d segment(s), %d bytes)", r.Kind, r.Name, nseg, r.Size))
		}
		wal, whence, listed, passes, err := t.scanWAL(ctx, c, sc)
		if err != nil {
			return err
		}
		walPart := "pg_wal not scanned: role " + Display(t.Priv.Role) + " may not list it (needs pg_monitor, superuser, or a readable data_dir)"
		if listed {
			walPart = fmt.Sprintf("pg_wal: %d segment(s) listed by %s", len(wal), whence)
			if len(wal) > 0 {
				walPart += fmt.Sprintf(" (%s..%s)", wal[0].Name, wal[len(wal)-1].Name)
			}
			if passes > 1 {
				walPart += fmt.Sprintf(", listed %d times: segment files were recycled or removed while they were read", passes)
			}
		}
		rep = sc.Report()
		rep.Method = "CHECKPOINT, then a byte scan (" + how + ") of " + strings.Join(parts, ", ") + "; " + walPart
		if !listed {
			rep.Partial = walPart
		}
		return nil
	})
	return rep, err
}

// scanFile scans one file of the data directory, size bytes long (a file
// that grew meanwhile is read to its end).
func (t *Target) scanFile(ctx context.Context, c *pgx.Conn, sc *store.Scanner, rel string, size int64) error {
	_, _, err := t.scanFileGone(ctx, c, sc, rel, size)
	return err
}

// scanFileGone is scanFile, and reports whether the file may have gone
// (been renamed or removed) before all of it was read: through SQL, fewer
// bytes were read than listed; under data_dir, it did not exist when the
// scan opened it (store.Scanner.ScanFileGone: once open, it is read whole).
// ident is the file's identity under data_dir, "" through SQL (a segment
// is recycled under a name no file had: a path read is not read again).
func (t *Target) scanFileGone(ctx context.Context, c *pgx.Conn, sc *store.Scanner, rel string, size int64) (gone bool, ident string, err error) {
	if t.Priv.DataDir {
		return sc.ScanFileGone(ctx, filepath.Join(t.Opts.DataDir, filepath.FromSlash(rel)))
	}
	if size <= 0 {
		return false, "", nil
	}
	r := &sqlFile{ctx: ctx, c: c, path: rel}
	err = sc.Scan(ctx, r)
	r.close()
	if err != nil {
		return false, "", fmt.Errorf("probe physical: read %s: %w", rel, err)
	}
	return r.off < size, "", nil
}

// walScanned, when set (tests), is called after each pg_wal file scanWAL
// scans, with its name.
var walScanned func(name string)

// scanWAL scans every file of pg_wal that listWALScan lists. A checkpoint
// that runs meanwhile may recycle a segment, renaming it, old bytes and
// all, to a name the listing did not have, or remove it: when a listed
// file went before it was read (scanFileGone), pg_wal is listed again and
// the files not read yet are scanned, until a pass loses none
// (store.RescanGone; segments that appear while none goes, newly written
// WAL, do not make it list again). It returns the last listing and how
// many listings it took.
func (t *Target) scanWAL(ctx context.Context, c *pgx.Conn, sc *store.Scanner) (wal []walFile, how string, listed bool, passes int, err error) {
	sizes := map[string]int64{}
	list := func() ([]string, error) {
		files, h, ok, err := t.listWALScan(ctx, c)
		if err != nil {
			return nil, err
		}
		wal, how, listed = files, h, ok
		names := make([]string, len(files))
		for i, f := range files {
			names[i] = f.Name
			sizes[f.Name] = f.Size
		}
		return names, nil
	}
	scan := func(name string) (bool, string, error) {
		gone, id, err := t.scanFileGone(ctx, c, sc, "pg_wal/"+name, sizes[name])
		if err == nil && walScanned != nil {
			walScanned(name)
		}
		return gone, id, err
	}
	passes, err = store.RescanGone(ctx, list, scan)
	if err != nil {
		return nil, "", false, passes, fmt.Errorf("probe physical: pg_wal: %w", err)
	}
	return wal, how, listed, passes, nil
}

// sqlFile reads a file under the data directory through
// pg_read_binary_file(path, offset, length, missing_ok), one chunk ahead of
// its reader: the next chunk is fetched (the server reads the file and
// sends it) while the reader searches the last one. It has the connection
// from its first Read until close, which every sqlFile that was read must
// get before the connection is used again.
type sqlFile struct {
	ctx  context.Context
	c    *pgx.Conn
	path string
	off  int64 // bytes fetched; read it after close
	buf  []byte
	eof  bool

	chunks chan fetchedChunk // nil until the first Read
	stop   chan struct{}
	done   chan struct{}
}

type fetchedChunk struct {
	b   []byte
	err error
}

// prefetchChunks is how many chunks are fetched ahead of the reader, at
// most: with ChunkSize, up to 8 MiB waiting besides the one being read.
const prefetchChunks = 2

func (f *sqlFile) Read(p []byte) (int, error) {
	if f.chunks == nil {
		f.fetch()
	}
	for len(f.buf) == 0 {
		if f.eof {
			return 0, io.EOF
		}
		ch, ok := <-f.chunks
		if !ok { // fetched to the end, or stopped
			f.eof = true
			return 0, io.EOF
		}
		if ch.err != nil {
			f.eof = true
			return 0, ch.err
		}
		f.buf = ch.b
		f.eof = int64(len(ch.b)) < chunkSize // short read: end of file (nil: the file is gone)
	}
	n := copy(p, f.buf)
	f.buf = f.buf[n:]
	return n, nil
}

// fetch starts the goroutine that fetches the chunks in order until a short
// one (the end of the file), an error, or close.
func (f *sqlFile) fetch() {
	f.chunks = make(chan fetchedChunk, prefetchChunks)
	f.stop, f.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(f.done)
		defer close(f.chunks)
		for {
			select {
			case <-f.stop:
				return
			default:
			}
			var b []byte
			err := f.c.QueryRow(f.ctx, `SELECT pg_read_binary_file($1, $2, $3, true)`, f.path, f.off, chunkSize).Scan(&b)
			if err == nil {
				f.off += int64(len(b))
			}
			select {
			case f.chunks <- fetchedChunk{b, err}:
			case <-f.stop:
				return
			}
			if err != nil || int64(len(b)) < chunkSize {
				return
			}
		}
	}()
}

// close stops fetching and waits for a fetch under way to finish: the
// connection is the caller's again.
func (f *sqlFile) close() {
	if f.chunks == nil {
		return
	}
	close(f.stop)
	<-f.done
}
