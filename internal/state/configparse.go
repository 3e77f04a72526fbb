package state

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/store"
)

// fieldError is a Validate error about one key: key is its path
// ("certificate_validity", "stores[1].dimensions", "stores[1]").
type fieldError struct {
	key string
	msg string
}

func (e *fieldError) Error() string { return e.msg }

func fieldErr(key, format string, a ...any) error {
	return &fieldError{key: key, msg: fmt.Sprintf(format, a...)}
}

// storeKeys are the keys of a store entry, as store.Config names them.
var storeKeys = yamlKeys(reflect.TypeOf(store.Config{}))

// storeKeyIn returns ".<key>" for the first store key an adapter's
// validation message names ("dimensions must be 1..16000"), "" if none.
func storeKeyIn(msg string) string {
	best, at := "", len(msg)+1
	for _, k := range storeKeys {
		if loc := regexp.MustCompile(`\b` + regexp.QuoteMeta(k) + `\b`).FindStringIndex(msg); loc != nil && loc[0] < at {
			best, at = k, loc[0]
		}
	}
	if best == "" {
		return ""
	}
	return "." + best
}

// parseConfig decodes amnesia.yaml strictly and validates it. Every error
// names the key and its line.
func parseConfig(b []byte) (*Config, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	if err := expandEnv(&doc); err != nil {
		return nil, err
	}
	p := &configParser{lines: map[string]int{}}
	var c Config
	if len(doc.Content) > 0 {
		root := doc.Content[0]
		p.walk(root, reflect.TypeOf(c), "")
		p.storeTypes(root)
		if len(p.errs) > 0 {
			return nil, p.err()
		}
		if err := root.Decode(&c); err != nil {
			return nil, err
		}
	}
	if err := c.Validate(); err != nil {
		var fe *fieldError
		if errors.As(err, &fe) {
			if line := p.line(fe.key); line > 0 {
				return nil, fmt.Errorf("line %d: %w", line, err)
			}
		}
		return nil, err
	}
	return &c, nil
}

type configParser struct {
	lines map[string]int // key path -> line
	errs  []lineError
}

type lineError struct {
	line int
	msg  string
}

func (p *configParser) add(n *yaml.Node, format string, a ...any) {
	p.errs = append(p.errs, lineError{n.Line, fmt.Sprintf(format, a...)})
}

func (p *configParser) err() error {
	sort.SliceStable(p.errs, func(i, j int) bool { return p.errs[i].line < p.errs[j].line })
	msgs := make([]string, len(p.errs))
	for i, e := range p.errs {
		msgs[i] = fmt.Sprintf("line %d: %s", e.line, e.msg)
	}
	if len(msgs) == 1 {
		return errors.New(msgs[0])
	}
	return errors.New(strings.Join(msgs, "\n  "))
}

// line returns the line of key, or of the nearest enclosing key recorded.
func (p *configParser) line(key string) int {
	for key != "" {
		if l, ok := p.lines[key]; ok {
			return l
		}
		i := strings.LastIndexAny(key, ".[")
		if i < 0 {
			break
		}
		key = key[:i]
	}
	return 0
}

// walk checks node against t: known keys only, values of the right kind.
func (p *configParser) walk(n *yaml.Node, t reflect.Type, path string) {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Tag == "!!null" {
		return
	}
	where := path
	if where == "" {
		where = "the configuration"
	}
	switch t.Kind() {
	case reflect.Pointer:
		p.walk(n, t.Elem(), path)
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			p.add(n, "%s: want a mapping of keys (%s), got %s", where, strings.Join(yamlKeys(t), ", "), kindName(n))
			return
		}
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value == "<<" { // a merge key: its mapping's keys are this one's
				p.walk(v, t, path)
				continue
			}
			f, ok := fields[k.Value]
			if !ok {
				msg := "unknown key " + k.Value
				if path != "" {
					msg += " in " + path
				}
				if s := suggest(k.Value, yamlKeys(t)); s != "" {
					msg += " (did you mean " + s + "?)"
				} else {
					msg += " (known: " + strings.Join(yamlKeys(t), ", ") + ")"
				}
				p.add(k, "%s", msg)
				continue
			}
			sub := k.Value
			if path != "" {
				sub = path + "." + k.Value
			}
			p.lines[sub] = k.Line
			p.walk(v, f.Type, sub)
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			p.add(n, "%s: want a list, got %s", where, kindName(n))
			return
		}
		for i, item := range n.Content {
			sub := fmt.Sprintf("%s[%d]", path, i)
			p.lines[sub] = item.Line
			p.walk(item, t.Elem(), sub)
		}
	case reflect.Float64:
		if n.Kind != yaml.ScalarNode || (n.Tag != "!!float" && n.Tag != "!!int") {
			p.add(n, "%s: want a number, got %s", where, kindName(n))
		}
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			p.add(n, "%s: want a string, got %s", where, kindName(n))
		}
	case reflect.Int, reflect.Int64, reflect.Int32:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
			p.add(n, "%s: want a whole number, got %s", where, kindName(n))
		}
	}
}

// storeTypes refuses keys that a store's type does not read.
func (p *configParser) storeTypes(root *yaml.Node) {
	stores := mapValue(root, "stores")
	if stores == nil || stores.Kind != yaml.SequenceNode {
		return
	}
	for i, item := range stores.Content {
		if item.Kind != yaml.MappingNode {
			continue
		}
		typ := mapValue(item, "type")
		if typ == nil || typ.Kind != yaml.ScalarNode {
			continue
		}
		keys := store.Keys(typ.Value)
		if keys == nil {
			continue // an unknown type: Validate says so
		}
		allowed := map[string]bool{}
		for _, k := range keys {
			allowed[k] = true
		}
		// owner: is read by every store that lives in files (its type
		// reads a path); validateOwners says why elsewhere.
		allowed["owner"] = allowed["path"]
		for j := 0; j+1 < len(item.Content); j += 2 {
			k := item.Content[j]
			if k.Value == "nearby" {
				continue // read by the saga for every type (store/similar.go)
			}
			if _, known := yamlFields(reflect.TypeOf(store.Config{}))[k.Value]; known && !allowed[k.Value] {
				p.add(k, "stores[%d]: key %s is not read by type %s (its keys: %s)", i, k.Value, typ.Value, strings.Join(keys, ", "))
			}
		}
	}
}

func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!str":
			return fmt.Sprintf("the string %q", n.Value)
		case "!!bool":
			return "the boolean " + n.Value
		case "!!float":
			return "the number " + n.Value
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "nothing"
}

// yamlFields maps t's yaml keys to its fields.
func yamlFields(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f
	}
	return out
}

// yamlKeys returns t's yaml keys in field order.
func yamlKeys(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out = append(out, name)
	}
	return out
}

// suggest returns the known key closest to k, when it is close enough to be
// a typo: at most 2 edits, or a third of the key's length.
func suggest(k string, known []string) string {
	best, bestD := "", -1
	for _, c := range known {
		d := editDistance(strings.ToLower(k), c)
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	if bestD >= 0 && (bestD <= 2 || bestD <= len(k)/3) {
		return best
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// PathChange is one relative path ResolvePaths made absolute.
type PathChange struct {
	Key      string // e.g. "stores[0].path" or "ledger"
	Store    string // the store's name, "" for the ledger
	From, To string
}

// ResolvePaths rewrites every relative path of the configuration (a store's
// path and data_dir, a SQLite ledger) as an absolute path resolved against
// the directory of the file it was read from, and says what it changed. A
// configuration copied elsewhere (`amnesia init --config`) then still names
// the same files.
func (c *Config) ResolvePaths() []PathChange {
	if c.dir == "" {
		return nil
	}
	var out []PathChange
	abs := func(key, name string, p *string) {
		if *p == "" || filepath.IsAbs(*p) {
			return
		}
		to := filepath.Join(c.dir, *p)
		out = append(out, PathChange{Key: key, Store: name, From: *p, To: to})
		*p = to
	}
	for i := range c.Stores {
		s := &c.Stores[i]
		abs(fmt.Sprintf("stores[%d].path", i), s.Name, &s.Path)
		abs(fmt.Sprintf("stores[%d].data_dir", i), s.Name, &s.DataDir)
	}
	if c.Ledger != "" && !lineage.IsPostgresDSN(c.Ledger) {
		abs("ledger", "", &c.Ledger)
	}
	c.changes = append(c.changes, out...)
	return out
}

// Source returns the configuration as it is to be written into a state
// directory. A configuration read from a file keeps that file's text, with
// $VAR references not expanded (a DSN's password or a webhook secret given
// as $VAR stays in the environment, never in the copy) and comments kept;
// only the relative paths ResolvePaths made absolute are replaced. A path
// that itself used $VAR is written as it was: it is expanded again on
// every load. Other configurations are encoded from their fields.
func (c *Config) Source() ([]byte, error) {
	if c.raw == nil {
		return c.Marshal()
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(c.raw, &doc); err != nil || len(doc.Content) == 0 {
		return nil, fmt.Errorf("copy configuration: %w", err)
	}
	root := doc.Content[0]
	for _, ch := range c.changes {
		var n *yaml.Node
		switch {
		case ch.Key == "ledger":
			n = mapValue(root, "ledger")
		default:
			var i int
			var field string
			if _, err := fmt.Sscanf(ch.Key, "stores[%d].", &i); err != nil {
				continue
			}
			field = ch.Key[strings.Index(ch.Key, "].")+2:]
			if st := mapValue(root, "stores"); st != nil && st.Kind == yaml.SequenceNode && i < len(st.Content) {
				n = mapValue(st.Content[i], field)
			}
		}
		if n == nil || n.Kind != yaml.ScalarNode || strings.Contains(n.Value, "$") {
			continue
		}
		n.Value, n.Style = ch.To, 0
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("copy configuration: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("copy configuration: %w", err)
	}
	return buf.Bytes(), nil
}
