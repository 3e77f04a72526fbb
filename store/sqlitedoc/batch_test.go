package sqlitedoc_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
)

// PutBatch writes every record in one transaction: the last of a repeated
// id wins, and a record the database refuses midway (a trigger aborts it)
// leaves none of the batch written.
func TestPutBatch(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "docs.db")
	s, err := sqlitedoc.Open(ctx, "docs", path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	batch := []sqlitedoc.Record{
		{ID: "d1", Kind: sqlitedoc.KindDocument, Subject: "hmac:aa", Text: "first"},
		{ID: "c1", Kind: sqlitedoc.KindChunk, Subject: "hmac:aa", Parent: "d1", Text: "chunk one"},
		{ID: "d1", Kind: sqlitedoc.KindDocument, Subject: "hmac:aa", Text: "first, rewritten"},
	}
	if err := s.PutBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, "d1"); err != nil || got == nil || got.Text != "first, rewritten" {
		t.Fatalf("d1 = %+v, %v; want the batch's last write", got, err)
	}
	if got, err := s.Get(ctx, "c1"); err != nil || got == nil || got.Parent != "d1" || got.Text != "chunk one" {
		t.Fatalf("c1 = %+v, %v", got, err)
	}

	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TRIGGER refuse BEFORE INSERT ON documents WHEN NEW.id = 'boom' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`); err != nil {
		t.Fatal(err)
	}
	bad := []sqlitedoc.Record{
		{ID: "d2", Kind: sqlitedoc.KindDocument, Subject: "hmac:bb", Text: "written before the refused one"},
		{ID: "d1", Kind: sqlitedoc.KindDocument, Subject: "hmac:bb", Text: "would overwrite d1"},
		{ID: "boom", Kind: sqlitedoc.KindDocument, Subject: "hmac:bb", Text: "refused"},
	}
	if err := s.PutBatch(ctx, bad); err == nil || !strings.Contains(err.Error(), "refused by the test") {
		t.Fatalf("batch with a refused record: %v; want the trigger's error", err)
	}
	if got, err := s.Get(ctx, "d2"); err != nil || got != nil {
		t.Errorf("d2 after a failed batch = %+v, %v; want nothing written", got, err)
	}
	if got, err := s.Get(ctx, "d1"); err != nil || got == nil || got.Text != "first, rewritten" {
		t.Errorf("d1 after a failed batch = %+v, %v; want it unchanged", got, err)
	}
	if err := s.PutBatch(ctx, []sqlitedoc.Record{{ID: "ok", Kind: sqlitedoc.KindDocument}, {ID: "x", Kind: "memo"}}); err == nil || !strings.Contains(err.Error(), `unknown kind "memo"`) {
		t.Errorf("a record of an unknown kind: %v", err)
	}
	if got, _ := s.Get(ctx, "ok"); got != nil {
		t.Errorf("a batch refused before writing wrote %+v", got)
	}
}
