package file_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/amnesia-dev/amnesia/capture/backend"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/file"
	"github.com/amnesia-dev/amnesia/store/storetest"
)

func text(seed int) string {
	return fmt.Sprintf("Turn %d: my neighbour's number is %d and I moved to flat %d, \"please\" remember, line\nbreak, ok", seed, 5550000+seed*37, seed*11)
}

type pqRow struct {
	ID      string `parquet:"id"`
	Subject string `parquet:"subject"`
	Text    string `parquet:"text"`
	Turn    int64  `parquet:"turn"`
}

func writeParquet(t *testing.T, path string, rows []pqRow) {
	t.Helper()
	if err := parquet.WriteFile(path, rows, parquet.Compression(&parquet.Zstd)); err != nil {
		t.Fatal(err)
	}
}

func readParquet(t *testing.T, path string) []pqRow {
	t.Helper()
	rows, err := parquet.ReadFile[pqRow](path)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func opts(path, format string) file.Options {
	return file.Options{Name: "log", Path: path, Format: format, Key: "id", Subject: "subject", Content: []string{"text"}}
}

func openStore(t *testing.T, format string) *file.Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data."+format)
	if format == file.Parquet {
		writeParquet(t, path, nil)
	}
	s, err := file.Open(context.Background(), opts(path, format), true)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func put(t *testing.T, s *file.Store, format, key, tag string, seed int) {
	t.Helper()
	if format == file.Parquet {
		rows := append(readParquet(t, s.Path()), pqRow{ID: key, Subject: tag, Text: text(seed), Turn: int64(seed)})
		writeParquet(t, s.Path(), rows)
		return
	}
	if err := s.Append(context.Background(), map[string]string{"id": key, "subject": tag, "text": text(seed)}); err != nil {
		t.Fatal(err)
	}
}

func TestFileConformance(t *testing.T) {
	for _, format := range []string{file.JSONL, file.CSV, file.Parquet} {
		t.Run(format, func(t *testing.T) {
			storetest.Run(t, storetest.Harness{
				Open: func(t *testing.T) store.Store { return openStore(t, format) },
				Put: func(t *testing.T, s store.Store, key, tag string, seed int) {
					put(t, s.(*file.Store), format, key, tag, seed)
				},
			})
		})
	}
}

// Delete rewrites the file: the other rows keep their exact bytes, the
// file keeps its mode, no temporary file is left, and the row's bytes are
// in no file of the directory.
func TestFileDeleteKeepsOtherRowsAndMode(t *testing.T) {
	ctx := context.Background()
	cases := map[string]string{
		file.JSONL: "{\"id\":\"a\",\"subject\":\"t1\",\"text\":\"Alice's long secret conversation turn number one\"}\n\n" +
			"{\"id\": 7, \"subject\":\"t2\",\"text\":\"Bob's long unrelated conversation turn number two\"}\r\n" +
			"{\"id\":\"a\",\"subject\":\"t1\",\"text\":\"Alice's second long secret turn, also to be erased\"}\n" +
			"{\"id\":\"c\",\"subject\":\"t3\",\"text\":\"Carol's long unrelated conversation turn, no newline\"}",
		file.CSV: "\ufeffid,subject,text\r\n" +
			"a,t1,\"Alice's long secret, with a comma\r\nand a line break inside quotes\"\r\n" +
			"7,t2,Bob's long unrelated fine-tuning example number two\r\n" +
			"a,t1,Alice's second long secret example to be erased too\r\n" +
			"c,t3,\"Carol's \"\"quoted\"\" long unrelated example, last\"",
	}
	for format, data := range cases {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "set."+format)
			if err := os.WriteFile(path, []byte(data), 0o640); err != nil {
				t.Fatal(err)
			}
			s, err := file.Open(ctx, opts(path, ""), false)
			if err != nil {
				t.Fatal(err)
			}
			ev, err := s.ReadEvidence(ctx, []string{"a"})
			if err != nil {
				t.Fatal(err)
			}
			if e := ev["a"]; e == nil || e.RecordBytes == 0 || e.CoveredBytes != e.RecordBytes {
				t.Fatalf("evidence for a: %+v", e)
			}
			if err := s.Delete(ctx, []string{"a"}); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(path)
			if strings.Contains(string(got), "Alice") {
				t.Fatalf("a row of a survived the rewrite")
			}
			for _, keep := range []string{"Bob's long unrelated", "Carol's"} {
				if !strings.Contains(string(got), keep) {
					t.Fatalf("row %q was lost", keep)
				}
			}
			// The kept rows are byte-identical: the file is the original
			// with a's rows cut out (a blank line stays with the row after it).
			want := map[string]string{
				file.JSONL: "\n{\"id\": 7, \"subject\":\"t2\",\"text\":\"Bob's long unrelated conversation turn number two\"}\r\n" +
					"{\"id\":\"c\",\"subject\":\"t3\",\"text\":\"Carol's long unrelated conversation turn, no newline\"}",
				file.CSV: "\ufeffid,subject,text\r\n" +
					"7,t2,Bob's long unrelated fine-tuning example number two\r\n" +
					"c,t3,\"Carol's \"\"quoted\"\" long unrelated example, last\"",
			}[format]
			if string(got) != want {
				t.Fatalf("after delete the file is\n%q\nwant\n%q", got, want)
			}
			st, _ := os.Stat(path)
			if st.Mode().Perm() != 0o640 {
				t.Fatalf("mode %v, want 0640", st.Mode().Perm())
			}
			ents, _ := os.ReadDir(dir)
			if len(ents) != 1 {
				t.Fatalf("files left in the directory: %v", ents)
			}
			rep, err := s.ProbePhysical(ctx, store.NewNeedleSet(ev))
			if err != nil {
				t.Fatal(err)
			}
			if rep.Found["a"] != 0 {
				t.Fatalf("%d needles of a still found", rep.Found["a"])
			}
			res, err := s.ProbeLogical(ctx, []string{"a", "7"}, ev)
			if err != nil {
				t.Fatal(err)
			}
			if res[0].Found() || !res[1].ByID {
				t.Fatalf("logical probe after delete: %+v", res)
			}
		})
	}
}

// Parquet pages are compressed: a raw scan of the file does not see the
// row's values, the physical probe (which decodes every page) does.
func TestFileParquetProbeDecompresses(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, file.Parquet)
	// rec-a's text is neither the column's minimum nor its maximum, which
	// the file's statistics keep in clear.
	for i := 1; i <= 9; i++ {
		key := fmt.Sprintf("rec-%d", i)
		if i == 5 {
			key = "rec-a"
		}
		put(t, s, file.Parquet, key, "t1", i)
	}
	ev, err := s.ReadEvidence(ctx, []string{"rec-a"})
	if err != nil {
		t.Fatal(err)
	}
	set := store.NewNeedleSet(ev)
	raw, err := store.ScanFiles(ctx, set, "raw", s.Path())
	if err != nil {
		t.Fatal(err)
	}
	if raw.Found["rec-a"] != 0 {
		t.Fatalf("a raw scan of the zstd file found %d of %d needles: the test does not show decoding matters", raw.Found["rec-a"], len(ev["rec-a"].Needles))
	}
	rep, err := s.ProbePhysical(ctx, set)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Found["rec-a"] != len(ev["rec-a"].Needles) {
		t.Fatalf("probe found %d of %d needles of the live row", rep.Found["rec-a"], len(ev["rec-a"].Needles))
	}
	if err := s.Delete(ctx, []string{"rec-a"}); err != nil {
		t.Fatal(err)
	}
	rows := readParquet(t, s.Path())
	if len(rows) != 8 || rows[4].ID != "rec-6" || rows[4].Turn != 6 || rows[4].Text != text(6) {
		t.Fatalf("rows after delete: %+v", rows)
	}
	rep, err = s.ProbePhysical(ctx, set)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Found["rec-a"] != 0 {
		t.Fatalf("after delete %d needles of rec-a found", rep.Found["rec-a"])
	}
	f, _ := os.Open(s.Path())
	st, _ := f.Stat()
	pf, err := parquet.OpenFile(f, st.Size())
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if c := pf.Metadata().RowGroups[0].Columns[0].MetaData.Codec; c != parquet.Zstd.CompressionCodec() {
		t.Fatalf("codec after rewrite %v, want zstd kept", c)
	}
}

// A temporary file that a crashed rewrite left holds the rows: the probe
// scans it and Reclaim shreds it.
func TestFileLeftoverTempFile(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, file.JSONL)
	put(t, s, file.JSONL, "rec-a", "t1", 1)
	put(t, s, file.JSONL, "rec-b", "t2", 2)
	ev, err := s.ReadEvidence(ctx, []string{"rec-a"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(s.Path())
	tmp := filepath.Join(filepath.Dir(s.Path()), "."+filepath.Base(s.Path())+".tmp-123")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, []string{"rec-a"}); err != nil {
		t.Fatal(err)
	}
	rep, err := s.ProbePhysical(ctx, store.NewNeedleSet(ev))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Found["rec-a"] == 0 {
		t.Fatalf("the probe did not see the leftover temporary file")
	}
	if _, err := s.Reclaim(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Fatalf("leftover temp file not removed")
	}
	rep, err = s.ProbePhysical(ctx, store.NewNeedleSet(ev))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Found["rec-a"] != 0 {
		t.Fatalf("after reclaim %d needles found", rep.Found["rec-a"])
	}
}

func TestFileRefusesHardLinkAndBadLines(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, file.JSONL)
	put(t, s, file.JSONL, "rec-a", "t1", 1)
	link := s.Path() + ".bak"
	if err := os.Link(s.Path(), link); err != nil {
		t.Fatal(err)
	}
	err := s.Delete(ctx, []string{"rec-a"})
	if err == nil || !strings.Contains(err.Error(), "hard links") {
		t.Fatalf("delete of a hard-linked file: %v", err)
	}
	os.Remove(link)
	if err := os.WriteFile(s.Path(), []byte("{\"id\":\"x\",\"text\":\"secret value\"}\nnot json secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err = s.Delete(ctx, []string{"x"})
	if err == nil || !strings.Contains(err.Error(), "line 2") || strings.Contains(err.Error(), "secret") {
		t.Fatalf("delete over a malformed line: %v", err)
	}
}

func TestFileCheck(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "ft.csv")
	os.WriteFile(csvPath, []byte("id,subject,text\n1,t,secret row\n"), 0o600)
	jsonlPath := filepath.Join(dir, "log.jsonl")
	os.WriteFile(jsonlPath, []byte("{\"uid\":1,\"text\":\"x\"}\n"), 0o600)
	// No header: the first line is a person's record, and no message may
	// repeat it.
	headless := filepath.Join(dir, "headless.csv")
	os.WriteFile(headless, []byte("17,alice@example.com,a secret note\n18,bob@example.com,another\n"), 0o600)
	pqPath := filepath.Join(dir, "d.parquet")
	writeParquet(t, pqPath, []pqRow{{ID: "1", Text: "x"}})
	cfg := func(path, key string, content ...string) store.Config {
		return store.Config{Name: "f", Type: file.Type, Path: path, Key: key, Content: content}
	}
	for _, tc := range []struct {
		c    store.Config
		want string // "" = no problem; else the problem's key
	}{
		{cfg(csvPath, "id", "text"), ""},
		{cfg(csvPath, "uid", "text"), "path"},
		{cfg(jsonlPath, "uid", "text"), ""},
		{cfg(jsonlPath, "id", "text"), "path"},
		{cfg(pqPath, "id", "text", "turn"), ""},
		{cfg(pqPath, "id", "body"), "path"},
		{cfg(filepath.Join(dir, "x.txt"), "id"), "format"},
		{cfg(filepath.Join(dir, "none.csv"), "id"), "path"},
		{cfg(csvPath, ""), "key"},
		{cfg(headless, "id", "text"), "path"},
	} {
		ps := file.Check(ctx, tc.c)
		if tc.want == "" && len(ps) != 0 {
			t.Errorf("check %s key %s: %v, want none", filepath.Base(tc.c.Path), tc.c.Key, ps)
		}
		if tc.want != "" && (len(store.Errors(ps)) != 1 || ps[0].Key != tc.want) {
			t.Errorf("check %s key %s: %v, want an error on %s", filepath.Base(tc.c.Path), tc.c.Key, ps, tc.want)
		}
		for _, p := range ps {
			if strings.Contains(p.Message, "secret") || strings.Contains(p.Message, "alice") {
				t.Errorf("check message leaks a value: %s", p.Message)
			}
		}
	}
}

func TestFileMissingIsUnavailable(t *testing.T) {
	s := openStore(t, file.JSONL)
	os.Remove(s.Path())
	if err := s.Delete(context.Background(), []string{"x"}); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("delete on a missing file: %v, want ErrUnavailable", err)
	}
	if _, err := s.ProbeLogical(context.Background(), []string{"x"}, nil); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("probe on a missing file: %v, want ErrUnavailable", err)
	}
	if _, err := file.Open(context.Background(), opts(s.Path(), ""), false); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("open of a missing file: %v, want ErrUnavailable", err)
	}
}

// Capture appends CSV rows through the file's header, and reads them back.
func TestFileCaptureCSV(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, file.CSV)
	for i, id := range []string{"d1", "d2"} {
		if err := s.CapturePut(ctx, backend.Record{ID: id, Kind: "chat", Subject: "hmac:t", Text: text(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CaptureCheck(backend.Record{ID: "d3", Parent: "d1", Text: "x"}); err == nil {
		t.Fatalf("a parent without a parent column was accepted")
	}
	r, err := s.CaptureGet(ctx, "d2")
	if err != nil || r == nil || r.Text != text(1) || r.Subject != "hmac:t" {
		t.Fatalf("CaptureGet = %+v, %v", r, err)
	}
	rs, err := s.CaptureBySubject(ctx, "hmac:t")
	if err != nil || len(rs) != 2 {
		t.Fatalf("CaptureBySubject = %d rows, %v", len(rs), err)
	}
}
