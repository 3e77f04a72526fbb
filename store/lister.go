package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
)

// Listed is one record as a store holds it, for a census of data that
// amnesia may never have seen written (amnesia scan, amnesia reconcile).
// Fields and Content are personal data: callers keep them in memory only,
// and never log or persist them.
type Listed struct {
	// Key is the record's key, as lineage names it.
	Key string
	// Fields are the record's attribution fields: every scalar column that
	// is not content, and every top-level scalar member of a JSON metadata
	// column (under its own name, and as "<column>.<member>"), as text.
	Fields map[string]string
	// Content is what the store keeps of the record's content (text, or a
	// vector's stored encoding), for finding byte-identical records.
	Content []byte
}

// ErrNotListable: the adapter cannot enumerate its records (it registered
// no List function).
var ErrNotListable = errors.New("this store type cannot list its records")

// List enumerates the records of the configured store c without writing to
// it: the adapter opens what it needs read-only, calls fn for each record of
// the configured table or collection (other tenants' collections are not
// read), in no particular order, and stops at fn's first error.
func List(ctx context.Context, c Config, fn func(Listed) error) error {
	a, ok := adapter(c.Type)
	if !ok {
		return fmt.Errorf("store %s: %w", c.Name, unknownType(c.Type))
	}
	if a.List == nil {
		return fmt.Errorf("store %s (%s): %w", c.Name, c.Type, ErrNotListable)
	}
	return a.List(ctx, c, fn)
}

// AddFields adds the scalar members of a JSON object (text, as metadata
// columns hold it) to fields: each under its own name unless a column of
// that name is already there, and under "<column>.<member>". Text that is
// not a JSON object adds nothing.
func AddFields(fields map[string]string, column string, jsonText []byte) {
	var obj map[string]any
	if len(jsonText) == 0 || json.Unmarshal(jsonText, &obj) != nil {
		return
	}
	names := make([]string, 0, len(obj))
	for k := range obj {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v, ok := Scalar(obj[k])
		if !ok {
			continue
		}
		if _, taken := fields[k]; !taken {
			fields[k] = v
		}
		fields[column+"."+k] = v
	}
}

// Scalar is v as text when v is a JSON scalar (string, number, bool);
// false for null, objects and arrays.
func Scalar(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case json.Number:
		return x.String(), true
	case bool:
		return strconv.FormatBool(x), true
	case int, int32, int64, uint32, uint64:
		return fmt.Sprint(x), true
	}
	return "", false
}
