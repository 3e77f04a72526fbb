package state

import (
	"net/url"
	"strconv"
	"strings"
	"time"
)

// ReverifyConfig configures scheduled re-verification (`amnesia reverify
// --due`, and `amnesia serve` on that schedule): every published erasure
// certificate is re-probed when Every has passed since it, or its latest
// re-verification, was issued.
type ReverifyConfig struct {
	// Every is the interval: a Go duration (168h) or a number of days (7d).
	// Empty: no schedule (serve does not re-verify; `reverify --due` needs
	// --every).
	Every string `yaml:"every,omitempty"`
	// AlertURL, when set, receives a POST from `amnesia serve` for every
	// re-verification that finds erased data again, signed like the
	// request callbacks (serve.webhook_secret).
	AlertURL string `yaml:"alert_url,omitempty"`
}

// ParseInterval parses a Go duration or a whole number of days ("7d").
func ParseInterval(s string) (time.Duration, bool) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		d, err := strconv.Atoi(n)
		if err != nil || d <= 0 || d > 36500 {
			return 0, false
		}
		return time.Duration(d) * 24 * time.Hour, true
	}
	d, err := time.ParseDuration(s)
	return d, err == nil && d > 0
}

func (r ReverifyConfig) validate() (time.Duration, error) {
	if r.AlertURL != "" {
		u, err := url.Parse(r.AlertURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return 0, fieldErr("reverify.alert_url", "reverify.alert_url: want an http:// or https:// URL")
		}
	}
	if r.Every == "" {
		return 0, nil
	}
	d, ok := ParseInterval(r.Every)
	if !ok || d < time.Minute {
		return 0, fieldErr("reverify.every", "reverify.every %q: want a duration of at least 1m, as days (7d) or a Go duration (168h)", r.Every)
	}
	return d, nil
}

// ReverifyEvery is the re-verification interval (0: no schedule).
func (c *Config) ReverifyEvery() time.Duration { return c.reverifyEvery }
