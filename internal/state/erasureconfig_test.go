package state

import (
	"strings"
	"testing"
	"time"
)

func TestErasureConfig(t *testing.T) {
	c, err := parseConfig([]byte("version: 1\n"))
	if err != nil || c.ErasureDeadline() != DefaultErasureDeadline {
		t.Fatalf("no erasure section: %v, %v", c, err)
	}
	if wait, _, _ := c.ErasureWindow(); wait != 0 {
		t.Errorf("windows are on by default (wait %s)", wait)
	}
	c, err = parseConfig([]byte("version: 1\nerasure:\n  deadline: 240h\n  window: 2h\n  window_max: 50\n  window_margin: 15m\n"))
	if err != nil {
		t.Fatal(err)
	}
	wait, max, margin := c.ErasureWindow()
	if c.ErasureDeadline() != 240*time.Hour || wait != 2*time.Hour || max != 50 || margin != 15*time.Minute {
		t.Errorf("erasure section read as deadline %s, window %s, max %d, margin %s", c.ErasureDeadline(), wait, max, margin)
	}
	if c, err = parseConfig([]byte("version: 1\nerasure: {window: 1h}\n")); err != nil {
		t.Fatal(err)
	}
	if _, max, margin := c.ErasureWindow(); max != DefaultWindowMax || margin != 0 {
		t.Errorf("window defaults: max %d, margin %s", max, margin)
	}
	for in, want := range map[string]string{
		"version: 1\nerasure:\n  deadline: 745h\n":                 `line 3: erasure.deadline "745h": want a positive Go duration of at most 744h`,
		"version: 1\nerasure:\n  deadline: soon\n":                 `erasure.deadline "soon"`,
		"version: 1\nerasure:\n  deadline: 2h\n  window: 3h\n":     `erasure.window "3h": want a positive Go duration shorter than erasure.deadline`,
		"version: 1\nerasure:\n  window: 1h\n  window_max: -1\n":   `erasure.window_max -1: want 1 to 10000`,
		"version: 1\nerasure:\n  window_max: 10\n":                 `erasure.window_max and erasure.window_margin need erasure.window`,
		"version: 1\nerasure:\n  window: 1h\n  window_margin: x\n": `erasure.window_margin "x"`,
		// Under a minute, a request confirmed overdue (queued due a minute
		// later) would wait for its window.
		"version: 1\nerasure:\n  window: 1h\n  window_margin: 30s\n": `erasure.window_margin "30s": want a Go duration of at least 1m`,
		"version: 1\nerasure:\n  window: 1h\n  window_margin: 0s\n":  `erasure.window_margin "0s": want a Go duration of at least 1m`,
		"version: 1\nerasure:\n  windw: 1h\n":                        "line 3: unknown key windw in erasure",
	} {
		_, err := parseConfig([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}
