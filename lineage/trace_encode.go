package lineage

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// appendTrace appends the canonical encoding of t: byte for byte what
// encoding/json writes for a Trace with SetEscapeHTML(false) and
// SetIndent("", "  "), trailing newline included (TestEncodeMatchesJSON
// checks it on random traces), written directly instead of compact JSON
// re-indented by a scanner (seen: a third of a trace's time at 90
// artifacts).
func appendTrace(b []byte, t *Trace) []byte {
	b = append(b, "{\n"...)
	b = appendField(b, 1, "version", t.Version, true)
	b = appendField(b, 1, "id", t.ID, true)
	b = appendField(b, 1, "scope", t.Scope, true)
	b = appendField(b, 1, "subject", t.Subject, true)
	b = appendField(b, 1, "subject_ref", t.SubjectRef, true)
	b = appendArtifacts(b, "artifacts", t.Artifacts)
	b = appendArtifacts(b, "mentions", t.Mentions)
	b = appendKey(b, 1, "already_erased")
	b = strconv.AppendInt(b, int64(t.Erased), 10)
	b = append(b, ",\n"...)
	b = appendKey(b, 1, "plan")
	switch {
	case t.Plan == nil:
		b = append(b, "null"...)
	case len(t.Plan) == 0:
		b = append(b, "[]"...)
	default:
		b = append(b, "[\n"...)
		for i, p := range t.Plan {
			b = append(b, "    {\n"...)
			b = appendField(b, 3, "store", p.Store, true)
			b = appendStrings(b, 3, "delete", p.Delete, true)
			b = appendStrings(b, 3, "kinds", p.Kinds, false)
			b = append(b, "    }"...)
			if i < len(t.Plan)-1 {
				b = append(b, ',')
			}
			b = append(b, '\n')
		}
		b = append(b, "  ]"...)
	}
	return append(b, "\n}\n"...)
}

func appendArtifacts(b []byte, name string, as []TraceArtifact) []byte {
	b = appendKey(b, 1, name)
	switch {
	case as == nil:
		return append(b, "null,\n"...)
	case len(as) == 0:
		return append(b, "[],\n"...)
	}
	b = append(b, "[\n"...)
	for i, a := range as {
		b = append(b, "    {\n"...)
		b = appendField(b, 3, "id", a.ID, true)
		b = appendField(b, 3, "kind", string(a.Kind), true)
		b = appendField(b, 3, "store", a.Store, true)
		b = appendField(b, 3, "key", a.Key, true)
		b = appendField(b, 3, "digest", a.Digest, true)
		b = appendStrings(b, 3, "derived_from", a.DerivedFrom, a.Owner != "")
		if a.Owner != "" {
			b = appendField(b, 3, "owner", a.Owner, false)
		}
		b = append(b, "    }"...)
		if i < len(as)-1 {
			b = append(b, ',')
		}
		b = append(b, '\n')
	}
	return append(b, "  ],\n"...)
}

func appendKey(b []byte, depth int, name string) []byte {
	for range depth {
		b = append(b, "  "...)
	}
	b = append(b, '"')
	b = append(b, name...)
	return append(b, `": `...)
}

func appendField(b []byte, depth int, name, v string, comma bool) []byte {
	b = appendKey(b, depth, name)
	b = appendString(b, v)
	if comma {
		b = append(b, ',')
	}
	return append(b, '\n')
}

func appendStrings(b []byte, depth int, name string, vs []string, comma bool) []byte {
	b = appendKey(b, depth, name)
	switch {
	case vs == nil:
		b = append(b, "null"...)
	case len(vs) == 0:
		b = append(b, "[]"...)
	default:
		b = append(b, "[\n"...)
		for i, v := range vs {
			for range depth + 1 {
				b = append(b, "  "...)
			}
			b = appendString(b, v)
			if i < len(vs)-1 {
				b = append(b, ',')
			}
			b = append(b, '\n')
		}
		for range depth {
			b = append(b, "  "...)
		}
		b = append(b, ']')
	}
	if comma {
		b = append(b, ',')
	}
	return append(b, '\n')
}

// appendString appends s as a JSON string: as is when every byte is
// printable ASCII other than a quote or backslash (ids, digests, most
// keys), else as encoding/json escapes it.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			enc.Encode(s) // a string always encodes
			return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
