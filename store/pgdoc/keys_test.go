package pgdoc_test

import (
	"context"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/pgdoc"
)

// Keys of a uuid column given in other forms than PostgreSQL prints
// (upper case, without hyphens), read, probed and deleted together: the
// evidence of each is read (one query for all), the rows of the batch are
// not taken for other records holding their windows while a row outside
// it is, and the logical probe finds each by id and by its subject tag
// before the delete and neither after.
func TestBatchOfUUIDKeys(t *testing.T) {
	ctx := context.Background()
	c := config(t)
	exec(t, admin(t), `CREATE TABLE `+c.Table+` (note_id uuid PRIMARY KEY, owner_tag text NOT NULL, body text)`)
	c.Mapping = &store.Mapping{Key: "note_id", Subject: &store.Field{Column: "owner_tag"}, Content: []string{"body"}}
	s, err := pgdoc.Open(ctx, c, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const (
		u1 = "6f1c2a3b-0d4e-4f5a-8b6c-7d8e9fa0b1c2"
		u2 = "a0b1c2d3-e4f5-4a6b-9c7d-8e9f0a1b2c3d"
		u3 = "0e1f2a3b-4c5d-4e6f-8a7b-9c0d1e2f3a4b"
	)
	for _, r := range []struct{ id, owner, body string }{
		{u1, "hmac:aa", text(1)},
		{u2, "hmac:aa", text(1) + " (again)"}, // read with u1: not an other record
		{u3, "hmac:bb", "fwd: " + text(1)},    // outside the batch: a copy
	} {
		if err := s.Exec(ctx, `INSERT INTO `+s.Table()+` (note_id, owner_tag, body) VALUES ($1::text::uuid, $2, $3)`, r.id, r.owner, r.body); err != nil {
			t.Fatal(err)
		}
	}
	k1, k2 := strings.ToUpper(u1), strings.ReplaceAll(u2, "-", "")
	absent := "00000000-0000-4000-8000-000000000000"
	ev := evidence(t, s, k1, k2, absent)
	if len(ev) != 2 || ev[k1] == nil || ev[k2] == nil {
		t.Fatalf("evidence for %v, want %s and %s", keysOf(ev), k1, k2)
	}
	for _, k := range []string{k1, k2} {
		e := ev[k]
		if e.Filter["subject"] != "hmac:aa" || e.Shared == 0 {
			t.Errorf("%s: subject %q, shared %d", k, e.Filter["subject"], e.Shared)
		}
		if e.SharedWith[u3] == 0 {
			t.Errorf("%s: SharedWith = %v, want %s (the copy outside the batch)", k, e.SharedWith, u3)
		}
		for _, in := range []string{u1, u2, k1, k2} {
			if e.SharedWith[in] != 0 {
				t.Errorf("%s: SharedWith = %v names %s, a row of the batch", k, e.SharedWith, in)
			}
		}
	}
	probe := func(keys ...string) []store.LogicalResult {
		t.Helper()
		res, err := s.ProbeLogical(ctx, keys, ev)
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != len(keys) {
			t.Fatalf("ProbeLogical(%v) = %+v", keys, res)
		}
		return res
	}
	for _, r := range probe(k1, k2) {
		if !r.ByID || !r.ByFilter || !strings.Contains(strings.Join(r.Methods, ","), "by-filter:owner_tag") {
			t.Errorf("before the delete: %+v", r)
		}
	}
	if err := s.Delete(ctx, []string{k1, k2}); err != nil {
		t.Fatal(err)
	}
	res := probe(k1, k2, u3)
	if res[0].Found() || res[1].Found() || !res[2].ByID {
		t.Fatalf("after the delete: %+v", res)
	}
}

func keysOf(ev map[string]*store.Evidence) []string {
	var out []string
	for k := range ev {
		out = append(out, k)
	}
	return out
}
