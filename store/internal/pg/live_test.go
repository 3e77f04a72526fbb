package pg

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/internal/pgtest"
)

func liveDB(t *testing.T) (*DB, string) {
	t.Helper()
	d := pgtest.DB(t) // a database of the test's own; skips without a server
	db, err := Connect(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, os.Getenv("AMNESIA_TEST_PG_DATADIR")
}

// pg_read_binary_file in chunks returns the file byte for byte.
func TestSQLFileChunks(t *testing.T) {
	ctx := context.Background()
	db, dataDir := liveDB(t)
	if dataDir == "" {
		t.Skip("AMNESIA_TEST_PG_DATADIR is not set")
	}
	old := chunkSize
	chunkSize = 1000
	defer func() { chunkSize = old }()
	tbl := "pgchunk_" + time.Now().Format("150405000000")
	var rel string
	err := db.With(ctx, func(c *pgx.Conn) error {
		for _, q := range []string{
			`CREATE TABLE ` + tbl + ` (x text)`,
			`INSERT INTO ` + tbl + ` SELECT md5(g::text) FROM generate_series(1, 500) g`,
			`CHECKPOINT`,
		} {
			if _, err := c.Exec(ctx, q); err != nil {
				return err
			}
		}
		if err := c.QueryRow(ctx, `SELECT pg_relation_filepath($1)`, tbl).Scan(&rel); err != nil {
			return err
		}
		got, err := io.ReadAll(&sqlFile{ctx: ctx, c: c, path: rel})
		if err != nil {
			return err
		}
		want, err := os.ReadFile(filepath.Join(dataDir, rel))
		if err != nil {
			return err
		}
		if len(want) < 3*1000 || !bytes.Equal(got, want) {
			t.Errorf("chunked read: %d bytes, direct read %d bytes, equal=%v", len(got), len(want), bytes.Equal(got, want))
		}
		missing, err := io.ReadAll(&sqlFile{ctx: ctx, c: c, path: "base/0/nope"})
		if err != nil || len(missing) != 0 {
			t.Errorf("missing file: %d bytes, %v", len(missing), err)
		}
		_, err = c.Exec(ctx, `DROP TABLE `+tbl)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A context cancelled mid-statement breaks the connection; the next use
// connects again.
func TestReconnectAfterCancel(t *testing.T) {
	db, _ := liveDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := db.Exec(ctx, `SELECT pg_sleep(5)`)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Exec under a 200ms deadline = %v, want DeadlineExceeded", err)
	}
	if err := db.Exec(context.Background(), `SELECT 1`); err != nil {
		t.Fatalf("Exec after the cancelled one = %v", err)
	}
	cancelled, stop := context.WithCancel(context.Background())
	stop()
	if err := db.Exec(cancelled, `SELECT 1`); !errors.Is(err, context.Canceled) {
		t.Fatalf("Exec with a cancelled context = %v", err)
	}
}
