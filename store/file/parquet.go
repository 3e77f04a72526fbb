package file

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"
)

// parquetFormat is a Parquet file, read and written with parquet-go.
type parquetFormat struct{}

// pqTable is what a rewrite needs of a Parquet file beyond its rows.
type pqTable struct {
	file *parquet.File
	rows []parquet.Row // every row, in file order (table.rows[i] is rows[i])
}

func (parquetFormat) read(ctx context.Context, b []byte, o *Options) (*table, error) {
	f, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, fmt.Errorf("not a readable Parquet file: %v", err)
	}
	sch := f.Schema()
	leaf := func(name, what string) (int, error) {
		l, ok := sch.Lookup(name)
		if !ok || l.Node == nil {
			var cols []string
			for _, p := range sch.Columns() {
				cols = append(cols, strings.Join(p, "."))
			}
			return 0, fmt.Errorf("the schema has no column %q (%s): its columns are %s", name, what, strings.Join(cols, ", "))
		}
		if l.MaxRepetitionLevel > 0 {
			return 0, fmt.Errorf("column %q (%s) is repeated: it must hold one value per row", name, what)
		}
		return l.ColumnIndex, nil
	}
	ki, err := leaf(o.Key, "the key")
	if err != nil {
		return nil, err
	}
	si := -1
	if o.Subject != "" {
		if si, err = leaf(o.Subject, "the subject"); err != nil {
			return nil, err
		}
	}
	ci := map[string]int{}
	for _, c := range o.Content {
		if ci[c], err = leaf(c, "content"); err != nil {
			return nil, err
		}
	}
	t := &table{pq: &pqTable{file: f}}
	buf := make([]parquet.Row, 256)
	n := 0
	for _, rg := range f.RowGroups() {
		rs := rg.Rows()
		for {
			if err := ctx.Err(); err != nil {
				rs.Close()
				return nil, err
			}
			k, err := rs.ReadRows(buf)
			for _, pr := range buf[:k] {
				n++
				pr = pr.Clone()
				r := row{content: map[string]string{}}
				for _, v := range pr {
					c := v.Column()
					switch {
					case c == ki:
						r.key = valueString(v)
					case c == si:
						r.subject = valueString(v)
					}
					for name, i := range ci {
						if i == c && !v.IsNull() {
							r.content[name] = valueString(v)
						}
					}
					if v.Kind() == parquet.ByteArray || v.Kind() == parquet.FixedLenByteArray {
						if b := v.ByteArray(); len(b) > 0 {
							r.values = append(r.values, append([]byte(nil), b...))
						}
					}
				}
				if r.key == "" {
					rs.Close()
					return nil, fmt.Errorf("row %d has an empty %q (the key)", n, o.Key)
				}
				t.rows = append(t.rows, r)
				t.pq.rows = append(t.pq.rows, pr)
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				rs.Close()
				return nil, fmt.Errorf("read rows: %v", err)
			}
		}
		rs.Close()
	}
	return t, nil
}

func valueString(v parquet.Value) string {
	if v.IsNull() {
		return ""
	}
	switch v.Kind() {
	case parquet.ByteArray, parquet.FixedLenByteArray:
		return string(v.ByteArray())
	case parquet.Int32:
		return strconv.FormatInt(int64(v.Int32()), 10)
	case parquet.Int64:
		return strconv.FormatInt(v.Int64(), 10)
	}
	return v.String()
}

// rewrite writes the kept rows with the file's schema, its first column's
// compression codec and its key-value metadata.
func (parquetFormat) rewrite(t *table, drop map[string]bool) ([]byte, error) {
	f := t.pq.file
	var opts []parquet.WriterOption
	md := f.Metadata()
	if len(md.RowGroups) > 0 && len(md.RowGroups[0].Columns) > 0 {
		if c := parquet.LookupCompressionCodec(md.RowGroups[0].Columns[0].MetaData.Codec); c != nil {
			opts = append(opts, parquet.Compression(c))
		}
	}
	for _, kv := range md.KeyValueMetadata {
		opts = append(opts, parquet.KeyValueMetadata(kv.Key, kv.Value))
	}
	var out bytes.Buffer
	w := parquet.NewWriter(&out, append([]parquet.WriterOption{f.Schema()}, opts...)...)
	var kept []parquet.Row
	for i, r := range t.rows {
		if !drop[r.key] {
			kept = append(kept, t.pq.rows[i])
		}
	}
	if _, err := w.WriteRows(kept); err != nil {
		return nil, fmt.Errorf("write Parquet rows: %v", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("write Parquet file: %v", err)
	}
	return out.Bytes(), nil
}

func (parquetFormat) appendRow(*table, map[string]string) ([]byte, error) {
	return nil, errors.New("rows cannot be appended to a Parquet file: write it with your dataset tooling")
}

// scanParquetValues scans every string and byte-array value of every
// dictionary and data page of the file, decompressed and decoded, each
// page as one segment (values separated by a zero byte).
func scanParquetValues(ctx context.Context, sc interface {
	Scan(context.Context, io.Reader) error
}, b []byte) error {
	f, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return fmt.Errorf("not a readable Parquet file: %v", err)
	}
	vals := make([]parquet.Value, 1024)
	var seg bytes.Buffer
	add := func(vs []parquet.Value) {
		for _, v := range vs {
			if v.Kind() == parquet.ByteArray || v.Kind() == parquet.FixedLenByteArray {
				seg.Write(v.ByteArray())
				seg.WriteByte(0)
			}
		}
	}
	readPage := func(p parquet.Page) error {
		vr := p.Values()
		for {
			n, err := vr.ReadValues(vals)
			add(vals[:n])
			if errors.Is(err, io.EOF) || (err == nil && n == 0) {
				return nil
			}
			if err != nil {
				return err
			}
		}
	}
	for _, rg := range f.RowGroups() {
		for _, cc := range rg.ColumnChunks() {
			pages := cc.Pages()
			if fp, ok := pages.(*parquet.FilePages); ok {
				d, err := fp.ReadDictionary()
				if err != nil {
					pages.Close()
					return fmt.Errorf("read dictionary: %v", err)
				}
				if d != nil {
					seg.Reset()
					if err := readPage(d.Page()); err != nil {
						pages.Close()
						return fmt.Errorf("read dictionary: %v", err)
					}
					if err := sc.Scan(ctx, bytes.NewReader(seg.Bytes())); err != nil {
						pages.Close()
						return err
					}
				}
			}
			for {
				p, err := pages.ReadPage()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					pages.Close()
					return fmt.Errorf("read page: %v", err)
				}
				seg.Reset()
				err = readPage(p)
				parquet.Release(p)
				if err != nil {
					pages.Close()
					return fmt.Errorf("read page values: %v", err)
				}
				if err := sc.Scan(ctx, bytes.NewReader(seg.Bytes())); err != nil {
					pages.Close()
					return err
				}
			}
			pages.Close()
		}
	}
	return nil
}

// parquetSchemaCheck opens a Parquet file and looks up the configured
// columns in its schema, reading no row.
func parquetSchemaCheck(b []byte, o *Options) (*parquet.Schema, error) {
	f, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, fmt.Errorf("not a readable Parquet file: %v", err)
	}
	sch := f.Schema()
	names := append([]string{o.Key}, o.Content...)
	if o.Subject != "" {
		names = append(names, o.Subject)
	}
	for _, n := range names {
		if l, ok := sch.Lookup(n); !ok || l.Node == nil {
			var cols []string
			for _, p := range sch.Columns() {
				cols = append(cols, strings.Join(p, "."))
			}
			return nil, fmt.Errorf("the schema has no column %q: its columns are %s", n, strings.Join(cols, ", "))
		}
	}
	return sch, nil
}
