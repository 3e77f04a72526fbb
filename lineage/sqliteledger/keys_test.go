package sqliteledger_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/amnesia-dev/amnesia/lineage/ledgertest"
	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
)

// A destroyed data key's wrapped bytes are gone from every file of the
// ledger (secure_delete zeroes the row, the WAL is truncated), also after
// other keys were written around it.
func TestDestroyedKeyLeavesTheFiles(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := sqliteledger.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	k := ledgertest.Keyer(t)
	var target []byte
	for i := range 300 {
		s, err := k.Key("default", "person-"+string(rune('a'+i%26))+string(rune('a'+i/26)))
		if err != nil {
			t.Fatal(err)
		}
		w := make([]byte, 60)
		rand.Read(w)
		if _, err := l.PutDataKey(ctx, "default", s, w); err != nil {
			t.Fatal(err)
		}
		if i == 150 {
			target = w
			defer func(s [32]byte) {
				if _, err := l.DestroyDataKey(ctx, "default", s, "er-1"); err != nil {
					t.Fatal(err)
				}
				for _, f := range []string{path, path + "-wal", path + "-shm"} {
					b, _ := os.ReadFile(f)
					if bytes.Contains(b, target) {
						t.Errorf("%s still holds the destroyed key's wrapped bytes", filepath.Base(f))
					}
				}
			}(s)
		}
	}
	found := false
	for _, f := range []string{path, path + "-wal"} {
		b, _ := os.ReadFile(f)
		found = found || bytes.Contains(b, target)
	}
	if !found {
		t.Fatal("the wrapped key is not in the ledger's files before it is destroyed: the check below proves nothing")
	}
}
