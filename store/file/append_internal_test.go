package file

import (
	"context"
	"os"
	"strings"
	"testing"
)

// Rows an application appends while the file is rewritten are carried over
// to the new file, and an appended row of an erased key is erased too.
func TestFileAppendDuringRewriteIsCarriedOver(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/log.jsonl"
	os.WriteFile(path, []byte(`{"id":"a","text":"Alice's first long turn, to be erased"}`+"\n"+`{"id":"b","text":"Bob's long turn that stays in the file"}`+"\n"), 0o600)
	s, err := Open(ctx, Options{Name: "log", Path: path, Key: "id", Content: []string{"text"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	testHookBeforeRename = func(p string) {
		calls++
		if calls > 1 {
			return
		}
		f, _ := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
		f.WriteString(`{"id":"c","text":"Carol's turn appended during the rewrite"}` + "\n" + `{"id":"a","text":"Alice's second turn appended during the rewrite"}` + "\n")
		f.Close()
	}
	defer func() { testHookBeforeRename = nil }()
	if err := s.Delete(ctx, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	got := string(b)
	if strings.Contains(got, "Alice") || !strings.Contains(got, "Bob's") || !strings.Contains(got, "Carol's") {
		t.Fatalf("after a rewrite with a concurrent append the file is:\n%s", got)
	}
	if calls != 2 {
		t.Fatalf("%d rewrites, want 2 (the carried-over rows held the key again)", calls)
	}
}

// A write other than an append during the rename cannot be carried over:
// the erasure fails and says so.
func TestFileInPlaceWriteDuringRewriteFails(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/log.jsonl"
	os.WriteFile(path, []byte(`{"id":"a","text":"Alice's first long turn, to be erased"}`+"\n"+`{"id":"b","text":"Bob's long turn that stays in the file"}`+"\n"), 0o600)
	s, err := Open(ctx, Options{Name: "log", Path: path, Key: "id", Content: []string{"text"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	testHookBeforeRename = func(p string) { os.Truncate(p, 10) }
	defer func() { testHookBeforeRename = nil }()
	err = s.Delete(ctx, []string{"a"})
	if err == nil || !strings.Contains(err.Error(), "is lost") {
		t.Fatalf("delete with an in-place write during the rename: %v", err)
	}
}
