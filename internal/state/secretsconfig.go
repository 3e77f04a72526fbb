package state

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/amnesia-dev/amnesia/internal/secrets"
	"github.com/amnesia-dev/amnesia/store"
)

// SecretsConfig is the secrets: section of amnesia.yaml: where this host
// reads the installation's pepper and signing key. Each is a source of
// package secrets: file:PATH, env:VAR or dir:PATH (a versioned directory
// with rotation), with an absolute path.
// Empty: the state directory's pepper and signing-key.pem, as before.
//
// The pepper is 32 bytes, raw or written as 64 hex digits or base64; the
// signing key is a PKCS#8 PEM Ed25519 private key. Neither is ever written
// to the ledger: the ledger keeps only their check values (CheckSecrets),
// which every host compares at start.
type SecretsConfig struct {
	Pepper     string `yaml:"pepper,omitempty"`
	SigningKey string `yaml:"signing_key,omitempty"`
}

func (s SecretsConfig) validate() error {
	for _, f := range []struct{ key, spec string }{{"pepper", s.Pepper}, {"signing_key", s.SigningKey}} {
		if f.spec == "" {
			continue
		}
		if _, err := secrets.Parse(f.spec, ""); err != nil {
			return fieldErr("secrets."+f.key, "secrets.%s: %v", f.key, err)
		}
		// A relative path would name another file once amnesia.yaml is
		// copied into the state directory (`init --config`).
		if kind, p, _ := strings.Cut(f.spec, ":"); kind != "env" && !filepath.IsAbs(p) {
			return fieldErr("secrets."+f.key, "secrets.%s: %s: give an absolute path", f.key, f.spec)
		}
	}
	if s.Pepper != "" && s.Pepper == s.SigningKey {
		return fieldErr("secrets.signing_key", "secrets: the pepper and the signing key need two sources")
	}
	return nil
}

// external reports whether any secret comes from outside the state directory.
func (s SecretsConfig) external() bool { return s.Pepper != "" || s.SigningKey != "" }

// FileStore reports whether stores of type typ live in files on one host
// (their type reads a path: sqlite-doc, sqlite-vec, faiss, chromem, file).
func FileStore(typ string) bool {
	for _, k := range store.Keys(typ) {
		if k == "path" {
			return true
		}
	}
	return false
}

// validateOwners checks the stores' owner: keys. Only a store in files has
// an owner (the host whose disk holds it); once one has, every store in
// files must, so that no file store is erased from a host that is not its.
func (c *Config) validateOwners() error {
	owned, unowned := "", ""
	for i, s := range c.Stores {
		file := FileStore(s.Type) || s.Path != ""
		switch {
		case s.Owner != "" && !file:
			return fieldErr(fmt.Sprintf("stores[%d].owner", i), "store %q: owner: names the host that holds a store's files; type %s is a server store, erased from any host: remove owner", s.Name, s.Type)
		case s.Owner != "" && !hostName(s.Owner):
			return fieldErr(fmt.Sprintf("stores[%d].owner", i), "store %q: owner %q: want a host name (letters, digits, '.', '-', '_')", s.Name, s.Owner)
		case s.Owner != "":
			owned = s.Name
		case file:
			unowned = s.Name
		}
	}
	if owned != "" && unowned != "" {
		return fmt.Errorf("store %q has an owner but store %q, also in files, has none: give every store in files its owner: (the host whose disk holds it)", owned, unowned)
	}
	return nil
}

// HasOwners reports whether the configuration binds file stores to hosts.
func (c *Config) HasOwners() bool {
	for _, s := range c.Stores {
		if s.Owner != "" {
			return true
		}
	}
	return false
}

// OwnsAny reports whether host owns a store.
func (c *Config) OwnsAny(host string) bool {
	for _, s := range c.Stores {
		if s.Owner == host {
			return true
		}
	}
	return false
}

// Owners returns the owner of each store that has one, by store name.
func (c *Config) Owners() map[string]string {
	out := map[string]string{}
	for _, s := range c.Stores {
		if s.Owner != "" {
			out[s.Name] = s.Owner
		}
	}
	return out
}

func hostName(s string) bool {
	if len(s) == 0 || len(s) > 253 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// ValidHostName reports whether s can be a worker's --host.
func ValidHostName(s string) bool { return hostName(s) }
