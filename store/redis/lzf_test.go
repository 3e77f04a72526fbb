package redis

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLZFDecompress(t *testing.T) {
	// 8 literal bytes, then a back reference of 8 bytes at offset 8.
	in := append([]byte{7}, "abcdefgh"...)
	in = append(in, 6<<5, 7)
	out, err := lzfDecompress(in, 16)
	if err != nil || string(out) != "abcdefghabcdefgh" {
		t.Fatalf("decompress = %q, %v", out, err)
	}
	// An overlapping reference: "ab" then 10 bytes at offset 2.
	in = []byte{1, 'a', 'b', 7<<5 | 0, 1, 1} // length 7+1+2 = 10, offset 2
	out, err = lzfDecompress(in, 12)
	if err != nil || string(out) != "abababababab" {
		t.Fatalf("overlapping decompress = %q, %v", out, err)
	}
	for name, c := range map[string]struct {
		in []byte
		n  int
	}{
		"reference before start": {[]byte{0, 'a', 1 << 5, 5}, 4},
		"wrong length":           {append([]byte{7}, "abcdefgh"...), 9},
		"literal cut short":      {[]byte{7, 'a'}, 8},
		"reference cut short":    {[]byte{0, 'a', 1 << 5}, 4},
	} {
		if _, err := lzfDecompress(c.in, c.n); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestRDBLZFStrings(t *testing.T) {
	payload := append([]byte{7}, "abcdefgh"...)
	payload = append(payload, 6<<5, 7)
	rdb := append([]byte("REDIS0010\x00\x01"), 0xC3, byte(len(payload)), 16)
	rdb = append(rdb, payload...)
	rdb = append(rdb, 0xFF)
	var got [][]byte
	rdbLZFStrings(rdb, func(b []byte) { got = append(got, b) })
	if len(got) != 1 || string(got[0]) != "abcdefghabcdefgh" {
		t.Fatalf("found %q", got)
	}
}

// An RDB written by the real server compresses a long value: a plain byte
// scan does not see it, the decompressed strings hold it.
func TestRDBCompressedValueIsFound(t *testing.T) {
	addr, dir := os.Getenv("AMNESIA_TEST_REDIS_ADDR"), t.TempDir()
	if addr == "" {
		t.Skip("AMNESIA_TEST_REDIS_ADDR is unset: start the test services (eval \"$(scripts/services start)\")")
	}
	ctx := context.Background()
	s, err := Open(ctx, Options{Name: "c", Addr: addr, Layout: LayoutCache, Prefix: "lzftest:"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	value := "Patient record of the lzf test: " + strings.Repeat("diagnosis code 4711, follow-up in clinic 12; ", 40)
	key := "lzftest:" + t.Name()
	if err := s.rdb.Set(ctx, key, value, 0).Err(); err != nil {
		t.Fatal(err)
	}
	defer s.rdb.Del(ctx, key)
	// DUMP returns the value in the RDB encoding: the LZF string as an RDB
	// file holds it.
	d, err := s.rdb.Dump(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "dump.rdb")
	if err := os.WriteFile(f, append([]byte("REDIS0010"), d...), 0o600); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(f)
	needle := []byte("follow-up in clinic 12; diagnosis code 4711")
	if bytes.Contains(raw, needle) {
		t.Fatalf("the server did not compress the value: the test proves nothing")
	}
	plain, err := rdbPlain(f)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(plain, needle) {
		t.Errorf("the decompressed strings of the RDB do not hold the value")
	}
}
