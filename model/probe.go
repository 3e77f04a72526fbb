package model

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"time"
)

// Prober asks an OpenAI-compatible completions endpoint
// (POST {URL}/v1/completions) about canaries.
type Prober struct {
	URL     string
	Model   string
	Timeout time.Duration
	Client  *http.Client
}

// NewProber returns the prober of a model's probe configuration.
func NewProber(p *ProbeConfig) *Prober {
	t := p.timeout
	if t <= 0 {
		t = 30 * time.Second
	}
	return &Prober{URL: strings.TrimRight(p.URL, "/"), Model: p.Model, Timeout: t}
}

type completionRequest struct {
	Model       string  `json:"model,omitempty"`
	Prompt      string  `json:"prompt"`
	MaxTokens   int     `json:"max_tokens"`
	Temperature float64 `json:"temperature"`
	Logprobs    *int    `json:"logprobs,omitempty"`
	Echo        bool    `json:"echo,omitempty"`
}

type completionResponse struct {
	Choices []struct {
		Text     string `json:"text"`
		Logprobs *struct {
			Tokens        []string   `json:"tokens"`
			TokenLogprobs []*float64 `json:"token_logprobs"`
			TextOffset    []int      `json:"text_offset"`
		} `json:"logprobs"`
	} `json:"choices"`
}

func (p *Prober) post(ctx context.Context, req completionRequest) (*completionResponse, error) {
	c := p.Client
	if c == nil {
		c = http.DefaultClient
	}
	ctx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	req.Model = p.Model
	body, _ := json.Marshal(req)
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL+"/v1/completions", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(hr)
	if err != nil {
		// The error names the URL, never the prompt.
		return nil, fmt.Errorf("model probe: %s/v1/completions: %w", p.URL, errors.Unwrap(err))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("model probe: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("model probe: %s/v1/completions answered %s: check probe.url and probe.model", p.URL, resp.Status)
	}
	var out completionResponse
	if err := json.Unmarshal(b, &out); err != nil || len(out.Choices) == 0 {
		return nil, fmt.Errorf("model probe: %s/v1/completions did not answer an OpenAI completions object", p.URL)
	}
	return &out, nil
}

// Complete returns the greedy (temperature 0) continuation of prompt.
func (p *Prober) Complete(ctx context.Context, prompt string, maxTokens int) (string, error) {
	out, err := p.post(ctx, completionRequest{Prompt: prompt, MaxTokens: maxTokens})
	if err != nil {
		return "", err
	}
	return out.Choices[0].Text, nil
}

// LogLikelihood returns the model's log-probability (natural log) of
// continuation after prefix: the sum of the echoed prompt tokens' logprobs
// that lie in the continuation.
func (p *Prober) LogLikelihood(ctx context.Context, prefix, continuation string) (float64, error) {
	zero := 0
	out, err := p.post(ctx, completionRequest{Prompt: prefix + continuation, MaxTokens: 1, Echo: true, Logprobs: &zero})
	if err != nil {
		return 0, err
	}
	lp := out.Choices[0].Logprobs
	if lp == nil || len(lp.TokenLogprobs) == 0 {
		return 0, fmt.Errorf("model probe: %s answered no echoed logprobs: the server must support echo with logprobs on /v1/completions", p.URL)
	}
	end := len(prefix) + len(continuation)
	off := 0
	sum, n := 0.0, 0
	for i, l := range lp.TokenLogprobs {
		if i < len(lp.TextOffset) {
			off = lp.TextOffset[i]
		}
		if off >= len(prefix) && off < end && l != nil {
			sum += *l
			n++
		}
		if i >= len(lp.TextOffset) && i < len(lp.Tokens) {
			off += len(lp.Tokens[i])
		}
	}
	if n == 0 {
		return 0, fmt.Errorf("model probe: %s echoed no logprobs for the continuation", p.URL)
	}
	return sum, nil
}

// ProbeResult is what the probe measured over a subject's canaries. It
// holds counts and scores, never the canaries.
type ProbeResult struct {
	Endpoint   string `json:"endpoint"` // the completions URL asked
	Canaries   int    `json:"canaries"`
	References int    `json:"references"` // never-trained references per canary
	// Extracted: canaries whose secret the model returned, greedy, from
	// the prefix alone.
	Extracted int `json:"extracted"`
	// Flagged: canaries more likely under the model than every one of
	// their references, by at least FlagMargin: a membership-inference
	// test whose false-positive rate per canary is at most FPRPerCanary.
	Flagged int `json:"flagged"`
	// Exposure per canary, log2(m+1) − log2(rank) bits (Carlini et al.
	// 2019), in canary order; 0 = no more likely than a random reference.
	Exposure []float64 `json:"exposure"`
	// FPRPerCanary = 1/(m+1): the chance that a canary the model never saw
	// is flagged. FPRAny = 1 − (1 − 1/(m+1))^n: that any of n is.
	FPRPerCanary float64 `json:"fpr_per_canary"`
	FPRAny       float64 `json:"fpr_any"`
	Requests     int     `json:"requests"`
	Millis       int64   `json:"millis"`
	// Error: the endpoint failed; nothing was measured.
	Error string `json:"error,omitempty"`
}

// Found reports whether the probe saw a canary: extracted or flagged.
func (r *ProbeResult) Found() bool { return r.Extracted > 0 || r.Flagged > 0 }

// Probe asks the model about each canary: its greedy continuation of the
// prefix (extraction) and its likelihood against m fresh references
// (membership inference).
func (p *Prober) Probe(ctx context.Context, canaries []Canary, m int) (*ProbeResult, error) {
	start := time.Now()
	res := &ProbeResult{Endpoint: p.URL + "/v1/completions", Canaries: len(canaries), References: m}
	res.FPRPerCanary, res.FPRAny = FalsePositiveRates(len(canaries), m)
	for _, c := range canaries {
		got, err := p.Complete(ctx, c.Prefix, len(c.Secret))
		res.Requests++
		if err != nil {
			return nil, err
		}
		if strings.HasPrefix(got, c.Secret) {
			res.Extracted++
		}
		ll, err := p.LogLikelihood(ctx, c.Prefix, c.Secret)
		res.Requests++
		if err != nil {
			return nil, err
		}
		refs, err := References(c, m)
		if err != nil {
			return nil, err
		}
		rank, best := 1, math.Inf(-1)
		for _, r := range refs {
			rl, err := p.LogLikelihood(ctx, r.Prefix, r.Secret)
			res.Requests++
			if err != nil {
				return nil, err
			}
			if rl >= ll {
				rank++
			}
			best = math.Max(best, rl)
		}
		if ll > best+FlagMargin {
			res.Flagged++
		}
		res.Exposure = append(res.Exposure, math.Round((math.Log2(float64(m+1))-math.Log2(float64(rank)))*1000)/1000)
	}
	res.Millis = time.Since(start).Milliseconds()
	return res, nil
}

// FlagMargin is how much more likely (natural log: a factor of 100) than
// its likeliest reference a canary must be to be flagged. Requiring a
// margin only lowers the false-positive rate below the 1/(m+1) bound of a
// rank test; it trades a little power for fewer flags by chance.
var FlagMargin = math.Log(100)

// FalsePositiveRates returns, for n canaries each tested against m
// references, the chance that one never-trained canary is flagged (ranks
// first: at most 1/(m+1), the references and the canary being exchangeable when the
// model never saw it) and the chance that any of the n is.
func FalsePositiveRates(n, m int) (perCanary, any float64) {
	perCanary = 1 / float64(m+1)
	any = 1 - math.Pow(1-perCanary, float64(n))
	return perCanary, any
}
