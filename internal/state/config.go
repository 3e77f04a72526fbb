package state

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/amnesia-dev/amnesia/lineage"
	"github.com/amnesia-dev/amnesia/model"
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/subject"
)

// Config is amnesia.yaml. Values may reference environment variables as
// $VAR or ${VAR}; relative paths (a store's path and data_dir, a SQLite
// ledger) are relative to the directory of the file they are read from: the
// state directory for <state>/amnesia.yaml. `amnesia init --config F`
// writes them into the state directory's copy resolved against F's
// directory (ResolvePaths).
type Config struct {
	Version  int           `yaml:"version"`
	Scope    string        `yaml:"scope"`
	Validity string        `yaml:"certificate_validity"` // Go duration, e.g. 8760h
	Stores   []StoreConfig `yaml:"stores"`
	Ledger   string        `yaml:"ledger,omitempty"` // PostgreSQL URL (shared) or SQLite path; default ledger.db in the state dir
	// LogOrigin names the transparency log in its checkpoints (C2SP
	// origin). Default: amnesia.local/log/<digest of the first signing key>.
	// It is fixed in the ledger on first use; changing it later has no effect.
	LogOrigin string `yaml:"log_origin,omitempty"`
	// TSA, when set, is the URL of an RFC 3161 time-stamping authority:
	// each certificate's checkpoint is timestamped at publish, best effort
	// (an unreachable TSA never blocks an erasure; the certificate then
	// carries no timestamp). TSATimeout bounds each request (default 10s).
	TSA        string `yaml:"tsa_url,omitempty"`
	TSATimeout string `yaml:"tsa_timeout,omitempty"`
	// ReclaimWait bounds how long an erasure retries a reclaim that another
	// process holds up (a busy SQLite WAL, a lock or a long transaction on
	// PostgreSQL) before it pauses as PENDING (Go duration; default 30s).
	ReclaimWait string `yaml:"reclaim_wait,omitempty"`
	// Secrets says where the pepper and the signing key are read from
	// (secretsconfig.go); by default from the state directory.
	Secrets SecretsConfig `yaml:"secrets,omitempty"`
	// Serve configures `amnesia serve` (serveconfig.go).
	Serve ServeConfig `yaml:"serve,omitempty"`
	// Reverify schedules re-verification (reverifyconfig.go).
	Reverify ReverifyConfig `yaml:"reverify,omitempty"`
	// Erasure sets due dates and erasure windows (erasureconfig.go).
	Erasure ErasureConfig `yaml:"erasure,omitempty"`
	// Models are the models trained on the configured dataset stores
	// (package model, docs/models.md).
	Models []model.Config `yaml:"models,omitempty"`

	dir string
	// raw is the configuration file as written, before $VAR expansion:
	// what `amnesia init --config` copies into the state directory, so that
	// a secret given as $VAR is never written there in clear.
	raw         []byte
	changes     []PathChange
	validityDur time.Duration
	tsaTimeout  time.Duration
	reclaimWait time.Duration
	// reverifyEvery is Reverify.Every parsed.
	reverifyEvery time.Duration
}

// StoreConfig configures one store; see store.Config for the fields.
type StoreConfig = store.Config

// DefaultConfig is what `amnesia init` writes when given nothing else.
func DefaultConfig() *Config {
	return &Config{Version: 1, Scope: subject.DefaultScope, Validity: "8760h"}
}

// LoadConfig reads and validates a configuration file. It is strict: an
// unknown key (with a suggestion when it is close to a known one), a key the
// store's type does not read, a value of the wrong type and an impossible
// value are errors that name the key and its line.
func LoadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	c, err := parseConfig(b)
	if err != nil {
		return nil, fmt.Errorf("load config %s: %w", path, err)
	}
	if c.dir, err = filepath.Abs(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("load config %s: %w", path, err)
	}
	c.raw = b
	return c, nil
}

// Marshal encodes the configuration as YAML.
func (c *Config) Marshal() ([]byte, error) { return yaml.Marshal(c) }

// Validate checks the configuration and fills defaults.
func (c *Config) Validate() error {
	if c.Version != 1 {
		if c.Version == 0 {
			return fieldErr("version", "version is missing: this amnesia reads version 1 (add version: 1)")
		}
		return fieldErr("version", "config version %d: this amnesia reads version 1", c.Version)
	}
	if c.Scope == "" {
		c.Scope = subject.DefaultScope
	}
	if c.Validity == "" {
		c.Validity = "8760h"
	}
	d, err := time.ParseDuration(c.Validity)
	if err != nil || d <= 0 {
		return fieldErr("certificate_validity", "certificate_validity %q: want a positive Go duration such as 8760h", c.Validity)
	}
	c.validityDur = d
	c.tsaTimeout = 10 * time.Second
	if c.TSATimeout != "" {
		d, err := time.ParseDuration(c.TSATimeout)
		if err != nil || d <= 0 {
			return fieldErr("tsa_timeout", "tsa_timeout %q: want a positive Go duration such as 10s", c.TSATimeout)
		}
		c.tsaTimeout = d
	}
	c.reclaimWait = 30 * time.Second
	if c.ReclaimWait != "" {
		d, err := time.ParseDuration(c.ReclaimWait)
		if err != nil || d <= 0 {
			return fmt.Errorf("reclaim_wait %q: want a positive Go duration such as 30s", c.ReclaimWait)
		}
		c.reclaimWait = d
	}
	if c.TSA != "" {
		u, err := url.Parse(c.TSA)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fieldErr("tsa_url", "tsa_url: want an http:// or https:// URL of an RFC 3161 time-stamping authority")
		}
	}
	if lower := strings.ToLower(c.Ledger); strings.HasPrefix(lower, "postgres:") || strings.HasPrefix(lower, "postgresql:") {
		if !lineage.IsPostgresDSN(c.Ledger) {
			return fieldErr("ledger", "ledger: a PostgreSQL ledger is a URL: postgres://user@host/dbname")
		}
	}
	if err := c.Secrets.validate(); err != nil {
		return err
	}
	if err := c.validateOwners(); err != nil {
		return err
	}
	if err := c.Serve.validate(); err != nil {
		return err
	}
	if err := c.Erasure.validate(); err != nil {
		return err
	}
	if c.reverifyEvery, err = c.Reverify.validate(); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i, s := range c.Stores {
		if s.Name == "" {
			return fieldErr(fmt.Sprintf("stores[%d]", i), "stores[%d]: name is required", i)
		}
		if seen[s.Name] {
			return fieldErr(fmt.Sprintf("stores[%d].name", i), "stores[%d]: duplicate name %q", i, s.Name)
		}
		seen[s.Name] = true
		if s.Type == "" {
			return fieldErr(fmt.Sprintf("stores[%d]", i), "store %q: type is required (known: %v)", s.Name, store.Types())
		}
		if err := store.Validate(s); err != nil {
			return fieldErr(fmt.Sprintf("stores[%d]", i)+storeKeyIn(err.Error()), "store %q: %v", s.Name, err)
		}
	}
	for _, s := range c.Stores {
		if s.Docstore != "" && (!seen[s.Docstore] || s.Docstore == s.Name) {
			return fmt.Errorf("store %q: docstore %q is not another configured store: name the store that holds the texts, or leave docstore out", s.Name, s.Docstore)
		}
	}
	return c.validateModels()
}

// validateModels checks the models: section (package model).
func (c *Config) validateModels() error {
	names := map[string]bool{}
	typ := func(name string) (string, bool) {
		s, err := c.Store(name)
		return s.Type, err == nil
	}
	for i := range c.Models {
		if err := c.Models[i].Validate(i, typ); err != nil {
			return fieldErr(fmt.Sprintf("models[%d]", i), "%v", err)
		}
		if names[c.Models[i].Name] {
			return fieldErr(fmt.Sprintf("models[%d].name", i), "models[%d]: duplicate name %q", i, c.Models[i].Name)
		}
		names[c.Models[i].Name] = true
	}
	return nil
}

// Model returns the configuration of the named model.
func (c *Config) Model(name string) (*model.Config, error) {
	for i := range c.Models {
		if c.Models[i].Name == name {
			return &c.Models[i], nil
		}
	}
	var known []string
	for _, m := range c.Models {
		known = append(known, m.Name)
	}
	return nil, fmt.Errorf("no model %q under models: in amnesia.yaml (configured: %s)", name, strings.Join(known, ", "))
}

// TSATimeoutDuration bounds each request to the TSA.
func (c *Config) TSATimeoutDuration() time.Duration { return c.tsaTimeout }

// ReclaimWaitDuration bounds how long a held-up reclaim is retried.
func (c *Config) ReclaimWaitDuration() time.Duration { return c.reclaimWait }

// ValidityDuration is how long certificates stay valid.
func (c *Config) ValidityDuration() time.Duration { return c.validityDur }

// Dir is the directory relative paths resolve against: the configuration
// file's, made absolute ("" for a configuration not read from a file).
func (c *Config) Dir() string { return c.dir }

// StorePath resolves a store path against the configuration file's directory.
func (c *Config) StorePath(s StoreConfig) string {
	if filepath.IsAbs(s.Path) || c.dir == "" {
		return s.Path
	}
	return filepath.Join(c.dir, s.Path)
}

// Store returns the configuration of the named store.
func (c *Config) Store(name string) (StoreConfig, error) {
	for _, s := range c.Stores {
		if s.Name == name {
			return s, nil
		}
	}
	return StoreConfig{}, errors.New("no such store")
}

// expandEnv replaces, in the value of every scalar (not in comments or
// keys), $NAME and ${NAME} (NAME: a letter or underscore, then letters,
// digits, underscores) with the variable's value, and $$ with one $.
// Anything else after a $ stays as it is, so `sh -c '... "$1"'` keeps its
// arguments. A variable that is not set is an error naming it and its line:
// an empty DSN or API key would fail later with a less clear message, and a
// literal $ in a password would silently vanish. An unquoted value is
// resolved again after expansion (`port: $PORT` is a number).
func expandEnv(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && strings.Contains(n.Value, "$") {
		v, err := expandString(n.Value)
		if err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		n.Value = v
		if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0 && n.Tag == "!!str" {
			n.Tag = resolvedTag(v)
		}
	}
	for i, c := range n.Content {
		if n.Kind == yaml.MappingNode && i%2 == 0 {
			continue // a key
		}
		if err := expandEnv(c); err != nil {
			return err
		}
	}
	return nil
}

// resolvedTag is the tag YAML gives v written plain, when that is a number
// or a boolean; anything else stays a string (an expanded value is never
// read as YAML structure).
func resolvedTag(v string) string {
	var doc yaml.Node
	if yaml.Unmarshal([]byte(v), &doc) != nil || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.ScalarNode {
		return "!!str"
	}
	switch t := doc.Content[0].Tag; t {
	case "!!int", "!!float", "!!bool":
		return t
	}
	return "!!str"
}

func expandString(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '$' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		if s[i+1] == '$' {
			b.WriteByte('$')
			i++
			continue
		}
		name, n := envName(s[i+1:])
		if n == 0 {
			b.WriteByte(c)
			continue
		}
		v, ok := os.LookupEnv(name)
		if !ok {
			return "", fmt.Errorf("$%s is not set in the environment (write $$ for a literal $)", name)
		}
		b.WriteString(v)
		i += n
	}
	return b.String(), nil
}

// envName reads a variable name at the start of s, as NAME or {NAME}, and
// returns it with the bytes it spans (0: none).
func envName(s string) (string, int) {
	if strings.HasPrefix(s, "{") {
		end := strings.IndexByte(s, '}')
		if end > 1 && validEnvName(s[1:end]) {
			return s[1:end], end + 1
		}
		return "", 0
	}
	n := 0
	for n < len(s) && (s[n] == '_' || s[n] >= 'A' && s[n] <= 'Z' || s[n] >= 'a' && s[n] <= 'z' || n > 0 && s[n] >= '0' && s[n] <= '9') {
		n++
	}
	return s[:n], n
}

func validEnvName(s string) bool {
	name, n := envName(s)
	return n == len(s) && name == s
}
