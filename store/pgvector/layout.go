package pgvector

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	pgv "github.com/pgvector/pgvector-go"

	"github.com/amnesia-dev/amnesia/store/internal/pg"
)

// layout names the columns of one table layout.
type layout struct {
	name         string
	defaultTable string
	key          string // default layout: the text primary key
	embedding    string
	content      string
	metadata     string
	customID     bool // langchain: the table has custom_id (Python LangChain); set at open
	metaJSON     bool // langchain: cmetadata is json (langchaingo), not jsonb; set at open
}

var layouts = map[string]layout{
	SchemaDefault:   {name: SchemaDefault, defaultTable: DefaultTable, key: "id", embedding: "embedding", content: "content", metadata: "metadata"},
	SchemaLangChain: {name: SchemaLangChain, defaultTable: LangChainTable, embedding: "embedding", content: "document", metadata: "cmetadata"},
}

// check verifies that cols has what the layout needs.
func (l layout) check(cols map[string]pg.Column) error {
	need := map[string]string{l.embedding: "vector", l.content: "", l.metadata: "json"}
	if l.name == SchemaLangChain {
		need["uuid"] = "uuid"
	} else {
		need[l.key] = ""
	}
	for col, typ := range need {
		c, ok := cols[col]
		if !ok {
			return fmt.Errorf("no column %q (the %s layout needs it)", col, l.label())
		}
		if typ != "" && !strings.HasPrefix(c.Type, typ) {
			return fmt.Errorf("column %q is %s, want %s", col, c.Type, typ)
		}
	}
	return nil
}

func (l layout) label() string {
	if l.name == "" {
		return "default"
	}
	return l.name
}

// idsExpr is a text[] of the keys a row answers to.
func (l layout) idsExpr() string {
	switch {
	case l.name != SchemaLangChain:
		return "ARRAY[" + l.key + "]"
	case l.customID:
		return "array_remove(ARRAY[uuid::text, custom_id::text], NULL)"
	}
	return "ARRAY[uuid::text]"
}

// match returns a WHERE condition selecting the rows with the given keys,
// and its arguments (numbered from $1).
func (l layout) match(keys []string) (string, []any) {
	if l.name != SchemaLangChain {
		return l.key + " = ANY($1::text[])", []any{keys}
	}
	var uuids []string
	for _, k := range keys {
		if u, ok := canonicalUUID(k); ok {
			uuids = append(uuids, u)
		}
	}
	if uuids == nil {
		uuids = []string{}
	}
	if l.customID {
		return "(uuid = ANY($1::text[]::uuid[]) OR custom_id = ANY($2::text[]))", []any{uuids, keys}
	}
	return "uuid = ANY($1::text[]::uuid[])", []any{uuids}
}

// matches reports whether a row answering to ids is the record key.
func matches(ids []string, key string) bool {
	u, isUUID := canonicalUUID(key)
	for _, id := range ids {
		if id == key || isUUID && id == u {
			return true
		}
	}
	return false
}

// canonicalUUID returns s as PostgreSQL prints a uuid, when s is one
// (hyphenated or 32 hex digits, any case).
func canonicalUUID(s string) (string, bool) {
	h := strings.ToLower(s)
	if len(h) == 36 && h[8] == '-' && h[13] == '-' && h[18] == '-' && h[23] == '-' {
		h = strings.ReplaceAll(h, "-", "")
	}
	if len(h) != 32 || strings.Trim(h, "0123456789abcdef") != "" {
		return "", false
	}
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], true
}

// operator is the distance operator an index's operator class serves.
func operator(opclass string) string {
	switch opclass {
	case "vector_l2_ops":
		return "<->"
	case "vector_cosine_ops":
		return "<=>"
	case "vector_ip_ops":
		return "<#>"
	case "vector_l1_ops":
		return "<+>"
	}
	return ""
}

// OnDisk is a vector as pgvector stores it after the varlena header:
// int16 dim, int16 unused (0), then the float4 elements, in the server's
// byte order (little-endian on amd64, arm64 and wasm32).
func OnDisk(v []float32) []byte {
	b := make([]byte, 4+4*len(v))
	binary.LittleEndian.PutUint16(b, uint16(len(v)))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4+4*i:], math.Float32bits(f))
	}
	return b
}

// vectorText is v in pgvector's text input format (exact for float32).
func vectorText(v []float32) string { return pgv.NewVector(v).String() }

// parseVector parses pgvector's text output.
func parseVector(s string) ([]float32, error) {
	if len(s) < 2 {
		return nil, fmt.Errorf("parse vector: malformed")
	}
	if s == "[]" {
		return []float32{}, nil
	}
	var v pgv.Vector
	if err := v.Parse(s); err != nil {
		return nil, fmt.Errorf("parse vector: malformed")
	}
	return v.Slice(), nil
}
