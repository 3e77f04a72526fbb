package sqlitex

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/amnesia-dev/amnesia/store"
)

// Mapping is an application's SQLite table as an adapter reads it: the key
// column lineage's keys name rows by, the subject tag (a column, or a path
// inside a JSON text column), the content columns and the parent link.
type Mapping struct {
	Table   string
	Key     string
	Subject store.Field
	Content []string
	Parent  *store.Field
}

// Quote is name as an SQLite identifier.
func Quote(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// Expr is the field's value as SQL: the column, or json_extract of the path.
func Expr(f store.Field) string {
	if f.Column != "" {
		return Quote(f.Column)
	}
	var b strings.Builder
	b.WriteString("$")
	for _, p := range f.Path {
		b.WriteString(`."` + strings.ReplaceAll(p, `"`, `\"`) + `"`)
	}
	return "json_extract(" + Quote(f.JSON) + ", '" + strings.ReplaceAll(b.String(), "'", "''") + "')"
}

// Apply lays the configured mapping over m (the adapter's default layout).
func (m *Mapping) Apply(c *store.Mapping) error {
	m.Content = append([]string(nil), m.Content...)
	if c == nil {
		return nil
	}
	if c.Vector != "" || len(c.Collections) > 0 || c.CollectionTable != "" {
		return fmt.Errorf("mapping: vector, collections and collection_table are not read by a SQLite document store")
	}
	for what, f := range map[string]*store.Field{"subject": c.Subject, "parent": c.Parent} {
		if err := f.Validate(what); err != nil {
			return err
		}
	}
	if c.Table != "" {
		m.Table = c.Table
	}
	if c.Key != "" {
		m.Key = c.Key
	}
	if c.Subject != nil {
		m.Subject = *c.Subject
	}
	if len(c.Content) > 0 {
		m.Content = append([]string(nil), c.Content...)
	}
	if c.Parent != nil {
		p := *c.Parent
		m.Parent = &p
	}
	return nil
}

// textual reports whether a declared SQLite type can hold text (TEXT
// affinity, or none declared).
func textual(typ string) bool {
	t := strings.ToUpper(typ)
	return t == "" || strings.Contains(t, "CHAR") || strings.Contains(t, "CLOB") || strings.Contains(t, "TEXT") || strings.Contains(t, "JSON")
}

// Bind checks the mapping against the table in db. Errors name the table
// and the column.
func (m *Mapping) Bind(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, `SELECT name, type FROM pragma_table_info(?)`, m.Table)
	if err != nil {
		return fmt.Errorf("read the columns of %s: %w", m.Table, err)
	}
	defer rows.Close()
	cols := map[string]string{}
	for rows.Next() {
		var n, t string
		if err := rows.Scan(&n, &t); err != nil {
			return err
		}
		cols[n] = t
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(cols) == 0 {
		return fmt.Errorf("no table %s (set mapping.table)", m.Table)
	}
	need := func(c, role string) (string, error) {
		t, ok := cols[c]
		if !ok {
			return "", fmt.Errorf("table %s has no column %q (the mapping's %s)", m.Table, c, role)
		}
		return t, nil
	}
	if _, err := need(m.Key, "key"); err != nil {
		return err
	}
	for _, c := range m.Content {
		t, err := need(c, "content column")
		if err != nil {
			return err
		}
		if !textual(t) {
			return fmt.Errorf("table %s: column %q is %s, want TEXT (content)", m.Table, c, t)
		}
	}
	for role, f := range map[string]*store.Field{"subject": &m.Subject, "parent": m.Parent} {
		if f == nil {
			continue
		}
		col := f.Column
		if col == "" {
			col = f.JSON
		}
		t, err := need(col, role)
		if err != nil {
			return err
		}
		if f.JSON != "" && !textual(t) {
			return fmt.Errorf("table %s: column %q is %s, want TEXT holding JSON (%s is a path inside it)", m.Table, col, t, role)
		}
	}
	return nil
}
