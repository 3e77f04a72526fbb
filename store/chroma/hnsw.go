package chroma

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
)

// scrubUnused zeroes what hnswlib never reads in the HNSW segment
// directories of collection collID: the element slots of data_level0.bin
// past the element count, and their entries in length.bin. Chroma writes a
// new index file from memory it did not clear, so those slots hold
// whatever the server process had freed before: seen here, request bodies
// with other records' ids, documents and embeddings. The server writes only
// the elements it adds afterwards (and a resized file is as long as its
// elements), so zeroes stay zeroes. It must run only on a collection no
// one else writes (the rebuild's copy, before the swap): a slot the server
// filled meanwhile would be zeroed on disk. It returns the bytes it zeroed.
func (s *Store) scrubUnused(ctx context.Context, collID string) (int64, error) {
	db, err := s.openSQLite(ctx)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT id FROM segments WHERE collection = ? AND scope = 'VECTOR'`, collID)
	if err != nil {
		return 0, fmt.Errorf("%s: segments: %w", SQLiteFile, busyErr(err))
	}
	var segs []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, err
		}
		segs = append(segs, id)
	}
	rows.Close()
	var total int64
	for _, seg := range segs {
		dir := filepath.Join(s.opt.DataDir, seg)
		l, err := readLevel0(dir, 0)
		if errors.Is(err, fs.ErrNotExist) {
			continue // not written yet
		}
		if err != nil {
			return total, err
		}
		for _, f := range []struct {
			name string
			from int64
		}{{"data_level0.bin", int64(l.count) * int64(l.stride)}, {"length.bin", int64(l.count) * 4}} {
			n, err := zeroFrom(filepath.Join(dir, f.name), f.from)
			total += n
			if err != nil {
				return total, err
			}
		}
	}
	return total, nil
}

// zeroFrom overwrites path with zeroes from offset to its end and fsyncs
// it; a missing file is nothing to do.
func zeroFrom(path string, offset int64) (int64, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	n := fi.Size() - offset
	if n <= 0 {
		return 0, nil
	}
	zero := make([]byte, 64<<10)
	for at := offset; at < fi.Size(); at += int64(len(zero)) {
		if _, err := f.WriteAt(zero[:min(int64(len(zero)), fi.Size()-at)], at); err != nil {
			return 0, fmt.Errorf("zero %s: %w", path, err)
		}
	}
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("fsync %s: %w", path, err)
	}
	return n, nil
}

// level0 is the layout of an hnswlib index as Chroma persists it
// (header.bin: a format version, then hnswlib's own header fields).
type level0 struct {
	path       string
	count      int // elements written
	stride     int // bytes per element
	dataOffset int // where an element's vector starts in it
	dim        int
}

func readLevel0(dir string, dim int) (*level0, error) {
	h, err := os.ReadFile(filepath.Join(dir, "header.bin"))
	if err != nil {
		return nil, err
	}
	if len(h) < 52 {
		return nil, fmt.Errorf("%s/header.bin: %d bytes, too short for an hnswlib header", dir, len(h))
	}
	u := func(off int) int { return int(binary.LittleEndian.Uint64(h[off:])) }
	l := &level0{path: filepath.Join(dir, "data_level0.bin"), count: u(20), stride: u(28), dataOffset: u(44), dim: dim}
	if l.stride <= 0 || l.dataOffset+4*dim > l.stride || l.count < 0 {
		return nil, fmt.Errorf("%s/header.bin: element size %d and data offset %d do not fit a %d-dimensional vector: not an hnswlib index this adapter knows", dir, l.stride, l.dataOffset, dim)
	}
	return l, nil
}

// vectors calls fn with the stored vector bytes of every element.
func (l *level0) vectors(fn func(b []byte)) error {
	f, err := os.ReadFile(l.path)
	if err != nil {
		return err
	}
	for i := 0; i < l.count; i++ {
		at := i*l.stride + l.dataOffset
		if at+4*l.dim > len(f) {
			return fmt.Errorf("%s: element %d lies past the end of the file", l.path, i)
		}
		fn(f[at : at+4*l.dim])
	}
	return nil
}

// exactVectors finds, for a cosine collection, the bytes Chroma keeps of
// each record's vector. The API's get returns a cosine record's vector
// rebuilt from the normalised one and its norm, a few ulps off the vector
// that was written, so neither encoding can be computed from it:
//   - raw: the vector as written, from the record's last add, update or
//     upsert still in chroma.sqlite3's embeddings queue;
//   - norm: the normalised vector, Normalize(raw) when raw is known (it is
//     bit-exact: checked against data_level0.bin in the tests), else the
//     nearest element of the collection's data_level0.bin.
//
// Keys for which neither is found are absent.
func (s *Store) exactVectors(ctx context.Context, collID string, approx map[string][]float32) (raw, norm map[string][]byte, err error) {
	raw, norm = map[string][]byte{}, map[string][]byte{}
	db, err := s.openSQLite(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer db.Close()
	for k := range approx {
		var b []byte
		var enc sql.NullString
		err := db.QueryRowContext(ctx, `SELECT vector, encoding FROM embeddings_queue WHERE topic LIKE '%/' || ? AND id = ? AND operation IN (0, 1, 2) AND vector IS NOT NULL ORDER BY seq_id DESC LIMIT 1`, collID, k).Scan(&b, &enc)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: embeddings queue: %w", SQLiteFile, busyErr(err))
		}
		if enc.String == "FLOAT32" && len(b) == 4*len(approx[k]) {
			raw[k] = b
			norm[k] = float32LE(Normalize(decodeF32(b)))
		}
	}
	var missing []string
	for k := range approx {
		if norm[k] == nil {
			missing = append(missing, k)
		}
	}
	if len(missing) == 0 {
		return raw, norm, nil
	}
	var seg string
	err = db.QueryRowContext(ctx, `SELECT id FROM segments WHERE collection = ? AND scope = 'VECTOR'`, collID).Scan(&seg)
	if errors.Is(err, sql.ErrNoRows) {
		return raw, norm, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: segments: %w", SQLiteFile, busyErr(err))
	}
	var dim int
	for _, v := range approx {
		dim = len(v)
	}
	l, err := readLevel0(filepath.Join(s.opt.DataDir, seg), dim)
	if errors.Is(err, fs.ErrNotExist) {
		return raw, norm, nil // not persisted yet: the vectors are in the queue
	}
	if err != nil {
		return nil, nil, err
	}
	want := map[string][]float32{}
	best := map[string]float64{}
	for _, k := range missing {
		want[k] = Normalize(approx[k])
		best[k] = 1e-4 // farther than this is another vector
	}
	err = l.vectors(func(b []byte) {
		v := decodeF32(b)
		for _, k := range missing {
			d := 0.0
			for i, x := range want[k] {
				d = math.Max(d, math.Abs(float64(x-v[i])))
			}
			if d < best[k] {
				best[k] = d
				norm[k] = append([]byte(nil), b...)
			}
		}
	})
	if errors.Is(err, fs.ErrNotExist) {
		return raw, norm, nil
	}
	return raw, norm, err
}

func decodeF32(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}
