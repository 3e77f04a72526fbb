package certificate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"sync"
)

// checkKeys refuses a payload that another JSON reader could read
// differently from this package: an object that repeats a key (Go's
// encoding/json keeps the last, other readers may keep the first or
// refuse), or a key that differs from one of the statement's field names
// only in case (encoding/json matches field names without regard to case,
// so it would read {"Complete": true} as the field complete, where
// amnesia-client's verifier and jq read no such field). Keys the schema
// does not know, in any case, are left alone, as Verify ignored them
// before. Errors name the schema's field, never a value.
func checkKeys(payload []byte) error {
	known := schemaKeys()
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	// One frame per open object or array; an object's frame holds its
	// keys so far and whether the next token is a key.
	type frame struct {
		keys    map[string]bool
		wantKey bool
	}
	var stack []*frame
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].keys != nil {
			stack[n-1].wantKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF && len(stack) == 0 {
			return nil
		}
		if err != nil {
			return errors.New("payload is not a JSON statement")
		}
		if n := len(stack); n > 0 && stack[n-1].wantKey {
			top := stack[n-1]
			if tok == json.Delim('}') {
				stack = stack[:n-1]
				valueDone()
				continue
			}
			k, _ := tok.(string)
			if top.keys[k] {
				if known[k] {
					return fmt.Errorf("payload repeats the field %s in one object", k)
				}
				return errors.New("payload repeats a key in one object")
			}
			top.keys[k] = true
			if !known[k] {
				if f := foldedField(k); f != "" {
					return fmt.Errorf("payload has a key that differs from the field %s only in case", f)
				}
			}
			top.wantKey = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{keys: map[string]bool{}, wantKey: true})
		case json.Delim('['):
			stack = append(stack, &frame{})
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
			valueDone()
		default:
			valueDone()
		}
	}
}

// foldedField returns the schema field name that key equals without regard
// to case (as encoding/json compares them: strings.EqualFold), or "".
func foldedField(key string) string {
	for _, f := range schemaKeyList() {
		if strings.EqualFold(key, f) {
			return f
		}
	}
	return ""
}

// SchemaFields returns the JSON names of every field of Statement, at any
// depth, sorted: the names checkKeys holds payload keys to (amnesia-client's
// offline verifier keeps the same list; a test compares them).
func SchemaFields() []string { return append([]string(nil), schemaKeyList()...) }

var schemaKeyList = sync.OnceValue(func() []string {
	seen := map[reflect.Type]bool{}
	names := map[string]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" && f.Anonymous {
				walk(f.Type) // its fields are promoted
				continue
			}
			if name == "" {
				name = f.Name
			}
			names[name] = true
			walk(f.Type)
		}
	}
	walk(reflect.TypeOf(Statement{}))
	out := make([]string, 0, len(names))
	for n := range names {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
})

var schemaKeys = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, n := range schemaKeyList() {
		m[n] = true
	}
	return m
})
