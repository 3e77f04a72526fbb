package state

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Unknown keys, keys a store's type does not read, wrong types and
// impossible values are errors that name the key and its line.
func TestStrictConfig(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"misspelt store key", "version: 1\nstores:\n  - name: pg\n    type: postgres\n    dsn: postgres://h/db\n    lock_timout: 5s\n",
			[]string{"line 6: unknown key lock_timout in stores[0] (did you mean lock_timeout?)"}},
		{"misspelt top key", "version: 1\ncertificate_validty: 10h\n",
			[]string{"line 2: unknown key certificate_validty (did you mean certificate_validity?)"}},
		{"far from anything", "version: 1\nfavourite_colour: blue\n",
			[]string{"line 2: unknown key favourite_colour (known: version, scope"}},
		{"wrong type", "version: 1\nstores:\n  - name: v\n    type: sqlite-vec\n    path: v.db\n    dimensions: many\n",
			[]string{`line 6: stores[0].dimensions: want a whole number, got the string "many"`}},
		{"list for a string", "version: 1\nscope: [a, b]\n",
			[]string{"line 2: scope: want a string, got a list"}},
		{"stores not a list", "version: 1\nstores:\n  name: x\n",
			[]string{"line 3: stores: want a list, got a mapping"}},
		{"key of another type", "version: 1\nstores:\n  - name: d\n    type: sqlite-doc\n    path: d.db\n    dimensions: 16\n",
			[]string{"line 6: stores[0]: key dimensions is not read by type sqlite-doc (its keys: name, type, path, mapping, out_of_scope)"}},
		{"several at once", "version: 1\nscop: x\nstores:\n  - {name: a, type: sqlite-doc, pth: a.db}\n",
			[]string{"line 2: unknown key scop (did you mean scope?)", "line 4: unknown key pth in stores[0] (did you mean path?)"}},
		{"negative dimensions", "version: 1\nstores:\n  - name: e\n    type: pgvector\n    dsn: postgres://h/db\n    dimensions: -3\n",
			[]string{"line 6: ", "dimensions must be 1..16000, got -3"}},
		{"unknown store type", "version: 1\nstores:\n  - name: m\n    type: mongodb\n    path: m.db\n",
			[]string{"line 4: ", `unknown type "mongodb"`}},
		{"lock_timeout does not parse", "version: 1\nstores:\n  - name: pg\n    type: postgres\n    dsn: postgres://h/db\n    lock_timeout: soon\n",
			[]string{"line 6: ", `lock_timeout must be a Go duration of at least 1ms, got "soon"`}},
		{"validity does not parse", "version: 1\ncertificate_validity: forever\n",
			[]string{"line 2: ", "certificate_validity"}},
		{"misspelt mapping key", "version: 1\nstores:\n  - name: kb\n    type: pgvector\n    dsn: postgres://h/db\n    preset: llamaindex\n    mapping:\n      tabel: data_docs\n",
			[]string{"line 8: unknown key tabel in stores[0].mapping (did you mean table?)"}},
		{"misspelt subject key", "version: 1\nstores:\n  - name: kb\n    type: pgvector\n    dsn: postgres://h/db\n    mapping:\n      table: t\n      subject: {jsn: metadata_, path: [subject]}\n",
			[]string{"line 8: unknown key jsn in stores[0].mapping.subject (did you mean json?)"}},
		{"content not a list", "version: 1\nstores:\n  - name: kb\n    type: pgvector\n    dsn: postgres://h/db\n    mapping:\n      table: t\n      content: text\n",
			[]string{`line 8: stores[0].mapping.content: want a list, got the string "text"`}},
		{"mapping on a type that does not read it", "version: 1\nstores:\n  - name: v\n    type: sqlite-vec\n    path: v.db\n    dimensions: 4\n    mapping: {table: x}\n",
			[]string{"line 7: stores[0]: key mapping is not read by type sqlite-vec"}},
		{"unknown preset", "version: 1\nstores:\n  - name: kb\n    type: pgvector\n    dsn: postgres://h/db\n    preset: haystack\n",
			[]string{"line 6: ", `preset must be "default", "langchain", "langchaingo" or "llamaindex", got "haystack"`}},
		{"subject with both", "version: 1\nstores:\n  - name: kb\n    type: pgvector\n    dsn: postgres://h/db\n    preset: llamaindex\n    mapping:\n      table: data_docs\n      subject: {column: owner_id, json: metadata_}\n",
			[]string{"line 7: ", "mapping.subject: give either column or json and path, not both"}},
		{"missing version", "scope: x\n", []string{"version is missing: this amnesia reads version 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "amnesia.yaml")
			os.WriteFile(p, []byte(tc.yaml), 0o600)
			_, err := LoadConfig(p)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

func TestSuggest(t *testing.T) {
	known := []string{"name", "type", "path", "dimensions", "lock_timeout", "statement_timeout"}
	for in, want := range map[string]string{"lock_timout": "lock_timeout", "Dimensions": "dimensions", "dimension": "dimensions", "pth": "path", "colour": ""} {
		if got := suggest(in, known); got != want {
			t.Errorf("suggest(%q) = %q, want %q", in, got, want)
		}
	}
}

// ResolvePaths makes relative paths absolute against the configuration
// file's directory, and leaves absolute paths and DSNs alone.
func TestResolvePaths(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "amnesia.yaml")
	os.WriteFile(p, []byte("version: 1\nledger: meta/ledger.db\nstores:\n  - {name: x, type: sqlite-doc, path: data/x.db}\n  - {name: y, type: sqlite-doc, path: /srv/y.db}\n  - {name: z, type: postgres, dsn: postgres://h/db, data_dir: pgdata}\n"), 0o600)
	c, err := LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	if c.Dir() != dir {
		t.Fatalf("Dir() = %s, want %s", c.Dir(), dir)
	}
	moved := c.ResolvePaths()
	if len(moved) != 3 {
		t.Fatalf("moved %v, want the store path, the data_dir and the ledger", moved)
	}
	for got, want := range map[string]string{
		c.Stores[0].Path:    filepath.Join(dir, "data/x.db"),
		c.Stores[1].Path:    "/srv/y.db",
		c.Stores[2].DataDir: filepath.Join(dir, "pgdata"),
		c.Ledger:            filepath.Join(dir, "meta/ledger.db"),
		c.Stores[2].DSN:     "postgres://h/db",
	} {
		if got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	}
}

// A full mapping parses into store.Config.Mapping.
func TestMappingConfig(t *testing.T) {
	p := filepath.Join(t.TempDir(), "amnesia.yaml")
	os.WriteFile(p, []byte(`version: 1
stores:
  - name: kb
    type: pgvector
    dsn: postgres://h/db
    preset: llamaindex
    mapping:
      table: data_docs
      key: node_id
      subject: {json: metadata_, path: [user, id]}
      content: [text]
      vector: embedding
      parent: {column: doc_id}
      collections: [a, b]
      collection_table: cols
`), 0o600)
	c, err := LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	m := c.Stores[0].Mapping
	if c.Stores[0].Preset != "llamaindex" || m == nil || m.Table != "data_docs" || m.Key != "node_id" || m.Subject.JSON != "metadata_" ||
		strings.Join(m.Subject.Path, ".") != "user.id" || m.Content[0] != "text" || m.Vector != "embedding" || m.Parent.Column != "doc_id" ||
		len(m.Collections) != 2 || m.CollectionTable != "cols" {
		t.Fatalf("parsed %+v / %+v", c.Stores[0], m)
	}
}

// out_of_scope is read by the saga, not the adapter: every store type
// accepts it, whatever keys its adapter registered.
func TestOutOfScopeOnEveryType(t *testing.T) {
	for _, st := range []string{
		"    type: sqlite-doc\n    path: d.db\n",
		"    type: sqlite-vec\n    path: v.db\n    dimensions: 4\n",
		"    type: postgres\n    dsn: postgres://h/db\n",
		"    type: pgvector\n    dsn: postgres://h/db\n    dimensions: 4\n",
	} {
		p := filepath.Join(t.TempDir(), "amnesia.yaml")
		os.WriteFile(p, []byte("version: 1\nstores:\n  - name: s\n"+st+"    out_of_scope: true\n"), 0o600)
		c, err := LoadConfig(p)
		if err != nil {
			t.Errorf("%s: %v", strings.TrimSpace(st), err)
			continue
		}
		if !c.Stores[0].OutOfScope {
			t.Errorf("%s: out_of_scope not read", strings.TrimSpace(st))
		}
	}
}

// `init --config F` copies F's text: a secret given as $VAR stays a $VAR
// reference (never the expanded value on disk), comments stay, and only the
// relative paths are written absolute.
func TestInitCopiesTheConfigWithoutExpandingSecrets(t *testing.T) {
	t.Setenv("AMNESIA_TEST_SECRET_DSN", "postgres://app:s3cr3t-pw@db.example:5432/app")
	dir := t.TempDir()
	p := filepath.Join(dir, "amnesia.yaml")
	src := "version: 1\n# the application's stores\nstores:\n  - name: x\n    type: sqlite-doc\n    path: data/x.db\n  - name: z\n    type: postgres\n    dsn: $AMNESIA_TEST_SECRET_DSN\n"
	if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	if c.Stores[1].DSN != "postgres://app:s3cr3t-pw@db.example:5432/app" {
		t.Fatalf("the loaded configuration did not expand $VAR: %q", c.Stores[1].DSN)
	}
	c.ResolvePaths()
	st := filepath.Join(t.TempDir(), "state")
	d, err := Init(st, c)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(st, "amnesia.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"$AMNESIA_TEST_SECRET_DSN", "# the application's stores", filepath.Join(dir, "data/x.db")} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the copied amnesia.yaml lacks %q:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), "s3cr3t-pw") {
		t.Fatalf("the copied amnesia.yaml holds the expanded secret:\n%s", b)
	}
	// It loads again, to the same stores, with the variable set.
	if d.Config.Stores[0].Path != filepath.Join(dir, "data/x.db") || d.Config.Stores[1].DSN != "postgres://app:s3cr3t-pw@db.example:5432/app" {
		t.Errorf("reopened: %+v", d.Config.Stores)
	}
}

// $VAR and ${VAR} are expanded in values only: a comment may mention a
// variable that is not set, `$1` and other non-names stay as written (an
// inline `sh -c` keeps its arguments), $$ is a literal $, an unquoted
// expanded value is resolved again (a number stays a number), and a
// variable that is not set is refused with its name and line.
func TestConfigExpandsVariablesInValuesOnly(t *testing.T) {
	t.Setenv("AMNESIA_TEST_DIM", "8")
	t.Setenv("AMNESIA_TEST_DIR", "/srv/vec")
	dir := t.TempDir()
	load := func(src string) (*Config, error) {
		p := filepath.Join(dir, "amnesia.yaml")
		if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		return LoadConfig(p)
	}
	c, err := load("version: 1\n# set $AMNESIA_TEST_NOT_SET_ANYWHERE before running\nstores:\n  - name: v\n    type: sqlite-vec\n    path: \"${AMNESIA_TEST_DIR}/$1/$$5/v.db\"\n    dimensions: $AMNESIA_TEST_DIM\n")
	if err != nil {
		t.Fatal(err)
	}
	if c.Stores[0].Path != "/srv/vec/$1/$5/v.db" || c.Stores[0].Dimensions != 8 {
		t.Errorf("expanded store: path %q, dimensions %d", c.Stores[0].Path, c.Stores[0].Dimensions)
	}
	_, err = load("version: 1\nstores:\n  - name: v\n    type: sqlite-vec\n    path: /x/v.db\n    dimensions: 4\n  - name: p\n    type: postgres\n    dsn: postgres://app:$AMNESIA_TEST_NOT_SET_ANYWHERE@db/app\n")
	if err == nil || !strings.Contains(err.Error(), "line 9") || !strings.Contains(err.Error(), "$AMNESIA_TEST_NOT_SET_ANYWHERE is not set") {
		t.Fatalf("unset variable: err = %v", err)
	}
}
