package file

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
)

// jsonlFormat is one JSON object per line.
type jsonlFormat struct{}

func (jsonlFormat) read(ctx context.Context, b []byte, o *Options) (*table, error) {
	t := &table{}
	var pre []byte
	start := 0
	for n := 1; start < len(b); n++ {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		end := bytes.IndexByte(b[start:], '\n')
		if end < 0 {
			end = len(b)
		} else {
			end += start + 1
		}
		full := b[start:end]
		line := bytes.TrimRight(full, "\r\n")
		start = end
		if len(bytes.TrimSpace(line)) == 0 {
			pre = b[start-len(full)-len(pre) : start]
			continue
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(line, &obj); err != nil || obj == nil {
			return nil, fmt.Errorf("line %d is not a JSON object: fix or remove it (every line of a JSONL store is one object)", n)
		}
		r := row{raw: line, full: b[start-len(full)-len(pre) : start], content: map[string]string{}}
		pre = nil
		var ok bool
		if r.key, ok = scalar(obj[o.Key]); !ok || r.key == "" {
			return nil, fmt.Errorf("line %d: field %q (the key) is missing or not a string or number", n, o.Key)
		}
		if o.Subject != "" {
			r.subject, _ = scalar(obj[o.Subject])
		}
		for _, c := range o.Content {
			if v, ok := scalar(obj[c]); ok {
				r.content[c] = v
			}
		}
		t.rows = append(t.rows, r)
	}
	t.tail = pre
	t.noEOL = len(b) > 0 && b[len(b)-1] != '\n'
	return t, nil
}

// scalar returns a JSON string's value, or a number's or boolean's text.
func scalar(m json.RawMessage) (string, bool) {
	m = bytes.TrimSpace(m)
	if len(m) == 0 || string(m) == "null" {
		return "", false
	}
	switch m[0] {
	case '"':
		var s string
		if json.Unmarshal(m, &s) != nil {
			return "", false
		}
		return s, true
	case '{', '[':
		return "", false
	}
	return string(m), true
}

func (jsonlFormat) rewrite(t *table, drop map[string]bool) ([]byte, error) {
	var out bytes.Buffer
	for _, r := range t.rows {
		if drop[r.key] {
			continue
		}
		out.Write(r.full)
	}
	out.Write(t.tail)
	return out.Bytes(), nil
}

func (jsonlFormat) appendRow(t *table, fields map[string]string) ([]byte, error) {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out bytes.Buffer
	if t.noEOL {
		out.WriteByte('\n')
	}
	out.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			out.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		vb, _ := json.Marshal(fields[k])
		out.Write(kb)
		out.WriteByte(':')
		out.Write(vb)
	}
	out.WriteString("}\n")
	return out.Bytes(), nil
}
