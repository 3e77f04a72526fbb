package pgdoc_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// dirtyRead returns what pg_dirtyread, an attacker's view of the heap, still
// recovers of the table: every tuple, dead or alive, as id -> content.
func dirtyRead(t *testing.T, c *pgx.Conn, table string) map[string]string {
	t.Helper()
	rows, err := c.Query(context.Background(), `SELECT id, content FROM pg_dirtyread($1::text::regclass)
		AS t(id text, subject text, kind text, content text, metadata jsonb)`, table)
	if err != nil {
		t.Fatalf("pg_dirtyread: %v", err)
	}
	out := map[string]string{}
	var id, content string
	if _, err := pgx.ForEachRow(rows, []any{&id, &content}, func() error { out[id] = content; return nil }); err != nil {
		t.Fatalf("pg_dirtyread: %v", err)
	}
	return out
}

// The attacker's view as a test: after a plain DELETE, pg_dirtyread returns
// the deleted row, content and all; after amnesia's Delete and Reclaim it
// returns nothing of it.
func TestAttackerViewDirtyRead(t *testing.T) {
	ctx := context.Background()
	a := admin(t)

	native := open(t, config(t))
	put(t, native, "rec-a", "subject-1", 1)
	put(t, native, "rec-b", "subject-2", 2)
	exec(t, a, `DELETE FROM `+native.Table()+` WHERE id = 'rec-a'`)
	got := dirtyRead(t, a, native.Table())
	if got["rec-a"] != text(1) {
		t.Fatalf("after a plain DELETE pg_dirtyread recovered %d bytes of rec-a's content, want all %d: the attacker's view failed", len(got["rec-a"]), len(text(1)))
	}

	erased := open(t, config(t))
	put(t, erased, "rec-a", "subject-1", 1)
	put(t, erased, "rec-b", "subject-2", 2)
	if err := erased.Delete(ctx, []string{"rec-a"}); err != nil {
		t.Fatal(err)
	}
	if rep, err := erased.Reclaim(ctx); err != nil || rep.State != "" {
		t.Fatalf("Reclaim = %q %q, %v", rep.State, rep.Evidence, err)
	}
	got = dirtyRead(t, a, erased.Table())
	if _, ok := got["rec-a"]; ok {
		t.Fatalf("after Delete+Reclaim pg_dirtyread still returns rec-a")
	}
	for id, content := range got {
		if strings.Contains(content, "record 1 line") {
			t.Fatalf("after Delete+Reclaim pg_dirtyread returns rec-a's content under id %q", id)
		}
	}
	if got["rec-b"] != text(2) {
		t.Fatalf("pg_dirtyread no longer returns the live rec-b: the check went blind")
	}
}
