package model_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amnesia-dev/amnesia/certificate"
	"github.com/amnesia-dev/amnesia/internal/state"
)

const baseYAML = `version: 1
stores:
  - {name: train-0, type: file, path: t0.jsonl, key: id, subject: subject, content: [text]}
  - {name: train-1, type: file, path: t1.jsonl, key: id, subject: subject, content: [text]}
  - {name: docs, type: sqlite-doc, path: docs.db}
models:
`

func loadYAML(t *testing.T, models string) (*state.Config, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "amnesia.yaml")
	if err := os.WriteFile(p, []byte(baseYAML+models), 0o600); err != nil {
		t.Fatal(err)
	}
	return state.LoadConfig(p)
}

func TestConfigModels(t *testing.T) {
	c, err := loadYAML(t, `  - name: bot
    dataset: [train-0, train-1]
    sharded: true
    retrain: {command: [train, "{shard}", "{output}"], timeout: 10m}
    served: /srv/shard-{shard}.bin
    delete_tainted: true
    probe: {url: "http://127.0.0.1:8000", model: bot}
`)
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.Model("bot")
	if err != nil {
		t.Fatal(err)
	}
	if !m.Sharded || m.RetrainTimeout().Minutes() != 10 || m.Probe.References != 99 || m.ServedPath(1) != "/srv/shard-1.bin" || m.ShardOfStore("train-1") != 1 {
		t.Fatalf("%+v", m)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"  - name: bot\n    dataset: [nope]\n", `dataset store "nope" is not configured`},
		{"  - name: bot\n    dataset: [docs]\n", "a training set is a file store"},
		{"  - name: bot\n    dataset: [train-0]\n    sharded: true\n", "needs retrain.command"},
		{"  - name: bot\n    dataset: [train-0]\n    retrain: {command: [train, \"{shard}\"]}\n", "must contain {output}"},
		{"  - name: bot\n    dataset: [train-0, train-1]\n    sharded: true\n    retrain: {command: [t, \"{shard}\", \"{output}\"]}\n    served: /srv/x.bin\n", "must contain {shard}"},
		{"  - name: bot\n    dataset: [train-0]\n    probe: {url: \"127.0.0.1:8000\"}\n", "probe.url"},
		{"  - name: bot\n    dataset: [train-0]\n    shards: 4\n", "unknown key shards"},
		{"  - name: bot\n    dataset: [train-0]\n  - name: bot\n    dataset: [train-1]\n", "duplicate name"},
	} {
		_, err := loadYAML(t, tc.yaml)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

// A certificate may not say VERIFIED of a model its shards do not show
// retrained without the rows, nor complete with a model not VERIFIED.
func TestCertificateModelClaimsAreChecked(t *testing.T) {
	good := certificate.ModelOutcome{Model: "bot", Sharded: true, Level: certificate.LevelModel, Outcome: certificate.Verified,
		Shards: []certificate.ModelShard{{Shard: 1, Retrained: &certificate.ModelArtifact{Run: "run-1", SHA256: "ab", Rows: 10}, TrainedWithout: true, Served: certificate.ServedSwitched}}}
	if !certificate.ModelVerified(good) {
		t.Fatal("a retrained, switched shard is not VERIFIED")
	}
	for name, mut := range map[string]func(m *certificate.ModelOutcome){
		"unsharded":     func(m *certificate.ModelOutcome) { m.Sharded = false },
		"not switched":  func(m *certificate.ModelOutcome) { m.Shards[0].Served = certificate.ServedOperatorMust },
		"subject rows":  func(m *certificate.ModelOutcome) { m.Shards[0].Retrained.SubjectRows = 1 },
		"tainted left":  func(m *certificate.ModelOutcome) { m.Shards[0].TaintedFilesLeft = 1 },
		"probe found":   func(m *certificate.ModelOutcome) { m.ProbeAfter = &certificate.ModelProbe{Canaries: 1, Extracted: 1} },
		"not retrained": func(m *certificate.ModelOutcome) { m.Shards[0].Retrained = nil },
		"no shards":     func(m *certificate.ModelOutcome) { m.Shards = nil },
		"probe failed": func(m *certificate.ModelOutcome) {
			m.ProbeAfter = &certificate.ModelProbe{Canaries: 1, Error: "connection refused"}
		},
		"flagged canary": func(m *certificate.ModelOutcome) { m.ProbeAfter = &certificate.ModelProbe{Canaries: 1, Flagged: 1} },
	} {
		m := good
		m.Shards = append([]certificate.ModelShard(nil), good.Shards...)
		if len(m.Shards) > 0 {
			r := *good.Shards[0].Retrained
			m.Shards[0].Retrained = &r
		}
		mut(&m)
		if certificate.ModelVerified(m) {
			t.Errorf("%s: still VERIFIED", name)
		}
	}
}
