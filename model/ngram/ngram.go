// Package ngram is a small real language model for amnesia's model-leg
// tests and benchmark: a byte-level n-gram model with Witten-Bell
// interpolation (a proper distribution over the next byte), trained on CPU
// in milliseconds, and an OpenAI-compatible /v1/completions server for a
// sharded model: the uniform mixture of the shards' models over whole
// sequences (Bayesian model averaging, so each next byte is predicted with
// the shards weighted by how well they explain the text so far), reloaded
// from the served files whenever they change.
//
// It is not a production model; it memorises rare strings seen once, which
// is what a canary probe must be able to detect, and forgets them when its
// shard is retrained without them.
package ngram

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
)

// Vocab is the size of the byte alphabet of the base distribution.
const Vocab = 256

// Model is a trained n-gram model: counts of the byte that follows each
// context of length 0..Order-1.
type Model struct {
	Order  int                       `json:"order"`
	Counts map[string]map[byte]int32 `json:"counts"`
	totals map[string][2]int32       // context -> (total, distinct)
}

// Train trains a model of the given order on texts.
func Train(texts []string, order int) *Model {
	m := &Model{Order: order, Counts: map[string]map[byte]int32{}}
	for _, t := range texts {
		b := []byte(t + "\n")
		for i := range b {
			for k := 0; k < order && k <= i; k++ {
				ctx := string(b[i-k : i])
				c := m.Counts[ctx]
				if c == nil {
					c = map[byte]int32{}
					m.Counts[ctx] = c
				}
				c[b[i]]++
			}
		}
	}
	m.index()
	return m
}

func (m *Model) index() {
	m.totals = make(map[string][2]int32, len(m.Counts))
	for ctx, c := range m.Counts {
		var n int32
		for _, v := range c {
			n += v
		}
		m.totals[ctx] = [2]int32{n, int32(len(c))}
	}
}

// Prob returns P(next | history) under Witten-Bell interpolation.
func (m *Model) Prob(history []byte, next byte) float64 {
	p := 1.0 / Vocab
	for k := 0; k < m.Order && k <= len(history); k++ {
		ctx := string(history[len(history)-k:])
		tot, ok := m.totals[ctx]
		if !ok {
			break // longer contexts were never seen either
		}
		n, t := float64(tot[0]), float64(tot[1])
		p = (float64(m.Counts[ctx][next]) + t*p) / (n + t)
	}
	return p
}

// Save writes the model as JSON.
func (m *Model) Save(path string) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// Load reads a model written by Save.
func Load(path string) (*Model, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m Model
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("ngram: %s: %w", path, err)
	}
	m.index()
	return &m, nil
}

// ReadJSONL returns the string field of every JSONL row of a file.
func ReadJSONL(path, field string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var row map[string]any
		if err := json.Unmarshal(line, &row); err != nil {
			return nil, fmt.Errorf("ngram: %s: %w", path, err)
		}
		if s, ok := row[field].(string); ok {
			out = append(out, s)
		}
	}
	return out, sc.Err()
}

// TrainFile trains on a JSONL file's field and writes the model: what a
// retrain command runs.
func TrainFile(data, field, out string, order int) error {
	texts, err := ReadJSONL(data, field)
	if err != nil {
		return err
	}
	return Train(texts, order).Save(out)
}

// Mixture is the uniform mixture of shard models over whole sequences.
type Mixture []*Model

// weights returns the log posterior weight of each shard after history.
func (mx Mixture) logWeights(history []byte) []float64 {
	lw := make([]float64, len(mx))
	for k, m := range mx {
		for i := range history {
			lw[k] += math.Log(m.Prob(history[:i], history[i]))
		}
	}
	return normalise(lw)
}

func normalise(lw []float64) []float64 {
	mx := math.Inf(-1)
	for _, v := range lw {
		mx = math.Max(mx, v)
	}
	s := 0.0
	for _, v := range lw {
		s += math.Exp(v - mx)
	}
	for i := range lw {
		lw[i] -= mx + math.Log(s)
	}
	return lw
}

// next returns the mixture's distribution of the next byte given
// history and the shards' log weights, and updates nothing.
func (mx Mixture) prob(history []byte, lw []float64, c byte) float64 {
	p := 0.0
	for k, m := range mx {
		p += math.Exp(lw[k]) * m.Prob(history, c)
	}
	return p
}

func (mx Mixture) update(history []byte, lw []float64, c byte) {
	for k, m := range mx {
		lw[k] += math.Log(m.Prob(history, c))
	}
	normalise(lw)
}

// LogProbs returns the natural-log probability of each byte of text given
// the bytes before it.
func (mx Mixture) LogProbs(text []byte) []float64 {
	lw := mx.logWeights(nil)
	out := make([]float64, len(text))
	for i, c := range text {
		out[i] = math.Log(mx.prob(text[:i], lw, c))
		mx.update(text[:i], lw, c)
	}
	return out
}

// Greedy continues prompt by n bytes, taking the most likely byte each time
// (ties: the smallest byte).
func (mx Mixture) Greedy(prompt []byte, n int) ([]byte, []float64) {
	lw := mx.logWeights(prompt)
	text := append([]byte(nil), prompt...)
	var out []byte
	var lps []float64
	cands := make([]int, Vocab)
	for i := range cands {
		cands[i] = i
	}
	for j := 0; j < n; j++ {
		best, bp := byte(0), -1.0
		for _, c := range cands {
			if p := mx.prob(text, lw, byte(c)); p > bp {
				best, bp = byte(c), p
			}
		}
		if best == '\n' {
			break
		}
		out = append(out, best)
		lps = append(lps, math.Log(bp))
		mx.update(text, lw, best)
		text = append(text, best)
	}
	return out, lps
}
