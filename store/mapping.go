package store

import (
	"fmt"
	"strings"
)

// Mapping describes an application's own table to a store adapter: which
// column is the key lineage records, where the subject tag is, which columns
// hold content and the vector, and the parent link. A preset (Config.Preset)
// fills it for a framework's layout; fields set here override the preset's.
type Mapping struct {
	Table   string   `yaml:"table,omitempty"`   // the table, schema-qualified or not
	Key     string   `yaml:"key,omitempty"`     // the column lineage's keys name rows by
	Subject *Field   `yaml:"subject,omitempty"` // where the subject tag is
	Content []string `yaml:"content,omitempty"` // columns whose text the physical probe looks for
	Vector  string   `yaml:"vector,omitempty"`  // the vector column
	Parent  *Field   `yaml:"parent,omitempty"`  // the parent document's id, optional
	// Collections restricts the store to the rows of these named
	// collections (LangChain: collection_id -> <collection table>.name);
	// rows of other collections are never read, probed or deleted by key.
	Collections     []string `yaml:"collections,omitempty"`
	CollectionTable string   `yaml:"collection_table,omitempty"` // default: the preset's
}

// Field is a column, or a path inside a JSON column.
type Field struct {
	Column string   `yaml:"column,omitempty"`
	JSON   string   `yaml:"json,omitempty"`
	Path   []string `yaml:"path,omitempty"`
}

// Validate checks f's shape: a column, or a JSON column and a path.
func (f *Field) Validate(what string) error {
	switch {
	case f == nil:
		return nil
	case f.Column != "" && (f.JSON != "" || len(f.Path) > 0):
		return fmt.Errorf("mapping.%s: give either column or json and path, not both", what)
	case f.Column == "" && f.JSON == "":
		return fmt.Errorf("mapping.%s: give column: <name>, or json: <column> with path: [keys]", what)
	case f.JSON != "" && len(f.Path) == 0:
		return fmt.Errorf("mapping.%s: json: %s needs path: [keys] (e.g. path: [subject])", what, f.JSON)
	}
	for _, p := range f.Path {
		if p == "" {
			return fmt.Errorf("mapping.%s: path has an empty key", what)
		}
	}
	return nil
}

// String names f for people: owner_id, or metadata_->subject.
func (f *Field) String() string {
	if f == nil {
		return ""
	}
	if f.Column != "" {
		return f.Column
	}
	return f.JSON + "->" + strings.Join(f.Path, "->")
}
