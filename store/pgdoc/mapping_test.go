package pgdoc_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/pgdoc"
	"github.com/amnesia-dev/amnesia/store/storetest"
)

// appTable creates an application's own table (not amnesia's layout): a
// bigint key, the owner inside a jsonb column, two content columns and a
// parent link; it returns the configuration that maps it.
func appTable(t *testing.T, keyType string) store.Config {
	t.Helper()
	c := config(t)
	exec(t, admin(t), `CREATE TABLE `+c.Table+` (note_id `+keyType+` PRIMARY KEY, attrs jsonb NOT NULL, body text, summary varchar(2000), thread_id text)`)
	c.Mapping = &store.Mapping{Key: "note_id", Subject: &store.Field{JSON: "attrs", Path: []string{"owner", "tag"}},
		Content: []string{"body", "summary"}, Parent: &store.Field{Column: "thread_id"}}
	return c
}

// appPut writes a row as the application does.
func appPut(t *testing.T, s *pgdoc.Store, key, tag string, seed int) {
	t.Helper()
	err := s.Exec(context.Background(), `INSERT INTO `+s.Table()+` (note_id, attrs, body, summary, thread_id) VALUES ('`+key+`', $1::text::jsonb, $2, $3, $4)`,
		fmt.Sprintf(`{"owner": {"tag": %q}, "channel": "email"}`, tag), text(seed), fmt.Sprintf("summary %d: follow-up %x requested by caller %x", seed, seed*6151, seed*3571), "thread-1")
	if err != nil {
		t.Fatal(err)
	}
}

func TestConformanceMapped(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		Open: func(t *testing.T) store.Store {
			s, err := pgdoc.Open(context.Background(), appTable(t, "varchar(64)"), false)
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		Put: func(t *testing.T, s store.Store, key, tag string, seed int) {
			appPut(t, s.(*pgdoc.Store), key, tag, seed)
		},
		NativeDelete: func(t *testing.T, s store.Store, key string) {
			exec(t, admin(t), `DELETE FROM `+s.(*pgdoc.Store).Table()+` WHERE note_id = $1`, key)
		},
		NativeLeavesBytes: true,
	})
}

// A mapped application table: the subject's rows are found by key, by the
// owner inside attrs and in the files (both content columns) before, gone
// after; the other rows are untouched.
func TestMappedTable(t *testing.T) {
	ctx := context.Background()
	c := appTable(t, "bigint")
	if errs := store.Errors(store.Check(ctx, c)); len(errs) != 0 {
		t.Fatalf("check of a matching mapping: %v", errs)
	}
	s, err := pgdoc.Open(ctx, c, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	appPut(t, s, "1", "hmac:aa", 1)
	appPut(t, s, "2", "hmac:aa", 2)
	appPut(t, s, "3", "hmac:bb", 3)
	if err := s.Put(ctx, pgdoc.Record{ID: "4", Content: "x"}); err == nil || !strings.Contains(err.Error(), "written by its application") {
		t.Fatalf("Put on a mapped table: %v", err)
	}
	ev := evidence(t, s, "1", "2")
	ev["3"] = evidence(t, s, "3")["3"]
	if r, err := s.Get(ctx, "1"); err != nil || r.Subject != "hmac:aa" || r.Parent != "thread-1" || r.Content != text(1) {
		t.Fatalf("Get = %+v, %v", r, err)
	}
	before, err := s.ProbeLogical(ctx, []string{"1", "2"}, ev)
	if err != nil {
		t.Fatal(err)
	}
	if !before[0].ByID || !before[0].ByFilter || !strings.Contains(strings.Join(before[0].Methods, ","), "by-filter:attrs->owner->tag") {
		t.Fatalf("before: %+v", before[0])
	}
	summary := store.Windows([]byte("summary 1: follow-up 1807 requested by caller df3"))
	if f := found(t, s, map[string]*store.Evidence{"s": {Key: "s", Needles: summary}}); f["s"] == 0 {
		t.Fatal("the second content column's bytes are not found before deletion")
	}
	if f := found(t, s, ev); f["1"] == 0 || f["2"] == 0 {
		t.Fatalf("before deletion found %v", f)
	}
	// Both content columns are compressible: the method says so for each.
	if rep, err := s.ProbePhysical(ctx, store.NewNeedleSet(ev)); err != nil || !strings.Contains(rep.Method, "column body has compressible storage") || !strings.Contains(rep.Method, "column summary has compressible storage") {
		t.Fatalf("method %q, %v: want a storage note for each content column", rep.Method, err)
	}
	if err := s.Delete(ctx, []string{"1", "2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reclaim(ctx); err != nil {
		t.Fatal(err)
	}
	after, err := s.ProbeLogical(ctx, []string{"1", "2", "3"}, ev)
	if err != nil {
		t.Fatal(err)
	}
	if after[0].Found() || after[1].Found() || !after[2].ByID {
		t.Fatalf("after: %+v", after)
	}
	if f := found(t, s, ev); f["1"] != 0 || f["2"] != 0 || f["3"] == 0 {
		t.Fatalf("after Delete+Reclaim found %v", f)
	}
}

// check names the table and the column a mapping gets wrong.
func TestCheckMappedTable(t *testing.T) {
	ctx := context.Background()
	c := appTable(t, "bigint")
	for _, tc := range []struct {
		name string
		edit func(m *store.Mapping)
		want string
	}{
		{"missing key", func(m *store.Mapping) { m.Key = "id" }, `no column "id"`},
		{"missing content", func(m *store.Mapping) { m.Content = []string{"body", "notes"} }, `no column "notes"`},
		{"subject path in text", func(m *store.Mapping) { m.Subject = &store.Field{JSON: "body", Path: []string{"x"}} }, `column "body" is text, want json or jsonb`},
		{"content of the wrong type", func(m *store.Mapping) { m.Content = []string{"note_id"} }, `column "note_id" is bigint`},
		{"missing parent", func(m *store.Mapping) { m.Parent = &store.Field{Column: "doc"} }, `no column "doc"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc := c
			m := *c.Mapping
			tc.edit(&m)
			cc.Mapping = &m
			errs := store.Errors(store.Check(ctx, cc))
			if len(errs) != 1 || errs[0].Key != "mapping" || !strings.Contains(errs[0].Message, tc.want) || !strings.Contains(errs[0].Message, c.Table) {
				t.Fatalf("check = %v, want a mapping error with %q naming %s", errs, tc.want, c.Table)
			}
		})
	}
}

// A content value PostgreSQL keeps compressed is not in the files as
// written: the byte scan cannot find it, so its bytes count as
// unsearchable, not covered, and the record's other field (found by the
// scan) cannot earn it the physical level.
func TestCompressedContentIsNotCovered(t *testing.T) {
	ctx := context.Background()
	c := appTable(t, "bigint")
	exec(t, admin(t), `ALTER TABLE `+c.Table+` ALTER COLUMN body SET COMPRESSION pglz`)
	s, err := pgdoc.Open(ctx, c, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	appPut(t, s, "1", "hmac:aa", 1)
	long := strings.Repeat(text(5), 10) // about 11 KB that pglz compresses
	if err := s.Exec(ctx, `INSERT INTO `+s.Table()+` (note_id, attrs, body, summary, thread_id) VALUES ('5', '{"owner": {"tag": "hmac:aa"}}'::jsonb, $1, $2, 'thread-1')`,
		long, "summary 5: follow-up 7a3f requested by caller 91c2"); err != nil {
		t.Fatal(err)
	}
	ev := evidence(t, s, "1", "5")
	plain, comp := ev["1"], ev["5"]
	if plain == nil || comp == nil {
		t.Fatalf("evidence %v", ev)
	}
	if plain.UnsearchableBytes != 0 || plain.CoveredBytes != plain.RecordBytes {
		t.Fatalf("an uncompressed row: %d unsearchable bytes, %d of %d covered", plain.UnsearchableBytes, plain.CoveredBytes, plain.RecordBytes)
	}
	if comp.UnsearchableBytes != len(long) || comp.CoveredBytes >= comp.RecordBytes {
		t.Fatalf("a row with a compressed body: %d unsearchable bytes (want %d), %d of %d covered", comp.UnsearchableBytes, len(long), comp.CoveredBytes, comp.RecordBytes)
	}
	// The scan finds the row's summary (and, pglz keeping literal runs, may
	// find part of the body): power, but not over the whole record.
	if f := found(t, s, ev); f["5"] == 0 {
		t.Fatal("the scan finds nothing of row 5, not even its summary")
	}
}

// An application table whose key column is not unique: a key two rows
// share is deleted in both, and its evidence holds the windows of both, so
// the byte probe searches for every row Delete removes, not one of them.
func TestEvidenceCoversEveryRowOfAKey(t *testing.T) {
	ctx := context.Background()
	c := config(t)
	exec(t, admin(t), `CREATE TABLE `+c.Table+` (note_id varchar(64) NOT NULL, attrs jsonb NOT NULL, body text, summary varchar(2000), thread_id text)`)
	c.Mapping = &store.Mapping{Key: "note_id", Subject: &store.Field{JSON: "attrs", Path: []string{"owner", "tag"}},
		Content: []string{"body", "summary"}, Parent: &store.Field{Column: "thread_id"}}
	s := open(t, c)
	appPut(t, s, "dup", "tag-a", 1)
	appPut(t, s, "dup", "tag-a", 99)
	appPut(t, s, "other", "tag-a", 2)
	ev := evidence(t, s, "dup")
	set := store.NewNeedleSet(ev)
	for _, seed := range []int{1, 99} {
		sc := store.NewScanner(set, "test")
		sc.ScanBytes([]byte(text(seed)))
		if sc.Report().Found["dup"] == 0 {
			t.Errorf("the evidence of key dup holds no window of its row with text(%d): that row's bytes would not be searched", seed)
		}
	}
	sc := store.NewScanner(set, "test")
	sc.ScanBytes([]byte(text(2)))
	if n := sc.Report().Found["dup"]; n != 0 {
		t.Errorf("the evidence of dup holds %d windows of another key's row", n)
	}
	if err := s.Delete(ctx, []string{"dup"}); err != nil {
		t.Fatal(err)
	}
	res, err := s.ProbeLogical(ctx, []string{"dup", "other"}, ev)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Found() || !res[1].ByID {
		t.Errorf("after Delete of dup: %+v", res)
	}
}

// The other rows are read as the server sends them: a copy in either
// content column is found and its row named, a NULL content column is
// empty, and a row with no key (nothing could delete or name it) is no
// other record.
func TestEvidenceReadsEachContentColumnOfOtherRows(t *testing.T) {
	ctx := context.Background()
	c := config(t)
	exec(t, admin(t), `CREATE TABLE `+c.Table+` (note_id text, owner_tag text, body text, summary text)`)
	c.Mapping = &store.Mapping{Key: "note_id", Subject: &store.Field{Column: "owner_tag"}, Content: []string{"body", "summary"}}
	s := open(t, c)
	for _, r := range []struct {
		id            any
		body, summary any
	}{
		{"mine", text(1), nil},
		{"in-summary", nil, "fwd: " + text(1)},
		{"in-body", text(1)[:200], "short"},
		{nil, text(1), text(1)}, // no key
		{"unrelated", text(2), nil},
		{"copied-to-keyless", text(3), nil},
		{nil, nil, "fwd: " + text(3)}, // its only copy, in a row with no key
	} {
		if err := s.Exec(ctx, `INSERT INTO `+s.Table()+` (note_id, owner_tag, body, summary) VALUES ($1, 'tag', $2, $3)`, r.id, r.body, r.summary); err != nil {
			t.Fatal(err)
		}
	}
	e := evidence(t, s, "mine")["mine"]
	if e == nil || e.Shared == 0 {
		t.Fatalf("evidence: %+v", e)
	}
	if e.SharedWith["in-summary"] != e.Shared {
		t.Errorf("SharedWith = %v: want in-summary holding all %d shared windows", e.SharedWith, e.Shared)
	}
	if n := e.SharedWith["in-body"]; n == 0 || n >= e.Shared {
		t.Errorf("SharedWith[in-body] = %d, want some of the %d (its body is the first 200 bytes)", n, e.Shared)
	}
	if _, ok := e.SharedWith[""]; ok || e.SharedWith["unrelated"] >= e.Shared/4 || e.SharedWith["copied-to-keyless"] >= e.Shared/4 || len(e.SharedWith) > 4 {
		t.Errorf("SharedWith = %v names a row with no key, or an unrelated row for more than boilerplate", e.SharedWith)
	}
	// A row with no key is searched too (its copy of a record's windows
	// stays in the files whatever is erased), and named by none.
	k := evidence(t, s, "copied-to-keyless")["copied-to-keyless"]
	if k == nil || k.Shared == 0 || len(k.Needles) > k.Shared/4 {
		t.Fatalf("evidence of a record copied into a row with no key: %d needles, %d shared: want its windows shared", len(k.Needles), k.Shared)
	}
	if _, ok := k.SharedWith[""]; ok || k.SharedWith["copied-to-keyless"] > 0 {
		t.Errorf("SharedWith = %v: a row with no key is named by none", k.SharedWith)
	}
}
