package state

import (
	"strings"
	"testing"
	"time"
)

func TestReverifyConfig(t *testing.T) {
	c, err := parseConfig([]byte("version: 1\nreverify:\n  every: 7d\n"))
	if err != nil || c.ReverifyEvery() != 7*24*time.Hour {
		t.Fatalf("every: 7d = %v, %v", c, err)
	}
	c, err = parseConfig([]byte("version: 1\nreverify: {every: 36h}\n"))
	if err != nil || c.ReverifyEvery() != 36*time.Hour {
		t.Fatalf("every: 36h = %v, %v", c, err)
	}
	if c, err := parseConfig([]byte("version: 1\n")); err != nil || c.ReverifyEvery() != 0 {
		t.Fatalf("no reverify: %v, %v", c, err)
	}
	for in, want := range map[string]string{
		"version: 1\nreverify:\n  every: weekly\n":      `line 3: reverify.every "weekly"`,
		"version: 1\nreverify:\n  every: 0d\n":          `line 3: reverify.every "0d"`,
		"version: 1\nreverify:\n  every: 10s\n":         `reverify.every "10s": want a duration of at least 1m`,
		"version: 1\nreverify:\n  evry: 7d\n":           "line 3: unknown key evry in reverify (did you mean every?)",
		"version: 1\nreverify:\n  alert_url: ftp://x\n": "line 3: reverify.alert_url: want an http",
	} {
		_, err := parseConfig([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}
