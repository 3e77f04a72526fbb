package capture_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/capture"
	"github.com/amnesia-dev/amnesia/lineage/sqliteledger"
	"github.com/amnesia-dev/amnesia/store/sqlitedoc"
	"github.com/amnesia-dev/amnesia/store/sqlitevec"
	"github.com/amnesia-dev/amnesia/subject"
)

type keyFixture struct {
	l    *sqliteledger.Ledger
	ds   *sqlitedoc.Store
	rec  *capture.Recorder
	docs *capture.Docs
	vecs *capture.Vectors
}

func newKeyFixture(t *testing.T) *keyFixture {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	l, err := sqliteledger.Open(ctx, filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	k, _ := subject.NewKeyer(bytes.Repeat([]byte{5}, subject.PepperSize))
	ds, err := sqlitedoc.Open(ctx, "docs", filepath.Join(dir, "docs.db"), true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ds.Close() })
	vs, err := sqlitevec.Open(ctx, "vectors", filepath.Join(dir, "vec.db"), 4, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vs.Close() })
	rec := capture.New(l, k, "")
	return &keyFixture{l: l, ds: ds, rec: rec, docs: rec.Docs(ds), vecs: rec.Vectors(vs)}
}

// refused asserts that err is a *capture.KeyError found by encoding, and
// that its message holds neither the key nor the id.
func refused(t *testing.T, name string, err error, encoding, key, id string) {
	t.Helper()
	var ke *capture.KeyError
	switch {
	case !errors.As(err, &ke) || !errors.Is(err, capture.ErrKeyIsPersonal):
		t.Errorf("%s: key %q accepted or wrong error: %v", name, key, err)
	case encoding != "" && ke.Encoding != encoding:
		t.Errorf("%s: found %s, want %s", name, ke.Encoding, encoding)
	case strings.Contains(err.Error(), key) || strings.Contains(err.Error(), id):
		t.Errorf("%s: the error echoes the key or the id: %v", name, err)
	}
}

func TestCaptureRefusesKeysHoldingTheSubjectID(t *testing.T) {
	ctx := context.Background()
	f := newKeyFixture(t)
	const email = "Alice.Liddell@Example.org"
	const phone = "+44 20 7946 0000"
	b64 := func(e *base64.Encoding, s string) string { return e.EncodeToString([]byte(s)) }
	for _, tc := range []struct {
		name, id, key, enc string
	}{
		{"plain", email, "notes-" + email, "as written"},
		{"lower case", email, "notes/" + strings.ToLower(email), "as written"},
		{"upper case", email, "NOTES-" + strings.ToUpper(email), "as written"},
		{"full width (normalised)", "alice", "ＡＬＩＣＥ-notes", "as written"},
		{"percent-encoded (query)", email, "u=" + url.QueryEscape(email), "percent-encoded"},
		{"percent-encoded twice", email, "u=" + url.QueryEscape(url.QueryEscape(email)), "percent-encoded"},
		{"percent-encoded (path), a name", "Zoë Ångström", "people/" + url.PathEscape("Zoë Ångström") + "/1", "percent-encoded"},
		{"query-escaped name (+ for space)", "Jose Nunez", "q=" + url.QueryEscape("Jose Nunez"), "percent-encoded"},
		{"base64 std padded", email, "k:" + b64(base64.StdEncoding, email), "base64"},
		{"base64 url unpadded", email, "k_" + b64(base64.RawURLEncoding, email), "base64"},
		{"base64 inside a larger buffer, offset 1", email, "doc-" + b64(base64.StdEncoding, "u:"+email+"#7"), "base64"},
		{"base64 inside a larger buffer, offset 2", email, "docs." + b64(base64.URLEncoding, "uid="+email), "base64"},
		{"base64 of the lower-case id", email, b64(base64.RawStdEncoding, "x"+strings.ToLower(email)), "base64"},
		{"base64 percent-encoded", email, "k=" + url.QueryEscape(b64(base64.StdEncoding, "??"+email+">>")), "base64"},
		{"hex lower", email, "h-" + hex.EncodeToString([]byte(email)), "hex"},
		{"hex upper, odd offset", email, "x" + strings.ToUpper(hex.EncodeToString([]byte("!"+email))), "hex"},
		{"phone digits only", phone, "tel-442079460000-note", "phone digits"},
		{"phone digits with other separators", phone, "call_44-20-7946-0000", "phone digits"},
	} {
		err := f.docs.Put(ctx, capture.Doc{ID: tc.key, Kind: sqlitedoc.KindDocument, Subject: tc.id, Text: "x"})
		refused(t, tc.name, err, tc.enc, tc.key, tc.id)
		if r, _ := f.ds.Get(ctx, tc.key); r != nil {
			t.Errorf("%s: the refused write reached the store", tc.name)
		}
		k, _ := f.rec.SubjectKey(tc.id)
		if v, err := f.l.View(ctx, subject.DefaultScope, k); err != nil || len(v.Owned) != 0 {
			t.Errorf("%s: the refused write reached the ledger (%v)", tc.name, err)
		}
	}

	// Opaque keys, and keys that only look similar, are accepted.
	for i, key := range []string{
		"doc-7f3a9c", "notes-alice", "alice.liddell", "user-4711",
		b64(base64.StdEncoding, "someone.else@example.org"), hex.EncodeToString([]byte("bob@example.org")),
		"tel-442079460001",
	} {
		if err := f.docs.Put(ctx, capture.Doc{ID: key, Kind: sqlitedoc.KindDocument, Subject: email, Text: "x"}); err != nil {
			t.Errorf("opaque key %d %q refused: %v", i, key, err)
		}
	}
	if err := f.docs.Put(ctx, capture.Doc{ID: "p-1", Kind: sqlitedoc.KindDocument, Subject: phone, Text: "x"}); err != nil {
		t.Fatal(err)
	}
}

func TestCaptureRefusesParentAndInheritedKeys(t *testing.T) {
	ctx := context.Background()
	f := newKeyFixture(t)
	const id = "bob.builder@example.org"
	if err := f.docs.Put(ctx, capture.Doc{ID: "d1", Kind: sqlitedoc.KindDocument, Subject: id, Text: "Bob's"}); err != nil {
		t.Fatal(err)
	}
	// A chunk that inherits its owner: the raw id is not known, so the
	// key's tokens are keyed and compared with the owner's key.
	err := f.docs.Put(ctx, capture.Doc{ID: "d1#" + strings.ToUpper(id), Kind: sqlitedoc.KindChunk, Parent: "d1", Text: "x"})
	refused(t, "inherited owner", err, "keyed token", "d1#"+strings.ToUpper(id), id)
	if err := f.docs.Put(ctx, capture.Doc{ID: "d1#0", Kind: sqlitedoc.KindChunk, Parent: "d1", Text: "x"}); err != nil {
		t.Fatal(err)
	}
	// A parent key that holds the id, named by a write that gives the id.
	err = f.vecs.Put(ctx, capture.Vector{ID: "v-1", Of: id + "#0", Subject: id, Embedding: []float32{1, 0, 0, 0}})
	refused(t, "parent key", err, "as written", id+"#0", id)
	var ke *capture.KeyError
	if errors.As(err, &ke) && ke.Which != "parent key" {
		t.Errorf("parent key reported as %q", ke.Which)
	}
	// A key that holds a mentioned person's id.
	err = f.docs.Put(ctx, capture.Doc{ID: "about-carol.c@example.org", Kind: sqlitedoc.KindDocument, Subject: id, Text: "x", Mentions: []string{"carol.c@example.org"}})
	refused(t, "mention", err, "as written", "about-carol.c@example.org", "carol.c@example.org")
	if errors.As(err, &ke) && !ke.Mention {
		t.Errorf("a mention's id reported as the owner's")
	}
}
