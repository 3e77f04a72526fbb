package bench

import (
	"io"
	"regexp"
	"strings"
	"sync"
	"time"
)

// StepClock sums, per kind of step (evidence, delete, reclaim, probe, …),
// the durations the saga prints as progress for each step it runs
// ("  evidence:docs                done (12.34ms)"; in a batch the erasure's
// id comes first: "  er-… evidence:docs done (12.34ms)"). Steps replayed
// from a journal ("done (journal)") are not counted. Erasures of one window
// print at once: Write is safe for concurrent use.
type StepClock struct {
	mu sync.Mutex
	d  map[string]time.Duration
}

var stepDone = regexp.MustCompile(`^\s+(?:er-\S+\s+)?(\S+)\s+done \(([^)]+)\)`)

func NewStepClock() *StepClock { return &StepClock{d: map[string]time.Duration{}} }

func (s *StepClock) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, line := range strings.Split(string(p), "\n") {
		m := stepDone.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		d, err := time.ParseDuration(m[2])
		if err != nil {
			continue
		}
		kind, _, _ := strings.Cut(m[1], ":")
		s.d[kind] += d
	}
	return len(p), nil
}

// perErasure returns each kind's total in milliseconds divided by n, or
// nil when nothing was timed.
func (s *StepClock) PerErasure(n int) map[string]float64 {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.d) == 0 || n <= 0 {
		return nil
	}
	out := make(map[string]float64, len(s.d))
	for k, d := range s.d {
		out[k] = float64(d.Microseconds()) / 1000 / float64(n)
	}
	return out
}

// progress is the Progress writer of the env's erasures: its step clock,
// or nil (a nil *StepClock in an io.Writer would not be nil).
func (e *env) progress() io.Writer {
	if e.steps == nil {
		return nil
	}
	return e.steps
}
