package pgvector

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/jackc/pgx/v5"
	pgv "github.com/pgvector/pgvector-go"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/internal/pg"
)

// field is a column, or a path inside a JSON column.
type field struct {
	column, json string
	path         []string
}

func fieldOf(f *store.Field) *field {
	if f == nil {
		return nil
	}
	return &field{column: f.Column, json: f.JSON, path: f.Path}
}

// col is the column the field reads.
func (f field) col() string {
	if f.column != "" {
		return f.column
	}
	return f.json
}

// expr is the field's value as text, for SQL.
func (f field) expr() string {
	if f.column != "" {
		return pg.Quote(f.column) + "::text"
	}
	lits := make([]string, len(f.path))
	for i, p := range f.path {
		lits[i] = "'" + strings.ReplaceAll(p, "'", "''") + "'"
	}
	return "(" + pg.Quote(f.json) + " #>> ARRAY[" + strings.Join(lits, ", ") + "]::text[])"
}

func (f field) String() string {
	if f.column != "" {
		return f.column
	}
	return f.json + "->" + strings.Join(f.path, "->")
}

// layout is a table's mapping, resolved from a preset and the configured
// mapping; bind completes it from the table's columns.
type layout struct {
	preset      string
	table       string
	key         string   // configured key column; "" lets bind choose (langchain)
	keys        []string // the key columns a row answers to, set by bind
	keyTypes    []string // their types, set by bind
	subject     field
	content     []string
	vector      string
	parent      *field
	collections []string
	collTable   string
	create      bool // the adapter may create the table (the default preset, unmapped)
}

// Presets (store.Config.Preset; Schema is the older name).
const (
	PresetDefault     = ""
	PresetLangChain   = "langchain"
	PresetLangChainGo = "langchaingo"
	PresetLlamaIndex  = "llamaindex"
)

var presets = map[string]layout{
	PresetDefault: {table: DefaultTable, key: "id", subject: field{json: "metadata", path: []string{"subject"}},
		content: []string{"content"}, vector: "embedding"},
	// Python LangChain (langchain-postgres: id varchar; langchain_community:
	// uuid and custom_id) and langchaingo (uuid): bind picks the key.
	PresetLangChain: {table: LangChainTable, subject: field{json: "cmetadata", path: []string{"subject"}},
		content: []string{"document"}, vector: "embedding", collTable: LangChainCollectionTable},
	// LlamaIndex PGVectorStore: data_<table_name> (id bigserial, text,
	// metadata_ json or jsonb, node_id, embedding); node_id is the key, the
	// parent is metadata_->>'ref_doc_id'.
	PresetLlamaIndex: {key: "node_id", subject: field{json: "metadata_", path: []string{"subject"}},
		content: []string{"text"}, vector: "embedding", parent: &field{json: "metadata_", path: []string{"ref_doc_id"}}},
}

func init() { presets[PresetLangChainGo] = presets[PresetLangChain] }

// presetNames lists the presets for messages.
const presetNames = `"default", "langchain", "langchaingo" or "llamaindex"`

// resolve returns c's layout: its preset, with the mapping's fields over it.
func resolve(c store.Config) (layout, error) {
	name := c.Preset
	if name == "" {
		name = c.Schema
	}
	if c.Preset != "" && c.Schema != "" && c.Preset != c.Schema {
		return layout{}, fmt.Errorf("schema %q and preset %q disagree: give only preset", c.Schema, c.Preset)
	}
	if name == "default" {
		name = PresetDefault
	}
	base, ok := presets[name]
	if !ok {
		return layout{}, fmt.Errorf("preset must be %s, got %q", presetNames, name)
	}
	l := base
	l.preset = name
	l.content = append([]string(nil), base.content...)
	l.create = name == PresetDefault && c.Mapping == nil
	if c.Table != "" {
		l.table = c.Table
	}
	if m := c.Mapping; m != nil {
		if m.Table != "" {
			if c.Table != "" && c.Table != m.Table {
				return layout{}, fmt.Errorf("table %q and mapping.table %q disagree: give one", c.Table, m.Table)
			}
			l.table = m.Table
		}
		for what, f := range map[string]*store.Field{"subject": m.Subject, "parent": m.Parent} {
			if err := f.Validate(what); err != nil {
				return layout{}, err
			}
		}
		if m.Key != "" {
			l.key = m.Key
		}
		if m.Subject != nil {
			l.subject = *fieldOf(m.Subject)
		}
		if len(m.Content) > 0 {
			l.content = append([]string(nil), m.Content...)
		}
		if m.Vector != "" {
			l.vector = m.Vector
		}
		if m.Parent != nil {
			l.parent = fieldOf(m.Parent)
		}
		if m.CollectionTable != "" {
			l.collTable = m.CollectionTable
		}
		for _, n := range m.Collections {
			if n == "" {
				return layout{}, fmt.Errorf("mapping.collections: an empty name")
			}
		}
		l.collections = append([]string(nil), m.Collections...)
		// LangChain's collection table is the embedding table's sibling:
		// <prefix>_embedding -> <prefix>_collection.
		if l.langchain() && m.CollectionTable == "" && strings.HasSuffix(l.table, "_embedding") {
			l.collTable = strings.TrimSuffix(l.table, "_embedding") + "_collection"
		}
		if len(l.collections) > 0 && l.collTable == "" {
			return layout{}, fmt.Errorf("mapping.collections needs mapping.collection_table (the table naming the collections: uuid, name)")
		}
	}
	if l.table == "" {
		return layout{}, fmt.Errorf("the %s preset needs table (LlamaIndex: data_<table_name>, e.g. table: data_docs)", l.label())
	}
	if _, err := pg.ParseTable(l.table); err != nil {
		return layout{}, err
	}
	return l, nil
}

func (l layout) label() string {
	if l.preset == "" {
		return "default"
	}
	return l.preset
}

func (l layout) langchain() bool { return l.preset == PresetLangChain || l.preset == PresetLangChainGo }

// textTypes are the column types the content may have.
func isText(typ string) bool {
	for _, p := range []string{"text", "character varying", "character", "json", "jsonb", "name"} {
		if typ == p || strings.HasPrefix(typ, p+"(") {
			return true
		}
	}
	return false
}

// bind checks cols (the table's columns) against the layout and completes
// it: the key columns and their types. Errors name the column.
func (l *layout) bind(cols map[string]pg.Column) error {
	has := func(c string) bool { _, ok := cols[c]; return ok }
	missing := func(c, role string) error {
		return fmt.Errorf("no column %q (the %s layout's %s)", c, l.label(), role)
	}
	switch {
	case l.key != "":
		l.keys = []string{l.key}
	case l.langchain() && has("id"): // langchain-postgres
		l.keys = []string{"id"}
	case l.langchain() && has("custom_id"): // langchain_community
		l.keys = []string{"uuid", "custom_id"}
	case l.langchain():
		l.keys = []string{"uuid"}
	}
	l.keyTypes = nil
	for _, k := range l.keys {
		c, ok := cols[k]
		if !ok {
			return missing(k, "key")
		}
		l.keyTypes = append(l.keyTypes, c.Type)
	}
	v, ok := cols[l.vector]
	if !ok {
		return missing(l.vector, "vector column")
	}
	if !strings.HasPrefix(v.Type, "vector") {
		return fmt.Errorf("column %q is %s, want vector (halfvec, sparsevec and bit are not read: the physical probe looks for float4 vectors)", l.vector, v.Type)
	}
	for _, c := range l.content {
		col, ok := cols[c]
		if !ok {
			return missing(c, "content column")
		}
		if !isText(col.Type) {
			return fmt.Errorf("column %q is %s, want text, varchar or json (content)", c, col.Type)
		}
	}
	fields := map[string]*field{"subject": &l.subject, "parent": l.parent}
	for _, role := range []string{"subject", "parent"} {
		f := fields[role]
		if f == nil {
			continue
		}
		col, ok := cols[f.col()]
		if !ok {
			return missing(f.col(), role)
		}
		if f.json != "" && col.Type != "json" && col.Type != "jsonb" {
			return fmt.Errorf("column %q is %s, want json or jsonb (%s is a path inside it)", f.json, col.Type, role)
		}
	}
	if len(l.collections) > 0 {
		c, ok := cols["collection_id"]
		if !ok {
			return missing("collection_id", "collection link (mapping.collections)")
		}
		if c.Type != "uuid" {
			return fmt.Errorf("column %q is %s, want uuid (collection link)", "collection_id", c.Type)
		}
	}
	return nil
}

// bindCollections checks the collection table (uuid, name) when the
// mapping names collections.
func (l *layout) bindCollections(ctx context.Context, c *pgx.Conn) error {
	if len(l.collections) == 0 {
		return nil
	}
	t, err := pg.ParseTable(l.collTable)
	if err != nil {
		return fmt.Errorf("collection_table: %w", err)
	}
	var exists bool
	if err := c.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, t.Ident()).Scan(&exists); err != nil {
		return fmt.Errorf("look up collection table: %w", err)
	}
	if !exists {
		return fmt.Errorf("collection table %s: it does not exist (set mapping.collection_table)", t)
	}
	cols, err := pg.Columns(ctx, c, t)
	if err != nil {
		return err
	}
	for _, n := range []string{"uuid", "name"} {
		if _, ok := cols[n]; !ok {
			return fmt.Errorf("collection table %s: no column %q", t, n)
		}
	}
	return nil
}

// args collects a statement's arguments.
type args []any

func (a *args) add(v any) string {
	*a = append(*a, v)
	return fmt.Sprintf("$%d", len(*a))
}

// idsExpr is a text[] of the keys a row answers to.
func (l layout) idsExpr() string {
	parts := make([]string, len(l.keys))
	for i, k := range l.keys {
		parts[i] = pg.Quote(k) + "::text"
	}
	return "array_remove(ARRAY[" + strings.Join(parts, ", ") + "]::text[], NULL)"
}

// match is a condition selecting the rows with the given keys.
func (l layout) match(a *args, keys []string) string {
	var conds []string
	for i, k := range l.keys {
		q := pg.Quote(k)
		switch typ := l.keyTypes[i]; {
		case typ == "uuid":
			uuids := []string{}
			for _, k := range keys {
				if u, ok := canonicalUUID(k); ok {
					uuids = append(uuids, u)
				}
			}
			conds = append(conds, q+" = ANY("+a.add(uuids)+"::text[]::uuid[])")
		case typ == "text" || strings.HasPrefix(typ, "character varying"):
			conds = append(conds, q+" = ANY("+a.add(keys)+"::text[])")
		default:
			conds = append(conds, q+"::text = ANY("+a.add(keys)+"::text[])")
		}
	}
	if len(conds) == 1 {
		return conds[0]
	}
	return "(" + strings.Join(conds, " OR ") + ")"
}

// scope is the condition that keeps a statement to the mapped collections,
// "TRUE" when the mapping names none.
func (l layout) scope(a *args) string {
	if len(l.collections) == 0 {
		return "TRUE"
	}
	t, _ := pg.ParseTable(l.collTable)
	return "collection_id IN (SELECT uuid FROM " + t.Ident() + " WHERE name::text = ANY(" + a.add(l.collections) + "::text[]))"
}

// where selects the rows with the given keys in the mapped collections.
func (l layout) where(a *args, keys []string) string {
	return l.match(a, keys) + " AND " + l.scope(a)
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
