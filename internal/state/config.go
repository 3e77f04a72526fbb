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
	"github.com/amnesia-dev/amnesia/store"
	"github.com/amnesia-dev/amnesia/subject"
)

// Config is amnesia.yaml. Values may reference environment variables as
// $VAR or ${VAR}; relative store paths are relative to the state directory.
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
	dir         string
	validityDur time.Duration
	tsaTimeout  time.Duration
	reclaimWait time.Duration
}

// StoreConfig configures one store; see store.Config for the fields.
type StoreConfig = store.Config

// DefaultConfig is what `amnesia init` writes when given nothing else.
func DefaultConfig() *Config {
	return &Config{Version: 1, Scope: subject.DefaultScope, Validity: "8760h"}
}

// LoadConfig reads and validates a configuration file.
func LoadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	var c Config
	if err := yaml.Unmarshal([]byte(os.ExpandEnv(string(b))), &c); err != nil {
		return nil, fmt.Errorf("load config %s: %w", path, err)
	}
	c.dir = filepath.Dir(path)
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("load config %s: %w", path, err)
	}
	return &c, nil
}

// Marshal encodes the configuration as YAML.
func (c *Config) Marshal() ([]byte, error) { return yaml.Marshal(c) }

// Validate checks the configuration and fills defaults.
func (c *Config) Validate() error {
	if c.Version != 1 {
		return fmt.Errorf("config version %d: this amnesia reads version 1", c.Version)
	}
	if c.Scope == "" {
		c.Scope = subject.DefaultScope
	}
	if c.Validity == "" {
		c.Validity = "8760h"
	}
	d, err := time.ParseDuration(c.Validity)
	if err != nil || d <= 0 {
		return fmt.Errorf("certificate_validity %q: want a positive Go duration such as 8760h", c.Validity)
	}
	c.validityDur = d
	c.tsaTimeout = 10 * time.Second
	if c.TSATimeout != "" {
		d, err := time.ParseDuration(c.TSATimeout)
		if err != nil || d <= 0 {
			return fmt.Errorf("tsa_timeout %q: want a positive Go duration such as 10s", c.TSATimeout)
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
			return fmt.Errorf("tsa_url: want an http:// or https:// URL of an RFC 3161 time-stamping authority")
		}
	}
	if lower := strings.ToLower(c.Ledger); strings.HasPrefix(lower, "postgres:") || strings.HasPrefix(lower, "postgresql:") {
		if !lineage.IsPostgresDSN(c.Ledger) {
			return fmt.Errorf("ledger: a PostgreSQL ledger is a URL: postgres://user@host/dbname")
		}
	}
	seen := map[string]bool{}
	for i, s := range c.Stores {
		if s.Name == "" {
			return fmt.Errorf("stores[%d]: name is required", i)
		}
		if seen[s.Name] {
			return fmt.Errorf("stores[%d]: duplicate name %q", i, s.Name)
		}
		seen[s.Name] = true
		if s.Type == "" {
			return fmt.Errorf("store %q: type is required (known: %v)", s.Name, store.Types())
		}
		if err := store.Validate(s); err != nil {
			return fmt.Errorf("store %q: %w", s.Name, err)
		}
	}
	for _, s := range c.Stores {
		if s.Docstore != "" && (!seen[s.Docstore] || s.Docstore == s.Name) {
			return fmt.Errorf("store %q: docstore %q is not another configured store: name the store that holds the texts, or leave docstore out", s.Name, s.Docstore)
		}
	}
	return nil
}

// TSATimeoutDuration bounds each request to the TSA.
func (c *Config) TSATimeoutDuration() time.Duration { return c.tsaTimeout }

// ReclaimWaitDuration bounds how long a held-up reclaim is retried.
func (c *Config) ReclaimWaitDuration() time.Duration { return c.reclaimWait }

// ValidityDuration is how long certificates stay valid.
func (c *Config) ValidityDuration() time.Duration { return c.validityDur }

// StorePath resolves a store path against the state directory.
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
