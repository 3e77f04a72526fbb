package transparency_test

import (
	"context"
	"crypto/ed25519"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/transparency"
)

// The audit ties the stored checkpoint rows and RFC 3161 tokens to the
// log: a checkpoint row relabelled with another size, a token replaced or
// deleted behind the log's back, is tampering (ErrProof), each caught.
func TestAuditCheckpointRowsAndTimestamps(t *testing.T) {
	ctx := context.Background()
	build := func(t *testing.T) (string, int64) {
		path := filepath.Join(t.TempDir(), "ledger.db")
		l, err := sqliteledger.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		lg, err := transparency.Open(ctx, l, ed25519.NewKeyFromSeed(seed), "")
		if err != nil {
			t.Fatal(err)
		}
		cp := grow(t, lg, 4)
		if _, err := lg.Anchor(ctx, cp.Size, []byte("a token over the checkpoint of 4 leaves")); err != nil {
			t.Fatal(err)
		}
		grow(t, lg, 6)
		rep, err := lg.Audit(ctx, nil)
		if err != nil || rep.Checkpoints != 2 || rep.Timestamps != 1 {
			t.Fatalf("clean audit: %+v, %v", rep, err)
		}
		return path, cp.Size
	}
	audit := func(t *testing.T, path string) error {
		l, err := sqliteledger.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		lg, err := transparency.Open(ctx, l, ed25519.NewKeyFromSeed(seed), "")
		if err != nil {
			t.Fatal(err)
		}
		_, err = lg.Audit(ctx, nil)
		return err
	}
	for name, edit := range map[string]string{
		"checkpoint row relabelled":   `UPDATE tlog_checkpoints SET size = 5 WHERE size = 4`,
		"checkpoint row copied":       `INSERT INTO tlog_checkpoints (size, note) SELECT 5, note FROM tlog_checkpoints WHERE size = 4`,
		"token replaced":              `UPDATE tlog_timestamps SET token = X'00'`,
		"token deleted":               `DELETE FROM tlog_timestamps`,
		"token stored without a leaf": `INSERT INTO tlog_timestamps (size, token) SELECT size, X'01' FROM tlog_checkpoints WHERE size = 6`,
	} {
		t.Run(name, func(t *testing.T) {
			path, _ := build(t)
			db, err := sql.Open("sqlite3", "file:"+path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(edit); err != nil {
				t.Fatal(edit, err)
			}
			db.Close()
			if err := audit(t, path); !errors.Is(err, transparency.ErrProof) {
				t.Errorf("%s: audit = %v, want ErrProof", name, err)
			}
		})
	}
}
