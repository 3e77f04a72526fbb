package state

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/amnesia-dev/amnesia/lineage"
)

// ErrConfigMismatch: this host's amnesia.yaml differs, in its
// installation-wide part, from the version recorded in the ledger. The host
// refuses to start: two hosts with different stores or policies would erase
// differently and certify different things.
var ErrConfigMismatch = errors.New("this host's configuration is not the installation's")

// configKey is the installation value (lineage.InstallationMeta) of the
// configuration version, with a PostgreSQL ledger.
const configKey = "config"

// ConfigVersion is the configuration version recorded in the ledger: the
// digest of the installation-wide part of amnesia.yaml (SharedSections),
// one digest per section, a version number, and who recorded it when. It
// holds digests only, never a value.
type ConfigVersion struct {
	Version  int               `json:"version"`
	Digest   string            `json:"digest"`
	Sections map[string]string `json:"sections"`
	By       string            `json:"by"`
	At       time.Time         `json:"at"`
}

// SharedSections returns the digest of each installation-wide section of
// the configuration: what must be the same on every host of an
// installation. The sections are "version", "scope",
// "certificate_validity", "log_origin", "tsa" (tsa_url and tsa_timeout),
// "reclaim_wait", "reverify", "erasure" (the default due date and the
// erasure windows), "models", "stores" (the stores' names, in
// order) and one "stores.<name>" per store (its every setting, owner
// included). A store's dsn is hashed without its password, and its api_key
// not at all: credentials may differ per host.
//
// The per-host part, never compared: secrets (where this host reads the
// pepper and the signing key), serve (listen address, TLS files, rate,
// webhook secret, due date of requests), ledger (this host's connection
// to the database), and the state directory itself.
func (c *Config) SharedSections() map[string]string {
	out := map[string]string{}
	put := func(name string, v any) {
		b, err := json.Marshal(v)
		if err != nil { // plain values only: cannot happen
			b = []byte(err.Error())
		}
		sum := sha256.Sum256(append([]byte("amnesia.config-section/v1\x00"+name+"\x00"), b...))
		out[name] = "sha256:" + hex.EncodeToString(sum[:])
	}
	put("version", c.Version)
	put("scope", c.Scope)
	put("certificate_validity", c.Validity)
	put("log_origin", c.LogOrigin)
	put("tsa", []string{c.TSA, c.TSATimeout})
	put("reclaim_wait", c.ReclaimWait)
	put("reverify", c.Reverify)
	put("erasure", c.Erasure)
	put("models", c.Models)
	names := make([]string, 0, len(c.Stores))
	for _, s := range c.Stores {
		names = append(names, s.Name)
		s.DSN = dsnWithoutPassword(s.DSN)
		s.APIKey = ""
		put("stores."+s.Name, s)
	}
	put("stores", names)
	return out
}

// dsnWithoutPassword drops every password setting (password,
// sslpassword, …: any key that contains "password") of a PostgreSQL URL or
// key=value DSN, and the password of any URL, so that none is hashed into
// the ledger. Key=value values may be single-quoted with backslash escapes,
// as libpq reads them; the kept pairs are written back quoted.
func dsnWithoutPassword(dsn string) string {
	if dsn == "" {
		return ""
	}
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" {
		if u.User != nil {
			u.User = url.User(u.User.Username())
		}
		q := u.Query()
		changed := false
		for k := range q {
			if strings.Contains(strings.ToLower(k), "password") {
				q.Del(k)
				changed = true
			}
		}
		if changed {
			u.RawQuery = q.Encode()
		}
		return u.String()
	}
	var kept []string
	for _, kv := range splitKeyValueDSN(dsn) {
		if !strings.Contains(strings.ToLower(kv[0]), "password") {
			kept = append(kept, kv[0]+"="+quoteDSNValue(kv[1]))
		}
	}
	return strings.Join(kept, " ")
}

// splitKeyValueDSN splits a libpq key=value connection string into its
// pairs: spaces around "=" allowed, values bare or single-quoted with \'
// and \\ escapes. What it cannot read (an unclosed quote, a key without
// "=") becomes one last pair with an empty key holding the rest, or the
// word "unreadable" when the rest mentions a password: it still counts in
// the digest, and no password is hashed.
func splitKeyValueDSN(s string) [][2]string {
	var out [][2]string
	i := 0
	skip := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
			i++
		}
	}
	for {
		skip()
		if i >= len(s) {
			return out
		}
		k0 := i
		for i < len(s) && s[i] != '=' && s[i] != ' ' && s[i] != '\t' {
			i++
		}
		key := s[k0:i]
		skip()
		if i >= len(s) || s[i] != '=' {
			return append(out, unreadable(s[k0:]))
		}
		i++
		skip()
		var val strings.Builder
		if i < len(s) && s[i] == '\'' {
			i++
			closed := false
			for i < len(s) {
				c := s[i]
				if c == '\\' && i+1 < len(s) {
					val.WriteByte(s[i+1])
					i += 2
					continue
				}
				if c == '\'' {
					i++
					closed = true
					break
				}
				val.WriteByte(c)
				i++
			}
			if !closed {
				return append(out, unreadable(s[k0:]))
			}
		} else {
			for i < len(s) && s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r' {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				val.WriteByte(s[i])
				i++
			}
		}
		out = append(out, [2]string{key, val.String()})
	}
}

func unreadable(rest string) [2]string {
	if strings.Contains(strings.ToLower(rest), "password") {
		return [2]string{"", "unreadable"}
	}
	return [2]string{"", rest}
}

// quoteDSNValue writes a key=value value back in single quotes (escaping
// \ and '), so that a value with spaces stays one value.
func quoteDSNValue(v string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// sectionsDigest is the digest of a set of section digests.
func sectionsDigest(s map[string]string) string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	h.Write([]byte("amnesia.config/v1\n"))
	for _, k := range keys {
		fmt.Fprintf(h, "%s=%s\n", k, s[k])
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// ConfigDigest is the digest of the installation-wide part of the
// configuration (SharedSections).
func (c *Config) ConfigDigest() string { return sectionsDigest(c.SharedSections()) }

// sharesConfig reports whether the configuration version is kept in the
// ledger l: a PostgreSQL ledger, shared by hosts that each read their own
// amnesia.yaml. A SQLite ledger has one machine and one amnesia.yaml.
func (d *Dir) sharesConfig(l lineage.Ledger) (lineage.InstallationMeta, bool) {
	m, ok := l.(lineage.InstallationMeta)
	return m, ok && d.Config != nil && lineage.IsPostgresDSN(d.LedgerSpec())
}

func thisHostName() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "unknown host"
	}
	return h
}

func readConfigVersion(ctx context.Context, m lineage.InstallationMeta) (*ConfigVersion, bool, error) {
	v, ok, err := m.InstallationValue(ctx, configKey)
	if err != nil || !ok {
		return nil, false, err
	}
	var cv ConfigVersion
	if err := json.Unmarshal([]byte(v), &cv); err != nil {
		return nil, false, fmt.Errorf("the configuration version recorded in the ledger: %w", err)
	}
	return &cv, true, nil
}

// LedgerConfigVersion returns the configuration version the ledger records
// (ok false when none, or when the ledger keeps none: SQLite).
func (d *Dir) LedgerConfigVersion(ctx context.Context, l lineage.Ledger) (*ConfigVersion, bool, error) {
	m, ok := d.sharesConfig(l)
	if !ok {
		return nil, false, nil
	}
	return readConfigVersion(ctx, m)
}

// CheckConfig compares the installation-wide part of this host's
// configuration with the version the ledger records, with a PostgreSQL
// ledger (nothing otherwise). The first host records its own as version 1.
// A host whose configuration differs gets ErrConfigMismatch, naming the
// sections (and stores) that differ, never a value.
func (d *Dir) CheckConfig(ctx context.Context, l lineage.Ledger) error {
	m, ok := d.sharesConfig(l)
	if !ok {
		return nil
	}
	mine := d.Config.SharedSections()
	cv, ok, err := readConfigVersion(ctx, m)
	if err != nil {
		return fmt.Errorf("check configuration: %w", err)
	}
	if !ok {
		first := ConfigVersion{Version: 1, Digest: sectionsDigest(mine), Sections: mine, By: thisHostName(), At: time.Now().UTC().Truncate(time.Second)}
		b, _ := json.Marshal(first)
		got, err := m.RecordInstallationValue(ctx, configKey, string(b), false)
		if err != nil {
			return fmt.Errorf("record configuration version: %w", err)
		}
		cv = &ConfigVersion{}
		if err := json.Unmarshal([]byte(got), cv); err != nil {
			return fmt.Errorf("the configuration version recorded in the ledger: %w", err)
		}
	}
	if cv.Digest == sectionsDigest(mine) {
		return nil
	}
	return fmt.Errorf("%w: its amnesia.yaml (%s) differs from configuration version %d recorded in the ledger by %s at %s in: %s. Give this host the installation's configuration, or, to make this one the installation's, run `amnesia config publish` here (then every other host must be given it); nothing was changed",
		ErrConfigMismatch, d.configName(), cv.Version, cv.By, cv.At.Format(time.RFC3339), strings.Join(DiffSections(cv.Sections, mine), ", "))
}

// DiffSections names the sections whose digests differ between a and b,
// sorted; a section only one of them has counts.
func DiffSections(a, b map[string]string) []string {
	var out []string
	for k, v := range a {
		if b[k] != v {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// PublishConfig records this host's configuration as the installation's
// next configuration version (after the operator changed amnesia.yaml on
// purpose), and returns it with the version it replaces (nil when none).
// With a SQLite ledger it returns an error: there is nothing to publish.
func (d *Dir) PublishConfig(ctx context.Context, l lineage.Ledger) (now, was *ConfigVersion, err error) {
	m, ok := d.sharesConfig(l)
	if !ok {
		return nil, nil, errors.New("config publish: this installation's ledger is not PostgreSQL: its one host reads its own amnesia.yaml, there is no configuration version to publish")
	}
	mine := d.Config.SharedSections()
	next := func(cur string, ok bool) (string, error) {
		was = nil
		if ok {
			was = &ConfigVersion{}
			if err := json.Unmarshal([]byte(cur), was); err != nil {
				return "", fmt.Errorf("the configuration version recorded in the ledger: %w", err)
			}
		}
		now = &ConfigVersion{Version: 1, Digest: sectionsDigest(mine), Sections: mine, By: thisHostName(), At: time.Now().UTC().Truncate(time.Second)}
		if was != nil {
			now.Version = was.Version + 1
			if was.Digest == now.Digest {
				now = was
				return "", nil
			}
		}
		b, _ := json.Marshal(now)
		return string(b), nil
	}
	// Under the installation lock when the ledger has one, so that two
	// publications get two version numbers.
	if u, ok := l.(lineage.InstallationUpdater); ok {
		err = u.UpdateInstallationValues(ctx, []string{configKey}, func(cur map[string]string) (map[string]string, error) {
			v, ok := cur[configKey]
			b, err := next(v, ok)
			if err != nil || b == "" {
				return nil, err
			}
			return map[string]string{configKey: b}, nil
		})
	} else {
		v, ok, rerr := m.InstallationValue(ctx, configKey)
		if rerr != nil {
			return nil, nil, rerr
		}
		var b string
		if b, err = next(v, ok); err == nil && b != "" {
			_, err = m.RecordInstallationValue(ctx, configKey, b, true)
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("config publish: %w", err)
	}
	return now, was, nil
}

func (d *Dir) configName() string {
	return d.Path + "/amnesia.yaml"
}
