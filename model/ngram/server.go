package ngram

import (
	"encoding/json"
	"net/http"
	"os"
	"sync"
	"time"
)

// Server serves the mixture of the models at Paths (one per shard) over an
// OpenAI-compatible POST /v1/completions: greedy completion (temperature is
// ignored: always 0) and, with logprobs, the log-probability of each byte
// (one token per byte), of the prompt too with echo. A model file that
// changes (an atomic rename by amnesia) is reloaded on the next request.
type Server struct {
	Paths []string
	mu    sync.Mutex
	cache map[string]cached
}

type cached struct {
	mod  time.Time
	size int64
	m    *Model
}

func (s *Server) mixture() (Mixture, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cache == nil {
		s.cache = map[string]cached{}
	}
	mx := make(Mixture, 0, len(s.Paths))
	for _, p := range s.Paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		c, ok := s.cache[p]
		if !ok || !c.mod.Equal(fi.ModTime()) || c.size != fi.Size() {
			m, err := Load(p)
			if err != nil {
				return nil, err
			}
			c = cached{mod: fi.ModTime(), size: fi.Size(), m: m}
			s.cache[p] = c
		}
		mx = append(mx, c.m)
	}
	return mx, nil
}

type request struct {
	Model     string `json:"model"`
	Prompt    string `json:"prompt"`
	MaxTokens *int   `json:"max_tokens"`
	Logprobs  *int   `json:"logprobs"`
	Echo      bool   `json:"echo"`
}

type logprobs struct {
	Tokens        []string   `json:"tokens"`
	TokenLogprobs []*float64 `json:"token_logprobs"`
	TextOffset    []int      `json:"text_offset"`
	TopLogprobs   []any      `json:"top_logprobs"`
}

type choice struct {
	Index        int       `json:"index"`
	Text         string    `json:"text"`
	Logprobs     *logprobs `json:"logprobs"`
	FinishReason string    `json:"finish_reason"`
}

// ServeHTTP implements POST /v1/completions.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/completions" || r.Method != http.MethodPost {
		http.Error(w, `{"error":{"message":"only POST /v1/completions"}}`, http.StatusNotFound)
		return
	}
	var req request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	mx, err := s.mixture()
	if err != nil {
		http.Error(w, `{"error":{"message":"model not loaded"}}`, http.StatusServiceUnavailable)
		return
	}
	n := 16
	if req.MaxTokens != nil {
		n = *req.MaxTokens
	}
	prompt := []byte(req.Prompt)
	gen, glp := mx.Greedy(prompt, n)
	c := choice{Text: string(gen), FinishReason: "length"}
	if req.Logprobs != nil {
		lp := &logprobs{}
		off := 0
		add := func(b byte, l float64) {
			v := l
			lp.Tokens = append(lp.Tokens, string([]byte{b}))
			lp.TokenLogprobs = append(lp.TokenLogprobs, &v)
			lp.TextOffset = append(lp.TextOffset, off)
			lp.TopLogprobs = append(lp.TopLogprobs, nil)
			off++
		}
		if req.Echo {
			for i, l := range mx.LogProbs(prompt) {
				add(prompt[i], l)
			}
		} else {
			off = 0
		}
		for i, b := range gen {
			add(b, glp[i])
		}
		c.Logprobs = lp
	}
	if req.Echo {
		c.Text = req.Prompt + c.Text
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": "cmpl-ngram", "object": "text_completion", "created": time.Now().Unix(), "model": req.Model,
		"choices": []choice{c},
	})
}
