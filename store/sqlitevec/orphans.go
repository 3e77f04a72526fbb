package sqlitevec

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/internal/sqlitex"
)

// sqlite-vec v0.1.6 keeps a vec0 table's vectors in chunks: a row of
// vectors_chunks (chunk_id, size, validity: one bit per slot, rowids) and a
// row of vectors_vector_chunks00 (rowid = chunk_id, vectors: size slots of
// dim float32 each). DELETE clears the slot's validity bit and its metadata
// slot, and leaves the vector bytes in place: a vector whose row the
// application deleted with plain SQL is still in the file, byte for byte,
// where no query reaches it and VACUUM does not rewrite it.

var _ store.OrphanProber = (*Store)(nil)

// slotSweep calls fn for every chunk of the table with its vector blob and
// the index of each slot whose validity bit is clear and whose bytes are
// not all zero.
func (s *Store) slotSweep(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, fn func(chunk int64, blob []byte, invalid []int) error) error {
	rows, err := q.QueryContext(ctx, `SELECT c.chunk_id, c.validity, v.vectors FROM vectors_chunks c JOIN vectors_vector_chunks00 v ON v.rowid = c.chunk_id ORDER BY c.chunk_id`)
	if err != nil {
		return fmt.Errorf("read vec0 chunks: %w", err)
	}
	type chunk struct {
		id       int64
		validity []byte
		blob     []byte
	}
	var chunks []chunk
	for rows.Next() {
		var c chunk
		if err := rows.Scan(&c.id, &c.validity, &c.blob); err != nil {
			rows.Close()
			return fmt.Errorf("read vec0 chunks: %w", err)
		}
		chunks = append(chunks, c)
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("read vec0 chunks: %w", err)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read vec0 chunks: %w", err)
	}
	w := 4 * s.dim
	for _, c := range chunks {
		if len(c.blob)%w != 0 || len(c.blob)/w > 8*len(c.validity) {
			return fmt.Errorf("read vec0 chunk %d: %d bytes of vectors and %d of validity do not fit %d dimensions: not the sqlite-vec v0.1.6 layout this adapter knows", c.id, len(c.blob), len(c.validity), s.dim)
		}
		var invalid []int
		for i := 0; i < len(c.blob)/w; i++ {
			if c.validity[i/8]&(1<<(i%8)) != 0 {
				continue
			}
			if !zero(c.blob[i*w : (i+1)*w]) {
				invalid = append(invalid, i)
			}
		}
		if err := fn(c.id, c.blob, invalid); err != nil {
			return err
		}
	}
	return nil
}

func zero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// ProbeOrphans implements store.OrphanProber: the keyed digest of each
// invalidated vec0 slot's vector bytes (their float32 little-endian
// encoding, the bytes capture digests for an embedding) is compared with
// want. A match's evidence holds the windows of those bytes, less those a
// live vector also holds.
func (s *Store) ProbeOrphans(ctx context.Context, digest func([]byte) string, want map[string]string) (store.OrphanReport, error) {
	rep := store.OrphanReport{Measured: true, Found: map[string]*store.Evidence{}}
	byDigest := map[string][]string{}
	for k, d := range want {
		if d != "" {
			byDigest[d] = append(byDigest[d], k)
		}
	}
	w := 4 * s.dim
	err := s.slotSweep(ctx, s.db, func(_ int64, blob []byte, invalid []int) error {
		for _, i := range invalid {
			if err := ctx.Err(); err != nil {
				return err
			}
			rep.Scanned++
			b := blob[i*w : (i+1)*w]
			for _, k := range byDigest[digest(b)] {
				rep.Found[k] = &store.Evidence{Key: k, Needles: store.Windows(b), Vector: decode(b)}
			}
		}
		return nil
	})
	if err != nil {
		return store.OrphanReport{}, fmt.Errorf("orphan probe: %w", err)
	}
	rep.Method = fmt.Sprintf("keyed content digest of each invalidated vec0 slot's float32 vector (%d slots) compared with the ledger's", rep.Scanned)
	if err := store.DropShared(ctx, rep.Found, sqlitex.Others(ctx, s.db, `SELECT id, embedding FROM vectors`, nil)); err != nil {
		return store.OrphanReport{}, fmt.Errorf("orphan probe: %w", err)
	}
	return rep, nil
}

// zeroInvalidSlots overwrites with zeros every invalidated vec0 slot that
// still holds bytes: the vectors of rows deleted by plain SQL, outside
// this adapter. It returns how many slots it zeroed.
func (s *Store) zeroInvalidSlots(ctx context.Context) (int, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("zero invalidated vec0 slots: %w", err)
	}
	defer tx.Rollback()
	w, n := 4*s.dim, 0
	err = s.slotSweep(ctx, tx, func(chunk int64, blob []byte, invalid []int) error {
		if len(invalid) == 0 {
			return nil
		}
		for _, i := range invalid {
			clear(blob[i*w : (i+1)*w])
		}
		n += len(invalid)
		// The blob keeps its size: sqlite-vec reads it by offset.
		_, err := tx.ExecContext(ctx, `UPDATE vectors_vector_chunks00 SET vectors = ? WHERE rowid = ?`, blob, chunk)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("zero invalidated vec0 slots: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("zero invalidated vec0 slots: %w", err)
	}
	return n, nil
}

// liveVectors returns a source for store.DropShared that reads the bytes of
// every live vector but those of keys straight from the vec0 chunks (one
// blob per chunk, its valid slots), instead of through vec0's per-row
// scan, which reads each vector on its own. The holders are not named (as
// ReadEvidence passes them). Before it hands fn anything it checks, in the
// same read transaction, that the layout is the one this adapter knows:
// every chunk's vectors fit its validity bits, and the valid slots are as
// many as vectors_rowids has rows (one per live row); otherwise, and when a
// key's slot is not where vectors_rowids says, it reads through vec0
// (sqlitex.Others) as before.
func (s *Store) liveVectors(ctx context.Context, keys map[string]bool) func(fn func(string, []byte) error) error {
	viaVec0 := sqlitex.Others(ctx, s.db, `SELECT id, embedding FROM vectors`, keys)
	anonymous := func(fn func(string, []byte) error) error {
		return viaVec0(func(_ string, b []byte) error { return fn("", b) })
	}
	return func(fn func(string, []byte) error) error {
		done, err := s.readChunks(ctx, keys, fn)
		if err != nil || done {
			return err
		}
		return anonymous(fn)
	}
}

// readChunks is liveVectors' read of the chunks; done is false when the
// layout check failed before fn was called.
func (s *Store) readChunks(ctx context.Context, keys map[string]bool, fn func(string, []byte) error) (done bool, err error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		return false, err
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
	skip, ok, err := s.chunkLayout(ctx, conn, keys)
	if err != nil || !ok {
		return false, err
	}
	rows, err := conn.QueryContext(ctx, `SELECT c.chunk_id, c.validity, v.vectors FROM vectors_chunks c JOIN vectors_vector_chunks00 v ON v.rowid = c.chunk_id`)
	if err != nil {
		return true, err
	}
	defer rows.Close()
	w := 4 * s.dim
	for rows.Next() {
		var chunk int64
		var validity, blob sql.RawBytes // the driver's until the next row
		if err := rows.Scan(&chunk, &validity, &blob); err != nil {
			return true, err
		}
		if len(blob)%w != 0 || len(blob)/w > 8*len(validity) {
			return true, fmt.Errorf("read vec0 chunk %d: its size changed within a read transaction", chunk)
		}
		for i := 0; i < len(blob)/w; i++ {
			if validity[i/8]&(1<<(i%8)) == 0 || skip[slot{chunk, i}] {
				continue
			}
			if err := fn("", blob[i*w:(i+1)*w]); err != nil {
				return true, err
			}
		}
	}
	return true, rows.Err()
}

type slot struct {
	chunk int64
	i     int
}

// chunkLayout reads, on conn, where each key's vector lies (its chunk and
// offset), and checks the chunks against vectors_rowids. ok is false when
// the layout is not the one this adapter knows.
func (s *Store) chunkLayout(ctx context.Context, conn *sql.Conn, keys map[string]bool) (skip map[slot]bool, ok bool, err error) {
	skip = map[slot]bool{}
	for k := range keys {
		var c sql.NullInt64
		var off sql.NullInt64
		err := conn.QueryRowContext(ctx, `SELECT chunk_id, chunk_offset FROM vectors_rowids WHERE id = ?`, k).Scan(&c, &off)
		if errors.Is(err, sql.ErrNoRows) {
			continue // not live: nothing of it to skip
		}
		if err != nil || !c.Valid || !off.Valid {
			return nil, false, nil
		}
		skip[slot{c.Int64, int(off.Int64)}] = true
	}
	var live int64
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM vectors_rowids`).Scan(&live); err != nil {
		return nil, false, nil
	}
	rows, err := conn.QueryContext(ctx, `SELECT c.chunk_id, c.validity, length(v.vectors) FROM vectors_chunks c JOIN vectors_vector_chunks00 v ON v.rowid = c.chunk_id`)
	if err != nil {
		return nil, false, nil
	}
	defer rows.Close()
	w := int64(4 * s.dim)
	valid := int64(0)
	for rows.Next() {
		var chunk, size int64
		var validity []byte
		if err := rows.Scan(&chunk, &validity, &size); err != nil {
			return nil, false, nil
		}
		if size%w != 0 || size/w > 8*int64(len(validity)) {
			return nil, false, nil
		}
		for i := int64(0); i < size/w; i++ {
			if validity[i/8]&(1<<(i%8)) != 0 {
				valid++
			} else if skip[slot{chunk, int(i)}] {
				return nil, false, nil // a key's slot is not valid: not where vectors_rowids says
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, false, nil
	}
	return skip, valid == live, nil
}
