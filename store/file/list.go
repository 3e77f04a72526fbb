package file

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"

	"github.com/amnesia-dev/amnesia/store"
)

// list enumerates the file's rows (store.List), reading the file only.
// JSONL rows give every scalar member as a field (and the members of
// object members, store.AddFields); CSV rows every column; Parquet rows the
// configured subject field only. The configured content fields are the
// content.
func list(ctx context.Context, c store.Config, fn func(store.Listed) error) error {
	s, err := Open(ctx, optionsOf(c), false)
	if err != nil {
		return err
	}
	t, _, err := s.load(ctx)
	if err != nil {
		return err
	}
	isContent := map[string]bool{s.o.Key: true}
	for _, f := range s.o.Content {
		isContent[f] = true
	}
	for _, r := range t.rows {
		l := store.Listed{Key: r.key, Fields: map[string]string{}}
		for _, f := range s.o.Content {
			l.Content = append(l.Content, r.content[f]...)
		}
		switch s.o.Format {
		case JSONL:
			var obj map[string]json.RawMessage
			if json.Unmarshal(r.raw, &obj) == nil {
				for k, raw := range obj {
					var v any
					if isContent[k] || json.Unmarshal(raw, &v) != nil {
						continue
					}
					if sv, ok := store.Scalar(v); ok {
						l.Fields[k] = sv
					}
				}
				for k, raw := range obj {
					if !isContent[k] && len(raw) > 0 && raw[0] == '{' {
						store.AddFields(l.Fields, k, raw)
					}
				}
			}
		case CSV:
			rec, err := csv.NewReader(bytes.NewReader(r.raw)).Read()
			if err == nil {
				for i, v := range rec {
					if i < len(t.cols) && !isContent[t.cols[i]] {
						l.Fields[t.cols[i]] = v
						store.AddFields(l.Fields, t.cols[i], []byte(v))
					}
				}
			}
		}
		if s.o.Subject != "" && r.subject != "" {
			l.Fields[s.o.Subject] = r.subject
		}
		if err := fn(l); err != nil {
			return err
		}
	}
	return nil
}
