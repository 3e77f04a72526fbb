package file

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// csvFormat is a header row, then one record per row (RFC 4180; a field
// may hold line ends inside quotes).
type csvFormat struct{}

func (csvFormat) read(ctx context.Context, b []byte, o *Options) (*table, error) {
	t := &table{}
	r := csv.NewReader(bytes.NewReader(b))
	r.ReuseRecord = false
	hdr, err := r.Read()
	if errors.Is(err, io.EOF) {
		return nil, errors.New("the file is empty: a CSV store needs a header row naming its columns")
	}
	if err != nil {
		return nil, csvErr(err)
	}
	prev := int(r.InputOffset())
	t.head = b[:prev]
	hdr[0] = strings.TrimPrefix(hdr[0], "\ufeff")
	t.cols = hdr
	col := func(name string) int {
		for i, h := range hdr {
			if h == name {
				return i
			}
		}
		return -1
	}
	ki := col(o.Key)
	if ki < 0 {
		return nil, fmt.Errorf("the header has no column %q (the key): %s", o.Key, headerNames(hdr))
	}
	si := -1
	if o.Subject != "" {
		if si = col(o.Subject); si < 0 {
			return nil, fmt.Errorf("the header has no column %q (the subject): %s", o.Subject, headerNames(hdr))
		}
	}
	ci := map[string]int{}
	for _, c := range o.Content {
		i := col(c)
		if i < 0 {
			return nil, fmt.Errorf("the header has no column %q (content): %s", c, headerNames(hdr))
		}
		ci[c] = i
	}
	for n := 2; ; n++ {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, csvErr(err)
		}
		off := int(r.InputOffset())
		full := b[prev:off]
		prev = off
		row := row{full: full, raw: bytes.TrimRight(bytes.TrimLeft(full, "\r\n"), "\r\n"), key: rec[ki], content: map[string]string{}}
		if row.key == "" {
			return nil, fmt.Errorf("record %d has an empty %q (the key)", n, o.Key)
		}
		if si >= 0 {
			row.subject = rec[si]
		}
		for c, i := range ci {
			row.content[c] = rec[i]
		}
		t.rows = append(t.rows, row)
	}
	t.tail = b[prev:]
	t.noEOL = len(b) > 0 && b[len(b)-1] != '\n'
	return t, nil
}

// csvErr says where a CSV file is malformed without quoting it.
func csvErr(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("not valid CSV at line %d, column %d (%v): fix the file", pe.Line, pe.Column, pe.Err)
	}
	return fmt.Errorf("not valid CSV: %v", err)
}

func (csvFormat) rewrite(t *table, drop map[string]bool) ([]byte, error) {
	var out bytes.Buffer
	out.Write(t.head)
	for _, r := range t.rows {
		if !drop[r.key] {
			out.Write(r.full)
		}
	}
	out.Write(t.tail)
	return out.Bytes(), nil
}

func (csvFormat) appendRow(t *table, fields map[string]string) ([]byte, error) {
	rec := make([]string, len(t.cols))
	used := 0
	for i, c := range t.cols {
		if v, ok := fields[c]; ok {
			rec[i] = v
			used++
		}
	}
	if used != len(fields) {
		var miss []string
		for k := range fields {
			found := false
			for _, c := range t.cols {
				found = found || c == k
			}
			if !found {
				miss = append(miss, k)
			}
		}
		return nil, fmt.Errorf("the header has no column %s: add it to the file's header", strings.Join(miss, ", "))
	}
	b := csvLine(rec)
	if t.noEOL {
		b = append([]byte("\n"), b...)
	}
	return b, nil
}

func csvLine(rec []string) []byte {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write(rec)
	w.Flush()
	return buf.Bytes()
}

// columnName is what a header field looks like: one word, not data (a
// header with spaces in its names is not shown either).
var columnName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,63}$`)

// headerNames lists the first line's fields for an error message when
// every one looks like a column name and none repeats; otherwise the line
// may be a record (a file without a header) and nothing of it is shown:
// errors go to the terminal, the log, the journal and certificates.
func headerNames(hdr []string) string {
	seen := map[string]bool{}
	for _, h := range hdr {
		if !columnName.MatchString(h) || seen[h] {
			return fmt.Sprintf("its first line has %d fields that do not all look like column names (is the header missing?); they are not shown, as they may be data", len(hdr))
		}
		seen[h] = true
	}
	return "its columns are " + strings.Join(hdr, ", ")
}
