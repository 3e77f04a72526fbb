package pgvector_test

import (
	"context"
	"slices"
	"testing"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/pgvector"
)

// The other rows are read as the server sends them: another row's copy of
// the vector makes the vector's windows shared (named by no row) and a copy
// of the content names its row, the same over the extended protocol (the
// vector in pgvector's binary form) and the simple one (the vector as text)
// and as the vectors' own on-disk encoding read back from the store.
func TestEvidenceReadsOtherVectorsInEitherProtocol(t *testing.T) {
	ctx := context.Background()
	c := config(t)
	s := open(t, c)
	put(t, s, "mine", "subject-1", 1)
	if err := s.Put(ctx, pgvector.Record{ID: "same-vector", Subject: "subject-2", Embedding: vector(1), Content: "other words entirely, nothing of the first record's text in here"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, pgvector.Record{ID: "same-text", Subject: "subject-3", Embedding: vector(3), Content: "fwd: " + text(1)}); err != nil {
		t.Fatal(err)
	}
	put(t, s, "unrelated", "subject-4", 4)
	vecWindows := len(store.Windows(pgvector.OnDisk(vector(1))))
	textWindows := len(windowsOf(text(1)))

	var got []*store.Evidence
	for _, dsn := range []string{c.DSN, c.DSN + "&default_query_exec_mode=simple_protocol"} {
		c2 := c
		c2.DSN = dsn
		s2, err := pgvector.Open(ctx, c2, false)
		if err != nil {
			t.Fatal(err)
		}
		e := evidence(t, s2, "mine")["mine"]
		s2.Close()
		if e == nil {
			t.Fatalf("%s: no evidence", dsn)
		}
		if e.Shared != vecWindows+textWindows {
			t.Errorf("%s: %d windows shared, want the vector's %d and the text's %d", dsn, e.Shared, vecWindows, textWindows)
		}
		if e.SharedWith["same-text"] != textWindows || e.SharedWith["same-vector"] != 0 || e.SharedWith["unrelated"] >= textWindows/4 {
			t.Errorf("%s: SharedWith = %v: want same-text holding all %d windows of the text, the vector's holder not named, unrelated only for boilerplate", dsn, e.SharedWith, textWindows)
		}
		got = append(got, e)
	}
	if a, b := got[0], got[1]; a.Shared != b.Shared || !slices.EqualFunc(a.Needles, b.Needles, slices.Equal) {
		t.Errorf("the two protocols' evidence differ: %d and %d shared, %d and %d needles", a.Shared, b.Shared, len(a.Needles), len(b.Needles))
	}
}

// Vectors reads every key's vector with one query: each key gets its own
// row's vector, exactly, and a key no row answers to gets none.
func TestVectorsOfSeveralKeys(t *testing.T) {
	s := open(t, config(t))
	put(t, s, "a", "subject-1", 1)
	put(t, s, "b", "subject-2", 2)
	got, err := s.Vectors(context.Background(), []string{"b", "missing", "a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !slices.Equal(got["a"], vector(1)) || !slices.Equal(got["b"], vector(2)) {
		t.Errorf("Vectors = %d keys (a %d, b %d dimensions), want a and b with their own vectors", len(got), len(got["a"]), len(got["b"]))
	}
}
