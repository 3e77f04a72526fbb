// Package model carries an erasure from training rows to the models trained
// on them: lineage (rows → dataset shard → training run → model artifact →
// where it is served), sharded exact unlearning (retrain the shards that held
// an erased subject's rows, SISA-style), and the model probe (planted
// canaries: extraction and a membership-inference score against never-trained
// references).
//
// amnesia does not train models. It records the runs the operator's pipeline
// makes (capture), and on an erasure it runs the retrain command the operator
// configured, per tainted shard, journaled and resumable, then measures. See
// docs/models.md for what this proves and what it does not.
//
// Nothing this package writes holds personal data: rows appear as keyed
// artifact ids (art:…), canaries as keyed digests plus a sealed copy, files
// by their path and SHA-256, and the retrain log by exit status, duration
// and the size and SHA-256 of the command's output, never the output.
package model

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// Config is one model in amnesia.yaml (key models:).
//
//	models:
//	  - name: support-bot
//	    dataset: [train-0, train-1, train-2, train-3]   # file stores; with sharded, store i is shard i
//	    sharded: true
//	    retrain:
//	      command: [python, train.py, --data, "{shard}", --out, "{output}"]
//	      timeout: 2h
//	    served: /srv/adapters/shard-{shard}.safetensors   # amnesia switches it (atomic rename); omit: the operator does
//	    delete_tainted: true                            # delete tainted artifact files at their recorded paths
//	    probe:
//	      url: http://127.0.0.1:8000                    # OpenAI-compatible: POST {url}/v1/completions
//	      model: support-bot
//	      references: 99
type Config struct {
	Name    string        `yaml:"name"`
	Dataset []string      `yaml:"dataset"`
	Sharded bool          `yaml:"sharded,omitempty"`
	Retrain RetrainConfig `yaml:"retrain,omitempty"`
	// Artifacts is the directory retrained artifacts are written to;
	// default <state>/models/<name>/artifacts.
	Artifacts string `yaml:"artifacts,omitempty"`
	// Served is where the model serves shard {shard}'s artifact from.
	// When set, amnesia installs a retrained artifact there by atomic
	// rename; when empty, the certificate says the operator must.
	Served string `yaml:"served,omitempty"`
	// DeleteTainted lets amnesia delete a tainted artifact's file at its
	// recorded path once its shard is retrained (when the file still has
	// the recorded digest).
	DeleteTainted bool         `yaml:"delete_tainted,omitempty"`
	Probe         *ProbeConfig `yaml:"probe,omitempty"`

	timeout time.Duration
}

// RetrainConfig is the operator's retrain command. Placeholders in its
// arguments: {shard} (the shard's data file), {output} (where the new
// artifact must be written), {index} (the shard's number), {model}.
type RetrainConfig struct {
	Command []string `yaml:"command,omitempty"`
	Timeout string   `yaml:"timeout,omitempty"` // Go duration; default 1h
}

// ProbeConfig is the OpenAI-compatible completions endpoint that serves the
// model, for the canary probe.
type ProbeConfig struct {
	URL        string `yaml:"url"`
	Model      string `yaml:"model,omitempty"`
	References int    `yaml:"references,omitempty"` // never-trained reference canaries per canary; default 99
	Timeout    string `yaml:"timeout,omitempty"`    // per request; default 30s
	timeout    time.Duration
}

// DefaultReferences is the default number of reference canaries per canary.
const DefaultReferences = 99

// DefaultRetrainTimeout bounds one retrain command when none is configured.
const DefaultRetrainTimeout = time.Hour

// Validate checks c against the configured stores (name → type and
// format) and fills defaults. Errors name the key and say what to do.
func (c *Config) Validate(i int, storeType func(name string) (string, bool)) error {
	at := fmt.Sprintf("models[%d]", i)
	if c.Name == "" {
		return fmt.Errorf("%s: name is required", at)
	}
	if strings.ContainsAny(c.Name, "/\\:{} ") {
		return fmt.Errorf("%s: name %q: use letters, digits, '-' or '_' only", at, c.Name)
	}
	at = fmt.Sprintf("model %q", c.Name)
	if len(c.Dataset) == 0 {
		return fmt.Errorf("%s: dataset is required: list the file stores that hold its training rows (one per shard when sharded)", at)
	}
	seen := map[string]bool{}
	for _, s := range c.Dataset {
		typ, ok := storeType(s)
		if !ok {
			return fmt.Errorf("%s: dataset store %q is not configured under stores:", at, s)
		}
		if typ != "file" {
			return fmt.Errorf("%s: dataset store %q is of type %s: a training set is a file store (JSONL, CSV or Parquet)", at, s, typ)
		}
		if seen[s] {
			return fmt.Errorf("%s: dataset store %q is listed twice", at, s)
		}
		seen[s] = true
	}
	if c.Sharded && len(c.Retrain.Command) == 0 {
		return fmt.Errorf("%s: a sharded model needs retrain.command (with {shard} and {output}) so that amnesia can retrain the shards an erasure touches", at)
	}
	if len(c.Retrain.Command) > 0 {
		joined := strings.Join(c.Retrain.Command, " ")
		if !strings.Contains(joined, "{output}") {
			return fmt.Errorf("%s: retrain.command must contain {output}: the path the new artifact is written to", at)
		}
		if !strings.Contains(joined, "{shard}") {
			return fmt.Errorf("%s: retrain.command must contain {shard}: the path of the shard's data file", at)
		}
	}
	c.timeout = DefaultRetrainTimeout
	if c.Retrain.Timeout != "" {
		d, err := time.ParseDuration(c.Retrain.Timeout)
		if err != nil || d <= 0 {
			return fmt.Errorf("%s: retrain.timeout %q: want a positive Go duration such as 2h", at, c.Retrain.Timeout)
		}
		c.timeout = d
	}
	if c.Served != "" && c.Sharded && !strings.Contains(c.Served, "{shard}") {
		return fmt.Errorf("%s: served %q must contain {shard}: each shard's artifact is served from its own file", at, c.Served)
	}
	if c.Artifacts != "" && !filepath.IsAbs(c.Artifacts) {
		return fmt.Errorf("%s: artifacts %q: want an absolute path", at, c.Artifacts)
	}
	if c.Served != "" && !filepath.IsAbs(c.Served) {
		return fmt.Errorf("%s: served %q: want an absolute path", at, c.Served)
	}
	if p := c.Probe; p != nil {
		if !strings.HasPrefix(p.URL, "http://") && !strings.HasPrefix(p.URL, "https://") {
			return fmt.Errorf("%s: probe.url %q: want the http:// or https:// base URL of an OpenAI-compatible server (amnesia posts to {url}/v1/completions)", at, p.URL)
		}
		if p.References == 0 {
			p.References = DefaultReferences
		}
		if p.References < 1 {
			return fmt.Errorf("%s: probe.references must be at least 1", at)
		}
		p.timeout = 30 * time.Second
		if p.Timeout != "" {
			d, err := time.ParseDuration(p.Timeout)
			if err != nil || d <= 0 {
				return fmt.Errorf("%s: probe.timeout %q: want a positive Go duration such as 30s", at, p.Timeout)
			}
			p.timeout = d
		}
	}
	return nil
}

// RetrainTimeout is the configured (or default) retrain timeout.
func (c *Config) RetrainTimeout() time.Duration {
	if c.timeout <= 0 {
		return DefaultRetrainTimeout
	}
	return c.timeout
}

// ShardOfStore returns the shard number of a dataset store, or -1.
func (c *Config) ShardOfStore(name string) int {
	for i, s := range c.Dataset {
		if s == name {
			return i
		}
	}
	return -1
}

// ServedPath returns where shard i's artifact is served from ("" when the
// operator manages serving).
func (c *Config) ServedPath(i int) string {
	if c.Served == "" {
		return ""
	}
	return strings.ReplaceAll(c.Served, "{shard}", fmt.Sprint(i))
}

// ArtifactsDir returns where retrained artifacts are written.
func (c *Config) ArtifactsDir(stateDir string) string {
	if c.Artifacts != "" {
		return c.Artifacts
	}
	return filepath.Join(stateDir, "models", c.Name, "artifacts")
}
