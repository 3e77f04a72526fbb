package pgvector

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	pgv "github.com/pgvector/pgvector-go"

	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/store/internal/pg"
)

// layout is a table's mapping (pg.Mapping: keys, subject, content, parent,
// collections) with its vector column, resolved from a preset and the
// configured mapping; bind completes it from the table's columns.
type layout struct {
	pg.Mapping
	preset string
	vector string
	create bool // the adapter may create the table (the default preset, unmapped)
}

// Presets (store.Config.Preset; Schema is the older name).
const (
	PresetDefault     = ""
	PresetLangChain   = "langchain"
	PresetLangChainGo = "langchaingo"
	PresetLlamaIndex  = "llamaindex"
)

func presetLayout(name string) (layout, bool) {
	switch name {
	case PresetDefault:
		return layout{Mapping: pg.Mapping{Label: "default", Table: DefaultTable, Key: "id", Subject: pg.Field{JSON: "metadata", Path: []string{"subject"}},
			Content: []string{"content"}}, vector: "embedding"}, true
	case PresetLangChain, PresetLangChainGo:
		// Python LangChain (langchain-postgres: id varchar; langchain_community:
		// uuid and custom_id) and langchaingo (uuid): bind picks the key.
		return layout{Mapping: pg.Mapping{Label: name, Table: LangChainTable, Subject: pg.Field{JSON: "cmetadata", Path: []string{"subject"}},
			Content: []string{"document"}, CollTable: LangChainCollectionTable}, vector: "embedding"}, true
	case PresetLlamaIndex:
		// LlamaIndex PGVectorStore: data_<table_name> (id bigserial, text,
		// metadata_ json or jsonb, node_id, embedding); node_id is the key,
		// the parent is metadata_->>'ref_doc_id'.
		return layout{Mapping: pg.Mapping{Label: name, Key: "node_id", Subject: pg.Field{JSON: "metadata_", Path: []string{"subject"}},
			Content: []string{"text"}, Parent: &pg.Field{JSON: "metadata_", Path: []string{"ref_doc_id"}}}, vector: "embedding"}, true
	}
	return layout{}, false
}

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
	l, ok := presetLayout(name)
	if !ok {
		return layout{}, fmt.Errorf("preset must be %s, got %q", presetNames, name)
	}
	l.preset = name
	l.create = name == PresetDefault && c.Mapping == nil
	if err := l.Apply(c.Table, c.Mapping); err != nil {
		return layout{}, err
	}
	if m := c.Mapping; m != nil {
		if m.Vector != "" {
			l.vector = m.Vector
		}
		// LangChain's collection table is the embedding table's sibling:
		// <prefix>_embedding -> <prefix>_collection.
		if l.langchain() && m.CollectionTable == "" && strings.HasSuffix(l.Table, "_embedding") {
			l.CollTable = strings.TrimSuffix(l.Table, "_embedding") + "_collection"
		}
	}
	if l.Table == "" {
		return layout{}, fmt.Errorf("the %s preset needs table (LlamaIndex: data_<table_name>, e.g. table: data_docs)", l.Label)
	}
	if err := l.Validate(); err != nil {
		return layout{}, err
	}
	return l, nil
}

func (l layout) label() string { return l.Label }

func (l layout) langchain() bool { return l.preset == PresetLangChain || l.preset == PresetLangChainGo }

// bind checks cols (the table's columns) against the layout and completes
// it: the key columns and their types. Errors name the column.
func (l *layout) bind(cols map[string]pg.Column) error {
	has := func(c string) bool { _, ok := cols[c]; return ok }
	switch {
	case l.Key != "":
		l.Keys = []string{l.Key}
	case l.langchain() && has("id"): // langchain-postgres
		l.Keys = []string{"id"}
	case l.langchain() && has("custom_id"): // langchain_community
		l.Keys = []string{"uuid", "custom_id"}
	case l.langchain():
		l.Keys = []string{"uuid"}
	}
	v, ok := cols[l.vector]
	if !ok {
		return l.Missing(l.vector, "vector column")
	}
	if !strings.HasPrefix(v.Type, "vector") {
		return fmt.Errorf("column %q is %s, want vector (halfvec, sparsevec and bit are not read: the physical probe looks for float4 vectors)", l.vector, v.Type)
	}
	return l.BindColumns(cols)
}

// matches reports whether a row answering to ids is the record key.
func matches(ids []string, key string) bool { return pg.Matches(ids, key) }

func canonicalUUID(s string) (string, bool) { return pg.CanonicalUUID(s) }

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

// onDiskFromSend appends to dst the on-disk encoding (OnDisk) of the
// vector whose binary output (pgvector's vector_send: dimensions and an
// unused field as big-endian 16-bit integers, then each element as a
// big-endian float4) is b: the same fields, little-endian. A vector of no
// dimensions appends nothing.
func onDiskFromSend(dst, b []byte) ([]byte, error) {
	if len(b) < 4 {
		return dst, fmt.Errorf("parse vector: %d bytes of binary output, want at least 4", len(b))
	}
	dim := int(binary.BigEndian.Uint16(b))
	if len(b) != 4+4*dim {
		return dst, fmt.Errorf("parse vector: %d bytes of binary output for %d dimensions", len(b), dim)
	}
	if dim == 0 {
		return dst, nil
	}
	n := len(dst)
	dst = append(dst, b...)
	out := dst[n:]
	binary.LittleEndian.PutUint16(out, uint16(dim))
	binary.LittleEndian.PutUint16(out[2:], binary.BigEndian.Uint16(b[2:]))
	for i := 4; i < len(out); i += 4 {
		binary.LittleEndian.PutUint32(out[i:], binary.BigEndian.Uint32(b[i:]))
	}
	return dst, nil
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
