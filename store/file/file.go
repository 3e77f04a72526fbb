// Package file is an adapter for records kept in one data file: JSONL
// (conversation logs, fine-tuning sets: one JSON object per line), CSV
// (a header row, then one record per row) and Parquet datasets. The
// configuration names the field (column) that holds each record's key,
// optionally the one that holds its subject tag, and the content fields.
//
// Delete rewrites the file without the rows of the given keys through
// internal/atomicfile (a temporary file in the same directory, written and
// fsynced, renamed over the file, the directory fsynced), keeping the
// file's mode; the replaced file's blocks are then zeroed through a
// descriptor held across the rename. Rows an application appended while
// the file was being rewritten are carried over.
//
// What it proves, for JSONL and CSV: reading every row, none has the key
// (or the subject tag with the key); and no window of the row's bytes as
// written (the whole line or CSV record) is left in the file or in a
// temporary file of amnesia's rewrite. For Parquet, pages are compressed
// and encoded: the physical probe scans the raw file and every string or
// byte-array value of every page as parquet-go decompresses and decodes it;
// the needles are the row's string values. Other copies of the file
// (backups, snapshots, a process that keeps the old file open) are not
// measured.
package file

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/amnesia-dev/amnesia/internal/atomicfile"
	"github.com/amnesia-dev/amnesia/store"
)

// Type is the adapter type name used in configuration.
const Type = "file"

// Formats.
const (
	JSONL   = "jsonl"
	CSV     = "csv"
	Parquet = "parquet"
)

// Options configure a file store.
type Options struct {
	Name    string
	Path    string
	Format  string   // JSONL, CSV or Parquet; "" guesses from the extension
	Key     string   // field or column holding the record key
	Subject string   // field or column holding the subject tag, optional
	Content []string // fields or columns holding the content
}

// row is one record as read from the file.
type row struct {
	key     string
	subject string
	content map[string]string // the configured content fields that are strings
	raw     []byte            // JSONL/CSV: the row's bytes as written, without the line end
	full    []byte            // JSONL/CSV: what the row occupies in the file (blank lines before it, line end)
	values  [][]byte          // Parquet: the row's string and byte-array values
}

// table is a file's rows.
type table struct {
	head []byte // CSV: the header record's bytes
	cols []string
	rows []row
	tail []byte // JSONL: blank lines after the last row
	// noEOL: the file does not end with a line end (an append starts one)
	noEOL bool
	pq    *pqTable
}

// format reads and writes one file format.
type format interface {
	read(ctx context.Context, b []byte, o *Options) (*table, error)
	// rewrite returns the file's new content without the rows in drop.
	rewrite(t *table, drop map[string]bool) ([]byte, error)
	// appendRow returns the bytes that append r to the file (capture).
	appendRow(t *table, r map[string]string) ([]byte, error)
}

// Store is the adapter.
type Store struct {
	o   Options
	fmt format
}

var (
	_ store.Store          = (*Store)(nil)
	_ store.EvidenceReader = (*Store)(nil)
	_ store.Reclaimer      = (*Store)(nil)
	_ store.PhysicalProber = (*Store)(nil)
)

// FormatOf returns the configured format, or the one the path's extension
// names.
func FormatOf(path, format string) (string, error) {
	if format != "" {
		switch format {
		case JSONL, CSV, Parquet:
			return format, nil
		}
		return "", fmt.Errorf("format %q is not known: use jsonl, csv or parquet", format)
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".jsonl", ".ndjson":
		return JSONL, nil
	case ".csv":
		return CSV, nil
	case ".parquet":
		return Parquet, nil
	}
	return "", fmt.Errorf("format is not set and %s has no .jsonl, .ndjson, .csv or .parquet extension: set format: jsonl, csv or parquet", filepath.Base(path))
}

func (o *Options) validate() error {
	f, err := FormatOf(o.Path, o.Format)
	if err != nil {
		return err
	}
	o.Format = f
	if o.Path == "" {
		return errors.New("path is required (the data file)")
	}
	if o.Key == "" {
		return errors.New("key is required: the field or column that holds each record's key")
	}
	for _, c := range o.Content {
		if c == o.Key || c == "" {
			return fmt.Errorf("content must name fields other than the key (%q)", o.Key)
		}
	}
	return nil
}

// Open opens the store. With create false, a missing file is an error
// wrapping store.ErrUnavailable; with create true an empty file is created
// (JSONL and CSV only: a CSV file gets a header of key, subject and
// content).
func Open(ctx context.Context, o Options, create bool) (*Store, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := o.validate(); err != nil {
		return nil, fmt.Errorf("open file store: %w", err)
	}
	s := &Store{o: o}
	switch o.Format {
	case JSONL:
		s.fmt = jsonlFormat{}
	case CSV:
		s.fmt = csvFormat{}
	case Parquet:
		s.fmt = parquetFormat{}
	}
	if _, err := os.Stat(o.Path); err != nil {
		if !errors.Is(err, fs.ErrNotExist) || !create {
			return nil, fmt.Errorf("open file store %s: %w: %v", o.Path, store.ErrUnavailable, err)
		}
		if o.Format == Parquet {
			return nil, fmt.Errorf("open file store %s: a Parquet file is not created: write it with its schema first", o.Path)
		}
		var init []byte
		if o.Format == CSV {
			hdr := []string{o.Key}
			if o.Subject != "" {
				hdr = append(hdr, o.Subject)
			}
			hdr = append(hdr, o.Content...)
			init = csvLine(hdr)
		}
		if err := atomicfile.WriteFile(o.Path, init, 0o600); err != nil {
			return nil, fmt.Errorf("open file store %s: create: %w", o.Path, err)
		}
	}
	return s, nil
}

// Path returns the data file.
func (s *Store) Path() string { return s.o.Path }

// Info implements store.Store.
func (s *Store) Info() store.Info {
	caps := []store.Capability{store.CapDelete, store.CapProbeByID}
	if s.o.Subject != "" {
		caps = append(caps, store.CapProbeByFilter)
	}
	caps = append(caps, store.CapReclaim, store.CapProbePhysical)
	return store.Info{Name: s.o.Name, Type: Type, Capabilities: caps}
}

// Close implements store.Store; the store holds no open file.
func (s *Store) Close() error { return nil }

// load reads and parses the whole file.
func (s *Store) load(ctx context.Context) (*table, []byte, error) {
	b, err := os.ReadFile(s.o.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("read %s: %w: %v", s.o.Path, store.ErrUnavailable, err)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", s.o.Path, err)
	}
	t, err := s.fmt.read(ctx, b, &s.o)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", s.o.Path, err)
	}
	return t, b, nil
}

// Rows returns every row of the file.
func (s *Store) Rows(ctx context.Context) ([]Row, error) {
	t, _, err := s.load(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Row, 0, len(t.rows))
	for _, r := range t.rows {
		out = append(out, Row{Key: r.key, Subject: r.subject, Content: r.content})
	}
	return out, nil
}

// Row is a record as read.
type Row struct {
	Key     string
	Subject string
	Content map[string]string
}

// Append adds a record at the end of the file (JSONL and CSV): fields maps
// field names to string values; it must hold the key. The file is fsynced.
func (s *Store) Append(ctx context.Context, fields map[string]string) error {
	if fields[s.o.Key] == "" {
		return fmt.Errorf("append row: no %s (the key field)", s.o.Key)
	}
	t, _, err := s.load(ctx)
	if err != nil {
		return fmt.Errorf("append row: %w", err)
	}
	b, err := s.fmt.appendRow(t, fields)
	if err != nil {
		return fmt.Errorf("append row: %w", err)
	}
	f, err := os.OpenFile(s.o.Path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("append row: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("append row: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("append row: %w", err)
	}
	return f.Close()
}

// maxRounds bounds Delete's rewrite when an application keeps appending.
const maxRounds = 5

// Delete implements store.Store: rewrite the file without the keys' rows
// (see the package documentation).
func (s *Store) Delete(ctx context.Context, keys []string) error {
	drop := map[string]bool{}
	for _, k := range keys {
		drop[k] = true
	}
	for round := 0; round < maxRounds; round++ {
		done, err := s.rewrite(ctx, drop)
		if err != nil {
			return fmt.Errorf("delete rows: %w", err)
		}
		if done {
			return nil
		}
	}
	return fmt.Errorf("delete rows: %s kept growing during %d rewrites: %w", s.o.Path, maxRounds, store.ErrBusy)
}

// rewrite does one round: done is false when the file grew meanwhile (the
// appended bytes were carried over and another round must check them).
func (s *Store) rewrite(ctx context.Context, drop map[string]bool) (done bool, err error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	f, err := os.OpenFile(s.o.Path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("%w: %v", store.ErrUnavailable, err)
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return false, err
	}
	if n := links(st); n > 1 {
		return false, fmt.Errorf("%s has %d hard links: the erased rows would stay under the other names; remove the other links, then run the erasure again", s.o.Path, n)
	}
	old, err := io.ReadAll(io.NewSectionReader(f, 0, st.Size()))
	if err != nil {
		return false, err
	}
	t, err := s.fmt.read(ctx, old, &s.o)
	if err != nil {
		return false, fmt.Errorf("read %s: %w", s.o.Path, err)
	}
	hit := false
	for _, r := range t.rows {
		hit = hit || drop[r.key]
	}
	if !hit {
		return true, nil
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	nb, err := s.fmt.rewrite(t, drop)
	if err != nil {
		return false, err
	}
	// Written since the read: read it again.
	if cur, err := f.Stat(); err != nil {
		return false, err
	} else if cur.Size() != st.Size() || !cur.ModTime().Equal(st.ModTime()) {
		return false, nil
	}
	if testHookBeforeRename != nil {
		testHookBeforeRename(s.o.Path)
	}
	if err := atomicfile.WriteFile(s.o.Path, nb, st.Mode().Perm()); err != nil {
		return false, fmt.Errorf("rewrite %s: %w", s.o.Path, err)
	}
	// f is now the replaced file. What an application appended to it
	// between the check above and the rename is carried over to the new
	// file; any other change to it cannot be.
	st2, err := f.Stat()
	if err != nil {
		return false, err
	}
	grew := st2.Size() > st.Size()
	changed := st2.Size() != st.Size() || !st2.ModTime().Equal(st.ModTime())
	if changed && (!grew || s.o.Format == Parquet) {
		return false, fmt.Errorf("%s was written by another process while amnesia replaced it (not an append): what it wrote went to the replaced file and is lost; stop the writer, check the file, then run the erasure again", s.o.Path)
	}
	if grew {
		tail, err := io.ReadAll(io.NewSectionReader(f, st.Size(), st2.Size()-st.Size()))
		if err != nil {
			return false, err
		}
		if err := appendSync(s.o.Path, tail); err != nil {
			return false, fmt.Errorf("carry over rows appended during the rewrite: %w", err)
		}
	}
	// Zero the replaced file's blocks (best effort: see atomicfile.Shred).
	if err := atomicfile.Zero(f); err != nil {
		return false, fmt.Errorf("zero the replaced file: %w", err)
	}
	return !grew, nil
}

// testHookBeforeRename, when set by a test, runs between the read of the
// file and the rename of its rewrite (an application appending).
var testHookBeforeRename func(path string)

func appendSync(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func links(st fs.FileInfo) uint64 {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(sys.Nlink)
	}
	return 1
}

// ReadEvidence implements store.EvidenceReader: windows of the row's bytes
// as written (JSONL: the line; CSV: the record), or, for Parquet, of each
// of its string values; the subject tag. A key with several rows gets the
// windows of all. Windows another row (outside keys) also holds are
// counted as Shared, naming its key.
func (s *Store) ReadEvidence(ctx context.Context, keys []string) (map[string]*store.Evidence, error) {
	t, _, err := s.load(ctx)
	if err != nil {
		return nil, fmt.Errorf("read evidence: %w", err)
	}
	batch := map[string]bool{}
	for _, k := range keys {
		batch[k] = true
	}
	out := map[string]*store.Evidence{}
	for _, r := range t.rows {
		if !batch[r.key] {
			continue
		}
		e := out[r.key]
		if e == nil {
			e = &store.Evidence{Key: r.key}
			out[r.key] = e
		}
		if r.subject != "" {
			e.Filter = map[string]string{"subject": r.subject}
		}
		for _, b := range r.fields() {
			e.AddWindows(b)
		}
	}
	if len(out) == 0 {
		return out, nil
	}
	others := func(fn func(string, []byte) error) error {
		for _, r := range t.rows {
			if batch[r.key] {
				continue
			}
			for _, b := range r.fields() {
				if err := fn(r.key, b); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := store.DropShared(ctx, out, others); err != nil {
		return nil, fmt.Errorf("read evidence: %w", err)
	}
	return out, nil
}

func (r row) fields() [][]byte {
	if r.raw != nil {
		return [][]byte{r.raw}
	}
	return r.values
}

// ProbeLogical implements store.Store: it reads every row; a key is found
// by id when a row holds it, by filter when a row with the evidence's
// subject tag holds it.
func (s *Store) ProbeLogical(ctx context.Context, keys []string, ev map[string]*store.Evidence) ([]store.LogicalResult, error) {
	t, _, err := s.load(ctx)
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	byKey := map[string][]row{}
	for _, r := range t.rows {
		byKey[r.key] = append(byKey[r.key], r)
	}
	out := make([]store.LogicalResult, 0, len(keys))
	for _, k := range keys {
		res := store.LogicalResult{Key: k, Methods: []string{"by-id:every-row"}}
		res.ByID = len(byKey[k]) > 0
		if e := ev[k]; e != nil && e.Filter["subject"] != "" && s.o.Subject != "" {
			res.Methods = append(res.Methods, "by-filter:"+s.o.Subject)
			for _, r := range byKey[k] {
				res.ByFilter = res.ByFilter || r.subject == e.Filter["subject"]
			}
		}
		out = append(out, res)
	}
	return out, nil
}

// temps returns amnesia's temporary files for the data file that a crash
// may have left (atomicfile.WriteFile's names).
func (s *Store) temps() []string {
	m, _ := filepath.Glob(filepath.Join(filepath.Dir(s.o.Path), "."+globEscape(filepath.Base(s.o.Path))+".tmp-*"))
	sort.Strings(m)
	return m
}

func globEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`)
	return r.Replace(s)
}

// Reclaim implements store.Reclaimer: Delete already replaced the file and
// zeroed the replaced one; Reclaim shreds temporary files a crashed rewrite
// left and fsyncs the directory.
func (s *Store) Reclaim(ctx context.Context) (store.ReclaimReport, error) {
	if err := ctx.Err(); err != nil {
		return store.ReclaimReport{}, err
	}
	steps := []string{}
	for _, p := range s.temps() {
		if err := atomicfile.Shred(p); err != nil {
			return store.ReclaimReport{}, fmt.Errorf("reclaim: shred %s: %w", p, err)
		}
		steps = append(steps, "shredded "+filepath.Base(p))
	}
	if err := atomicfile.SyncDir(filepath.Dir(s.o.Path)); err != nil {
		return store.ReclaimReport{}, fmt.Errorf("reclaim: %w", err)
	}
	steps = append(steps, "fsync "+filepath.Dir(s.o.Path))
	return store.ReclaimReport{
		Method: "file rewritten without the rows (temp file, fsync, rename, directory fsync), replaced file zeroed, leftover temp files shredded",
		Steps:  steps,
	}, nil
}

// ProbePhysical implements store.PhysicalProber: the file and any temporary
// file of a rewrite, raw; for Parquet also every value of every page,
// decompressed and decoded.
func (s *Store) ProbePhysical(ctx context.Context, set *store.NeedleSet) (store.ScanReport, error) {
	method := "the data file and amnesia's temporary files, raw"
	if s.o.Format == Parquet {
		method += "; every string and byte-array value of every Parquet page, decompressed and decoded"
	}
	sc := store.NewScanner(set, method)
	for _, p := range append([]string{s.o.Path}, s.temps()...) {
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return store.ScanReport{}, fmt.Errorf("physical probe: %w", err)
		}
		if err := sc.Scan(ctx, bytes.NewReader(b)); err != nil {
			return store.ScanReport{}, fmt.Errorf("physical probe: %w", err)
		}
		if s.o.Format == Parquet && p == s.o.Path {
			if err := scanParquetValues(ctx, sc, b); err != nil {
				return store.ScanReport{}, fmt.Errorf("physical probe: %s: %w", p, err)
			}
		}
	}
	return sc.Report(), nil
}

func init() {
	store.Register(Type, store.Adapter{
		Open: func(ctx context.Context, c store.Config, create bool) (store.Store, error) {
			return Open(ctx, optionsOf(c), create)
		},
		Validate: func(c store.Config) error {
			o := optionsOf(c)
			return o.validate()
		},
		List: list,
		Proof: func(store.Config) (string, string) {
			return "physical", "the file is rewritten without the rows and read byte by byte, with its temporary files"
		},
	})
}

func optionsOf(c store.Config) Options {
	return Options{Name: c.Name, Path: c.Path, Format: c.Format, Key: c.Key, Subject: c.Subject, Content: c.Content}
}
