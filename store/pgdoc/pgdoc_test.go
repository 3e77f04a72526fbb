package pgdoc_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/pgdoc"
	"github.com/amnesia-dev/amnesia/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		Open: func(t *testing.T) store.Store {
			s, err := pgdoc.Open(context.Background(), config(t), true)
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		Put: func(t *testing.T, s store.Store, key, tag string, seed int) {
			put(t, s.(*pgdoc.Store), key, tag, seed)
		},
		NativeDelete: func(t *testing.T, s store.Store, key string) {
			// What an application does without amnesia: a plain DELETE on
			// its own connection, nothing else.
			c := admin(t)
			exec(t, c, `DELETE FROM `+s.(*pgdoc.Store).Table()+` WHERE id = $1`, key)
		},
		// Verified here: after a plain DELETE the dead tuple keeps the row's
		// bytes in the heap (and its WAL records in pg_wal).
		NativeLeavesBytes: true,
	})
}

func TestOpenMissingIsUnavailable(t *testing.T) {
	c := config(t)
	_, err := pgdoc.Open(context.Background(), c, false)
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Open(missing table, create=false) = %v, want ErrUnavailable", err)
	}
}

func TestOpenRejectsForeignLayout(t *testing.T) {
	c := config(t)
	exec(t, admin(t), `CREATE TABLE `+c.Table+` (id text PRIMARY KEY, body text)`)
	_, err := pgdoc.Open(context.Background(), c, false)
	if err == nil || !strings.Contains(err.Error(), "no column") {
		t.Fatalf("Open(table without subject/content) = %v, want a missing-column error", err)
	}
}

func TestValidate(t *testing.T) {
	good := store.Config{Name: "d", Type: pgdoc.Type, DSN: "postgres://x@127.0.0.1/db"}
	if err := store.Validate(good); err != nil {
		t.Fatalf("Validate(%+v) = %v", good, err)
	}
	for _, tc := range []struct {
		name string
		edit func(*store.Config)
		want string
	}{
		{"no dsn", func(c *store.Config) { c.DSN = "" }, "dsn"},
		{"bad mode", func(c *store.Config) { c.Reclaim = "sometimes" }, "reclaim"},
		{"bad lock timeout", func(c *store.Config) { c.LockTimeout = "soon" }, "lock_timeout"},
		{"bad statement timeout", func(c *store.Config) { c.StatementTimeout = "-1s" }, "statement_timeout"},
		{"bad retries", func(c *store.Config) { c.Retries = -1 }, "retries"},
		{"bad table", func(c *store.Config) { c.Table = `a.b.c` }, "table"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.edit(&c)
			if err := store.Validate(c); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want an error about %s", err, tc.want)
			}
		})
	}
}

func TestRecordRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := open(t, config(t))
	r := pgdoc.Record{ID: "turn-1", Subject: "hmac:ab", Kind: "chat", Content: "hello", Metadata: map[string]any{"session": "s1"}}
	if err := s.Put(ctx, r); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "turn-1")
	if err != nil || got == nil {
		t.Fatalf("Get = %v, %v", got, err)
	}
	if got.Subject != r.Subject || got.Kind != r.Kind || got.Content != r.Content || got.Metadata["session"] != "s1" {
		t.Fatalf("Get = %+v, want %+v", got, r)
	}
	if missing, err := s.Get(ctx, "nope"); err != nil || missing != nil {
		t.Fatalf("Get(missing) = %v, %v", missing, err)
	}
	var storage string
	if err := admin(t).QueryRow(ctx, `SELECT attstorage::text FROM pg_attribute WHERE attrelid = $1::text::regclass AND attname = 'content'`, s.Table()).Scan(&storage); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		t.Fatal(err)
	}
	if storage != "e" {
		t.Errorf("content storage = %q, want e (EXTERNAL: never compressed, so the byte scan sees it)", storage)
	}
}

// data_dir: the probe reads the relation and WAL files directly.
func TestProbeFromDataDir(t *testing.T) {
	ctx := context.Background()
	dir := os.Getenv("AMNESIA_TEST_PG_DATADIR")
	c := config(t)
	if dir == "" {
		t.Skip("AMNESIA_TEST_PG_DATADIR is not set")
	}
	c.DataDir = dir
	s := open(t, c)
	if !s.Privileges().DataDir {
		t.Fatalf("data_dir %s not usable: %s", dir, s.Privileges().DataDirReason)
	}
	put(t, s, "rec-a", "subject-1", 1)
	put(t, s, "rec-b", "subject-2", 2)
	ev := evidence(t, s, "rec-a")
	ev["rec-b"] = evidence(t, s, "rec-b")["rec-b"]
	rep, err := s.ProbePhysical(ctx, store.NewNeedleSet(ev))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rep.Method, "files read from data_dir") || !strings.Contains(rep.Method, "pg_wal:") || rep.Found["rec-a"] == 0 || rep.Found["rec-b"] == 0 {
		t.Fatalf("probe from data_dir = %+v", rep)
	}
	if err := s.Delete(ctx, []string{"rec-a"}); err != nil {
		t.Fatal(err)
	}
	if rep, err := s.Reclaim(ctx); err != nil || rep.State != "" {
		t.Fatalf("Reclaim = %q %q, %v", rep.State, rep.Evidence, err)
	}
	if f := found(t, s, ev); f["rec-a"] != 0 || f["rec-b"] == 0 {
		t.Fatalf("after reclaim found %v: want none of rec-a, some of rec-b", f)
	}
	c.DataDir = t.TempDir()
	if other := open(t, c); other.Privileges().DataDir {
		t.Fatalf("an empty directory was accepted as the data directory")
	}
}

// ReadEvidence tiles the whole content and names, by id, the other live
// row that holds its windows; rows being read together are not others.
func TestEvidenceNamesCopies(t *testing.T) {
	s := open(t, config(t))
	put(t, s, "orig", "subject-1", 1)
	put(t, s, "sibling", "subject-1", 1) // same content, read with orig
	if err := s.Put(context.Background(), pgdoc.Record{ID: "copy", Subject: "subject-2", Kind: "chat", Content: "fwd: " + text(1)}); err != nil {
		t.Fatal(err)
	}
	put(t, s, "other", "subject-3", 2)
	ev := evidence(t, s, "orig", "sibling")
	e := ev["orig"]
	n := len(text(1))
	if e.RecordBytes != n || e.CoveredBytes != n || len(e.Needles) != 0 || e.Shared != (n-store.WindowSize+store.WindowStride-1)/store.WindowStride+1 {
		t.Errorf("evidence: record %d covered %d needles %d shared %d", e.RecordBytes, e.CoveredBytes, len(e.Needles), e.Shared)
	}
	// "other" shares a few windows of boilerplate ("line 3: patient visited
	// clinic"); "sibling" is read with orig, so it is no other record.
	if e.SharedWith["copy"] != e.Shared || e.SharedWith["other"] >= e.Shared/4 || e.SharedWith["sibling"] != 0 || e.SharedWithMore != 0 {
		t.Errorf("SharedWith = %v (+%d), want copy holding all %d windows", e.SharedWith, e.SharedWithMore, e.Shared)
	}
}
