package state

import "time"

// ErasureConfig is the erasure: section of amnesia.yaml: the due date of a
// queued erasure, and the erasure windows in which `amnesia worker` (and
// `amnesia serve`) run queued erasures together (docs/windows.md). Every
// key is optional.
//
//	erasure:
//	  deadline: 720h      # due date of an erasure queued without one: request + deadline
//	  window: 1h          # windows on: the longest a queued erasure waits for its window
//	  window_max: 100     # most erasures in one window
//	  window_margin: 10m  # run a window this long before its earliest due date
type ErasureConfig struct {
	// Deadline is the due date of an erasure queued without one, from when
	// it is queued: a Go duration of at most 744h (31 days; GDPR Art. 12(3)
	// gives one month). Default 720h.
	Deadline string `yaml:"deadline,omitempty"`
	// Window turns erasure windows on: a worker claims every waiting
	// erasure (up to WindowMax) at once and runs them as one window when
	// the oldest has waited Window, when the earliest due date minus the
	// margin is reached, or when WindowMax are waiting. Empty: off (one
	// erasure at a time, at once).
	Window string `yaml:"window,omitempty"`
	// WindowMax is the most erasures in one window (default 100).
	WindowMax int `yaml:"window_max,omitempty"`
	// WindowMargin is how long before the earliest due date a window
	// starts: an estimate of its own run time. Default: twice the longest
	// of the worker's recent windows, at least 1m.
	WindowMargin string `yaml:"window_margin,omitempty"`

	deadline, window, margin time.Duration
	max                      int
}

// Erasure defaults and bounds.
const (
	DefaultErasureDeadline = 720 * time.Hour
	MaxErasureDeadline     = 744 * time.Hour // 31 days: lineage.MaxDue
	DefaultWindowMax       = 100
	MinWindowMargin        = time.Minute
)

func (e *ErasureConfig) validate() error {
	e.deadline = DefaultErasureDeadline
	if e.Deadline != "" {
		d, err := time.ParseDuration(e.Deadline)
		if err != nil || d <= 0 || d > MaxErasureDeadline {
			return fieldErr("erasure.deadline", "erasure.deadline %q: want a positive Go duration of at most 744h (31 days: GDPR Art. 12(3) gives one month), e.g. 720h", e.Deadline)
		}
		e.deadline = d
	}
	e.window = 0
	if e.Window != "" {
		d, err := time.ParseDuration(e.Window)
		if err != nil || d <= 0 || d >= e.deadline {
			return fieldErr("erasure.window", "erasure.window %q: want a positive Go duration shorter than erasure.deadline (%s), e.g. 1h", e.Window, e.deadline)
		}
		e.window = d
	}
	e.max = DefaultWindowMax
	if e.WindowMax != 0 {
		if e.WindowMax < 1 || e.WindowMax > 10000 {
			return fieldErr("erasure.window_max", "erasure.window_max %d: want 1 to 10000", e.WindowMax)
		}
		e.max = e.WindowMax
	}
	e.margin = 0
	if e.WindowMargin != "" {
		d, err := time.ParseDuration(e.WindowMargin)
		// At least a minute: `serve` queues a request confirmed after its
		// due date due a minute later, and that window must close at once.
		if err != nil || d < time.Minute || d >= e.deadline {
			return fieldErr("erasure.window_margin", "erasure.window_margin %q: want a Go duration of at least 1m and shorter than erasure.deadline (%s), e.g. 10m; omit it to learn it from the worker's recent windows", e.WindowMargin, e.deadline)
		}
		e.margin = d
	}
	if (e.WindowMax != 0 || e.WindowMargin != "") && e.window == 0 {
		return fieldErr("erasure.window", "erasure.window_max and erasure.window_margin need erasure.window (how long an erasure may wait for its window, e.g. 1h)")
	}
	return nil
}

// ErasureDeadline is how long after it is queued an erasure queued without
// a due date is due.
func (c *Config) ErasureDeadline() time.Duration {
	if c.Erasure.deadline == 0 {
		return DefaultErasureDeadline
	}
	return c.Erasure.deadline
}

// ErasureWindow returns the window settings: wait is 0 when windows are off;
// margin is 0 when it is to be learned from the worker's recent windows.
func (c *Config) ErasureWindow() (wait time.Duration, max int, margin time.Duration) {
	max = c.Erasure.max
	if max == 0 {
		max = DefaultWindowMax
	}
	return c.Erasure.window, max, c.Erasure.margin
}
