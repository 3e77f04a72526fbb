package pg

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/amnesia-dev/amnesia/store"
)

// Field is a column, or a path inside a JSON column.
type Field struct {
	Column, JSON string
	Path         []string
}

// FieldOf converts a configured field; nil stays nil.
func FieldOf(f *store.Field) *Field {
	if f == nil {
		return nil
	}
	return &Field{Column: f.Column, JSON: f.JSON, Path: append([]string(nil), f.Path...)}
}

// Col is the column the field reads.
func (f Field) Col() string {
	if f.Column != "" {
		return f.Column
	}
	return f.JSON
}

// Expr is the field's value as text, for SQL.
func (f Field) Expr() string {
	if f.Column != "" {
		return Quote(f.Column) + "::text"
	}
	lits := make([]string, len(f.Path))
	for i, p := range f.Path {
		lits[i] = "'" + strings.ReplaceAll(p, "'", "''") + "'"
	}
	return "(" + Quote(f.JSON) + " #>> ARRAY[" + strings.Join(lits, ", ") + "]::text[])"
}

// String names the field for people: owner_id, or metadata_->subject.
func (f Field) String() string {
	if f.Column != "" {
		return f.Column
	}
	return f.JSON + "->" + strings.Join(f.Path, "->")
}

// Args collects a statement's arguments.
type Args []any

// Add appends v and returns its placeholder.
func (a *Args) Add(v any) string {
	*a = append(*a, v)
	return fmt.Sprintf("$%d", len(*a))
}

// Mapping is an application table as an adapter reads it: the key columns
// lineage's keys name rows by, the subject tag, the content columns, the
// parent link and the collections the store is kept to. Every statement an
// adapter runs on the table is built from it.
type Mapping struct {
	Label       string   // the preset's name, for messages
	Table       string   // as configured
	Key         string   // the configured key column; "" lets the adapter choose before BindColumns
	Keys        []string // the key columns a row answers to (set by the adapter or BindColumns)
	KeyTypes    []string // their types, set by BindColumns
	Subject     Field
	Content     []string
	Parent      *Field
	Collections []string // collection names (collection_id -> CollectionTable.uuid, .name)
	CollTable   string
}

// Apply lays the configured mapping m over the preset's fields; table is
// the store's table: key (mapping.table wins when they agree).
func (p *Mapping) Apply(table string, m *store.Mapping) error {
	if table != "" {
		p.Table = table
	}
	p.Content = append([]string(nil), p.Content...)
	if m == nil {
		return nil
	}
	if m.Table != "" {
		if table != "" && table != m.Table {
			return fmt.Errorf("table %q and mapping.table %q disagree: give one", table, m.Table)
		}
		p.Table = m.Table
	}
	for what, f := range map[string]*store.Field{"subject": m.Subject, "parent": m.Parent} {
		if err := f.Validate(what); err != nil {
			return err
		}
	}
	if m.Key != "" {
		p.Key = m.Key
	}
	if m.Subject != nil {
		p.Subject = *FieldOf(m.Subject)
	}
	if len(m.Content) > 0 {
		p.Content = append([]string(nil), m.Content...)
	}
	if m.Parent != nil {
		p.Parent = FieldOf(m.Parent)
	}
	if m.CollectionTable != "" {
		p.CollTable = m.CollectionTable
	}
	for _, n := range m.Collections {
		if n == "" {
			return fmt.Errorf("mapping.collections: an empty name")
		}
	}
	p.Collections = append([]string(nil), m.Collections...)
	return nil
}

// Validate checks what can be checked without the database.
func (p *Mapping) Validate() error {
	if p.Table == "" {
		return fmt.Errorf("the %s layout needs table (or mapping.table)", p.Label)
	}
	if _, err := ParseTable(p.Table); err != nil {
		return err
	}
	if len(p.Content) == 0 {
		return fmt.Errorf("mapping.content: name at least one content column")
	}
	if len(p.Collections) > 0 && p.CollTable == "" {
		return fmt.Errorf("mapping.collections needs mapping.collection_table (the table naming the collections: uuid, name)")
	}
	return nil
}

// IsText reports whether a column of type typ can hold content.
func IsText(typ string) bool {
	for _, p := range []string{"text", "character varying", "character", "json", "jsonb", "name"} {
		if typ == p || strings.HasPrefix(typ, p+"(") {
			return true
		}
	}
	return false
}

// Missing is the error for a mapped column the table lacks.
func (p *Mapping) Missing(col, role string) error {
	return fmt.Errorf("no column %q (the %s layout's %s)", col, p.Label, role)
}

// BindColumns checks cols (the table's columns) against the mapping and
// records the key columns' types. Errors name the column.
func (p *Mapping) BindColumns(cols map[string]Column) error {
	if len(p.Keys) == 0 && p.Key != "" {
		p.Keys = []string{p.Key}
	}
	if len(p.Keys) == 0 {
		return fmt.Errorf("the %s layout needs mapping.key", p.Label)
	}
	p.KeyTypes = nil
	for _, k := range p.Keys {
		c, ok := cols[k]
		if !ok {
			return p.Missing(k, "key")
		}
		p.KeyTypes = append(p.KeyTypes, c.Type)
	}
	for _, c := range p.Content {
		col, ok := cols[c]
		if !ok {
			return p.Missing(c, "content column")
		}
		if !IsText(col.Type) {
			return fmt.Errorf("column %q is %s, want text, varchar or json (content)", c, col.Type)
		}
	}
	for _, role := range []string{"subject", "parent"} {
		f := &p.Subject
		if role == "parent" {
			f = p.Parent
		}
		if f == nil {
			continue
		}
		col, ok := cols[f.Col()]
		if !ok {
			return p.Missing(f.Col(), role)
		}
		if f.JSON != "" && col.Type != "json" && col.Type != "jsonb" {
			return fmt.Errorf("column %q is %s, want json or jsonb (%s is a path inside it)", f.JSON, col.Type, role)
		}
	}
	if len(p.Collections) > 0 {
		c, ok := cols["collection_id"]
		if !ok {
			return p.Missing("collection_id", "collection link (mapping.collections)")
		}
		if c.Type != "uuid" {
			return fmt.Errorf("column %q is %s, want uuid (collection link)", "collection_id", c.Type)
		}
	}
	return nil
}

// BindCollections checks the collection table (uuid, name) when the
// mapping names collections.
func (p *Mapping) BindCollections(ctx context.Context, c *pgx.Conn) error {
	if len(p.Collections) == 0 {
		return nil
	}
	t, err := ParseTable(p.CollTable)
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
	cols, err := Columns(ctx, c, t)
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

// IDs is a text[] of the keys a row answers to.
func (p Mapping) IDs() string {
	parts := make([]string, len(p.Keys))
	for i, k := range p.Keys {
		parts[i] = Quote(k) + "::text"
	}
	return "array_remove(ARRAY[" + strings.Join(parts, ", ") + "]::text[], NULL)"
}

// Match is a condition selecting the rows with the given keys; a uuid key
// column matches keys in any case, hyphenated or not.
func (p Mapping) Match(a *Args, keys []string) string {
	var conds []string
	for i, k := range p.Keys {
		q := Quote(k)
		switch typ := p.KeyTypes[i]; {
		case typ == "uuid":
			uuids := []string{}
			for _, k := range keys {
				if u, ok := CanonicalUUID(k); ok {
					uuids = append(uuids, u)
				}
			}
			conds = append(conds, q+" = ANY("+a.Add(uuids)+"::text[]::uuid[])")
		case typ == "text" || strings.HasPrefix(typ, "character varying"):
			conds = append(conds, q+" = ANY("+a.Add(keys)+"::text[])")
		default:
			conds = append(conds, q+"::text = ANY("+a.Add(keys)+"::text[])")
		}
	}
	if len(conds) == 1 {
		return conds[0]
	}
	return "(" + strings.Join(conds, " OR ") + ")"
}

// Scope keeps a statement to the mapped collections; "TRUE" when the
// mapping names none.
func (p Mapping) Scope(a *Args) string {
	if len(p.Collections) == 0 {
		return "TRUE"
	}
	t, _ := ParseTable(p.CollTable)
	return "collection_id IN (SELECT uuid FROM " + t.Ident() + " WHERE name::text = ANY(" + a.Add(p.Collections) + "::text[]))"
}

// Where selects the rows with the given keys in the mapped collections.
func (p Mapping) Where(a *Args, keys []string) string {
	return p.Match(a, keys) + " AND " + p.Scope(a)
}

// Matches reports whether a row answering to ids is key.
func Matches(ids []string, key string) bool {
	u, isUUID := CanonicalUUID(key)
	for _, id := range ids {
		if id == key || isUUID && id == u {
			return true
		}
	}
	return false
}

// KeySet answers Matches for many keys at once, in time independent of
// how many: it maps each id a row can answer to with one of the keys (the
// key as written and, for a uuid, the form PostgreSQL prints, as Matches
// compares them) to those keys. Asking Matches of every key for every row
// of a table made reading the other rows (ReadEvidence) cost rows × keys.
type KeySet map[string][]string

// NewKeySet returns the KeySet of keys.
func NewKeySet(keys []string) KeySet {
	s := make(KeySet, len(keys))
	for _, k := range keys {
		s[k] = append(s[k], k)
		if u, ok := CanonicalUUID(k); ok && u != k {
			s[u] = append(s[u], k)
		}
	}
	return s
}

// Holds reports whether a row answering to ids is one of the set's keys:
// whether Matches(ids, k) holds for some key k of the set.
func (s KeySet) Holds(ids []string) bool {
	for _, id := range ids {
		if len(s[id]) > 0 {
			return true
		}
	}
	return false
}

// HoldsRaw is Holds of ids as the server sent them: no string is made of
// them.
func (s KeySet) HoldsRaw(ids [][]byte) bool {
	for _, id := range ids {
		if len(s[string(id)]) > 0 {
			return true
		}
	}
	return false
}

// Of calls fn with each key k of the set for which Matches(ids, k) holds
// (a key may come more than once).
func (s KeySet) Of(ids []string, fn func(key string)) {
	for _, id := range ids {
		for _, k := range s[id] {
			fn(k)
		}
	}
}

// CanonicalUUID returns s as PostgreSQL prints a uuid, when s is one
// (hyphenated or 32 hex digits, any case).
func CanonicalUUID(s string) (string, bool) {
	h := strings.ToLower(s)
	if len(h) == 36 && h[8] == '-' && h[13] == '-' && h[18] == '-' && h[23] == '-' {
		h = strings.ReplaceAll(h, "-", "")
	}
	if len(h) != 32 || strings.Trim(h, "0123456789abcdef") != "" {
		return "", false
	}
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], true
}
